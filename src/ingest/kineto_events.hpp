// Parses runs of Kineto / legacy autograd-profiler event objects into the columnar model.
#pragma once

#include <simdjson.h>

#include <string>

#include "ingest/json_chunker.hpp"
#include "stepscope/trace.hpp"

namespace stepscope::ingest {

// Per-run parse statistics the reader turns into warnings.
struct BatchStats {
  std::uint64_t missing_ts = 0;  // non-metadata events without "ts" (skipped)
  std::uint64_t time_out_of_range = 0;  // "ts" or "dur" beyond kMaxTraceTimeNs (skipped)
};

// Appends every event of `batch` to `out` (its strings, columns, side tables).
// Throws InputError naming `name`, the event index and its byte offset on malformed events.
void parse_event_batch(const EventBatch& batch, simdjson::ondemand::parser& parser,
                       TraceLayout layout, const std::string& name, RankTrace& out,
                       BatchStats& stats);

// Appends `part` (parsed on another thread with its own string table) to `into`.
void merge_rank_part(RankTrace& into, RankTrace&& part);

}  // namespace stepscope::ingest
