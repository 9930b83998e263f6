// Outputs never destroy a file: whatever sits at an output's path (a link to an input, to another
// output, a device, a FIFO), and whatever a directory output will create in it.
#include <gtest/gtest.h>

#include "harness.hpp"

namespace reliability {
namespace {

struct Outputs : ::testing::Test {
  Scratch s;
  std::string trace = s / "t.json.gz";
  std::string original;
  void SetUp() override {
    fs::copy_file(example_trace(), trace);
    original = slurp(trace);
  }
  Result stepscope(const std::vector<std::string>& args) { return run(args, s.limits()); }
};

TEST_F(Outputs, CsvTableThroughALinkToTheInputIsRefused) {
  fs::create_directory(s / "tables");
  fs::create_symlink("../t.json.gz", s / "tables/kernels.csv");
  const Result r = stepscope({"analyze", "t.json.gz", "--csv", "tables", "-q"});
  EXPECT_REFUSED(r);
  EXPECT_EQ(slurp(trace), original);
}

TEST_F(Outputs, CsvTableThroughALinkToTheJsonReportIsRefused) {
  fs::create_directory(s / "tables");
  fs::create_symlink("../r.json", s / "tables/memory.csv");
  const Result r = stepscope({"analyze", "t.json.gz", "--json", "r.json", "--csv", "tables", "-q"});
  EXPECT_REFUSED(r);
  EXPECT_FALSE(fs::exists(s / "r.json"));
}

TEST_F(Outputs, CsvTableThroughALinkToAMergedSummaryIsRefused) {
  ASSERT_EQ(stepscope({"analyze", "t.json.gz", "--summary", "a.summary", "-q"}).rc, 0);
  const std::string summary = slurp(s / "a.summary");
  fs::create_directory(s / "tables");
  fs::create_symlink("../a.summary", s / "tables/kernels.csv");
  const Result r = stepscope({"merge", "a.summary", "--csv", "tables", "-q"});
  EXPECT_REFUSED(r);
  EXPECT_EQ(slurp(s / "a.summary"), summary);
}

TEST_F(Outputs, AnInputUnderATableNameIsRefused) {
  fs::create_directory(s / "tables");
  fs::copy_file(trace, s / "tables/kernels.csv");
  const Result r = stepscope({"analyze", "tables/kernels.csv", "--csv", "tables", "-q"});
  EXPECT_REFUSED(r);
  EXPECT_EQ(slurp(s / "tables/kernels.csv"), original);
}

TEST_F(Outputs, AnnotatedRankThroughALinkToAnInputIsRefused) {
  fs::create_directory(s / "run");
  fs::copy_file(trace, s / "run/rank0.json.gz");
  fs::copy_file(trace, s / "run/rank1.json.gz");
  fs::create_directory(s / "ann");
  fs::create_symlink("../run/rank1.json.gz", s / "ann/rank1.json");
  const Result r = stepscope({"analyze", "run", "--annotate", "ann", "-q"});
  EXPECT_REFUSED(r);
  EXPECT_EQ(slurp(s / "run/rank1.json.gz"), original);
}

TEST_F(Outputs, ADanglingLinkHasItsTargetCreated) {
  fs::create_symlink("made.json", s / "link.json");
  const Result r = stepscope({"analyze", "t.json.gz", "--json", "link.json", "-q"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(s / "link.json"));
  EXPECT_TRUE(fs::is_regular_file(s / "made.json"));
}

TEST_F(Outputs, DevicesAreWrittenInPlace) {
  const Result r = stepscope({"analyze", "t.json.gz", "--json", "/dev/null", "--html", "/dev/null", "-q"});
  EXPECT_EQ(r.rc, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(Outputs, DevStdoutReceivesTheReportAlone) {
  const Result r = stepscope({"analyze", "t.json.gz", "--json", "/dev/stdout", "-q"});
  EXPECT_EQ(r.rc, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_EQ(r.out.find("verdict:"), std::string::npos);  // no text report after the JSON
}

TEST_F(Outputs, AFifoIsWrittenInPlaceAndOneWithoutReaderIsRefused) {
  ASSERT_EQ(::mkfifo((s / "fifo").c_str(), 0600), 0);
  Result alone = stepscope({"analyze", "t.json.gz", "--json", "fifo", "-q"});
  EXPECT_REFUSED(alone);
  std::string got;
  std::thread reader([&] { got = slurp(s / "fifo"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const Result r = stepscope({"analyze", "t.json.gz", "--json", "fifo", "-q"});
  reader.join();
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(got.front(), '{');
  struct stat st {};
  ASSERT_EQ(::lstat((s / "fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(Outputs, OneOutputAtMostGoesToStandardOutput) {
  EXPECT_REFUSED(stepscope({"analyze", "t.json.gz", "--json", "-", "--html", "-", "-q"}));
  EXPECT_REFUSED(stepscope({"analyze", "t.json.gz", "--summary", "-", "--json", "/dev/stdout", "-q"}));
}

TEST_F(Outputs, SummaryOnStandardOutputKeepsTheOtherOutputs) {
  const Result r = stepscope({"analyze", "t.json.gz", "--summary", "-", "--json", "r.json", "--csv", "tables", "-q"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(s / "r.json"));
  EXPECT_TRUE(fs::exists(s / "tables/kernels.csv"));
  EXPECT_EQ(r.out.find("verdict:"), std::string::npos);
}

TEST_F(Outputs, NamesUpToTheLimitAreAccepted) {
  const std::string name(255 - 5, 'x');
  const Result r = stepscope({"analyze", "t.json.gz", "--json", name + ".json", "-q"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(s / (name + ".json")));
}

}  // namespace
}  // namespace reliability
