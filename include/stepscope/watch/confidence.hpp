// Confidence of a finding from named evidence: how many samples it rests on and how far the
// deciding readings sit from their thresholds, capped by what the rule itself can know.
#pragma once

#include "stepscope/watch.hpp"

namespace stepscope::watch {

// Sets f.confidence to the lowest of the rule's own ceiling (f.confidence on entry), the cap the
// sample count allows and the cap the margins allow, and fills f.basis (text and to_raise).
void grade(LiveFinding& f, int samples);

}  // namespace stepscope::watch
