// With --stage rules, every table that names an op's stage gives it the same one: the drill-down's
// operator table, the partition's compute by stage and its sync counts all read the facts layer's
// event stages, where the rules are applied once.
#include <gtest/gtest.h>

#include <string>

#include "partition/support.hpp"

namespace stepscope {
namespace {

constexpr ns_t us(double v) { return static_cast<ns_t>(v * 1000); }

const OperatorRow* row_named(const DiagnosedResult& r, const std::string& name) {
  if (r.drilldowns.empty() || r.drilldowns[0].operators.empty()) return nullptr;
  for (const auto& row : r.drilldowns[0].operators[0].rows)
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
  ASSERT_EQ(r.partitions.size(), 1u);
  const RankPartition& p = r.partitions[0];

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
  EXPECT_EQ(at(plain.partitions.at(0), Category::ComputeBackward), 0);
  EXPECT_EQ(plain.partitions.at(0).model_syncs, 0u);
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

  const RankPartition& p = ruled.partitions.at(0);
  const RankPartition& q = plain.partitions.at(0);
  const double moved = at(p, Category::ComputeOptimizer) - at(q, Category::ComputeOptimizer);
  EXPECT_GT(moved, 0);
  EXPECT_NEAR(at(q, Category::ComputeBackward) - at(p, Category::ComputeBackward), moved, 1.0);
  EXPECT_NEAR(compute_ns(p), compute_ns(q), 1.0);
}

}  // namespace
}  // namespace stepscope
