// The host waiting for every kernel: a synchronising call after each launch (debug-style
// cudaDeviceSynchronize loops, HPC codes, per-op error checks). The partition spreads its cost
// over sync stall and launch overhead, so the verdict names the pattern itself.
#pragma once

#include <optional>

#include "stepscope/diagnose.hpp"

namespace stepscope {

struct SyncAfterKernel {
  Finding finding;       // a footgun finding with the synchronise-once-per-step lever
  std::string headline;  // "; cudaDeviceSynchronize after every kernel (1312 of 1312 launches)"
};

// When a rank synchronises after nearly every kernel launch. Its gain is the step's sync stall
// and launch overhead: the time the GPU waits for the host to return and launch again.
std::optional<SyncAfterKernel> sync_after_every_kernel(const AnalysisResult& r, const JobStep& job);

}  // namespace stepscope
