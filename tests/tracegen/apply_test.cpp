// --apply LEVER: the scenario after one lever's change, with the speedup it gives by construction.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include "tracegen_test_util.hpp"

namespace tg = stepscope::tracegen;
using tgtest::read_file;
using tgtest::TempDir;

namespace {

nlohmann::json truth_of(const tg::GenerateResult& r) { return nlohmann::json::parse(read_file(r.ground_truth)); }

double mean_step_ns(const nlohmann::json& truth) {
  return truth["totals"]["duration_ns"].get<double>() / truth["totals"]["steps"].get<double>();
}

double mean_category_ns(const nlohmann::json& truth, const char* category) {
  return truth["totals"]["categories_ns"][category].get<double>() / truth["totals"]["steps"].get<double>();
}

// The speedup is the preset's mean window over the changed job's, both as generated: the preset
// written on its own (same seed) has the very mean step the applied run read in its scratch run.
TEST(TracegenApply, SpeedupIsThePresetsMeanStepOverTheChangedOnes) {
  TempDir before("apply-before"), after("apply-after");
  const tg::Params p = tgtest::small_params("checkpoint");
  const nlohmann::json base = truth_of(tg::generate(p, before.path()));
  const nlohmann::json changed = truth_of(tg::generate_applied(p, "async_checkpoint", after.path()));
  const auto& applied = changed["applied"];
  EXPECT_EQ(applied["lever"], "async_checkpoint");
  EXPECT_EQ(applied["setting"], "");
  EXPECT_EQ(applied["changes"], nlohmann::json({"ckpt_us: 150000.0 -> 0.0"}));
  EXPECT_DOUBLE_EQ(applied["base_mean_step_ns"].get<double>(), mean_step_ns(base));
  EXPECT_DOUBLE_EQ(applied["mean_step_ns"].get<double>(), mean_step_ns(changed));
  EXPECT_DOUBLE_EQ(applied["expected_speedup"].get<double>(), mean_step_ns(base) / mean_step_ns(changed));
  EXPECT_GT(applied["expected_speedup"].get<double>(), 1.0);
  // An asynchronous save: the copies to host memory stay in the loop, the serialisation leaves it.
  EXPECT_EQ(changed["parameters"]["ckpt_every"], 4);
  EXPECT_EQ(changed["parameters"]["ckpt_us"], 0);
  EXPECT_GT(mean_category_ns(changed, "side_work"), 0);
  EXPECT_LT(mean_category_ns(changed, "side_work"), mean_category_ns(base, "side_work") / 2);
}

// One worker loads a 70 ms batch while the rest of the step (~48 ms) runs: the wait is the
// difference. Eight hide it all: the batch is waiting when asked for (120 us).
TEST(TracegenApply, WorkersHideTheLoadUpToTheRestOfTheStep) {
  TempDir before("apply-w0"), one("apply-w1"), eight("apply-w8");
  const tg::Params p = tgtest::small_params("input-bound");
  const nlohmann::json base = truth_of(tg::generate(p, before.path()));
  const double rest_us = (mean_step_ns(base) - mean_category_ns(base, "batch_wait")) / 1e3;
  const nlohmann::json w1 = truth_of(tg::generate_applied(p, "num_workers=1", one.path()));
  EXPECT_EQ(w1["parameters"]["num_workers"], 1);
  EXPECT_NEAR(w1["parameters"]["fetch_us"].get<double>(), p.fetch_us - rest_us, 1e-6);
  EXPECT_EQ(w1["applied"]["setting"], "1");
  const nlohmann::json w8 = truth_of(tg::generate_applied(p, "num_workers", eight.path()));
  EXPECT_EQ(w8["parameters"]["num_workers"], 8);
  EXPECT_EQ(w8["parameters"]["fetch_us"], 120.0);
  EXPECT_GT(w8["applied"]["expected_speedup"].get<double>(), w1["applied"]["expected_speedup"].get<double>());
  EXPECT_EQ(w8["expected_verdict"], "gpu-bound");
}

// The mid-step read goes, its logging stays: the host still works 20 ms there, now while the GPU
// runs the forward pass it has queued.
TEST(TracegenApply, RemovedSyncKeepsTheLogging) {
  TempDir dir("apply-sync");
  const tg::Params p = tgtest::small_params("sync-stall");
  const nlohmann::json t = truth_of(tg::generate_applied(p, "remove_item", dir.path()));
  EXPECT_EQ(t["applied"]["changes"], nlohmann::json({"mid_sync_read: true -> false"}));
  EXPECT_EQ(t["parameters"]["sync_gap_us"], 20'000.0);
  EXPECT_GT(t["applied"]["expected_speedup"].get<double>(), 1.0);
}

// Every lever a scenario shows makes its job faster, whichever scenario shows it.
TEST(TracegenApply, EveryLeverAScenarioShowsSpeedsItUp) {
  int pairs = 0;
  for (const auto& s : tg::scenarios()) {
    const tg::Params p = tgtest::small_params(s.name);
    for (const auto& lever : tg::applicable_levers(p)) {
      SCOPED_TRACE(std::string(s.name) + " --apply " + lever);
      TempDir dir("apply-all");
      const nlohmann::json t = truth_of(tg::generate_applied(p, lever, dir.path()));
      EXPECT_GT(t["applied"]["expected_speedup"].get<double>(), 1.0);
      EXPECT_FALSE(t["applied"]["changes"].empty());
      ++pairs;
    }
  }
  EXPECT_GE(pairs, 20);
}

TEST(TracegenApply, RefusesWhatItCannotApply) {
  TempDir dir("apply-bad");
  const tg::Params healthy = tgtest::small_params("healthy"), input = tgtest::small_params("input-bound");
  EXPECT_THROW(tg::generate_applied(healthy, "num_workers", dir.path()), std::invalid_argument);
  EXPECT_THROW(tg::generate_applied(input, "more_gpus", dir.path()), std::invalid_argument);
  EXPECT_THROW(tg::generate_applied(input, "num_workers=0", dir.path()), std::invalid_argument);
  EXPECT_THROW(tg::generate_applied(input, "num_workers=two", dir.path()), std::invalid_argument);
  EXPECT_THROW(tg::generate_applied(tgtest::small_params("checkpoint"), "async_checkpoint=2", dir.path()),
               std::invalid_argument);
  const std::string cli = std::string(STEPSCOPE_BINARY_DIR) + "/tools/tracegen/stepscope-tracegen -o " + dir.path();
  const int rc = std::system((cli + " -s healthy --apply num_workers >/dev/null 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
}

}  // namespace
