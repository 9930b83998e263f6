// The whole analysis of a set of files in one call: read, analyse, diagnose. Errors: InputError
// for unreadable or malformed input, and for jobs outside 0..kMaxJobs. The CLI's commands
// and the Python module call this, so they give the same result for the same input.
#pragma once

#include <string>
#include <vector>

#include "stepscope/analysis.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {

// More threads than this are refused: beyond it they only cost memory and start-up, and the
// system may refuse to create them.
inline constexpr int kMaxJobs = 256;

struct PipelineOptions {
  IngestOptions ingest;
  AnalyzeOptions analyze;
};

// What one run produced: the trace model (for outputs that need the events, such as the annotated
// trace) and the result every report renders.
struct Analysis {
  Trace trace;
  AnalysisResult result;
};

// Throws InputError on bad input, exactly as the readers do.
Analysis analyze_paths(const std::vector<std::string>& paths, const PipelineOptions& opts = {});

}  // namespace stepscope
