// The command's output does not depend on its threads: `analyze -j1`, `-j2` and `-j4` write the
// same bytes, text and JSON, end to end (the parallel parse of one file's blocks, ranks read side
// by side, a rank's analyses beside each other). Real inputs of each kind: one rank gzipped, eight
// and 128 ranks, Nsight Systems, CPU only; and a generated trace large enough to be parsed in many
// blocks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class JobsIdentical : public ::testing::Test {
 protected:
  void SetUp() override {
    // A folder per test: ctest runs the tests of this file as separate processes, side by side.
    dir_ = fs::path(STEPSCOPE_BINARY_DIR) /
           ("jobs_identical_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The text and the JSON report of `analyze -jN INPUT`, one string; the exit code must be 0 or 1
  // (a finding), as on one thread.
  std::string output(const std::string& input, int jobs) {
    const fs::path text = dir_ / ("j" + std::to_string(jobs) + ".txt");
    const fs::path json = dir_ / ("j" + std::to_string(jobs) + ".json");
    const std::string cmd = (fs::path(STEPSCOPE_BINARY_DIR) / "stepscope").string() + " analyze -j" +
                            std::to_string(jobs) + " --json " + json.string() + " " + input + " > " + text.string() +
                            " 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) <= 1) << cmd;
    return slurp(text) + "\n--- json ---\n" + slurp(json);
  }

  void expect_same_on_one_two_and_four(const std::string& input) {
    const std::string serial = output(input, 1);
    EXPECT_NE(serial.find("\"ranks\""), std::string::npos) << input << ": no JSON report";
    EXPECT_TRUE(serial == output(input, 2)) << input << ": -j2 differs from -j1";
    EXPECT_TRUE(serial == output(input, 4)) << input << ": -j4 differs from -j1";
  }

  fs::path dir_;
};

TEST_F(JobsIdentical, RealInputsOfEachKind) {
  const std::string f = STEPSCOPE_FIXTURES_DIR;
  for (const std::string input : {f + "/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                                  f + "/param/dlrm_8rank/kineto", f + "/hta/sampled_world128",
                                  f + "/nsys/perlmutter-cloverleaf-cuda.sqlite",
                                  f + "/cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz"})
    expect_same_on_one_two_and_four(input);
}

// ~19 MB of JSON in one file: the reader cuts it into blocks that the threads parse apart.
TEST_F(JobsIdentical, GeneratedTraceParsedInBlocks) {
  const fs::path tracegen = fs::path(STEPSCOPE_BINARY_DIR) / "tools" / "tracegen" / "stepscope-tracegen";
  const fs::path out = dir_ / "generated";
  ASSERT_EQ(std::system((tracegen.string() + " --scenario loader-stall --ranks 1 --steps 50 -o " + out.string() +
                         " > /dev/null")
                            .c_str()),
            0);
  const fs::path trace = out / "rank-0.pt.trace.json";
  ASSERT_GT(fs::file_size(trace), 10000000u);
  expect_same_on_one_two_and_four(trace.string());
}

}  // namespace
