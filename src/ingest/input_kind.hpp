// What an input that is not a trace is, in words a user can act on; "" when nothing tells.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stepscope/trace.hpp"

namespace stepscope::ingest {

// From the first bytes of a file that is not JSON.
//   "\x80\x02}q..." -> "a Python pickle, such as a CUDA memory snapshot ..."
//   "# gpu   pwr  gtemp ..." -> "a monitoring log (nvidia-smi or top): `stepscope triage` reads it"
std::string what_bytes_are(std::string_view head);
// From the top-level keys of a JSON object without "traceEvents".
//   {"schema", "nodes", ...} -> "a PyTorch execution trace (ExecutionTraceObserver), ..."
std::string what_object_is(const std::vector<std::string>& keys);
// From the first byte of the first element of a top-level array whose elements are not objects.
std::string what_array_is(char first_element);

// A Chrome trace read whole that no profiler wrote (a serving system's request spans, a
// browser's): none of its events is a framework op, a runtime call, a GPU record or an
// annotation. Says what its events are; "" for a profiler trace.
//   3 events of categories "request", "queue" -> "a Chrome trace, but not a profiler's: ..."
std::string not_a_profiler_trace(const RankTrace& t);

}  // namespace stepscope::ingest
