// Parses runs of Kineto / legacy autograd-profiler event objects into the columnar model.
//
// The parser is built once per SIMD kernel: for the x86-64-v2 baseline every build runs on, and,
// on x86-64, again for AVX2 ("haswell"). make_event_parser() picks the fastest kernel this CPU
// runs, once, at the first call, as simdjson picks its own DOM kernel.
#pragma once

#include <memory>
#include <string>

#include "ingest/json_chunker.hpp"
#include "stepscope/trace.hpp"

namespace stepscope::ingest {

// Per-run parse statistics the reader turns into warnings.
struct BatchStats {
  std::uint64_t missing_ts = 0;  // non-metadata events without "ts" (skipped)
  std::uint64_t time_out_of_range = 0;  // "ts" or "dur" beyond kMaxTraceTimeNs (skipped)
  std::uint64_t fast_events = 0;  // events the fast path read (the others went to simdjson)
};

// One thread's event parser (not thread-safe; keep one per thread).
class EventParser {
 public:
  virtual ~EventParser();
  // Appends every event of `batch` to `out` (its strings, columns, side tables).
  // Throws InputError naming `name`, the event index and its byte offset on malformed events.
  virtual void parse(const EventBatch& batch, TraceLayout layout, const std::string& name, RankTrace& out,
                     BatchStats& stats) = 0;
};

// How a parser reads each event: straight from its bytes where it is in the JSON subset Kineto
// writes, with simdjson for the rest (the default); or with simdjson for every event, the
// reference the fast path is tested against. STEPSCOPE_EVENT_PATH=simdjson in the environment
// makes every parser take the second.
enum class EventPath { Fast, Simdjson };

// A parser of the kernel this CPU runs best: "haswell" (AVX2, BMI, PCLMUL) where the CPU has it
// and it was built, else "baseline". STEPSCOPE_PARSER_KERNEL=baseline in the environment forces
// the baseline (to compare kernels on one machine); an unknown or unavailable name is ignored.
std::unique_ptr<EventParser> make_event_parser(EventPath path = EventPath::Fast);
// The kernel make_event_parser() picks: "haswell" or "baseline".
const char* event_parser_kernel();

// Appends `part` (parsed on another thread with its own string table) to `into`.
void merge_rank_part(RankTrace& into, RankTrace&& part);

// The ranks of a file that holds a whole job, each as a trace of its own, where every process
// is named after its rank; else the trace itself, alone, with a warning saying why it could not
// be split when it names several ranks.
std::vector<RankTrace> split_merged_ranks(RankTrace&& t);

// Each kernel's factory, defined by its build of kineto_events.cpp.
namespace kernel_baseline {
std::unique_ptr<EventParser> make_parser(EventPath path);
}
namespace kernel_haswell {
std::unique_ptr<EventParser> make_parser(EventPath path);
}

}  // namespace stepscope::ingest
