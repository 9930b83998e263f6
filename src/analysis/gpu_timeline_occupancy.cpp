// Occupancy and SM efficiency estimates from the launch arguments CUPTI records on kernels
// (`est. achieved occupancy %`, `blocks per SM`, `warps per SM`), and peak memory from the
// `[memory]` events of profile_memory=True.
#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <utility>

#include "gpu_timeline_internal.hpp"

namespace stepscope::detail {

namespace {

struct Weighted {
  double sum = 0;
  double weight = 0;
  void add(double v, double w) {
    sum += v * w;
    weight += w;
  }
  double mean() const { return weight > 0 ? sum / weight : std::nan(""); }
};

// The edges of the SM-efficiency sweep as (time, blocks per SM, negative at an end), kept as
// pairs of 16 bytes.
struct WideSmEdges {
  std::vector<std::pair<ns_t, double>> edges;
  void add(ns_t t, std::int32_t, double weight) { edges.emplace_back(t, weight); }
  static bool earlier(const std::pair<ns_t, double>& a, const std::pair<ns_t, double>& b) { return a.first < b.first; }
  ns_t time(std::size_t k) const { return edges[k].first; }
  double weight(std::size_t k) const { return edges[k].second; }
};

// The same in 8 bytes: (t - origin) shifted over the kernel's launch configuration (its number in
// RankTrace::kernel_args) and an end bit; a trace has a few hundred configurations.
//   origin 100, 8 configurations (bits 4): add(150, 5, +w) -> 50 << 4 | 5 << 1; its end | 1
struct PackedSmEdges {
  const KernelArgsStore* configs = nullptr;
  ns_t origin = 0;
  int bits = 0;  // configuration number and end bit
  std::vector<std::uint64_t> edges;
  void add(ns_t t, std::int32_t config, double weight) {
    edges.push_back(static_cast<std::uint64_t>(t - origin) << bits | static_cast<std::uint64_t>(config) << 1 | (weight < 0 ? 1u : 0u));
  }
  bool earlier(std::uint64_t a, std::uint64_t b) const { return (a >> bits) < (b >> bits); }
  ns_t time(std::size_t k) const { return origin + static_cast<ns_t>(edges[k] >> bits); }
  double weight(std::size_t k) const {
    const double w = (*configs)[static_cast<std::size_t>((edges[k] & ((std::uint64_t{1} << bits) - 1)) >> 1)].blocks_per_sm;
    return (edges[k] & 1) ? -w : w;
  }
};

// Sorted by time alone, with the comparisons the pairs took: std::sort then leaves ties in the same
// order, and the running sum, whose rounding depends on it, adds them in the same order.
template <class Edges>
double busy_sm_time(Edges& e) {
  std::sort(e.edges.begin(), e.edges.end(), [&](const auto& a, const auto& b) { return e.earlier(a, b); });
  double busy = 0, running = 0;
  for (std::size_t k = 0; k + 1 < e.edges.size(); ++k) {
    running += e.weight(k);
    busy += std::min(std::max(running, 0.0), 1.0) * static_cast<double>(e.time(k + 1) - e.time(k));
  }
  return busy;
}

// tb_plugin's "Est. SM Efficiency": while kernels run, an SM counts as busy in proportion to
// the blocks per SM of the running kernels, capped at 1; integrated over time and divided by the
// span from the first kernel start to the last kernel end (tb_plugin uses the step span).
// The edges are counted first, so that they are allocated once, not grown.
double sm_efficiency_pct(const RankTrace& rank) {
  const EventTable& ev = rank.events;
  auto blocks_per_sm = [&](std::size_t i) {
    const KernelArgs* ka = rank.kernel_args_of(i);
    return ka ? ka->blocks_per_sm : 0.0;
  };
  std::size_t count = 0;
  ns_t first = 0, last = 0;
  bool any = false;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (!is_kernel(ev, i)) continue;
    first = any ? std::min(first, ev.ts[i]) : ev.ts[i];
    last = any ? std::max(last, ev.end(i)) : ev.end(i);
    any = true;
    count += blocks_per_sm(i) > 0 ? 2 : 0;
  }
  if (!any || last <= first) return std::nan("");
  auto fill = [&](auto& e) {
    e.edges.reserve(count);
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (!is_kernel(ev, i) || blocks_per_sm(i) <= 0) continue;
      e.add(ev.ts[i], ev.kernel_args[i], blocks_per_sm(i));
      e.add(ev.end(i), ev.kernel_args[i], -blocks_per_sm(i));
    }
    return 100.0 * busy_sm_time(e) / static_cast<double>(last - first);
  };
  const int bits = std::bit_width(rank.kernel_args.size()) + 1;
  ns_t span = 0;
  if (bits < 24 && !__builtin_sub_overflow(last, first, &span) && span < (ns_t{1} << (62 - bits))) {
    PackedSmEdges e{&rank.kernel_args, first, bits, {}};
    return fill(e);
  }
  WideSmEdges e;
  return fill(e);
}

}  // namespace

Occupancy occupancy(const RankTrace& rank) {
  const EventTable& ev = rank.events;
  Occupancy out;
  Weighted occ, blocks, warps;
  double kernel_time = 0, covered = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (!is_kernel(ev, i)) continue;
    auto w = static_cast<double>(ev.dur[i]);
    kernel_time += w;
    const KernelArgs* ka = rank.kernel_args_of(i);
    if (!ka) continue;
    bool has = false;
    if (ka->est_occupancy_pct >= 0) occ.add(ka->est_occupancy_pct, w), has = true;
    if (ka->blocks_per_sm >= 0) blocks.add(ka->blocks_per_sm, w), has = true;
    if (ka->warps_per_sm >= 0) warps.add(ka->warps_per_sm, w), has = true;
    if (has) covered += w;
  }
  out.available = occ.weight > 0 || blocks.weight > 0 || warps.weight > 0;
  out.coverage = kernel_time > 0 ? covered / kernel_time : std::nan("");
  out.achieved_occupancy_pct = occ.mean();
  out.blocks_per_sm = blocks.mean();
  out.warps_per_sm = warps.mean();
  out.sm_efficiency_pct = out.available ? sm_efficiency_pct(rank) : std::nan("");
  return out;
}

MemoryPeaks memory_peaks(const RankTrace& rank, const std::vector<StepWindow>& steps) {
  const EventTable& ev = rank.events;
  std::map<std::pair<int, int>, DeviceMemoryPeak> devices;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const std::optional<EventExtra> x = rank.extra_of(i);
    if (!x || (x->total_allocated == kNone && x->total_reserved == kNone)) continue;
    DeviceMemoryPeak& d = devices[{x->device_type, x->device_id}];
    d.device_type = x->device_type;
    d.device_id = x->device_id;
    ++d.samples;
    auto step_of = [&](ns_t ts) {
      int s = step_index(steps, ts);
      return s < 0 ? std::int64_t{-1} : steps[static_cast<std::size_t>(s)].number;
    };
    if (x->total_allocated > d.peak_allocated) {
      d.peak_allocated = x->total_allocated;
      d.peak_allocated_ts = ev.ts[i];
      d.peak_allocated_step = step_of(ev.ts[i]);
    }
    if (x->total_reserved > d.peak_reserved) {
      d.peak_reserved = x->total_reserved;
      d.peak_reserved_ts = ev.ts[i];
      d.peak_reserved_step = step_of(ev.ts[i]);
    }
  }
  MemoryPeaks out;
  out.available = !devices.empty();
  for (auto& [key, d] : devices) out.devices.push_back(d);
  return out;
}

}  // namespace stepscope::detail
