#include <algorithm>

#include "stepscope/trace.hpp"

namespace stepscope {

void CorrelationIndex::build(const std::vector<Entry>& launches, const std::vector<Entry>& gpu) {
  *this = CorrelationIndex{};
  slots_.build([&](auto&& f) {
    for (const auto* list : {&launches, &gpu})
      for (const auto& [id, _] : *list)
        if (id != kNone) f(id);
  }, std::max(launches.size(), gpu.size()));  // most ids have a launch and a record
  const std::size_t slots = slots_.size();
  if (slots == 0) return;
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
