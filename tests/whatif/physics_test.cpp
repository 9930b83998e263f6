// The device physics of the precision and CUDA-graph levers: a GEMM's work read from its op's
// recorded shapes, what the recorded H200 fp32 GEMMs become in bf16, and a recorded launch-bound
// step captured as graphs.
#include <gtest/gtest.h>

#include "stepscope/pipeline.hpp"
#include "whatif/transforms.hpp"

namespace stepscope::whatif {
namespace {

TEST(GemmWork, ReadsMmAddmmBmmAndBaddbmmShapes) {
  const auto mm = gemm_work("[[8192, 8192], [8192, 8192]]");
  ASSERT_TRUE(mm);
  EXPECT_DOUBLE_EQ(mm->flops, 2.0 * 8192 * 8192 * 8192);
  EXPECT_DOUBLE_EQ(mm->operand_elements, 2.0 * 8192 * 8192);
  EXPECT_DOUBLE_EQ(mm->output_elements, 8192.0 * 8192);
  // addmm's bias comes first, then the two matrices and the scalars.
  const auto addmm = gemm_work("[[4096], [32, 1024], [1024, 4096], [], []]");
  ASSERT_TRUE(addmm);
  EXPECT_DOUBLE_EQ(addmm->flops, 2.0 * 32 * 1024 * 4096);
  EXPECT_DOUBLE_EQ(addmm->operand_elements, 32.0 * 1024 + 1024.0 * 4096);
  EXPECT_DOUBLE_EQ(addmm->output_elements, 32.0 * 4096);
  const auto bmm = gemm_work("[[16, 128, 64], [16, 64, 256]]");
  ASSERT_TRUE(bmm);
  EXPECT_DOUBLE_EQ(bmm->flops, 2.0 * 16 * 128 * 64 * 256);
  EXPECT_DOUBLE_EQ(bmm->output_elements, 16.0 * 128 * 256);
  const auto baddbmm = gemm_work("[[16, 128, 256], [16, 128, 64], [16, 64, 256], [], []]");
  ASSERT_TRUE(baddbmm);
  EXPECT_DOUBLE_EQ(baddbmm->flops, bmm->flops);
}

TEST(GemmWork, RefusesShapesThatAreNoProduct) {
  EXPECT_FALSE(gemm_work("[[8, 16], [32, 4]]"));  // inner dimensions differ
  EXPECT_FALSE(gemm_work("[[8, 16]]"));
  EXPECT_FALSE(gemm_work("[]"));
  EXPECT_FALSE(gemm_work(""));
  EXPECT_FALSE(gemm_work("[[0, 16], [16, 4]]"));
}

// The recorded H200 job in fp32 (8192^3 GEMMs of 21.4 ms, TF32 off): at the bf16 roofline each
// becomes its work at 80% of 989 TFLOP/s plus the casts of its two inputs (1.39 + 0.17 ms),
// against the 1.26 ms the same GEMMs took under autocast in bf16_gpu_bound; never slower than
// recorded, and a GEMM without shapes (none here) would come from its time at the fp32 peak.
TEST(NarrowMatmuls, RecordedFp32GemmsTakeTheirBf16Roofline) {
  const std::string path = std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/fp32_no_amp.pt.trace.json.gz";
  PipelineOptions po;
  po.keep_trace = true;
  const Analysis run = analyze_paths({path}, po);
  const RankAnalysis& rank = run.result.ranks.at(0);
  const RankTrace& trace = run.trace.ranks.at(0);
  const Graph g = build_graph(trace, rank.facts, rank.partition);
  Scenario s = base_scenario(g);
  const MatmulTarget bf16{67, 989.4, 4800, 2, true};
  narrow_matmuls(g, rank.facts, trace, s, bf16);
  std::size_t shaped = 0, big = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (!fp32_matmul(g.ops[i])) {
      EXPECT_EQ(s.op_dur[i], g.ops[i].dur);
      continue;
    }
    EXPECT_LE(s.op_dur[i], g.ops[i].dur);
    shaped += recorded_gemm_work(rank.facts, trace, g.ops[i]).has_value();
    if (g.ops[i].dur < 15'000'000) continue;
    ++big;
    EXPECT_NEAR(static_cast<double>(s.op_dur[i]), 1.39e6 + 0.168e6, 0.12e6) << "recorded " << g.ops[i].dur << " ns";
  }
  EXPECT_GT(big, 10u);
  EXPECT_GT(shaped, big / 2);
}

// The recorded H200 launch-bound job (48 tiny layers, a per-parameter AdamW, 723 kernels a step)
// captured as graphs: every kernel starts a node's gap (0.3 us on Hopper) after the one before it,
// and each parameter's update grows by the capturable step's 14 scalar kernels. Measured with
// the whole step captured (cuda_graph_step): 2.58 ms a step.
TEST(CaptureGraphs, NodesKeepTheirGapAndAdamItsCapturableKernels) {
  const std::string path = std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/launch_bound.pt.trace.json.gz";
  const Analysis run = analyze_paths({path});
  const RankAnalysis& rank = run.result.ranks.at(0);
  const RankTrace& trace = run.trace.ranks.at(0);
  const Graph g = build_graph(trace, rank.facts, rank.partition);
  Scenario s = base_scenario(g);
  capture_graphs(g, rank.facts, trace, s);
  std::size_t grown = 0, addcdiv = 0;
  ns_t kernels = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    kernels += s.op_dur[i];
    grown += s.op_dur[i] > g.ops[i].dur;
    addcdiv += trace.name_of(g.ops[i].event).find("addcdiv") != std::string_view::npos;
  }
  EXPECT_GT(addcdiv, 0u);
  EXPECT_EQ(grown, addcdiv) << "only each parameter's update grows";
  const Replayed r = replay(g, s);
  const auto nodes = static_cast<ns_t>(g.ops.size());
  EXPECT_GE(r.span, kernels + nodes * 300 - 50'000);
  const double step_ms = static_cast<double>(r.span) / static_cast<double>(g.steps.size()) / 1e6;
  EXPECT_GT(step_ms, 2.0);
  EXPECT_LT(step_ms, 2.9);
}

}  // namespace
}  // namespace stepscope::whatif
