// The `stepscope whatif` report: each rank's replay against its recording and what the user's
// changes predict (text and JSON, from the one analysis result).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "stepscope/diagnose.hpp"

namespace stepscope {

inline constexpr const char* kWhatIfSchemaVersion = "stepscope.whatif/1";

// Example (one rank, `--set batch_wait=0`):
//   rank 0: recorded step 39.14 ms, replayed 39.14 ms (replay error 0.0%, 0.0% at worst)
//   with batch_wait=0: step 39.14 ms -> 2.96 ms, 13.22x (13.22x to 13.22x)
std::string render_whatif_text(const DiagnosedResult& r);
nlohmann::json whatif_to_json(const DiagnosedResult& r);

// The plan's predicted timeline as a Chrome trace for Perfetto (`stepscope whatif --annotate`):
// per rank with a plan, a process "recorded: rank N" holding the replayed steps and events at
// their recorded times, and beside it "predicted: rank N (LEVER + LEVER, 1.90x)" holding the same
// with every lever of the plan applied. Each has a "steps" track (one slice per replayed step), a
// track per host thread ("thread T") and per GPU stream ("stream S"). Needs the events kept
// (whatif::WhatIfOptions::timeline_events); a rank without a plan is left out.
std::string predicted_trace_json(const DiagnosedResult& r);

}  // namespace stepscope
