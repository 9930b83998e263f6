// Compact terminal section for the GPU timeline analysis. Returns text; the caller prints.
#pragma once

#include <string>

#include "stepscope/gpu_timeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {

// `o`: the width and --wide for kernel names, --top for HTA's top kernels (those it kept).
// `p`, the rank's partition, gives the per-step figures the evidence shows (steady steps).
std::string gpu_timeline_text(const GpuTimeline& t, int rank, const TextOptions& o = {}, const RankPartition* p = nullptr);

}  // namespace stepscope
