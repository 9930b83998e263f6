// Reader behaviour on hand-written traces: layouts, time parsing, ranks, bad and cut-off input.
#include <gtest/gtest.h>

#include "model_compare.hpp"
#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"
#include "test_util.hpp"

namespace stepscope {
namespace {

std::string kineto(const std::string& events, const std::string& extra = "") {
  return "{\"schemaVersion\": 1," + extra + " \"traceEvents\": [" + events + "], \"traceName\": \"t\"}";
}

std::string x_event(const std::string& name, const std::string& ts, const std::string& dur,
                    const std::string& cat = "cpu_op", int pid = 1, int tid = 1) {
  return "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"pid\": " +
         std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + ts +
         ", \"dur\": " + dur + ", \"args\": {\"External id\": 7}}";
}

// The message of the InputError `f` throws, or "" if it throws none.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Reader, KinetoObjectWithMetadataAndArgs) {
  std::string json = kineto(
      x_event("ProfilerStep#3", "100", "50", "user_annotation") + "," +
          "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 110.5, "
          "\"dur\": 2.25, \"args\": {\"correlation\": 42, \"stream\": 7, \"device\": 0, \"grid\": [4, 1, 1], "
          "\"block\": [128, 1, 1], \"est. achieved occupancy %\": 50}}," +
          "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, "
          "\"ts\": 105, \"dur\": 3, \"args\": {\"correlation\": 42}}," +
          "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", \"pid\": 0, "
          "\"tid\": 7, \"ts\": 120, \"dur\": 4, \"args\": {\"correlation\": 43, \"stream\": 7, \"bytes\": 4096}}," +
          "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": \"python main\"}}," +
          "{\"ph\": \"C\", \"name\": \"mem\", \"pid\": 1, \"tid\": 1, \"ts\": 130, \"args\": {\"a\": 1.5, \"b\": 2}}," +
          "{\"ph\": \"s\", \"cat\": \"ac2g\", \"name\": \"\", \"id\": 42, \"pid\": 1, \"tid\": 1, \"ts\": 105}",
      "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 8}, "
      "\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100\", \"computeMajor\": 9, \"numSms\": 132}],"
      "\"baseTimeNanoseconds\": 1711964646000000000,");
  RankTrace t = read_kineto_buffer(json, "mem");
  ASSERT_EQ(t.events.size(), 4u);  // the ac2g flow is counted, not stored
  EXPECT_EQ(t.distributed.rank, 3);
  EXPECT_EQ(t.distributed.world_size, 8);
  EXPECT_EQ(t.distributed.backend, "nccl");
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H100");
  EXPECT_EQ(t.devices[0].num_sms, 132);
  EXPECT_EQ(t.base_time_ns, 1711964646000000000);
  EXPECT_EQ(t.trace_name, "t");
  EXPECT_EQ(t.events.ts[1], 110500);
  EXPECT_EQ(t.events.dur[1], 2250);
  EXPECT_EQ(t.events.kind[1], Kind::Kernel);
  ASSERT_NE(t.kernel_args_of(1), nullptr);
  EXPECT_EQ(t.kernel_args_of(1)->block[0], 128);
  EXPECT_DOUBLE_EQ(t.kernel_args_of(1)->est_occupancy_pct, 50);
  EXPECT_EQ(t.events.copy_kind[3], CopyKind::HtoD);
  EXPECT_EQ(t.events.host_mem[3], HostMem::Pageable);
  EXPECT_EQ(t.bytes_of(3), 4096);
  EXPECT_EQ(t.thread_names.at(1), "python main");
  EXPECT_EQ(t.counters.size(), 2u);
  EXPECT_EQ(t.correlations.launch(42), 2u);
  ASSERT_EQ(t.correlations.gpu(42).size(), 1u);
  EXPECT_EQ(t.correlations.gpu(42)[0], 1u);
  ASSERT_EQ(t.gpu_tracks.size(), 1u);
  EXPECT_EQ(t.gpu_tracks[0].events.size(), 2u);
  ASSERT_EQ(t.launch_flow_counts.size(), 1u);
  EXPECT_EQ(t.str(t.launch_flow_counts.begin()->first), "ac2g");
  EXPECT_EQ(t.launch_flow_counts.begin()->second, 1u);
}

TEST(Reader, LegacyArrayWithStringPid) {
  std::string json =
      "[{\"name\": \"ProfilerStep#1\", \"ph\": \"X\", \"ts\": 155, \"dur\": 38960, \"tid\": 1, "
      "\"pid\": \"CPU functions\", \"args\": {}},"
      "{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 160, \"dur\": 10, \"tid\": 1, \"pid\": \"CPU functions\", \"args\": {}}]";
  RankTrace t = read_kineto_buffer(json, "legacy");
  EXPECT_EQ(t.layout, TraceLayout::LegacyArray);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events.kind[0], Kind::CpuOp);
  ASSERT_TRUE(is_string_track_id(t.events.pid(0)));
  EXPECT_EQ(t.str(track_string(t.events.pid(0))), "CPU functions");
  ASSERT_EQ(t.host_tracks.size(), 1u);
  EXPECT_EQ(t.host_tracks[0].events.size(), 2u);
}

TEST(Reader, BeginEndPairsBecomeOneEvent) {
  std::string json = kineto(
      "{\"ph\": \"B\", \"name\": \"outer\", \"cat\": \"user_annotation\", \"pid\": 1, \"tid\": 2, \"ts\": 10},"
      "{\"ph\": \"B\", \"name\": \"inner\", \"cat\": \"user_annotation\", \"pid\": 1, \"tid\": 2, \"ts\": 12},"
      "{\"ph\": \"E\", \"pid\": 1, \"tid\": 2, \"ts\": 15},"
      "{\"ph\": \"E\", \"pid\": 1, \"tid\": 2, \"ts\": 30}");
  RankTrace t = read_kineto_buffer(json, "be");
  EXPECT_EQ(t.events.phase[0], Phase::Complete);
  EXPECT_EQ(t.events.dur[0], 20000);
  EXPECT_EQ(t.events.dur[1], 3000);
  EXPECT_TRUE(t.warnings.empty());
}

TEST(Reader, NegativeThreadIdsStayNumbers) {
  RankTrace t = read_kineto_buffer(kineto(x_event("a", "1", "1", "cpu_op", 5, -1029147072)), "neg");
  EXPECT_FALSE(is_string_track_id(t.events.tid(0)));
  EXPECT_EQ(t.events.tid(0), -1029147072);
}

TEST(BadInput, EachCaseGivesOneClearError) {
  EXPECT_NE(error_of([] { read_kineto_buffer("hello", "x.json"); }).find("not JSON"), std::string::npos);
  EXPECT_NE(error_of([] { read_kineto_buffer("", "x.json"); }).find("empty file"), std::string::npos);
  EXPECT_NE(error_of([] { read_kineto_buffer("  \n ", "x.json"); }).find("empty file"), std::string::npos);
  EXPECT_NE(error_of([] { read_kineto_buffer("{\"foo\": 1}", "x.json"); }).find("no \"traceEvents\""),
            std::string::npos);
  EXPECT_NE(error_of([] { read_kineto_buffer("{\"traceEvents\": []}", "x.json"); }).find("no events"),
            std::string::npos);
  EXPECT_NE(error_of([] { read_kineto_buffer("{\"traceEvents\": {}}", "x.json"); }).find("not an array"),
            std::string::npos);
  EXPECT_NE(error_of([] { read_kineto_buffer("{\"traceEvents\": [1, 2]}", "x.json"); }).find("event 0 is not a JSON object"),
            std::string::npos);
  std::string bad_ts = kineto(x_event("a", "1", "1") + ",{\"ph\": \"X\", \"name\": \"b\", \"ts\": \"soon\", \"pid\": 1, \"tid\": 1}");
  std::string msg = error_of([&] { read_kineto_buffer(bad_ts, "x.json"); });
  EXPECT_NE(msg.find("x.json: event 1 (byte"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"ts\" is not a number"), std::string::npos) << msg;
  std::string bad_name = kineto("{\"ph\": \"X\", \"name\": 5, \"ts\": 1, \"pid\": 1, \"tid\": 1}");
  EXPECT_NE(error_of([&] { read_kineto_buffer(bad_name, "x.json"); }).find("\"name\" is not a string"),
            std::string::npos);
  std::string bad_pid = kineto("{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"pid\": [1], \"tid\": 1}");
  EXPECT_NE(error_of([&] { read_kineto_buffer(bad_pid, "x.json"); }).find("\"pid\""), std::string::npos);
  std::string broken = kineto(x_event("a", "1", "1") + ",{\"ph\": \"X\", \"name\": \"b\" \"ts\": 1}");
  EXPECT_NE(error_of([&] { read_kineto_buffer(broken, "x.json"); }).find("event 1"), std::string::npos);
  EXPECT_NE(error_of([] { read_kineto_buffer("{\"traceEvents\": [{\"ph\": \"X\"}]} junk", "x.json"); })
                .find("after the end"),
            std::string::npos);
}

TEST(BadInput, PathsAndRanks) {
  EXPECT_NE(error_of([] { read_traces({"/nonexistent/trace.json"}); }).find("no such file"), std::string::npos);
  TempDir empty;
  empty.file("notes.txt", "hi");
  EXPECT_NE(error_of([&] { read_traces({empty.path()}); }).find("no *.json"), std::string::npos);
  EXPECT_NE(error_of([] { read_traces({}); }).find("no trace given"), std::string::npos);
  TempDir dup;
  std::string one = kineto(x_event("a", "1", "1"), "\"distributedInfo\": {\"rank\": 0},");
  dup.file("a.json", one);
  dup.file("b.json", one);
  EXPECT_NE(error_of([&] { read_traces({dup.path()}); }).find("are both rank 0"), std::string::npos);
}

TEST(Ranks, ADirectorysOtherJsonIsNotARank) {
  TempDir d;
  d.file("worker.json", kineto(x_event("a", "1", "1")));
  // Large enough that only reading it whole shows it holds no trace.
  std::string truth = "{\"scenario\": \"input-bound\", \"steps\": [";
  for (int i = 0; i < 60000; ++i) truth += (i ? ", " : "") + std::to_string(i);
  d.file("ground_truth.json", truth + "]}");
  d.file("broken.json", "{\"traceEvents\": [{\"ph\": \"X\" \"name\": 1}]}");
  EXPECT_NE(error_of([&] { read_traces({d.path()}); }).find("broken.json"), std::string::npos);
  std::filesystem::remove(std::filesystem::path(d.path()) / "broken.json");
  Trace t = read_traces({d.path()});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_NE(t.ranks[0].path.find("worker.json"), std::string::npos);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], (IngestWarning{WarningId::NotTracesSkipped, {}, {"ground_truth.json"}}));
  EXPECT_EQ(ingest_warning_text(t.warnings[0]), "skipped 1 JSON file that holds no trace: ground_truth.json");
  // Named on its own, or alone in a directory, it is an error.
  EXPECT_NE(error_of([&] { read_traces({d.path() + "/ground_truth.json"}); }).find("not a trace"), std::string::npos);
  std::filesystem::remove(std::filesystem::path(d.path()) / "worker.json");
  EXPECT_NE(error_of([&] { read_traces({d.path()}); }).find("no trace among the directory's files"), std::string::npos);
}

TEST(Ranks, FromDistributedInfoFileNameAndOrder) {
  TempDir d;
  d.file("rank-3.pt.trace.json", kineto(x_event("a", "1", "1")));
  d.file("rank_1.pt.trace.json", kineto(x_event("a", "1", "1")));
  d.file("worker.json", kineto(x_event("a", "1", "1"), "\"distributedInfo\": {\"rank\": 0, \"world_size\": 4},"));
  Trace t = read_traces({d.path()});
  ASSERT_EQ(t.ranks.size(), 3u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_EQ(t.ranks[0].rank_source, RankTrace::RankSource::DistributedInfo);
  EXPECT_EQ(t.ranks[1].rank, 1);
  EXPECT_EQ(t.ranks[1].rank_source, RankTrace::RankSource::FileName);
  EXPECT_EQ(t.ranks[2].rank, 3);
  EXPECT_TRUE(t.warnings.empty());

  TempDir o;
  o.file("a.json", kineto(x_event("a", "1", "1")));
  o.file("b.json.gz", gzip_bytes(kineto(x_event("a", "1", "1"))));
  Trace by_order = read_traces({o.path()});
  ASSERT_EQ(by_order.ranks.size(), 2u);
  EXPECT_EQ(by_order.ranks[1].rank, 1);
  EXPECT_EQ(by_order.ranks[1].rank_source, RankTrace::RankSource::FileOrder);
  EXPECT_EQ(by_order.warnings, (std::vector<IngestWarning>{{WarningId::RanksInFileOrder, {}, {}}}));
}

TEST(Ranks, ARankNumberTooLargeInTheFileNameNamesNoRank) {
  TempDir d;
  d.file("rank99999999999.json", kineto(x_event("a", "1", "1")));
  Trace t = read_traces({d.path()});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_EQ(t.ranks[0].rank_source, RankTrace::RankSource::FileOrder);
}

TEST(Truncated, PlainFileCutMidEventKeepsCompleteEvents) {
  std::string events;
  for (int i = 0; i < 100; ++i) events += (i ? "," : "") + x_event("op" + std::to_string(i), std::to_string(i * 10), "5");
  std::string json = kineto(events);
  std::size_t cut = json.find("op57") + 2;
  TempDir d;
  RankTrace t = read_kineto_file(d.file("cut.json", json.substr(0, cut)));
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(t.events.size(), 57u);
  EXPECT_GT(t.bytes_lost, 0u);
  ASSERT_FALSE(t.warnings.empty());
  EXPECT_EQ(t.warnings[0], (IngestWarning{WarningId::FileCutOff, {57, t.bytes_lost}, {}}));
}

TEST(Truncated, GzipCutMidStreamKeepsCompleteEvents) {
  std::string json = gunzip_file(fixture("hta/df_index_resolver/df_index_resolver.json.gz"));
  std::string gz = gzip_bytes(json);
  TempDir d;
  RankTrace whole = read_kineto_file(d.file("whole.json.gz", gz));
  RankTrace cut = read_kineto_file(d.file("cut.json.gz", gz.substr(0, gz.size() / 2)));
  EXPECT_FALSE(whole.truncated);
  EXPECT_TRUE(cut.truncated);
  EXPECT_GT(cut.events.size(), whole.events.size() / 4);
  EXPECT_LT(cut.events.size(), whole.events.size());
  // What was kept is exactly the head of the full trace.
  for (std::size_t i = 0; i < cut.events.size(); i += 97) {
    EXPECT_EQ(cut.events.ts[i], whole.events.ts[i]);
    EXPECT_EQ(cut.name_of(i), whole.name_of(i));
  }
}

TEST(Truncated, NothingCompleteIsAnError) {
  EXPECT_NE(error_of([] { read_kineto_buffer("{\"schemaVersion\": 1, \"device", "x.json"); }).find("before any trace event"),
            std::string::npos);
}

TEST(Equivalence, PlainAndGzipGiveIdenticalModels) {
  const std::string rel = "hta/nccl_parser_config/nccl_data.json.gz";
  TempDir d;
  std::string plain = d.file("nccl_data.json", gunzip_file(fixture(rel)));
  RankTrace a = read_kineto_file(fixture(rel));
  RankTrace b = read_kineto_file(plain);
  expect_same_model(a, b);
}

TEST(Equivalence, ParallelAndSerialParsesGiveIdenticalModels) {
  const std::string path = fixture("hta/df_index_resolver/df_index_resolver.json.gz");
  IngestOptions serial, parallel;
  serial.jobs = 1;
  parallel.jobs = 3;
  expect_same_model(read_kineto_file(path, serial), read_kineto_file(path, parallel));
}

// A trace of `n` events, many runs of events long, with event `bad` giving "ts" as text.
std::string trace_with_bad_event(int n, int bad) {
  std::string events;
  for (int k = 0; k < n; ++k) {
    if (k) events += ",";
    const std::string ts = k == bad ? "\"soon\"" : std::to_string(10 * k);
    events += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op" + std::to_string(k % 7) + "\", \"ts\": " + ts +
              ", \"dur\": 5, \"pid\": 1, \"tid\": 1}";
  }
  return kineto(events);
}

// The parser's workers merge their parts in turn: a part that fails must still hand the turn on,
// or the reader would wait forever. Whichever run of events holds the bad one (the first, read
// on the calling thread; one in the middle; the last), the read ends with that event's error.
TEST(Equivalence, ParallelReadReportsABadEventInAnyPart) {
  constexpr int kEvents = 40000;  // about 4 MB: many runs of events
  IngestOptions parallel;
  parallel.jobs = 3;
  for (int bad : {3, kEvents / 2, kEvents - 2}) {
    const std::string text = trace_with_bad_event(kEvents, bad);
    const std::string msg = error_of([&] { read_kineto_buffer(text, "x.json", parallel); });
    EXPECT_NE(msg.find("x.json: event " + std::to_string(bad) + " (byte"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"ts\" is not a number"), std::string::npos) << msg;
  }
  // And without a bad event, the same model as a serial read.
  const std::string good = trace_with_bad_event(kEvents, -1);
  IngestOptions serial;
  serial.jobs = 1;
  expect_same_model(read_kineto_buffer(good, "x.json", serial), read_kineto_buffer(good, "x.json", parallel));
}

}  // namespace
}  // namespace stepscope
