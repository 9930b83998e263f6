// Inputs and outputs that must never crash the tool or destroy a file: each test writes its
// reproducing input, runs the CLI or the library on it, and checks the outcome and the files.
#include <gtest/gtest.h>

#include "cli_run.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <nlohmann/json.hpp>

#include "stepscope/analysis.hpp"
#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/output_file.hpp"
#include "stepscope/pipeline.hpp"

namespace stepscope {
namespace {
namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class Scratch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt_name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  std::string trace(const std::string& name, const nlohmann::json& events) const {
    return write(name, nlohmann::json{{"traceEvents", events}}.dump());
  }
  static std::string read(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
  }

 private:
  static std::string fmt_name() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string("stepscope_reliability_") + info->name() + "_" + std::to_string(::getpid());
  }
  fs::path dir_;
};

nlohmann::json one_step_events(nlohmann::json pid = 1, nlohmann::json tid = 1) {
  return nlohmann::json::array({
      {{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#1"}, {"pid", pid}, {"tid", tid}, {"ts", 0}, {"dur", 100}},
      {{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::add"}, {"pid", pid}, {"tid", tid}, {"ts", 10}, {"dur", 50}},
  });
}

using OutputSafety = Scratch;

TEST_F(OutputSafety, AnOutputOntoAnInputIsRefusedAndTheInputKept) {
  const std::string in = trace("t.json", one_step_events());
  const std::string before = read(in);
  fs::create_symlink(in, path("link.json"));
  fs::create_directories(path("ranks"));
  const std::string rank = trace("ranks/r0.json", one_step_events());
  for (const std::string& args : {"--json " + in + " " + in, "--html " + path("link.json") + " " + in,
                                 "--json " + rank + " " + path("ranks")}) {
    const CliRun r = cli("analyze -q " + args);
    EXPECT_EQ(r.rc, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find("refusing to overwrite"), std::string::npos) << r.output;
  }
  EXPECT_EQ(read(in), before);
  EXPECT_EQ(read(rank), before);
}

TEST_F(OutputSafety, TwoOutputsOnOneFileAreRefused) {
  const std::string in = trace("t.json", one_step_events());
  const CliRun r = cli("analyze -q --json " + path("out.json") + " --html " + path("./out.json") + " " + in);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_FALSE(fs::exists(path("out.json")));
}

TEST_F(OutputSafety, AFailedWriteLeavesTheOldFileWholeAndNoTemporary) {
  const std::string target = write("report.json", "the old report");
  {
    OutputFile f(target, "JSON report");
    f.write("half of a new rep");
  }  // destroyed without commit(): as after a failed write
  EXPECT_EQ(read(target), "the old report");
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(path(""))) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  write_output(target, "the new report", "JSON report");
  EXPECT_EQ(read(target), "the new report");
}

TEST_F(OutputSafety, AReportToAFullDeviceExitsNonZero) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string in = trace("t.json", one_step_events());
  EXPECT_EQ(cli("analyze -q " + in + " > /dev/full").rc, 2);
  EXPECT_EQ(cli("analyze -q --json - " + in + " > /dev/full").rc, 2);
}

TEST_F(OutputSafety, AnnotateToStandardOutputIsRefusedWithoutAFileNamedDash) {
  const std::string in = trace("t.json", one_step_events());
  const CliRun r = cli("analyze -q --annotate - " + in);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_FALSE(fs::exists("-"));
}

TEST_F(OutputSafety, AnOutputNamedLikeAnOptionIsRefused) {
  const std::string in = trace("t.json", one_step_events());
  const CliRun r = cli("analyze -q --json -j2 " + in);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("--json -j2: looks like an option"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists("-j2"));
  EXPECT_EQ(cli("analyze -q --json " + path("-j2") + " " + in).rc, 0);
  EXPECT_TRUE(fs::exists(path("-j2")));
}

// The calculators and watch take --json [FILE] too: a negative number after it is no file name.
TEST_F(OutputSafety, PlanAndWatchRefuseAnOutputNamedLikeAnOption) {
  for (const char* command : {"plan roofline --gemm 4096,4096,4096 --json -1", "watch --no-gpu --json -1"}) {
    SCOPED_TRACE(command);
    const CliRun r = cli(command);
    EXPECT_EQ(r.rc, 2) << r.output;
    EXPECT_NE(r.output.find("--json -1: looks like an option"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists("-1"));
  }
  EXPECT_EQ(cli("plan roofline --gemm 4096,4096,4096 --json " + path("-1")).rc, 0);
  EXPECT_TRUE(fs::exists(path("-1")));
}

using StreamInput = Scratch;

TEST_F(StreamInput, APipeReadsLikeTheFileButCannotBeAnnotated) {
  const std::string in = trace("t.json", one_step_events());
  const CliRun file = cli("analyze -q " + in);
  // stdin is a pipe: read once, sniffed and parsed from its copy.
  const CliRun piped = cli("analyze -q /dev/stdin", in);
  EXPECT_EQ(piped.rc, 0) << piped.output;
  EXPECT_EQ(piped.output, file.output);
  const CliRun annotate = cli("analyze -q --annotate " + path("a.json") + " /dev/stdin", in);
  EXPECT_EQ(annotate.rc, 2) << annotate.output;
  EXPECT_NE(annotate.output.find("cannot be read twice"), std::string::npos) << annotate.output;
}

using ExtremeInput = Scratch;

TEST_F(ExtremeInput, HugePidsAndTidsAreTracksNotStringIds) {
  // 2^62 and above is where interned labels live; a number there is kept by its text.
  nlohmann::json events = one_step_events(std::numeric_limits<std::int64_t>::max(), std::int64_t{1} << 62);
  events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::mul"}, {"pid", 18446744073709551615ull},
                    {"tid", std::numeric_limits<std::int64_t>::min()}, {"ts", 20}, {"dur", 5}});
  const std::string in = trace("t.json", events);
  for (const char* jobs : {"-j 1", "-j 2"}) {
    const CliRun r = cli(std::string("analyze -q ") + jobs + " " + in);
    EXPECT_EQ(r.rc, 0) << r.output;
  }
  const Trace t = read_traces({in});
  ASSERT_EQ(t.ranks.size(), 1u);
  const RankTrace& rank = t.ranks[0];
  ASSERT_EQ(rank.host_tracks.size(), 2u);
  std::set<std::string> pids;
  for (const auto& tr : rank.host_tracks) {
    ASSERT_TRUE(is_string_track_id(tr.pid));
    pids.insert(std::string(rank.str(track_string(tr.pid))));
  }
  EXPECT_EQ(pids, (std::set<std::string>{"9223372036854775807", "18446744073709551615"}));
}

TEST_F(ExtremeInput, TimesBeyondAnyProfileAreSkippedWithAWarning) {
  nlohmann::json events = one_step_events();
  events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::mul"}, {"pid", 1}, {"tid", 1},
                    {"ts", 5'000'000'000'000'000LL}, {"dur", 10}});  // 5e18 ns: past 2^62
  const Trace t = read_traces({trace("t.json", events)});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_EQ(t.ranks[0].events.size(), 2u);
  EXPECT_EQ(t.ranks[0].warnings, (std::vector<IngestWarning>{{WarningId::TimeOutOfRange, {1}, {}}}));
}

TEST_F(ExtremeInput, ARankBeyondTheIntRangeIsRefusedNamingTheFile) {
  // 2^32 would wrap to rank 0 in an int and clash with the real rank 0.
  const std::string in = write("r.json", nlohmann::json{{"distributedInfo", {{"rank", 4294967296LL}}},
                                                        {"traceEvents", one_step_events()}}
                                             .dump());
  const CliRun r = cli("analyze -q " + in);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find(in + ": distributedInfo rank 4294967296 is out of range"), std::string::npos) << r.output;
}

TEST_F(ExtremeInput, ThreadCountsBeyondTheLimitAreRefused) {
  const std::string in = trace("t.json", one_step_events());
  const CliRun r = cli("analyze -q -j 100000 " + in);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("--jobs 100000"), std::string::npos) << r.output;
  PipelineOptions po;
  po.ingest.jobs = kMaxJobs + 1;
  EXPECT_THROW(analyze_paths({in}, po), InputError);
  po.ingest.jobs = kMaxJobs;
  po.analyze.jobs = kMaxJobs;
  EXPECT_NO_THROW(analyze_paths({in}, po));
}

}  // namespace
}  // namespace stepscope
