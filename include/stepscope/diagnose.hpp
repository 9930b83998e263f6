// From analysis figures to a verdict, findings and levers.
#pragma once

#include <array>

#include "stepscope/analysis.hpp"

namespace stepscope {

// The job-level steady-state step: the mean over ranks of each rank's steady-state means.
struct JobStep {
  double step_ns = 0;
  std::array<double, kCategoryCount> category{};
  bool gpu = false;
};
JobStep job_step(const AnalysisResult& r);

// Group shares of one step (the generator's verdict rule): which bound a step shows.
Bound step_bound(const std::array<double, kCategoryCount>& category, double window_ns);

// Fills r.diagnosis. The footgun detectors (stepscope/footguns.hpp) run when the result holds
// the ranks' footgun scans, as every result of analyze() or of a merge of rank summaries does.
void diagnose(AnalysisResult& r);

}  // namespace stepscope
