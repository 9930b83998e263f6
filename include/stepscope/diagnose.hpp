// From analysis figures to a verdict, findings and levers.
#pragma once

#include <array>

#include "stepscope/analysis.hpp"
#include "stepscope/verdict.hpp"

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

// The verdict, findings and levers of an analysis; the analysis is only read. The footgun
// detectors (stepscope/footguns.hpp) run when the result holds the ranks' footgun scans, as every
// result of analyze() or of a merge of rank summaries does.
Diagnosis diagnose(const AnalysisResult& r);

// An analysis with its diagnosis stored beside it: what every report renders.
struct DiagnosedResult : AnalysisResult {
  Diagnosis diagnosis;
};

// `r` and diagnose(r), in one: the pipeline's last stage.
DiagnosedResult diagnosed(AnalysisResult&& r);

// A run as the diff reads it: the events of every rank and their diagnosed analysis.
struct DiagnosedRun {
  Trace trace;
  DiagnosedResult result;
};

}  // namespace stepscope
