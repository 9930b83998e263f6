// The annotated trace reads back through stepscope's own reader with every original event
// unchanged plus stepscope's slices, and the partition slices of each step tile its window.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <map>

#include "html/support.hpp"
#include "stepscope/annotate.hpp"
#include "stepscope/error.hpp"

namespace stepscope {
namespace {

using namespace html_test;

struct Added {
  std::vector<std::size_t> events;                  // indexes of the cat "stepscope" events
  std::map<std::string, std::vector<std::size_t>> by_track;  // thread name -> events
};

Added added_events(const RankTrace& t) {
  Added a;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.str(t.events.category[i]) != "stepscope") continue;
    a.events.push_back(i);
    auto name = t.thread_names.find(t.events.tid(i));
    std::string track = name == t.thread_names.end() ? "?" : name->second;
    // Extra lanes of a track are named "track (2)", "track (3)", ...
    if (auto p = track.find(" ("); p != std::string::npos && track.back() == ')') track.resize(p);
    a.by_track[track].push_back(i);
  }
  return a;
}

// Original events are the first rows, unchanged; stepscope's follow.
void expect_original_events_kept(const RankTrace& orig, const RankTrace& back, const AnnotatedFile& f) {
  ASSERT_EQ(back.events.size(), orig.events.size() + f.added_slices);
  for (std::size_t i = 0; i < orig.events.size(); ++i) {
    ASSERT_EQ(back.events.ts[i], orig.events.ts[i]) << i;
    ASSERT_EQ(back.events.dur[i], orig.events.dur[i]) << i;
    ASSERT_EQ(back.name_of(i), orig.name_of(i)) << i;
    ASSERT_EQ(back.events.pid(i), orig.events.pid(i)) << i;
    ASSERT_EQ(back.events.tid(i), orig.events.tid(i)) << i;
    ASSERT_EQ(back.events.correlation[i], orig.events.correlation[i]) << i;
  }
  EXPECT_EQ(back.launch_flow_counts.size(), orig.launch_flow_counts.size());
  EXPECT_EQ(back.counters.size(), orig.counters.size());
}

// The file is the original's bytes with one contiguous run inserted.
void expect_verbatim_copy(const std::string& original_bytes, const AnnotatedFile& f) {
  const std::string out = read_file(f.path);
  ASSERT_EQ(out.size(), original_bytes.size() + f.inserted_bytes);
  EXPECT_EQ(out.compare(0, f.inserted_at, original_bytes, 0, f.inserted_at), 0);
  EXPECT_EQ(out.compare(f.inserted_at + f.inserted_bytes, std::string::npos, original_bytes, f.inserted_at), 0);
}

// Slices on one thread must nest (Perfetto and chrome://tracing drop ones that cross).
void expect_tracks_nest(const RankTrace& back, const Added& a) {
  std::map<std::int64_t, std::vector<std::pair<ns_t, ns_t>>> by_tid;
  for (auto i : a.events) by_tid[back.events.tid(i)].emplace_back(back.events.ts[i], back.events.end(i));
  for (auto& [tid, v] : by_tid) {
    std::sort(v.begin(), v.end(), [](auto x, auto y) { return x.first != y.first ? x.first < y.first : x.second > y.second; });
    std::vector<ns_t> open;
    for (const auto& [start, end] : v) {
      while (!open.empty() && open.back() <= start) open.pop_back();
      EXPECT_TRUE(open.empty() || end <= open.back()) << "thread " << tid << ": a slice crosses its parent at " << start;
      open.push_back(end);
    }
  }
}

// Each step's partition slices tile its window and add up, per category, to the partition. Step
// windows can overlap (the host runs ahead of the GPU), so their slices may sit on separate lanes:
// a step's slices are the chain, on one lane, that starts at the window's start and ends at its end.
void expect_partition_tiles_steps(const RankTrace& back, const RankPartition& p, const Added& a) {
  ASSERT_TRUE(a.by_track.count("step partition"));
  std::map<std::int64_t, std::map<ns_t, std::size_t>> lanes;  // tid -> start -> event
  for (auto i : a.by_track.at("step partition")) lanes[back.events.tid(i)][back.events.ts[i]] = i;
  std::size_t used = 0;
  for (const auto& s : p.steps) {
    bool found = false;
    for (const auto& [tid, lane] : lanes) {
      CategoryTimes sum{};
      ns_t cursor = s.start;
      std::size_t n = 0;
      for (auto it = lane.find(cursor); it != lane.end() && cursor < s.end; it = lane.find(cursor)) {
        const std::size_t i = it->second;
        for (int c = 0; c < kCategoryCount; ++c)
          if (back.name_of(i) == category_label(static_cast<Category>(c))) sum[static_cast<std::size_t>(c)] += back.events.dur[i];
        cursor = back.events.end(i);
        ++n;
      }
      if (cursor != s.end || n == 0) continue;
      found = true;
      EXPECT_EQ(sum, s.ns) << s.name;
      EXPECT_EQ(total_ns(sum), s.duration()) << s.name;
      used += n;
      break;
    }
    EXPECT_TRUE(found) << s.name << ": no run of partition slices tiles the window";
  }
  EXPECT_EQ(used, a.by_track.at("step partition").size());
}

TEST(AnnotatedTrace, GpuTraceReadsBackWithTheOriginalEventsAndTheAddedTracks) {
  TempDir dir("annotate-gpu");
  const auto files = generate(dir.path, "sync-stall");
  ASSERT_EQ(files.size(), 1u);
  const Analysis a = run_pipeline(files);
  const std::string out = (dir.path / "annotated.json").string();
  const auto written = write_annotated_traces(a, out);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0].path, out);
  const RankTrace back = read_kineto_file(out);
  expect_original_events_kept(a.trace.ranks[0], back, written[0]);
  expect_verbatim_copy(read_file(files[0]), written[0]);
  const Added added = added_events(back);
  EXPECT_EQ(added.events.size(), written[0].added_slices);
  const RankPartition& p = a.result.ranks[0].partition;
  expect_partition_tiles_steps(back, p, added);
  expect_tracks_nest(back, added);
  // One slice per step on the steps track, named by the step.
  ASSERT_TRUE(added.by_track.count("steps"));
  EXPECT_EQ(added.by_track.at("steps").size(), p.steps.size());
  EXPECT_EQ(back.name_of(added.by_track.at("steps").front()).rfind(p.steps.front().name, 0), 0u);
  // The sync findings: one slice per worst sync call, starting at the call.
  ASSERT_TRUE(added.by_track.count("finding: GPU idle after sync"));
  const auto& syncs = a.result.ranks[0].gpu_timeline.syncs.worst;
  EXPECT_EQ(added.by_track.at("finding: GPU idle after sync").size(), syncs.size());
  for (auto i : added.by_track.at("finding: GPU idle after sync"))
    EXPECT_TRUE(std::any_of(syncs.begin(), syncs.end(), [&](const SyncCall& s) { return s.ts == back.events.ts[i]; }));
  // The verdict and each diagnosis finding: one slice each.
  ASSERT_TRUE(added.by_track.count("finding: diagnosis"));
  EXPECT_EQ(added.by_track.at("finding: diagnosis").size(), 1 + a.result.diagnosis.findings.size());
  // stepscope's process is one the trace did not use.
  const std::int64_t pid = back.events.pid(added.events.front());
  for (std::size_t i = 0; i < a.trace.ranks[0].events.size(); ++i) ASSERT_NE(a.trace.ranks[0].events.pid(i), pid);
  EXPECT_EQ(back.process_names.at(pid), "stepscope (rank 0)");
}

TEST(AnnotatedTrace, SeveralRanksOneFileEachWithTheStragglerMarked) {
  TempDir dir("annotate-ranks");
  const auto files = generate(dir.path, "straggler", "--ranks 4 --gzip");
  ASSERT_EQ(files.size(), 4u);
  const Analysis a = run_pipeline(files);
  ASSERT_TRUE(a.result.job.rank_comparison.straggler.has_value());
  const int straggler = *a.result.job.rank_comparison.straggler;
  const fs::path out = dir.path / "annotated";
  const auto written = write_annotated_traces(a, out.string());
  ASSERT_EQ(written.size(), 4u);
  for (std::size_t k = 0; k < 4; ++k) {
    const RankTrace& orig = a.trace.ranks[k];
    EXPECT_EQ(fs::path(written[k].path).parent_path(), out);
    EXPECT_EQ(fs::path(written[k].path).extension(), ".json");  // gzip in, plain JSON out
    const RankTrace back = read_kineto_file(written[k].path);
    EXPECT_EQ(back.distributed.rank, orig.distributed.rank);
    expect_original_events_kept(orig, back, written[k]);
    const Added added = added_events(back);
    const RankPartition& p = a.result.ranks[k].partition;
    expect_partition_tiles_steps(back, p, added);
    expect_tracks_nest(back, added);
    ASSERT_TRUE(added.by_track.count("finding: straggler"));
    const auto& marks = added.by_track.at("finding: straggler");
    std::size_t steady = 0;
    ns_t waited = 0;
    for (const auto& s : p.steps)
      if (!s.warmup) ++steady, waited += s.ns[static_cast<std::size_t>(Category::GradSyncExposed)];
    if (orig.rank == straggler) {
      EXPECT_EQ(marks.size(), steady);  // its steps, one slice each
    } else {
      ns_t total = 0;  // the others: their exposed wait, exactly
      for (auto i : marks) total += back.events.dur[i];
      EXPECT_EQ(total, waited);
      EXPECT_GT(total, 0);
    }
  }
  // The directory reads back as the same job.
  const Analysis again = run_pipeline({out.string()});
  EXPECT_EQ(again.result.diagnosis.verdict.bound, a.result.diagnosis.verdict.bound);
}

TEST(AnnotatedTrace, CpuOnlyAndRealTracesReadBack) {
  TempDir dir("annotate-real");
  for (const std::string& in : {std::string(STEPSCOPE_SOURCE_DIR) + "/examples/cpu_training_step.pt.trace.json.gz",
                               std::string(STEPSCOPE_FIXTURES_DIR) + "/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                               std::string(STEPSCOPE_FIXTURES_DIR) + "/hta/trace_file_list/inference_rank_1.json.gz",
                               std::string(STEPSCOPE_FIXTURES_DIR) + "/hta/trace_diff/control/control.json.gz"}) {
    SCOPED_TRACE(in);
    const Analysis a = run_pipeline({in});
    const std::string out = (dir.path / (fs::path(in).stem().string() + ".annotated.json")).string();
    const auto written = write_annotated_traces(a, out);
    const RankTrace back = read_kineto_file(out);
    expect_original_events_kept(a.trace.ranks[0], back, written[0]);
    const Added added = added_events(back);
    expect_partition_tiles_steps(back, a.result.ranks[0].partition, added);
    expect_tracks_nest(back, added);
  }
}

// An nsys export has no JSON to copy: its events are written from the model, in Kineto's
// categories, so they read back as the same kinds, times, tracks and correlations.
TEST(AnnotatedTrace, NsysExportIsWrittenFromTheModel) {
  TempDir dir("annotate-nsys");
  const std::string in = std::string(STEPSCOPE_FIXTURES_DIR) + "/nsys/perlmutter-cloverleaf-cuda.sqlite";
  const Analysis a = run_pipeline({in});
  const std::string out = (dir.path / "cloverleaf.json").string();
  const auto written = write_annotated_traces(a, out);
  const RankTrace back = read_kineto_file(out);
  expect_original_events_kept(a.trace.ranks[0], back, written[0]);
  for (std::size_t i = 0; i < a.trace.ranks[0].events.size(); ++i) {
    ASSERT_EQ(back.events.kind[i], a.trace.ranks[0].events.kind[i]) << i;
    ASSERT_EQ(back.events.stream[i], a.trace.ranks[0].events.stream[i]) << i;
  }
  const Added added = added_events(back);
  EXPECT_EQ(added.events.size(), written[0].added_slices);
  expect_partition_tiles_steps(back, a.result.ranks[0].partition, added);
  expect_tracks_nest(back, added);
  // Names only for the processes that hold events (the export lists the whole machine's): the
  // GPU's pid is its device number, named as the GPU, not as the host process of that pid.
  ASSERT_TRUE(back.process_names.count(0));
  EXPECT_EQ(back.process_names.at(0), "GPU 0 (NVIDIA A100-SXM4-80GB)");
  EXPECT_EQ(back.process_names.size(), 3u) << "the GPU, the host process and stepscope's";
  // A directory of exports: one JSON file per rank, named after the export.
  const auto several = write_annotated_traces(run_pipeline({in, std::string(STEPSCOPE_FIXTURES_DIR) +
                                                                     "/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"}),
                                              (dir.path / "ranks").string());
  ASSERT_EQ(several.size(), 2u);
  EXPECT_EQ(fs::path(several[0].path).filename(), "perlmutter-cloverleaf-cuda.json");
}

TEST(AnnotatedTrace, LegacyArrayLayout) {
  TempDir dir("annotate-legacy");
  const fs::path in = dir.path / "legacy.json";
  write_file(in, R"([{"name":"ProfilerStep#1","ph":"X","ts":0,"dur":100,"pid":1,"tid":1},
{"name":"aten::mm","ph":"X","ts":10,"dur":50,"pid":1,"tid":1},
{"name":"ProfilerStep#2","ph":"X","ts":100,"dur":100,"pid":1,"tid":1},
{"name":"aten::mm","ph":"X","ts":110,"dur":60,"pid":1,"tid":1}])");
  const Analysis a = run_pipeline({in.string()});
  const auto written = write_annotated_traces(a, (dir.path / "out.json").string());
  const RankTrace back = read_kineto_file(written[0].path);
  expect_original_events_kept(a.trace.ranks[0], back, written[0]);
  expect_verbatim_copy(read_file(in), written[0]);
  expect_partition_tiles_steps(back, a.result.ranks[0].partition, added_events(back));
}

TEST(AnnotatedTrace, RefusesTruncatedInputsAndGzipsGzOutputs) {
  TempDir dir("annotate-bad");
  const auto files = generate(dir.path, "cpu-input-bound");
  ASSERT_EQ(files.size(), 1u);
  std::string text = read_file(files[0]);
  const fs::path cut = dir.path / "cut.json";
  write_file(cut, text.substr(0, text.size() * 2 / 3));
  const Analysis a = run_pipeline({cut.string()});
  const fs::path out = dir.path / "out.json";
  EXPECT_THROW(write_annotated_traces(a, out.string()), InputError);
  EXPECT_FALSE(fs::exists(out));
  const Analysis whole = run_pipeline(files);
  // FILE.gz is the same annotated trace, gzipped: the reader (which detects gzip) finds the
  // same events in both.
  const fs::path plain = dir.path / "plain.json", gz = dir.path / "out.json.gz";
  write_annotated_traces(whole, plain.string());
  write_annotated_traces(whole, gz.string());
  const std::string gz_bytes = read_file(gz.string());
  ASSERT_GE(gz_bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz_bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz_bytes[1]), 0x8b);
  EXPECT_LT(gz_bytes.size(), read_file(plain.string()).size());
  EXPECT_EQ(read_kineto_file(gz.string()).events.size(), read_kineto_file(plain.string()).events.size());
  EXPECT_THROW(write_annotated_traces(whole, files[0]), InputError);  // would overwrite its input
}

}  // namespace
}  // namespace stepscope

namespace stepscope {
namespace {

int run_cli(const std::string& args) {
  const std::string cmd = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope analyze -q " + args + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(AnnotatedTrace, AnalyzeWritesTheHtmlReportAndTheAnnotatedTrace) {
  TempDir dir("annotate-cli");
  const auto files = generate(dir.path, "checkpoint");
  ASSERT_EQ(files.size(), 1u);
  const fs::path html = dir.path / "report.html", ann = dir.path / "annotated.json";
  ASSERT_EQ(run_cli(fmt::format("'{}' --html '{}' --annotate '{}'", files[0], html.string(), ann.string())), 0);
  const std::string page = read_file(html);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("id=\"step-partition-r0\""), std::string::npos);
  const RankTrace orig = read_kineto_file(files[0]), back = read_kineto_file(ann.string());
  EXPECT_GT(back.events.size(), orig.events.size());
  // Bad output paths are usage errors.
  EXPECT_EQ(run_cli(fmt::format("'{}' --html '{}'", files[0], (dir.path / "missing" / "r.html").string())), 2);
}

}  // namespace
}  // namespace stepscope
