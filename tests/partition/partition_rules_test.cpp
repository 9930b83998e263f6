// The partition's priority rules on small traces written inline. Expected values are worked out
// by hand from the event times (microseconds) in each test, instant by instant.
#include <gtest/gtest.h>

#include <algorithm>

#include "partition/support.hpp"
#include "stepscope/error.hpp"

namespace stepscope {
namespace {

constexpr ns_t us(double v) { return static_cast<ns_t>(v * 1000); }

ns_t at(const StepPartition& s, Category c) { return s.ns[static_cast<std::size_t>(c)]; }

TEST(Partition, PriorityAndSyncTailOnAGpuStep) {
  test::KinetoBuilder b;
  b.host("ProfilerStep#1", 0, 100, "user_annotation");
  b.host("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 20, "user_annotation");
  b.host("## forward ##", 20, 20, "user_annotation");
  b.host("aten::linear", 21, 9);
  b.launch("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", 22, 25, 20);
  b.host("Optimizer.step#AdamW.step", 40, 10, "user_annotation");
  b.launch("multi_tensor_apply_kernel", 41, 46, 10);
  b.host("aten::item", 50, 20);
  b.host("cudaStreamSynchronize", 52, 17, "cuda_runtime");  // the device wait inside .item()
  b.host("ProfilerStep#2", 100, 50, "user_annotation");
  b.launch("vectorized_elementwise_kernel", 101, 110, 10);
  const DiagnosedResult r = test::analyze_json(b.trace());
  ASSERT_EQ(r.ranks.size(), 1u);
  const RankPartition& p = r.ranks[0].partition;
  ASSERT_TRUE(p.gpu);
  ASSERT_EQ(p.source, StepSource::ProfilerStep);
  ASSERT_EQ(p.steps.size(), 2u);
  const StepPartition& s1 = p.steps[0];
  EXPECT_EQ(s1.duration(), us(100));
  EXPECT_EQ(at(s1, Category::BatchWait), us(20));       // [0,20) loader, GPU idle
  EXPECT_EQ(at(s1, Category::HostCompute), us(4));      // [20,22) [24,25) [45,46)
  EXPECT_EQ(at(s1, Category::LaunchOverhead), us(2));   // [22,24) the GEMM's launch
  EXPECT_EQ(at(s1, Category::ComputeForward), us(20));  // [25,45) launched inside ## forward ##
  EXPECT_EQ(at(s1, Category::ComputeOptimizer), us(10));
  EXPECT_EQ(at(s1, Category::SyncStall), us(44));       // [56,70) in item, [70,100) its idle tail
  EXPECT_EQ(total_ns(s1.ns), s1.duration());
  const StepPartition& s2 = p.steps[1];
  EXPECT_EQ(at(s2, Category::SyncStall), us(8));  // the tail carried over: [100,101) [103,110)
  EXPECT_EQ(at(s2, Category::LaunchOverhead), us(2));
  EXPECT_EQ(at(s2, Category::ComputeOther), us(10));
  EXPECT_EQ(at(s2, Category::Idle), us(30));
  // Two steps: neither is warm-up by position alone (content decides; both hold work).
  EXPECT_FALSE(s1.warmup);
  EXPECT_FALSE(s2.warmup);
}

TEST(Partition, BackwardOnTheAutogradThread) {
  test::KinetoBuilder b;
  b.host("ProfilerStep#1", 0, 100, "user_annotation");
  b.host("autograd::engine::evaluate_function: AddmmBackward0", 10, 30, "cpu_op", 2);
  b.launch("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize", 12, 20, 30, "kernel", 2);
  const DiagnosedResult r = test::analyze_json(b.trace());
  const StepPartition& s = r.ranks.at(0).partition.steps.at(0);
  EXPECT_EQ(at(s, Category::Idle), us(60));            // [0,10) and [50,100)
  EXPECT_EQ(at(s, Category::HostCompute), us(8));      // autograd thread [10,12) [14,20)
  EXPECT_EQ(at(s, Category::LaunchOverhead), us(2));
  EXPECT_EQ(at(s, Category::ComputeBackward), us(30));
}

TEST(Partition, CommunicationAndCopiesRankBelowCompute) {
  test::KinetoBuilder b;
  b.host("ProfilerStep#1", 0, 100, "user_annotation");
  b.launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1, 10, 40);
  b.launch("ampere_sgemm_128x64_tn", 2, 20, 10);
  b.launch("Memcpy HtoD (Pinned -> Device)", 3, 45, 10, "gpu_memcpy", 1, "cudaMemcpyAsync");
  const DiagnosedResult r = test::analyze_json(b.trace());
  const StepPartition& s = r.ranks.at(0).partition.steps.at(0);
  EXPECT_EQ(at(s, Category::ComputeOther), us(10));     // [20,30) over the all-reduce
  EXPECT_EQ(at(s, Category::GradSyncExposed), us(30));  // [10,20) [30,50)
  EXPECT_EQ(at(s, Category::H2DCopy), us(5));           // [50,55) once the all-reduce ended
}

TEST(Partition, CpuOnlyWithoutStageMarkersCountsOpsAsCompute) {
  test::KinetoBuilder b;
  b.host("ProfilerStep#1", 0, 100, "user_annotation");
  b.host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 30, "user_annotation");
  b.host("aten::mm", 30, 50);
  b.host("aten::item", 80, 5);
  const DiagnosedResult r = test::analyze_json(b.trace());
  const RankPartition& p = r.ranks.at(0).partition;
  EXPECT_FALSE(p.gpu);
  const StepPartition& s = p.steps.at(0);
  EXPECT_EQ(at(s, Category::BatchWait), us(30));
  // .item() on a CPU tensor waits on no device: host work like the op before it.
  EXPECT_EQ(at(s, Category::ComputeOther), us(55));
  EXPECT_EQ(at(s, Category::SyncStall), 0);
  EXPECT_EQ(p.sync_calls, 0u);
  EXPECT_EQ(at(s, Category::Idle), us(15));
}

TEST(Partition, UserStageRuleRelabelsOps) {
  test::KinetoBuilder b;
  b.host("ProfilerStep#1", 0, 100, "user_annotation");
  b.host("my_reader", 0, 30);
  b.host("aten::mm", 30, 50);
  AnalyzeOptions o;
  o.partition.stage_rules.push_back(parse_stage_rule("data=^my_"));
  const DiagnosedResult with_rule = test::analyze_json(b.trace(), o);
  const StepPartition& s = with_rule.ranks.at(0).partition.steps.at(0);
  EXPECT_EQ(at(s, Category::BatchWait), us(30));
  const DiagnosedResult without = test::analyze_json(b.trace());
  const StepPartition& plain = without.ranks.at(0).partition.steps.at(0);
  EXPECT_EQ(at(plain, Category::BatchWait), 0);
}

TEST(Partition, BadStageRulesAreRejected) {
  EXPECT_THROW(parse_stage_rule("nonsense"), InputError);
  EXPECT_THROW(parse_stage_rule("lunch=foo"), InputError);
  EXPECT_THROW(parse_stage_rule("forward=(unclosed"), InputError);
  EXPECT_EQ(parse_stage_rule("forward=^model\\.").regex, "^model\\.");
}

TEST(Partition, StageRulesRunInLinearTimeOnHugeNames) {
  // A backtracking engine recurses per character on ".*fwd.*": 30,000 characters overflowed its stack.
  test::KinetoBuilder b;
  b.host("ProfilerStep#1", 0, 100, "user_annotation");
  b.host(std::string(30000, 'x') + "fwd" + std::string(100, 'y'), 10, 50);
  AnalyzeOptions o;
  o.partition.stage_rules.push_back(parse_stage_rule("forward=.*fwd.*"));
  const DiagnosedResult r = test::analyze_json(b.trace(), o);
  EXPECT_EQ(at(r.ranks.at(0).partition.steps.at(0), Category::ComputeForward), us(50));
  // Lookaround is not RE2 syntax: refused with the reason, not misread.
  EXPECT_THROW(parse_stage_rule("forward=(?=x)"), InputError);
}

TEST(Steps, RepeatedTopLevelAnnotationOpensEachStep) {
  test::KinetoBuilder b;
  for (double t0 : {0.0, 100.0}) {
    b.host("h2d", t0, 5, "user_annotation");
    b.host("forward", t0 + 10, 50, "user_annotation");
  }
  b.host("forward", 110, 60, "user_annotation");  // a longer second forward
  const DiagnosedResult r = test::analyze_json(b.trace());
  const RankPartition& p = r.ranks.at(0).partition;
  ASSERT_EQ(p.source, StepSource::Annotation);
  EXPECT_EQ(p.source_detail, "h2d");
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].start, 0);
  EXPECT_EQ(p.steps[0].end, us(100));
  EXPECT_EQ(p.steps[1].end, us(170));
}

TEST(Steps, OptimizerStepBoundaries) {
  test::KinetoBuilder b;
  b.host("aten::mm", 0, 40);
  b.host("Optimizer.step#SGD.step", 40, 10);
  b.host("aten::mm", 50, 40);
  b.host("Optimizer.step#SGD.step", 90, 10);
  const DiagnosedResult r = test::analyze_json(b.trace());
  const RankPartition& p = r.ranks.at(0).partition;
  ASSERT_EQ(p.source, StepSource::OptimizerStep);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].end, us(50));
  EXPECT_EQ(p.steps[1].start, us(50));
  EXPECT_EQ(p.steps[1].end, us(100));
}

TEST(Steps, NothingToSplitOnIsOneWindowAndSaysSo) {
  test::KinetoBuilder b;
  b.host("aten::mm", 0, 50);
  const DiagnosedResult r = test::analyze_json(b.trace());
  const RankPartition& p = r.ranks.at(0).partition;
  EXPECT_EQ(p.source, StepSource::WholeTrace);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].duration(), us(50));
  const auto whole = std::find_if(p.notes.begin(), p.notes.end(), [](const Warning& w) { return w.id == WarningId::WholeTraceWindow; });
  ASSERT_NE(whole, p.notes.end());
  EXPECT_NE(whole->text.find("the whole trace is one window"), std::string::npos) << whole->text;
}

// The partition's notes are typed: a real CPU-only trace (HTA's cpu_only rank 34) says its host
// ops count as compute, a real GPU trace whose kernels run past each host step (PARAM's linear
// model) says each window runs to the end of its GPU work; the JSON keeps writing their lines.
TEST(Steps, NotesCarryTheirWarningIds) {
  const DiagnosedResult cpu = test::analyze_files({std::string(STEPSCOPE_FIXTURES_DIR) + "/hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"});
  EXPECT_TRUE(has_warning(cpu.ranks.at(0).partition.notes, WarningId::CpuOpsAsCompute));
  EXPECT_FALSE(has_warning(cpu.ranks.at(0).partition.notes, WarningId::GpuDrainsPastStep));
  const DiagnosedResult gpu = test::analyze_files({std::string(STEPSCOPE_FIXTURES_DIR) + "/param/linear_kineto.json.gz"});
  const auto& notes = gpu.ranks.at(0).partition.notes;
  ASSERT_TRUE(has_warning(notes, WarningId::GpuDrainsPastStep));
  EXPECT_FALSE(has_warning(notes, WarningId::CpuOpsAsCompute));
  const auto drains = std::find_if(notes.begin(), notes.end(), [](const Warning& w) { return w.id == WarningId::GpuDrainsPastStep; });
  EXPECT_EQ(drains->text.rfind("GPU work drains past the host's step end by up to ", 0), 0u) << drains->text;
}

}  // namespace
}  // namespace stepscope
