// End-to-end: the `stepscope plan` command's exit codes and JSON output.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct CliRun {
  int rc = -1;
  std::string out;
};

const std::string kBinary = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope";

CliRun run(const std::string& args) {
  CliRun r;
  FILE* p = popen((kBinary + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

nlohmann::json run_json(const std::string& args) {
  CliRun r = run(args + " --json");
  EXPECT_EQ(r.rc, 0) << r.out;
  return nlohmann::json::parse(r.out);
}

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    // The CLI binary is a separate target; these tests need it built alongside test_plan.
    if (!std::filesystem::exists(kBinary)) GTEST_SKIP() << "stepscope binary not built: " << kBinary;
  }
};

}  // namespace

TEST_F(PlanCli, MemoryJsonSevenBillion) {
  auto j = run_json("plan memory --params 7B");
  EXPECT_EQ(j["schema"], "stepscope.plan/1");
  EXPECT_EQ(j["calculator"], "memory");
  EXPECT_DOUBLE_EQ(j["total_bytes"].get<double>(), 112e9);  // 16 B/param, seed's 112 GB
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_FALSE(j["cheapest_fix"].is_null());
}

TEST_F(PlanCli, ZeroFlagMatchesShardingName) {
  auto a = run_json("plan memory --params 7B --gpus 8 --zero 2");
  auto b = run_json("plan memory --params 7B --gpus 8 --sharding SHARD_GRAD_OP");
  // ZeRO-2 on 8 GPUs: 14 + 1.75 + 10.5 GB.
  EXPECT_DOUBLE_EQ(a["total_bytes"].get<double>(), 26.25e9);
  EXPECT_EQ(a["total_bytes"], b["total_bytes"]);
}

TEST_F(PlanCli, KvEightKIs8192Tokens) {
  auto j = run_json("plan kv --model llama-3-70b --seq 8K");
  EXPECT_EQ(j["rows"][0]["seq"], 8192);
  EXPECT_DOUBLE_EQ(j["rows"][0]["bytes"].get<double>(), 2684354560.0);
}

TEST_F(PlanCli, CommSeedExample) {
  auto j = run_json("plan comm --params 7B --gpus 8 --bandwidth 50");
  EXPECT_NEAR(j["collectives"][0]["time_s"].get<double>(), 0.49, 1e-9);
}

TEST_F(PlanCli, RooflineSeedA100) {
  auto j = run_json("plan roofline --layernorm 4096 --peak-tflops 312 --bandwidth 2000");
  EXPECT_DOUBLE_EQ(j["machine"]["ridge_flops_per_byte"].get<double>(), 156.0);
  EXPECT_EQ(j["ops"][0]["bound"], "memory");
}

TEST_F(PlanCli, GpusListsTheDatabase) {
  auto j = run_json("plan gpus");
  EXPECT_EQ(j["gpus"].size(), 14u);
  CliRun text = run("plan gpus");
  EXPECT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("h100-sxm"), std::string::npos);
}

TEST_F(PlanCli, BadInputExitsTwoWithOneLine) {
  CliRun r = run("plan memory --model nope");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("unknown model 'nope'"), std::string::npos);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
  EXPECT_EQ(run("plan kv --layers 32 --heads 32 --kv-heads 5 --head-dim 128 --seq 1024").rc, 2);
  EXPECT_EQ(run("plan memory --params 7B --batch -1").rc, 2);
  EXPECT_EQ(run("plan roofline --gpu a200 --gemm 1,1,1").rc, 2);
  EXPECT_EQ(run("plan").rc, 2);
}
