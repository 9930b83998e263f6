// Footgun detectors: common training mistakes that silently cost throughput, named from the
// fingerprints they leave in a profiler trace (docs/footguns.md lists each one, its signature,
// its evidence and how its gain is computed).
//
// Every finding states its evidence (event names, counts, times) so that a user can check it in
// the trace, and the gain fixing it can bring, computed from this trace. A detector stays silent
// when the trace does not show its signature plainly: a missed footgun costs less than a wrong one.
#pragma once

#include <vector>

#include "stepscope/analysis.hpp"
#include "stepscope/diagnose.hpp"

namespace stepscope {

// Ids of the detectors, in the order they run (also the `id` of their findings).
inline constexpr const char* kFootgunIds[] = {
    "fp32_no_tf32",       "fp32_no_amp",        "cudnn_autotune",     "nchw_layout",     "anomaly_mode",
    "activation_recompute", "compile_recompile", "compile_fallback", "unfused_attention", "unfused_optimizer",
    "zero_grad_memset",   "host_sync_logging",  "pageable_copy",   "allocator_churn", "loader_respawn",
    "ddp_no_overlap"};

// Reads each rank's footgun scan (AnalysisResult::footgun_scans; none, no finding); `job` is the
// result's steady-state step.
std::vector<Finding> detect_footguns(const AnalysisResult& r, const JobStep& job);

}  // namespace stepscope
