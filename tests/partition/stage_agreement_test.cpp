// With --stage rules, every table that names an op's stage gives it the same one: the drill-down's
// operator table, the partition's compute by stage and its sync counts all read the facts layer's
// event stages, where the rules are applied once. The same tables read which step an event is in,
// and whether it is steady, from the facts' step phase (RankFacts::event_steps).
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <string>

#include "partition/support.hpp"

namespace stepscope {
namespace {

constexpr ns_t us(double v) { return static_cast<ns_t>(v * 1000); }

const OperatorRow* row_named(const DiagnosedResult& r, const std::string& name) {
  if (!has_drilldowns(r) || r.ranks[0].drilldown->operators.empty()) return nullptr;
  for (const auto& row : r.ranks[0].drilldown->operators[0].rows)
    if (row.name == name) return &row;
  return nullptr;
}

double compute_ns(const RankPartition& p) {
  double sum = 0;
  for (Category c : {Category::ComputeForward, Category::ComputeBackward, Category::ComputeOptimizer,
                     Category::ComputeOther})
    sum += p.steady_mean_category[static_cast<std::size_t>(c)];
  return sum;
}

double at(const RankPartition& p, Category c) { return p.steady_mean_category[static_cast<std::size_t>(c)]; }

// The partition's steps are the facts' steps, and its steady-state sync counts the facts' steady
// device syncs (model syncs: those whose event stage is forward or backward).
void expect_counts_follow_event_steps(const DiagnosedResult& r) {
  for (const RankAnalysis& a : r.ranks) {
    const RankFacts& f = a.facts;
    const RankPartition& p = a.partition;
    ASSERT_EQ(f.event_steps.step_steady.size(), p.steps.size());
    for (std::size_t s = 0; s < p.steps.size(); ++s) EXPECT_EQ(f.event_steps.step_steady[s], !p.steps[s].warmup);
    std::uint64_t syncs = 0, model = 0;
    for (auto i : f.device_syncs) {
      if (!f.event_steps.steady(i)) continue;
      ++syncs;
      model += f.event_stage[i] == StageHint::Forward || f.event_stage[i] == StageHint::Backward;
    }
    EXPECT_EQ(p.sync_calls, syncs);
    EXPECT_EQ(p.model_syncs, model);
  }
}

// An event belongs to the latest-starting window holding its start: a sync in a near-empty last
// step (warm-up) that step 3's GPU tail still overlaps is that last step's, and not counted as a
// steady sync, though step 3's window, steady, also holds it.
TEST(EventSteps, LatestStartingWindowHoldsTheEvent) {
  test::KinetoBuilder b;
  for (int k = 0; k < 3; ++k) {
    const double s = 100.0 * k;
    b.host(fmt::format("ProfilerStep#{}", k + 1), s, 100, "user_annotation");
    b.launch("ampere_sgemm_128x64_tn", s + 10, s + 20, k == 2 ? 85 : 60);  // step 3's runs to 305
    b.host("cudaStreamSynchronize", s + 50, 1, "cuda_runtime");
  }
  b.host("ProfilerStep#4", 300, 3, "user_annotation");
  b.host("cudaStreamSynchronize", 301, 1, "cuda_runtime");
  AnalyzeOptions o;
  o.partition.stage_rules.push_back(parse_stage_rule("forward=^cudaStreamSynchronize$"));
  const DiagnosedResult r = test::analyze_json(b.trace(), o);
  const RankPartition& p = r.ranks.at(0).partition;
  ASSERT_EQ(p.steps.size(), 4u);
  ASSERT_FALSE(p.host_runs_ahead);
  EXPECT_EQ(p.steps[2].end, us(305));
  EXPECT_TRUE(p.steps[3].warmup);
  const RankFacts& f = r.ranks.at(0).facts;
  ASSERT_EQ(f.device_syncs.size(), 4u);
  const std::uint32_t last = f.device_syncs.back();
  EXPECT_EQ(f.event_steps.of(last), 3);
  EXPECT_FALSE(f.event_steps.steady(last));
  EXPECT_EQ(p.sync_calls, 2u);  // steps 2 and 3; step 1 is warm-up by position
  EXPECT_EQ(p.model_syncs, 2u);  // ruled forward
  expect_counts_follow_event_steps(r);
}

// Where the host runs ahead, a host event takes the step whose host span holds it and GPU work the
// step of its launch, wherever on the GPU-side windows it runs.
TEST(EventSteps, HostRunningAheadPlacesGpuWorkByItsLaunch) {
  test::KinetoBuilder b;
  b.launch("ampere_sgemm_128x64_tn", 10, 160, 80);  // launched in host span 0, runs at 160
  b.launch("ampere_sgemm_128x64_tn", 110, 240, 80);  // launched in host span 1, runs at 240
  b.host("aten::add", 120, 5);
  const RankTrace t = read_kineto_buffer(b.trace().dump(), "inline");
  // GPU-side windows [150, 245) and [245, 350): the second kernel starts inside the first window.
  const std::vector<StepSpan> spans = {{us(150), us(245), 0, us(100), true}, {us(245), us(350), us(100), us(200), false}};
  const EventSteps s = event_steps(t, spans, true);
  const EventSteps by_time = event_steps(t, spans, false);
  int kernels = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.kind[i] == Kind::Kernel) {
      const bool second = t.events.ts[i] == us(240);
      EXPECT_EQ(s.of(i), second ? 1 : 0);
      EXPECT_EQ(s.steady(i), !second);
      EXPECT_EQ(by_time.of(i), 0);  // both start in the first GPU-side window
      ++kernels;
    }
    if (t.name_of(i) == "aten::add") {
      EXPECT_EQ(s.of(i), 1);
      EXPECT_EQ(by_time.of(i), kNoStep);  // before every GPU-side window
    }
  }
  EXPECT_EQ(kernels, 2);
}

// A loss computed outside any marked stage, named backward by a rule: the op, the op nested in
// it, the kernels both launch and the sync inside it are all backward, in the operator table and
// in the partition alike.
TEST(StageRules, OperatorTableAndPartitionAgreeOnAnInlineTrace) {
  test::KinetoBuilder b;
  b.host("ProfilerStep#1", 0, 100, "user_annotation");
  b.host("## forward ##", 5, 25, "user_annotation");
  b.host("aten::linear", 6, 10);
  b.launch("ampere_sgemm_128x64_tn", 7, 10, 20);           // forward: [10,30)
  b.host("compute_loss", 40, 30);
  b.host("aten::mul", 41, 10);
  b.launch("vectorized_elementwise_kernel", 42, 45, 10);   // under the ruled op: [45,55)
  b.host("cudaStreamSynchronize", 60, 5, "cuda_runtime");  // a device wait inside it
  AnalyzeOptions o;
  o.partition.stage_rules.push_back(parse_stage_rule("backward=^compute_loss$"));
  const DiagnosedResult r = test::analyze_json(b.trace(), o);
  ASSERT_EQ(r.ranks.size(), 1u);
  const RankPartition& p = r.ranks[0].partition;

  const OperatorRow* loss = row_named(r, "compute_loss");
  const OperatorRow* mul = row_named(r, "aten::mul");
  const OperatorRow* linear = row_named(r, "aten::linear");
  ASSERT_TRUE(loss && mul && linear);
  EXPECT_EQ(loss->stage, StageHint::Backward);
  EXPECT_EQ(mul->stage, StageHint::Backward);
  EXPECT_EQ(linear->stage, StageHint::Forward);
  EXPECT_EQ(at(p, Category::ComputeBackward), static_cast<double>(us(10)));
  EXPECT_EQ(at(p, Category::ComputeForward), static_cast<double>(us(20)));
  EXPECT_EQ(p.model_syncs, 1u);  // the sync sits inside the (ruled) backward

  // Without the rule the same op is in no stage, in both places.
  const DiagnosedResult plain = test::analyze_json(b.trace());
  const OperatorRow* plain_loss = row_named(plain, "compute_loss");
  ASSERT_TRUE(plain_loss);
  EXPECT_NE(plain_loss->stage, StageHint::Backward);
  EXPECT_EQ(at(plain.ranks.at(0).partition, Category::ComputeBackward), 0);
  EXPECT_EQ(plain.ranks.at(0).partition.model_syncs, 0u);
}

// A recorded training step with every aten::mm (the backward's matmuls) ruled optimizer: the
// operator table names them optimizer, and the partition moves their kernels' time from the
// backward's compute to the optimizer's without changing the compute in all.
TEST(StageRules, OperatorTableAndPartitionAgreeOnARecordedTrace) {
  const std::string path = std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/fp32_no_amp.pt.trace.json.gz";
  AnalyzeOptions o;
  o.partition.stage_rules.push_back(parse_stage_rule("optimizer=^aten::mm$"));
  const DiagnosedResult ruled = test::analyze_files({path}, o);
  const DiagnosedResult plain = test::analyze_files({path});

  const OperatorRow* mm = row_named(ruled, "aten::mm");
  const OperatorRow* plain_mm = row_named(plain, "aten::mm");
  ASSERT_TRUE(mm && plain_mm);
  EXPECT_EQ(mm->stage, StageHint::Optimizer);
  EXPECT_EQ(plain_mm->stage, StageHint::Backward);
  const OperatorRow* addmm = row_named(ruled, "aten::addmm");
  ASSERT_TRUE(addmm);
  EXPECT_EQ(addmm->stage, row_named(plain, "aten::addmm")->stage);  // not named by the rule

  const RankPartition& p = ruled.ranks.at(0).partition;
  const RankPartition& q = plain.ranks.at(0).partition;
  const double moved = at(p, Category::ComputeOptimizer) - at(q, Category::ComputeOptimizer);
  EXPECT_GT(moved, 0);
  EXPECT_NEAR(at(q, Category::ComputeBackward) - at(p, Category::ComputeBackward), moved, 1.0);
  EXPECT_NEAR(compute_ns(p), compute_ns(q), 1.0);
  expect_counts_follow_event_steps(ruled);
  expect_counts_follow_event_steps(plain);
}

}  // namespace
}  // namespace stepscope
