// The fast event path against simdjson's reading of every event: the same model, column by
// column and side table by side table, from every Kineto fixture and from events built to leave
// the JSON subset the fast path reads; and the same error where the input is bad.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ingest/byte_source.hpp"
#include "ingest/json_chunker.hpp"
#include "ingest/kineto_events.hpp"
#include "model_compare.hpp"
#include "stepscope/error.hpp"
#include "test_util.hpp"

namespace stepscope::ingest {
namespace {

struct Parsed {
  RankTrace trace;
  std::string error;  // the InputError's text, "" when the whole input was read
  BatchStats stats;
  std::uint64_t events = 0;  // every event of every batch
};

Parsed parse_all(const std::string& json, EventPath path, std::size_t block = std::size_t{1} << 18) {
  Parsed out;
  auto src = memory_byte_source(json);
  JsonChunker chunker(*src, "t.json", block);
  const auto parser = make_event_parser(path);
  EventBatch batch;
  try {
    while (chunker.next(batch) == ChunkState::Found) {
      out.events += batch.count();
      parser->parse(batch, chunker.layout(), "t.json", out.trace, out.stats);
    }
  } catch (const InputError& e) {
    out.error = e.what();
  }
  return out;
}

std::string text_of(const RankTrace& t, StrId id) { return id == kNoStr ? "<none>" : std::string(t.str(id)); }

void expect_same_extras(const RankTrace& a, const RankTrace& b, std::size_t i) {
  const std::optional<EventExtra> x = a.extra_of(i);
  const std::optional<EventExtra> y = b.extra_of(i);
  ASSERT_EQ(x.has_value(), y.has_value()) << "event " << i;
  if (!x) return;
  EXPECT_EQ(x->sequence_number, y->sequence_number) << i;
  EXPECT_EQ(x->fwd_thread_id, y->fwd_thread_id) << i;
  EXPECT_EQ(x->bytes, y->bytes) << i;
  EXPECT_EQ(x->total_allocated, y->total_allocated) << i;
  EXPECT_EQ(x->total_reserved, y->total_reserved) << i;
  EXPECT_EQ(x->device_type, y->device_type) << i;
  EXPECT_EQ(x->device_id, y->device_id) << i;
  EXPECT_EQ(text_of(a, x->input_dims), text_of(b, y->input_dims)) << i;
  EXPECT_EQ(text_of(a, x->input_type), text_of(b, y->input_type)) << i;
  EXPECT_EQ(x->bandwidth_gbps, y->bandwidth_gbps) << i;
  EXPECT_EQ(x->wait_on_stream, y->wait_on_stream) << i;
  EXPECT_EQ(x->wait_on_event_record_corr, y->wait_on_event_record_corr) << i;
  EXPECT_EQ(x->collective_seq, y->collective_seq) << i;
  EXPECT_EQ(text_of(a, x->process_group), text_of(b, y->process_group)) << i;
}

void expect_same_kernel_args(const RankTrace& a, const RankTrace& b, std::size_t i) {
  const KernelArgs* x = a.kernel_args_of(i);
  const KernelArgs* y = b.kernel_args_of(i);
  if (!x || !y) return;  // presence is compared by expect_same_model
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(x->grid[k], y->grid[k]) << i;
    EXPECT_EQ(x->block[k], y->block[k]) << i;
  }
  EXPECT_EQ(x->registers_per_thread, y->registers_per_thread) << i;
  EXPECT_EQ(x->shared_memory, y->shared_memory) << i;
  EXPECT_EQ(x->warps_per_sm, y->warps_per_sm) << i;
  EXPECT_EQ(x->blocks_per_sm, y->blocks_per_sm) << i;
  EXPECT_EQ(x->est_occupancy_pct, y->est_occupancy_pct) << i;
}

// Both paths read `json` alike: the same error, or the same model in every column and table.
void expect_same_reading(const std::string& json, std::size_t block = std::size_t{1} << 18) {
  const Parsed fast = parse_all(json, EventPath::Fast, block);
  const Parsed reference = parse_all(json, EventPath::Simdjson, block);
  ASSERT_EQ(fast.error, reference.error);
  if (!fast.error.empty()) return;
  expect_same_model(fast.trace, reference.trace);
  for (std::size_t i = 0; i < fast.trace.events.size(); ++i) {
    expect_same_extras(fast.trace, reference.trace, i);
    expect_same_kernel_args(fast.trace, reference.trace, i);
  }
  ASSERT_EQ(fast.trace.counters.size(), reference.trace.counters.size());
  for (std::size_t i = 0; i < fast.trace.counters.size(); ++i) {
    const CounterSample& x = fast.trace.counters[i];
    const CounterSample& y = reference.trace.counters[i];
    EXPECT_EQ(x.ts, y.ts);
    EXPECT_EQ(text_of(fast.trace, x.name), text_of(reference.trace, y.name));
    EXPECT_EQ(text_of(fast.trace, x.series), text_of(reference.trace, y.series));
    EXPECT_EQ(x.value, y.value);
  }
  EXPECT_EQ(fast.trace.process_names, reference.trace.process_names);
}

std::string trace_of(const std::vector<std::string>& events) {
  std::string json = R"({"schemaVersion": 1, "traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) json += (i ? ",\n  " : "") + events[i];
  return json + "]}";
}

TEST(EventPath, EveryKinetoFixtureReadsTheSame) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(STEPSCOPE_FIXTURES_DIR)) {
    const std::string path = entry.path().string();
    const bool json = path.ends_with(".json") || path.ends_with(".json.gz");
    if (!entry.is_regular_file() || !json || path.find("rocprof") != std::string::npos) continue;
    SCOPED_TRACE(path);
    expect_same_reading(gunzip_file(path));
    ++files;
  }
  EXPECT_GT(files, 40u);
}

TEST(EventPath, RecordedGpuTracesReadTheSame) {
  for (const char* name : {"launch_bound", "sync_each_layer", "checkpoint_every_2nd"}) {
    SCOPED_TRACE(name);
    expect_same_reading(gunzip_file(std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/" + name +
                                    ".pt.trace.json.gz"));
  }
}

// The agreement above would hold as well if the fast path gave every event up: it must read a
// PyTorch trace itself, all of it (Kineto writes nothing outside the subset), and the reference
// path none.
TEST(EventPath, TheFastPathReadsEveryEventOfAPyTorchTrace) {
  const std::string json =
      gunzip_file(std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/launch_bound.pt.trace.json.gz");
  const Parsed fast = parse_all(json, EventPath::Fast);
  const Parsed reference = parse_all(json, EventPath::Simdjson);
  ASSERT_GT(fast.events, 10000u);
  EXPECT_EQ(fast.stats.fast_events, fast.events);
  EXPECT_EQ(reference.stats.fast_events, 0u);
}

// Each event leaves the fast path's subset in one way (or sits at its edge); the reading must
// not change, whichever path ends up reading it.
TEST(EventPath, EventsAtAndPastTheSubsetsEdgesReadTheSame) {
  const std::vector<std::string> events = {
      R"({"ph": "X", "cat": "cpu_op", "name": "a\"quoted\" name", "pid": 1, "tid": 1, "ts": 1, "dur": 2})",
      R"({"ph": "X", "cat": "cpu_op", "name": "caf\u00e9 \\ back", "pid": 1, "tid": 1, "ts": 1, "dur": 2})",
      R"({"ph": "X", "cat": "cpu_op", "name": "café ünïcode ✓", "pid": 1, "tid": 1, "ts": 1, "dur": 2})",
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5e3,"dur":-0,"args":{"correlation":7.9,"stream":1e2,"device":-0}})",
      R"({"ph": "X", "cat": "kernel", "name": "big", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
          "args": {"correlation": 123456789012345678901234, "External id": -9223372036854775808, "stream": 9.3e18}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "labels", "pid": "Spans", "tid": 9223372036854775807, "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "cpu_op", "name": "neg", "pid": -3, "tid": 4611686018427387904, "ts": -2.5, "dur": 0.001})",
      R"({"args": {"Total Allocated": 10}, "ph": "C", "name": "late phase", "pid": 1, "tid": 1, "ts": 3})",
      R"({"ph": "C", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3, "args": {"a": 1, "b": 2.5, "c": "x", "d": [1], "e": 1e-400}})",
      R"({"ph": "M", "name": "process_name", "pid": 5, "tid": 0, "args": {"name": "python3 \"main\""}})",
      R"({"ph": "M", "name": "thread_name", "pid": 5, "tid": 6, "args": {"name": "worker ✓"}})",
      R"({"ph": "X", "cat": "kernel", "name": "grid", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
          "args": {"grid": [1, "x", [2], 3, 4], "block": 5, "registers per thread": 3e9, "shared memory": "n",
                   "warps per SM": 1, "blocks per SM": true, "est. achieved occupancy %": null}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "dims", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
          "args": {"Input Dims": [[1, 2], [], [[3]]], "Input type": ["float", "c10::BFloat16"], "Sequence number": 4,
                   "Fwd thread id": 0, "Process Group Name": "0", "Seq": 2, "Device Type": 1, "Device Id": 0}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "dims as object", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
          "args": {"Input Dims": {"x": 1}, "Input type": "plain"}})",
      R"({"ph": "X", "cat": "cpu_op", "name": "nested", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "extra": {"a": [{"b": [true, false, null]}]},
          "args": {"deep": {"x": {"y": [1, {"z": "w"}]}}, "name": "not metadata"}})",
      R"({"ph": "s", "id": 17, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 1, "bp": "e"})",
      R"({"ph": "f", "id": 1.5e1, "cat": "async_cpu_to_gpu", "name": "flow", "pid": 1, "tid": 1, "ts": 2})",
      R"j({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 1, "dur": 5,
          "args": {"bytes": 1048576, "memory bandwidth (GB/s)": 12.5, "wait_on_stream": 3, "wait_on_cuda_event_record_corr_id": 9}})j",
      R"({"ph": "X", "cat": "cpu_op", "name": "dup keys", "name": "second", "pid": 1, "tid": 1, "ts": 1, "ts": 2, "dur": 1})",
      R"({ "ph" : "X" , "cat" : "cpu_op" , "name" : "spaced" , "pid" : 1 , "tid" : 1 , "ts" : 1 , "dur" : 1 , "args" : { } })",
      R"({"ph": "X", "name": "no cat", "pid": 1, "tid": 1, "ts": 1})",
      R"({"ph": "i", "cat": "cpu_instant_event", "name": "instant", "pid": 1, "tid": 1, "ts": 1e400})",
      R"({"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1})",
      R"({})",
  };
  // One event a trace, so that an event the fast path leaves cannot hide behind another's error;
  // then all of them together.
  for (const auto& e : events) {
    SCOPED_TRACE(e);
    expect_same_reading(trace_of({e}));
  }
  expect_same_reading(trace_of(events));
}

TEST(EventPath, BadEventsFailAlikeAndBadSeparatorsFail) {
  for (const std::string& bad : {
           std::string(R"({"ph": 1, "name": "x", "pid": 1, "tid": 1, "ts": 1})"),
           std::string(R"({"ph": "X", "name": 3, "pid": 1, "tid": 1, "ts": 1})"),
           std::string(R"({"ph": "X", "cat": ["cpu_op"], "name": "x", "pid": 1, "tid": 1, "ts": 1})"),
           std::string(R"({"ph": "X", "name": "x", "pid": true, "tid": 1, "ts": 1})"),
           std::string(R"({"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": "1"})"),
           std::string(R"({"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 01})"),
           std::string(R"({"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 1, "dur": 1.})"),
           std::string(R"({"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 1, "args": [1]})"),
           std::string(R"({"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 1, "args": {"a" 1}})"),
           std::string(R"({"ph": "X", "name": "x" "pid": 1, "tid": 1, "ts": 1})"),
           std::string(R"({"name": "no phase", "pid": 1, "tid": 1, "ts": 1})"),
           std::string("{\"ph\": \"X\", \"name\": \"bad \xff utf8\", \"pid\": 1, \"tid\": 1, \"ts\": 1}"),
           std::string("{\"ph\": \"X\", \"name\": \"tab\tinside\", \"pid\": 1, \"tid\": 1, \"ts\": 1}"),
       }) {
    SCOPED_TRACE(bad);
    const std::string json = trace_of({R"({"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 1})", bad});
    expect_same_reading(json);
  }
  // Text between two events that is not one comma: the fast path must not read past it.
  for (const std::string& gap : {std::string(" 1, "), std::string(",,"), std::string(" "), std::string(", 2 ,")}) {
    SCOPED_TRACE(gap);
    const std::string json = R"({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1})" + gap +
                             R"({"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2}]})";
    const Parsed fast = parse_all(json, EventPath::Fast);
    const Parsed reference = parse_all(json, EventPath::Simdjson);
    EXPECT_FALSE(fast.error.empty());
    EXPECT_EQ(fast.error, reference.error);
  }
}

TEST(EventPath, SmallReadBlocksReadTheSame) {
  // Events cut across read blocks reach the parser whole; each block size moves the cuts.
  const std::string json = gunzip_file(fixture("hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"));
  for (std::size_t block : {std::size_t{64}, std::size_t{1000}, std::size_t{4096}}) {
    SCOPED_TRACE(block);
    expect_same_reading(json, block);
  }
}

}  // namespace
}  // namespace stepscope::ingest
