// Every generated scenario against its ground truth: the generator lays out each step and
// computes the exact partition from the same intervals it writes (docs/tracegen.md), so the
// expected values here are the generator's, and ours are computed from the written trace only.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "partition/support.hpp"

namespace stepscope {
namespace {

// The acceptance bound: each category within 1% of the step window.
constexpr double kMaxCategoryError = 0.01;

struct ScenarioRun {
  std::filesystem::path dir;
  nlohmann::json truth;
  DiagnosedResult result;
};

ScenarioRun run_scenario(const std::string& scenario, const std::string& extra = "--steps 8") {
  ScenarioRun r;
  r.dir = test::generate(scenario, extra);
  if (r.dir.empty()) return r;
  r.truth = test::read_json(r.dir / "ground_truth.json");
  std::vector<std::string> files;
  for (const auto& f : r.truth["files"]) files.push_back((r.dir / f.get<std::string>()).string());
  r.result = test::analyze_files(files);
  return r;
}

const StepPartition* find_step(const DiagnosedResult& r, int rank, const std::string& name) {
  for (const RankAnalysis& a : r.ranks)
    if (a.rank() == rank)
      for (const auto& s : a.partition.steps)
        if (s.name == name) return &s;
  return nullptr;
}

// Largest |ours - truth| / window over every category of every step.
double max_category_error(const ScenarioRun& run) {
  double worst = 0;
  for (const auto& st : run.truth["steps"]) {
    const StepPartition* s = find_step(run.result, st["rank"].get<int>(), st["name"].get<std::string>());
    EXPECT_NE(s, nullptr) << st["name"];
    if (!s) continue;
    const double window = st["duration_ns"].get<double>();
    EXPECT_EQ(s->duration(), st["duration_ns"].get<ns_t>()) << st["name"];
    for (int c = 0; c < kCategoryCount; ++c) {
      const char* name = category_name(static_cast<Category>(c));
      const double truth = st["categories_ns"][name].get<double>();
      worst = std::max(worst, std::abs(static_cast<double>(s->ns[static_cast<std::size_t>(c)]) - truth) / window);
    }
  }
  return worst;
}

class Scenario : public ::testing::TestWithParam<std::string> {};

TEST_P(Scenario, VerdictAndPartitionMatchGroundTruth) {
  const ScenarioRun run = run_scenario(GetParam());
  ASSERT_FALSE(run.dir.empty()) << "tracegen failed for " << GetParam();
  ASSERT_TRUE(run.result.diagnosis.present);
  EXPECT_EQ(bound_id(run.result.diagnosis.verdict.bound), run.truth["expected_verdict"].get<std::string>());
  EXPECT_LE(max_category_error(run), kMaxCategoryError);
  std::filesystem::remove_all(run.dir);
}

INSTANTIATE_TEST_SUITE_P(AllScenarios, Scenario,
                         ::testing::Values("healthy", "input-bound", "loader-stall", "epoch-stall", "pageable-copy",
                                           "sync-stall", "launch-bound", "comms-bound", "straggler", "checkpoint",
                                           "memory-bound", "no-tensor-cores", "cpu-input-bound", "cpu-compute-bound",
                                           "rocm-healthy", "rocm-input-bound"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// Periodicity where it is planted: the period is the generator's parameter.
struct Planted {
  const char* scenario;
  const char* parameter;
  PeriodKind kind;
};

class Periodic : public ::testing::TestWithParam<Planted> {};

TEST_P(Periodic, FoundWithThePlantedPeriod) {
  const Planted p = GetParam();
  const ScenarioRun run = run_scenario(p.scenario, "--steps 12");
  ASSERT_FALSE(run.dir.empty());
  const int every = run.truth["parameters"][p.parameter].get<int>();
  ASSERT_EQ(run.result.ranks.size(), 1u);
  const Periodicity& found = run.result.ranks[0].stability.period;
  EXPECT_EQ(found.every, every);
  EXPECT_EQ(found.kind, p.kind);
  EXPECT_TRUE(run.result.ranks[0].stability.bursty);
  std::filesystem::remove_all(run.dir);
}

INSTANTIATE_TEST_SUITE_P(Planted, Periodic,
                         ::testing::Values(Planted{"loader-stall", "stall_every", PeriodKind::LoaderWorkers},
                                           Planted{"epoch-stall", "epoch_steps", PeriodKind::EpochBoundary},
                                           Planted{"checkpoint", "ckpt_every", PeriodKind::Checkpoint}),
                         [](const auto& param_info) {
                           std::string n = param_info.param.scenario;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(Straggler, TheSlowRankIsNamedAndTheOthersWait) {
  const ScenarioRun run = run_scenario("straggler");
  ASSERT_FALSE(run.dir.empty());
  const RankComparison& rc = run.result.job.rank_comparison;
  ASSERT_TRUE(rc.straggler.has_value());
  EXPECT_EQ(*rc.straggler, run.truth["straggler_rank"].get<int>());
  EXPECT_TRUE(rc.local);
  // Planted: 30% slower compute (the preset's straggler factor).
  EXPECT_NEAR(rc.straggler_excess, run.truth["parameters"]["straggler_factor"].get<double>() - 1, 0.05);
  EXPECT_GT(rc.balanced_saving_ns, 0);
  EXPECT_GT(rc.mean_skew_ns, 0);
  std::filesystem::remove_all(run.dir);
}

TEST(Straggler, NoneInABalancedJob) {
  const ScenarioRun run = run_scenario("comms-bound");
  ASSERT_FALSE(run.dir.empty());
  EXPECT_FALSE(run.result.job.rank_comparison.straggler.has_value());
  EXPECT_FALSE(run.result.job.rank_comparison.local);
  std::filesystem::remove_all(run.dir);
}

}  // namespace
}  // namespace stepscope

namespace stepscope {
namespace {

// The compute kind where the preset plants it (docs/tracegen.md's scenario table).
TEST(ComputeKind, NamedFromTheKernelMix) {
  const std::pair<const char*, const char*> cases[] = {
      {"memory-bound", "memory-bound kernel mix"}, {"no-tensor-cores", "no tensor cores"}, {"healthy", "dense math"}};
  for (const auto& [scenario, kind] : cases) {
    const ScenarioRun run = run_scenario(scenario, "--steps 4");
    ASSERT_FALSE(run.dir.empty());
    const Verdict& v = run.result.diagnosis.verdict;
    EXPECT_EQ(v.bound, Bound::GpuCompute) << scenario;
    EXPECT_EQ(v.compute_kind.rfind(kind, 0), 0u) << scenario << ": " << v.compute_kind;
    std::filesystem::remove_all(run.dir);
  }
}

TEST(ComputeKind, Fp32GemmsMakePrecisionLeversApply) {
  const ScenarioRun run = run_scenario("no-tensor-cores", "--steps 4");
  ASSERT_FALSE(run.dir.empty());
  bool tf32 = false, amp = false;
  for (const auto& l : run.result.diagnosis.levers) {
    tf32 = tf32 || (l.id == LeverId::Tf32 && l.applies && l.speedup > 1.1);
    amp = amp || (l.id == LeverId::AmpBf16 && l.applies && l.speedup > 1.1);
  }
  EXPECT_TRUE(tf32);
  EXPECT_TRUE(amp);
  std::filesystem::remove_all(run.dir);
}

// bf16 convolutions (already under autocast) leave mixed precision nothing to cut.
TEST(ComputeKind, LowPrecisionConvolutionsLeaveNoPrecisionLever) {
  const ScenarioRun run = run_scenario("conv-nchw-amp", "--steps 4");
  ASSERT_FALSE(run.dir.empty());
  ASSERT_GT(run.result.ranks[0].partition.mix.class_ns[static_cast<std::size_t>(KernelClass::Convolution)], 0);
  EXPECT_EQ(run.result.ranks[0].partition.mix.fp32_simt_conv_ns, 0);
  for (const auto& l : run.result.diagnosis.levers) {
    if (l.id == LeverId::AmpBf16 || l.id == LeverId::Tf32) {
      EXPECT_FALSE(l.applies) << lever_name(l.id) << " " << l.speedup;
    }
  }
  std::filesystem::remove_all(run.dir);
}

}  // namespace
}  // namespace stepscope
