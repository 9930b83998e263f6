// The HTA-compatible analyses, each on HTA's view of one rank (see hta_view.hpp).
#pragma once

#include <vector>

#include "hta_view.hpp"
#include "stepscope/facts.hpp"

namespace stepscope::hta {

HtaTemporalBreakdown temporal_breakdown(const View& v);
HtaCommCompOverlap comm_comp_overlap(const View& v);
std::vector<HtaKernelTypeTime> kernel_type_times(const View& v);
// Percentages of the summed state times, then descending time (used per rank and combined).
void finish_type_percentages(std::vector<HtaKernelTypeTime>& types);
// HTA's per-kernel table; each named row also gets our class of the kernel from `facts`.
std::vector<HtaKernelRow> top_kernels(const RankTrace& rank, const RankFacts& facts, const View& v,
                                      const GpuTimelineOptions& opts);
HtaIdleBreakdown idle_breakdown(const RankTrace& rank, const View& v, const GpuTimelineOptions& opts);
HtaLaunchStats launch_stats(const RankTrace& rank, const View& v, const GpuTimelineOptions& opts);

}  // namespace stepscope::hta
