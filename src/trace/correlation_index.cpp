#include <algorithm>

#include "stepscope/trace.hpp"

namespace stepscope {
namespace {

using Entry = CorrelationIndex::Entry;

// A range of ids at most this many times the number of entries (plus a floor for small traces)
// is laid out flat; wider, and the empty slots would cost more than the hash map.
constexpr std::uint64_t kDenseSpread = 4;
constexpr std::uint64_t kDenseFloor = 4096;

// hi - lo as an unsigned count: exact for any two int64 values (the width, one more, may not be).
std::uint64_t gap_of(std::int64_t lo, std::int64_t hi) {
  return static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
}

void id_range(const std::vector<Entry>& entries, std::int64_t& lo, std::int64_t& hi, bool& any) {
  for (const auto& [id, _] : entries) {
    if (id == kNone) continue;
    lo = any ? std::min(lo, id) : id;
    hi = any ? std::max(hi, id) : id;
    any = true;
  }
}

}  // namespace

std::size_t CorrelationIndex::slot(std::int64_t corr) const {
  if (launch_.empty()) return kNoSlot;
  if (dense_) {
    const std::uint64_t k = static_cast<std::uint64_t>(corr) - static_cast<std::uint64_t>(lowest_);
    return corr < lowest_ || k >= launch_.size() ? kNoSlot : static_cast<std::size_t>(k);
  }
  const std::uint32_t* s = sparse_slot_.find(corr);
  return s ? *s : kNoSlot;
}

void CorrelationIndex::build(const std::vector<Entry>& launches, const std::vector<Entry>& gpu) {
  *this = CorrelationIndex{};
  std::int64_t lo = 0, hi = 0;
  bool any = false;
  id_range(launches, lo, hi, any);
  id_range(gpu, lo, hi, any);
  if (!any) return;
  const std::uint64_t gap = gap_of(lo, hi);
  dense_ = gap < kDenseSpread * (launches.size() + gpu.size()) + kDenseFloor;
  lowest_ = lo;
  std::size_t slots = dense_ ? static_cast<std::size_t>(gap + 1) : 0;
  if (!dense_) {
    sparse_slot_.reserve(std::max(launches.size(), gpu.size()));  // most ids have a launch and a record
    for (const auto* list : {&launches, &gpu})
      for (const auto& [id, _] : *list)
        if (id != kNone && sparse_slot_.emplace(id, static_cast<std::uint32_t>(slots))) ++slots;
  }
  launch_.assign(slots, kNoEvent);
  for (const auto& [id, event] : launches) {
    if (id == kNone) continue;
    std::uint32_t& cell = launch_[slot(id)];
    if (cell == kNoEvent) cell = event, ++launches_;
  }
  // Counting sort of the GPU records by slot: counts, prefix sums, then a stable fill.
  gpu_start_.assign(slots + 1, 0);
  for (const auto& [id, _] : gpu)
    if (id != kNone) ++gpu_start_[slot(id) + 1];
  for (std::size_t s = 0; s < slots; ++s) gpu_start_[s + 1] += gpu_start_[s];
  gpu_events_.resize(gpu_start_[slots]);
  std::vector<std::uint32_t> fill(gpu_start_.begin(), gpu_start_.end() - 1);
  for (const auto& [id, event] : gpu)
    if (id != kNone) gpu_events_[fill[slot(id)]++] = event;
}

}  // namespace stepscope
