#pragma once

#include <string>
#include <utility>
#include <vector>

#include "stepscope/trace.hpp"

namespace stepscope::ingest {

// Fills the trace-level fields (deviceProperties, distributedInfo, schemaVersion, time base...)
// from the raw JSON text of the top-level keys the chunker set aside.
void apply_top_level(const std::vector<std::pair<std::string, std::string>>& top,
                     const std::string& name, RankTrace& out);

}  // namespace stepscope::ingest
