// The `stepscope whatif` report: each rank's replay against its recording and what the user's
// changes predict (text and JSON, from the one analysis result).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "stepscope/diagnose.hpp"

namespace stepscope {

inline constexpr const char* kWhatIfSchemaVersion = "stepscope.whatif/1";

// Example (one rank, `--set batch_wait=0`):
//   rank 0: recorded step 39.14 ms, replayed 39.14 ms (replay error 0.0%, 0.0% at worst)
//   with batch_wait=0: step 39.14 ms -> 2.96 ms, 13.22x (13.22x to 13.22x)
std::string render_whatif_text(const DiagnosedResult& r);
nlohmann::json whatif_to_json(const DiagnosedResult& r);

}  // namespace stepscope
