// Ground truth: the exclusive partition of a step window, computed from the step's intervals.
#pragma once

#include <span>

#include "schedule.hpp"

namespace stepscope::tracegen {

// Splits [w0, w1) into categories by the DESIGN.md priority rules. `gpu` selects the GPU
// rules (GPU activity first, idle GPU blamed on the host) or the host-only rules of CPU traces.
// The result sums to w1 - w0 exactly.
Breakdown partition_window(std::span<const Event> events, ns_t w0, ns_t w1, bool gpu);

}  // namespace stepscope::tracegen
