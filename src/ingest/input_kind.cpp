// Inputs that are not profiler traces, told by their first bytes or their top-level keys, each
// named in one line with what to pass instead: the error a user gets for the wrong file should
// say which file would be right.
#include "ingest/input_kind.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>

namespace stepscope::ingest {

namespace {

bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }
bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool has_key(const std::vector<std::string>& keys, std::string_view k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

}  // namespace

std::string what_bytes_are(std::string_view head) {
  if (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80)
    return "a Python pickle, such as a CUDA memory snapshot (torch.cuda.memory._dump_snapshot), not a trace";
  if (starts(head, "\x1f\x8b")) return "gzip data that does not decompress to JSON";
  if (has(head, "NCCL INFO") || has(head, "NCCL WARN"))
    return "an NCCL debug log (NCCL_DEBUG=INFO), not a trace: record the job with torch.profiler";
  if (starts(head, "# gpu") || (has(head, "# Idx") && has(head, "pwr")) || has(head, "utilization.gpu") || starts(head, "top - "))
    return "a monitoring log (nvidia-smi or top): `stepscope triage` reads it";
  if (has(head, "Start") && has(head, "Duration") && has(head, ","))
    return "a CSV report of `nsys stats`, not a trace: export the report itself with `nsys export --type sqlite`";
  if (starts(head, "SQLite format 3"))
    return "an SQLite database that is not an Nsight Systems export";
  return "";
}

std::string what_object_is(const std::vector<std::string>& keys) {
  if (has_key(keys, "nodes") && has_key(keys, "schema"))
    return "a PyTorch execution trace (ExecutionTraceObserver), not a profiler trace: pass the torch.profiler trace "
           "recorded beside it";
  for (const auto& k : keys)
    if (starts(k, "rocprofiler"))
      return "a rocprofv3 (rocprofiler-sdk) JSON, not a PyTorch profiler trace: record the job with torch.profiler, "
             "which writes ROCm traces too";
  if (has_key(keys, "segments") || has_key(keys, "device_traces"))
    return "a CUDA memory snapshot written as JSON: pass the pickle torch.cuda.memory._dump_snapshot writes";
  std::string listed;
  for (std::size_t i = 0; i < keys.size() && i < 4; ++i) listed += (i ? ", " : "") + std::string("\"") + keys[i] + "\"";
  return keys.empty() ? "an empty JSON object" : "a JSON object with keys " + listed + (keys.size() > 4 ? ", ..." : "");
}

std::string what_array_is(char first_element) {
  if (first_element == '[')
    return "a JSON array of rows, such as torch.profiler's export_memory_timeline output, not a trace";
  return "";
}

std::string not_a_profiler_trace(const RankTrace& t) {
  std::vector<StrId> categories;
  std::size_t timed = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Phase ph = t.events.phase[i];
    if (ph == Phase::Metadata || ph == Phase::Counter) continue;
    const Kind k = t.events.kind[i];
    if (k != Kind::Other && k != Kind::Flow && k != Kind::TraceSpan && k != Kind::Overhead) return "";
    ++timed;
    const StrId c = t.events.category[i];
    if (c != kNoStr && categories.size() < 3 && std::find(categories.begin(), categories.end(), c) == categories.end())
      categories.push_back(c);
  }
  if (timed == 0) return "";
  std::string cats;
  for (StrId c : categories) cats += (cats.empty() ? "\"" : ", \"") + std::string(t.str(c)) + "\"";
  return fmt::format("a Chrome trace, but not a profiler's: its {} events ({}) hold no PyTorch op, runtime call, GPU "
                     "record or annotation; stepscope reads torch.profiler (Kineto) traces and Nsight Systems exports",
                     timed, cats.empty() ? std::string("no category") : "categories " + cats);
}

}  // namespace stepscope::ingest
