// `stepscope whatif` in one call, shared by the CLI and the Python module: read, analyse with the
// changes replayed, diagnose, and price the plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/pipeline.hpp"

namespace stepscope {

struct WhatIfRunOptions {
  std::vector<std::string> changes;  // --set values (whatif::parse_change)
  std::int64_t steps = 0;            // the run's length for the plan's GPU-hours (0: not priced)
  double gpu_hour_cost = 0;          // USD per GPU-hour (0: hours only)
  bool timeline_events = false;      // keep the plan's timeline event by event (predicted_trace_json)
};

// Throws InputError for a bad change (before reading anything) and as analyze_paths does.
DiagnosedResult whatif_paths(const std::vector<std::string>& paths, const WhatIfRunOptions& w, PipelineOptions po = {});

}  // namespace stepscope
