// The verdict on generated traces of the classes real traces broke: each preset's ground truth
// says which trust warnings, verdict, levers and counts a right diagnosis gives.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <set>

#include "partition/support.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

using PresetRun = test::GeneratedRun;

PresetRun run_preset(const std::string& name) { return test::analyze_generated(name); }

const Lever* lever(const DiagnosedResult& r, const std::string& id) {
  for (const auto& l : r.diagnosis.levers)
    if (lever_name(l.id) == id) return &l;
  return nullptr;
}

class RealClass : public ::testing::TestWithParam<std::string> {};

TEST_P(RealClass, VerdictWarningsAndLeversFollowTheGroundTruth) {
  const PresetRun r = run_preset(GetParam());
  ASSERT_TRUE(r.result.diagnosis.present);
  const Verdict& v = r.result.diagnosis.verdict;
  EXPECT_EQ(bound_id(v.bound, v.gpu), r.truth["expected_verdict"].get<std::string>()) << v.headline;
  for (const auto& code : r.truth["expected_warnings"])
    EXPECT_TRUE(r.result.job.trust.has(code.get<std::string>())) << code;
  if (r.truth.contains("expected_not_levers"))
    for (const auto& id : r.truth["expected_not_levers"]) {
      const Lever* l = lever(r.result, id.get<std::string>());
      EXPECT_TRUE(!l || !l->applies) << id;
    }
  if (r.truth.contains("expected_first_lever")) {
    ASSERT_FALSE(r.result.diagnosis.levers.empty());
    EXPECT_EQ(lever_name(r.result.diagnosis.levers.front().id), r.truth["expected_first_lever"].get<std::string>());
  }
  if (r.truth.contains("expected_run_kind") && !r.result.ranks.empty()) {
    EXPECT_EQ(run_kind_name(r.result.ranks[0].facts.run_kind), r.truth["expected_run_kind"].get<std::string>());
  }
  if (r.truth.contains("expected_steps") && !r.result.ranks.empty() && r.truth["expected_steps"].get<int>() > 0) {
    EXPECT_EQ(r.result.ranks[0].partition.steps.size(), r.truth["expected_steps"].get<std::size_t>());
  }
  // The JSON says what the text says: one source for the bound.
  const nlohmann::json j = to_json(r.result);
  EXPECT_EQ(j["verdict"]["bound"], bound_id(v.bound, v.gpu));
}

INSTANTIATE_TEST_SUITE_P(Presets, RealClass,
                         ::testing::Values("cold-start", "missing-gpu-records", "autograd-thread-old-cats",
                                           "v100-fp32", "t4-fp32", "fp8-moe-ep", "moe-nccl-a2a", "nested-item", "two-step",
                                           "host-runs-ahead", "inference-decode", "serving-frontend",
                                           "timing-harness", "one-shot-nvtx", "readback-loop", "blocking-streams",
                                           "profiler-heavy"),
                         [](const auto& test_param) {
                           std::string n = test_param.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

TEST(RealClass, NestedItemIsOneSyncAndCpuItemNone) {
  const PresetRun r = run_preset("nested-item");
  const RankPartition& p = r.result.ranks.at(0).partition;
  ASSERT_GT(p.steady_steps, 0u);
  EXPECT_DOUBLE_EQ(static_cast<double>(p.sync_calls) / static_cast<double>(p.steady_steps),
                   r.truth["expected_sync_calls_per_step"].get<double>());
  EXPECT_EQ(p.item_calls, p.sync_calls);
}

TEST(RealClass, Fp8GemmsAndExpertParallelKernels) {
  const PresetRun r = run_preset("fp8-moe-ep");
  const ComputeMix& m = r.result.ranks.at(0).partition.mix;
  const auto fp8 = m.gemm_ns_by_dtype[static_cast<std::size_t>(DataType::Fp8)];
  const auto fp32 = m.gemm_ns_by_dtype[static_cast<std::size_t>(DataType::Fp32)];
  EXPECT_GT(fp8, 0);
  EXPECT_EQ(fp32, 0);
  EXPECT_GT(m.comm_ns_by_kind[static_cast<std::size_t>(CommKind::ExpertParallel)], 0);
  EXPECT_GT(r.result.diagnosis.verdict.share, 0.25);
  // The expert-parallel time is the EP overlap lever's, not DDP's buckets.
  ASSERT_FALSE(r.result.diagnosis.levers.empty());
  EXPECT_EQ(lever_name(r.result.diagnosis.levers.front().id), "ep_overlap");
}

// The same exchange on NCCL's all_to_all_single runs as ncclKernel_SendRecv kernels: only the
// host's nccl:all_to_all says it is an exchange. It is the exchange lever's, and DDP's levers
// act on the all-reduce's share alone.
TEST(RealClass, NcclAllToAllIsExchangeNotGradientSync) {
  const PresetRun r = run_preset("moe-nccl-a2a");
  const ComputeMix& m = r.result.ranks.at(0).partition.mix;
  const auto role = [&](CommRole c) { return static_cast<double>(m.comm_ns_by_role[static_cast<std::size_t>(c)]); };
  double comm = 0;
  for (auto v : m.comm_ns_by_role) comm += static_cast<double>(v);
  EXPECT_GT(role(CommRole::Exchange), 0.8 * comm);
  EXPECT_GT(role(CommRole::GradientSync), 0);
  EXPECT_EQ(role(CommRole::Other) + role(CommRole::PointToPoint), 0);
  const Diagnosis& d = r.result.diagnosis;
  ASSERT_FALSE(d.levers.empty());
  EXPECT_EQ(lever_name(d.levers.front().id), "ep_overlap");
  const double exposed =
      r.result.ranks.at(0).partition.steady_mean_category[static_cast<std::size_t>(Category::GradSyncExposed)];
  for (const auto& l : d.levers) {
    if (l.id == LeverId::AccumulateAllreduce) {
      EXPECT_LT(l.removable_ns, 0.75 * exposed * 0.2);
    }
  }
  bool said = false;
  for (const auto& e : d.verdict.evidence) said = said || e.find("all-to-all exchange") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_NE(d.verdict.headline.find("mostly all-to-all exchange"), std::string::npos) << d.verdict.headline;
  // The JSON carries the split as the partition holds it.
  const nlohmann::json roles = to_json(r.result)["ranks"][0]["partition"]["comm_kernel_ns_by_role"];
  EXPECT_EQ(roles["exchange"].get<double>(), role(CommRole::Exchange));
  EXPECT_EQ(roles["gradient_sync"].get<double>(), role(CommRole::GradientSync));
  EXPECT_EQ(roles.size(), static_cast<std::size_t>(kCommRoleCount));
}

TEST(RealClass, OldCategoriesStillSplitForwardAndBackward) {
  const PresetRun r = run_preset("autograd-thread-old-cats");
  const RankPartition& p = r.result.ranks.at(0).partition;
  const double fwd = p.steady_mean_category[static_cast<std::size_t>(Category::ComputeForward)];
  const double bwd = p.steady_mean_category[static_cast<std::size_t>(Category::ComputeBackward)];
  double truth_fwd = 0, truth_bwd = 0, n = 0;
  for (const auto& s : r.truth["steps"]) {
    truth_fwd += s["categories_ns"]["compute_forward"].get<double>();
    truth_bwd += s["categories_ns"]["compute_backward"].get<double>();
    ++n;
  }
  ASSERT_GT(n, 0);
  EXPECT_GT(fwd, 0.5 * truth_fwd / n);
  EXPECT_GT(bwd, 0.5 * truth_bwd / n);
}

TEST(RealClass, HostRunningAheadIsMeasuredOnTheGpu) {
  const PresetRun r = run_preset("host-runs-ahead");
  const RankPartition& p = r.result.ranks.at(0).partition;
  EXPECT_TRUE(p.host_runs_ahead);
  for (std::size_t k = 1; k < p.steps.size(); ++k) EXPECT_LE(p.steps[k - 1].end, p.steps[k].start);
}

}  // namespace
}  // namespace stepscope
