// Ground truth: the exclusive partition of a step window, computed from the step's intervals.
#pragma once

#include <span>

#include "schedule.hpp"

namespace stepscope::tracegen {

// Splits [w0, w1) into categories by the DESIGN.md priority rules. `gpu` selects the GPU
// rules (GPU activity first, idle GPU blamed on the host) or the host-only rules of CPU traces.
// The result sums to w1 - w0 exactly.
// `carried_tail` is where a sync tail still open at the end of the previous step began (or -1):
// the GPU has stayed idle since, so the tail runs on into this window until its first GPU activity.
Breakdown partition_window(std::span<const Event> events, ns_t w0, ns_t w1, bool gpu,
                           ns_t carried_tail = -1);

// Start of a sync tail that no GPU activity of the step closes (-1 when none): it continues
// into the next step.
ns_t open_sync_tail(std::span<const Event> events);

}  // namespace stepscope::tracegen
