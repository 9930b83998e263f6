// A trace of the size users bring (several GB: one epoch, one step at scale) is read with memory
// bounded by a fraction of its size, never held whole. A generated trace of ~2 GB of JSON (the
// healthy scenario, 5,400 steps, written by stepscope-tracegen as a stream) is analysed by the
// command with its address space limited (ulimit -v) to 0.4x the file's size: every byte must be
// read, every step found and the scenario's verdict named, as without the limit.
//
// Not a timed test: it takes about 15 s to write the file and 25-40 s to analyse it on two cores.
// It needs 2.1 GB of free disk beside the build folder and is skipped, saying so, without it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 5400;                        // ~2.06 GB of JSON at the scenario's ~380 KB a step
constexpr std::uintmax_t kDiskNeeded = 2200000000;  // the trace and the JSON report
constexpr double kAddressSpaceOfSize = 0.4;

fs::path binary_dir() { return fs::path(STEPSCOPE_BINARY_DIR); }

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

class BoundedMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = binary_dir() / "bounded_memory_trace";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BoundedMemory, TwoGigabyteTraceUnderAddressSpaceOfFortyPercent) {
  const std::uintmax_t free_bytes = fs::space(dir_).available;
  if (free_bytes < kDiskNeeded)
    GTEST_SKIP() << "needs " << kDiskNeeded / 1000000 << " MB of free disk in " << dir_ << ", has "
                 << free_bytes / 1000000 << " MB";
  const fs::path tracegen = binary_dir() / "tools" / "tracegen" / "stepscope-tracegen";
  ASSERT_EQ(run(tracegen.string() + " --scenario healthy --ranks 1 --steps " + std::to_string(kSteps) + " -o " +
                dir_.string() + " > /dev/null"),
            0);
  const fs::path trace = dir_ / "rank-0.pt.trace.json";
  const std::uintmax_t size = fs::file_size(trace);
  ASSERT_GT(size, 1900000000u) << "the generated trace should be ~2 GB";

  // ulimit -v takes KiB; the whole process counts (code, stacks, the allocator's reserve).
  const auto limit_kib = static_cast<std::uintmax_t>(kAddressSpaceOfSize * static_cast<double>(size) / 1024.0);
  const fs::path report = dir_ / "report.json";
  const int rc = run("ulimit -v " + std::to_string(limit_kib) + " && " + (binary_dir() / "stepscope").string() +
                     " analyze -q -j2 --json " + report.string() + " " + trace.string() + " > /dev/null");
  ASSERT_EQ(rc, 0) << "analyze failed under ulimit -v " << limit_kib << " KiB (0.4x of " << size << " bytes)";

  const nlohmann::json truth = read_json(dir_ / "ground_truth.json");
  const nlohmann::json out = read_json(report);
  const nlohmann::json& rank = out.at("ranks").at(0);
  EXPECT_EQ(rank.at("ingest").at("bytes_read").get<std::uintmax_t>(), size);
  EXPECT_FALSE(rank.at("ingest").at("truncated").get<bool>());
  EXPECT_EQ(rank.at("partition").at("steps").size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(out.at("verdict").at("bound").get<std::string>(), truth.at("expected_verdict").get<std::string>());
  // The steady mean step against the generator's mean over every step (the first is no steady
  // step, hence 1%).
  const double truth_mean = truth.at("totals").at("duration_ns").get<double>() / kSteps;
  EXPECT_NEAR(rank.at("partition").at("steady_mean_step_ns").get<double>(), truth_mean, 0.01 * truth_mean);
}

}  // namespace
