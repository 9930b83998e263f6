// The GPU summary both the text and the page show, from one computation: utilisation, SM
// efficiency, achieved occupancy and the tensor cores' share of GEMM time.
#pragma once

#include <string>
#include <vector>

#include "stepscope/gpu_timeline.hpp"
#include "stepscope/partition.hpp"

namespace stepscope {

struct GpuSummaryFigure {
  std::string label;  // "utilisation"
  std::string value;  // "83.8%"
  std::string basis;  // what it is a share of: "busy time of the 383.4 ms GPU span (HTA)"
};

// The figures the trace supports, in order; none without GPU activity. Example (a recsys step):
// utilisation 83.8%, SM efficiency 59.4%, achieved occupancy 32.5%, tensor cores 41.0% of GEMM time.
std::vector<GpuSummaryFigure> gpu_summary(const GpuTimeline& t);

// Synchronising calls in words, the same in the text and the page: the GPU timeline counts every
// call in the trace, the partition (and the evidence) those of the steady steps, per step. Example:
// "62 calls in the trace, 2.0 per steady step"; without steady steps "62 calls in the trace".
std::string sync_calls_text(const SyncPoints& s, const RankPartition* p);

}  // namespace stepscope
