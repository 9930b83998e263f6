// The generator's contract: every scenario writes valid JSON whose ground truth partitions each
// step window exactly, the same seed gives the same bytes, and the CLI rejects bad input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "tracegen.hpp"
#include "tracegen_test_util.hpp"

namespace fs = std::filesystem;
namespace tg = stepscope::tracegen;
using tgtest::read_file;
using tgtest::small_params;
using tgtest::TempDir;

namespace {

class EveryScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryScenario, WritesJsonAndExactGroundTruth) {
  TempDir dir("scenario");
  const tg::Params p = small_params(GetParam());
  const auto result = tg::generate(p, dir.path());
  ASSERT_EQ(result.files.size(), static_cast<std::size_t>(p.ranks));
  for (const auto& f : result.files) {
    const auto trace = nlohmann::json::parse(read_file(f));
    ASSERT_TRUE(trace.contains("traceEvents")) << f;
    EXPECT_GT(trace["traceEvents"].size(), 10u) << f;
    EXPECT_EQ(trace["schemaVersion"], 1);
    EXPECT_TRUE(trace.contains("baseTimeNanoseconds"));
    EXPECT_TRUE(trace.contains("distributedInfo"));
  }
  const auto truth = nlohmann::json::parse(read_file(result.ground_truth));
  EXPECT_EQ(truth["scenario"], GetParam());
  ASSERT_EQ(truth["steps"].size(), static_cast<std::size_t>(p.ranks * p.steps));
  bool expected_seen = false;
  for (const auto& s : truth["steps"]) {
    std::int64_t sum = 0;
    for (const auto& [name, ns] : s["categories_ns"].items()) {
      EXPECT_GE(ns.get<std::int64_t>(), 0) << name;
      sum += ns.get<std::int64_t>();
    }
    EXPECT_EQ(sum, s["duration_ns"].get<std::int64_t>()) << "rank " << s["rank"] << " step " << s["step"];
    EXPECT_EQ(s["end_ns"].get<std::int64_t>() - s["start_ns"].get<std::int64_t>(),
              s["duration_ns"].get<std::int64_t>());
    expected_seen = expected_seen || s["verdict"] == truth["expected_verdict"];
  }
  EXPECT_TRUE(expected_seen) << "no step reaches the expected verdict " << truth["expected_verdict"];
}

std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const auto& s : tg::scenarios()) names.emplace_back(s.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Tracegen, EveryScenario, ::testing::ValuesIn(scenario_names()),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(Tracegen, FourteenIssueScenariosAreCovered) {
  for (const char* name : {"healthy", "input-bound", "loader-stall", "epoch-stall", "pageable-copy",
                           "sync-stall", "launch-bound", "comms-bound", "straggler", "checkpoint",
                           "memory-bound", "no-tensor-cores", "cpu-input-bound",
                           "cpu-compute-bound", "rocm-healthy", "rocm-input-bound"})
    EXPECT_NE(tg::find_scenario(name), nullptr) << name;
}

TEST(Tracegen, HealthyIsComputeBoundAboveNinetyPercent) {
  TempDir dir("healthy");
  const auto r = tg::generate(small_params("healthy"), dir.path());
  const auto truth = nlohmann::json::parse(read_file(r.ground_truth));
  for (const auto& s : truth["steps"]) {
    const auto& c = s["categories_ns"];
    const double compute = c["compute_forward"].get<double>() + c["compute_backward"].get<double>() +
                           c["compute_optimizer"].get<double>() + c["compute_other"].get<double>();
    EXPECT_GE(compute / s["duration_ns"].get<double>(), 0.9);
  }
}

TEST(Tracegen, StragglerMakesTheOthersWaitInTheCollective) {
  TempDir dir("straggler");
  const tg::Params p = small_params("straggler");
  const auto truth = nlohmann::json::parse(read_file(tg::generate(p, dir.path()).ground_truth));
  std::map<int, std::int64_t> exposed;
  for (const auto& s : truth["steps"])
    exposed[s["rank"].get<int>()] += s["categories_ns"]["grad_sync_exposed"].get<std::int64_t>();
  for (const auto& [rank, ns] : exposed) {
    if (rank != p.straggler_rank) {
      EXPECT_GT(ns, 2 * exposed[p.straggler_rank]) << rank;
    }
  }
}

TEST(Tracegen, SameSeedSameBytesOtherSeedOtherBytes) {
  for (bool gzip : {false, true}) {
    TempDir a("seed-a"), b("seed-b"), c("seed-c");
    tg::Params p = small_params("straggler");
    p.gzip = gzip;
    const auto ra = tg::generate(p, a.path());
    const auto rb = tg::generate(p, b.path());
    p.seed += 1;
    const auto rc = tg::generate(p, c.path());
    for (std::size_t i = 0; i < ra.files.size(); ++i) {
      EXPECT_EQ(read_file(ra.files[i]), read_file(rb.files[i])) << ra.files[i];
      EXPECT_NE(read_file(ra.files[i]), read_file(rc.files[i])) << ra.files[i];
    }
    EXPECT_EQ(read_file(ra.ground_truth), read_file(rb.ground_truth));
  }
}

TEST(Tracegen, GzipOutputDecompressesToThePlainTrace) {
  TempDir plain("plain"), packed("packed");
  tg::Params p = small_params("sync-stall");
  const auto rp = tg::generate(p, plain.path());
  p.gzip = true;
  const auto rz = tg::generate(p, packed.path());
  ASSERT_EQ(rz.files[0].substr(rz.files[0].size() - 3), ".gz");
  const std::string z = read_file(rz.files[0]);
  ASSERT_GE(z.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(z[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(z[1]), 0x8b);
  EXPECT_EQ(tgtest::gunzip(z), read_file(rp.files[0]));
}

TEST(Tracegen, RanksShareTheCollectiveEnd) {
  TempDir dir("collective");
  const tg::Params p = small_params("comms-bound");
  const auto r = tg::generate(p, dir.path());
  // The last all-reduce kernel of each step ends at the same instant on every rank.
  std::vector<std::vector<std::string>> ends(r.files.size());
  for (std::size_t i = 0; i < r.files.size(); ++i) {
    const auto trace = nlohmann::json::parse(read_file(r.files[i]));
    for (const auto& e : trace["traceEvents"])
      if (e.value("cat", "") == "kernel" && e["name"].get<std::string>().rfind("nccl", 0) == 0)
        ends[i].push_back(std::to_string(tgtest::end_ns(e)));
  }
  for (std::size_t i = 1; i < ends.size(); ++i) EXPECT_EQ(ends[i], ends[0]);
}

int run_cli(const std::string& args) {
  const std::string cmd = std::string(STEPSCOPE_BINARY_DIR) +
                          "/tools/tracegen/stepscope-tracegen " + args + " >/dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(TracegenCli, BadInputExitsTwo) {
  TempDir dir("cli");
  EXPECT_EQ(run_cli("--list"), 0);
  EXPECT_EQ(run_cli("-s nope -o " + dir.path()), 2);
  EXPECT_EQ(run_cli("-s healthy -o " + dir.path() + " --ranks 0"), 2);
  EXPECT_EQ(run_cli("-s healthy -o " + dir.path() + " --steps abc"), 2);
  EXPECT_EQ(run_cli("-s healthy"), 2);
  EXPECT_EQ(run_cli("-s straggler -o " + dir.path() + " --ranks 2 --straggler-rank 5"), 2);
  EXPECT_EQ(run_cli("-s healthy -o " + dir.path() + " --platform tpu"), 2);
  EXPECT_EQ(run_cli("-s healthy -o " + dir.path() + " --first-step -3"), 2);
}

TEST(TracegenCli, OverridesApplyOnTopOfThePreset) {
  TempDir dir("cli-ok");
  ASSERT_EQ(run_cli("-s input-bound -o " + dir.path() + " --steps 2 --ranks 3 --seed 7 --gzip"), 0);
  for (int r = 0; r < 3; ++r)
    EXPECT_TRUE(fs::exists(dir.path() + "/rank-" + std::to_string(r) + ".pt.trace.json.gz"));
  const auto truth = nlohmann::json::parse(read_file(dir.path() + "/ground_truth.json"));
  EXPECT_EQ(truth["parameters"]["num_workers"], 0);  // from the preset
  EXPECT_EQ(truth["parameters"]["steps"], 2);        // from the command line
  EXPECT_EQ(truth["seed"], 7);
  EXPECT_EQ(truth["steps"].size(), 6u);
}

TEST(TracegenCli, PlatformSwitchesNames) {
  TempDir dir("cli-rocm");
  ASSERT_EQ(run_cli("-s sync-stall -o " + dir.path() + " --steps 1 --layers 2 --platform rocm"), 0);
  const std::string trace = read_file(dir.path() + "/rank-0.pt.trace.json");
  EXPECT_NE(trace.find("hipLaunchKernel"), std::string::npos);
  EXPECT_NE(trace.find("AMD Instinct MI300X"), std::string::npos);
  EXPECT_EQ(trace.find("cudaLaunchKernel"), std::string::npos);
}

}  // namespace
