// The host waiting for every kernel: a synchronising call after each launch (debug-style
// cudaDeviceSynchronize loops, HPC codes, per-op error checks). The partition spreads its cost
// over compute, sync stall and launch overhead, so the verdict names the pattern itself.
#pragma once

#include "stepscope/analysis.hpp"

namespace stepscope {

// When a rank synchronises after nearly every kernel launch: adds a finding, puts its evidence
// first in the verdict and names it in the headline. Call after the headline is built.
void note_sync_after_every_kernel(AnalysisResult& r);

}  // namespace stepscope
