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

// Judges each rank's footgun evidence (AnalysisResult::footgun_scans; none, no finding) with every
// registered detector; `job` is the result's steady-state step.
std::vector<Finding> detect_footguns(const AnalysisResult& r, const JobStep& job);

}  // namespace stepscope
