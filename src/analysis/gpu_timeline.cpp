// GPU timeline analysis: runs the HTA-compatible figures on HTA's view of the rank and our own
// figures on the full trace, and assembles the result.
#include "stepscope/gpu_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/shared_view.hpp"
#include "gpu_timeline_internal.hpp"
#include "hta_breakdown.hpp"

namespace stepscope {

const char* idle_category_name(IdleCategory c) {
  switch (c) {
    case IdleCategory::HostWait: return "host_wait";
    case IdleCategory::KernelWait: return "kernel_wait";
    case IdleCategory::Other: return "other";
  }
  return "other";
}

double hta_round(double x, int decimals) {
  // numpy.around: scale, round half to even, unscale.
  double scale = std::pow(10.0, decimals);
  return std::nearbyint(x * scale) / scale;
}

double hta_percent(double share, int decimals) { return hta_round(100.0 * share, decimals); }

namespace {

bool any_gpu_work(const RankTrace& rank) {
  for (std::size_t i = 0; i < rank.events.size(); ++i)
    if (detail::is_gpu_work(rank.events, i)) return true;
  return false;
}

}  // namespace

void gpu_timeline_hta_figures(const RankTrace& rank, const RankFacts& facts, const GpuTimelineOptions& opts,
                              const hta::View& view, GpuTimeline& out) {
  out.has_gpu_activity = any_gpu_work(rank);
  out.hta_load = view.load;
  out.hta_temporal = hta::temporal_breakdown(view);
  out.hta_idle = hta::idle_breakdown(rank, view, opts);
  out.hta_overlap = hta::comm_comp_overlap(view);
  out.hta_kernels.types = hta::kernel_type_times(view);
  hta::finish_type_percentages(out.hta_kernels.types);
  out.hta_kernels.top = hta::top_kernels(rank, facts, view, opts);
  out.hta_launches = hta::launch_stats(rank, view, opts);
}

void gpu_timeline_own_figures(const RankTrace& rank, const RankFacts& facts, const GpuTimelineOptions& opts,
                              GpuTimeline& out) {
  out.classes = detail::kernel_classes(rank, facts);
  out.syncs = detail::sync_points(rank, facts, out.steps, opts);
  out.copies = detail::copies(rank, opts);
  out.launch_overhead = detail::launch_overhead(rank, facts, out.steps, opts);
  out.occupancy = detail::occupancy(rank);
  out.memory = detail::memory_peaks(rank, out.steps);
}

std::vector<StepWindow> profiler_step_windows(const RankTrace& rank, const RankFacts& facts) {
  return detail::profiler_steps(rank, facts);
}

GpuTimeline analyze_gpu_timeline(const RankTrace& rank, const RankFacts& facts, const GpuTimelineOptions& opts) {
  return analyze_gpu_timeline(rank, facts, opts, hta::build_view(rank, opts));
}

GpuTimeline analyze_gpu_timeline(const RankTrace& rank, const RankFacts& facts, const GpuTimelineOptions& opts,
                                 const hta::View& view) {
  GpuTimeline out;
  gpu_timeline_hta_figures(rank, facts, opts, view, out);
  out.steps = profiler_step_windows(rank, facts);
  gpu_timeline_own_figures(rank, facts, opts, out);
  return out;
}

GpuTimeline analyze_gpu_timeline(const RankTrace& rank, const GpuTimelineOptions& opts) {
  return analyze_gpu_timeline(rank, compute_facts(rank), opts);
}

std::vector<HtaKernelTypeTime> combine_kernel_types(const std::vector<const GpuTimeline*>& ranks) {
  std::map<std::string, HtaKernelTypeTime> by_label;
  for (const GpuTimeline* r : ranks) {
    for (const HtaKernelTypeTime& t : r->hta_kernels.types) {
      HtaKernelTypeTime& e = by_label[t.label];
      e.label = t.label;
      e.mask = t.mask;
      e.time += t.time;
    }
  }
  std::vector<HtaKernelTypeTime> out;
  for (auto& [label, e] : by_label) out.push_back(e);
  hta::finish_type_percentages(out);
  return out;
}

}  // namespace stepscope
