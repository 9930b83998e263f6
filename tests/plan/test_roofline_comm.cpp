// Roofline, collectives, scaling and pipeline bubble against the seeds' worked examples.
#include <gtest/gtest.h>

#include "stepscope/error.hpp"
#include "stepscope/plan.hpp"

using namespace stepscope::plan;

namespace {
// The seeds' A100: 312 TFLOP/s BF16 and a rounded 2.0 TB/s -> ridge 312e12 / 2e12 = 156.
RooflineMachine seed_a100() { return roofline_machine(std::nullopt, Dtype::bf16, 312.0, 2000.0); }
}  // namespace

TEST(PlanRoofline, SeedA100RidgeIs156) { EXPECT_DOUBLE_EQ(seed_a100().ridge(), 156.0); }

// Seed: LayerNorm over N=4096 is 4N FLOPs over 12N bytes = 0.33 FLOP/B, memory-bound,
// attainable 0.333 x 2000 GB/s = 0.67 TFLOP/s = 0.2% of peak.
TEST(PlanRoofline, LayerNormIsDeeplyMemoryBound) {
  auto p = evaluate_roofline(layernorm_op(4096), seed_a100());
  EXPECT_NEAR(p.intensity, 1.0 / 3.0, 1e-12);
  EXPECT_TRUE(p.memory_bound);
  EXPECT_NEAR(p.attainable_tflops, 2.0 / 3.0, 1e-9);
  EXPECT_NEAR(p.fraction_of_peak, 0.0021, 0.0001);
}

// 4096^3 BF16 GEMM: 2*4096^3 / (3 * 4096^2 * 2 B) = 4096/3 = 1365.3 FLOP/B, compute-bound.
// The seed prints 2730.7, which is what its own formula gives without the 2-byte element
// size; the test follows the formula.
TEST(PlanRoofline, SquareGemmIsComputeBound) {
  auto p = evaluate_roofline(gemm_op(4096, 4096, 4096, Dtype::bf16), seed_a100());
  EXPECT_NEAR(p.intensity, 4096.0 / 3.0, 1e-9);
  EXPECT_FALSE(p.memory_bound);
  EXPECT_DOUBLE_EQ(p.attainable_tflops, 312.0);
  // Time at the roofline: 2*4096^3 FLOPs / 312e12 = 0.4405 ms.
  EXPECT_NEAR(p.time_s, 2.0 * 4096 * 4096 * 4096 / 312e12, 1e-12);
}

// The seed's layer table (B=4, S=2048, D=4096, one score matrix per sequence = heads 1):
// intensities computed from its formulas: QKV 2234.18, QK^T 819.2, softmax 1.25, AV 819.2,
// output 1638.4, LayerNorm 0.333, FFN up/down 2340.57, GELU 0.25. Norms, softmax and GELU are
// memory-bound; every matmul is compute-bound.
TEST(PlanRoofline, SeedTransformerLayerTable) {
  auto ops = transformer_layer_ops(LayerShape{4, 2048, 4096, 1, 0, false}, Dtype::bf16);
  auto r = plan_roofline(ops, seed_a100());
  const double expected[] = {2234.1818, 819.2, 1.25, 819.2, 1638.4, 0.33333, 2340.5714, 0.25, 2340.5714};
  const bool memory[] = {false, false, true, false, false, true, false, true, false};
  ASSERT_EQ(r.points.size(), 9u);
  for (size_t i = 0; i < 9; ++i) {
    SCOPED_TRACE(r.points[i].op.name);
    EXPECT_NEAR(r.points[i].intensity, expected[i], 1e-3);
    EXPECT_EQ(r.points[i].memory_bound, memory[i]);
  }
  EXPECT_GT(r.memory_bound_time_s, 0);
  EXPECT_LT(r.memory_bound_time_s, r.total_time_s);
}

// A SwiGLU layer (LLaMA-2-7B shape) adds a gate GEMM identical to the up GEMM and replaces GELU
// by SiLU(gate) x up: 2 FLOPs over 3 elements of 2 bytes = 1/3 FLOP/B.
TEST(PlanRoofline, GatedLayerTable) {
  auto ops = transformer_layer_ops(LayerShape{1, 4096, 4096, 32, 11008, true}, Dtype::bf16);
  ASSERT_EQ(ops.size(), 10u);
  EXPECT_EQ(ops[7].name, "FFN gate");
  EXPECT_DOUBLE_EQ(ops[7].flops, ops[6].flops);
  EXPECT_DOUBLE_EQ(ops[8].flops / ops[8].bytes, 1.0 / 3.0);
}

// Grouped-query attention (Ainslie et al. 2023): Q is D x D, K and V are D x (kv_heads x
// head_dim) each. Llama-3-8B (config.json: hidden 4096, 32 heads, 8 KV heads) at 8192 tokens:
// 2 x 8192 x 4096 x (4096 + 2 x 1024) = 412.3 GFLOP, half of the MHA count 3 x D x D.
TEST(PlanRoofline, GroupedQueryAttentionShrinksQkv) {
  const auto& m = find_model("llama-3-8b");
  LayerShape shape{4, 2048, m.hidden, m.heads, m.ffn, true, m.kv_heads};
  auto ops = transformer_layer_ops(shape, Dtype::bf16);
  EXPECT_EQ(ops[0].name, "QKV projection");
  EXPECT_DOUBLE_EQ(ops[0].flops, 2.0 * 8192 * 4096 * (4096 + 2 * 1024));
  EXPECT_NEAR(ops[0].flops / 1e9, 412.3, 0.05);
  // Scores are per query head: the attention FLOPs stay, only the K and V reads shrink.
  shape.kv_heads = 0;
  auto mha = transformer_layer_ops(shape, Dtype::bf16);
  EXPECT_NEAR(mha[0].flops / 1e9, 824.6, 0.05);
  EXPECT_DOUBLE_EQ(ops[1].flops, mha[1].flops);
  EXPECT_DOUBLE_EQ(mha[1].bytes - ops[1].bytes, 8192.0 * (4096 - 1024) * 2);
  shape.kv_heads = 5;
  EXPECT_THROW(transformer_layer_ops(shape, Dtype::bf16), stepscope::InputError);
}

// Unfused attention moves the s x s scores 4 times; fused moves only Q, K, V and O.
// b=1, a=32, s=4096, d=128, BF16: QKVO 4*4096*4096*2 = 134,217,728 B; scores 4*32*4096^2*2.
TEST(PlanRoofline, AttentionFusedVsUnfused) {
  auto fused = attention_op(1, 32, 4096, 128, Dtype::bf16, true);
  auto unfused = attention_op(1, 32, 4096, 128, Dtype::bf16, false);
  EXPECT_DOUBLE_EQ(fused.flops, 4.0 * 32 * 4096 * 4096 * 128);
  EXPECT_DOUBLE_EQ(fused.bytes, 134217728.0);
  EXPECT_DOUBLE_EQ(unfused.bytes, 134217728.0 + 4.0 * 32 * 4096 * 4096 * 2);
}

TEST(PlanRoofline, BadInputs) {
  EXPECT_THROW(gemm_op(-1, 4, 4, Dtype::bf16), stepscope::InputError);
  EXPECT_THROW(roofline_machine(std::string("v100"), Dtype::bf16, std::nullopt, std::nullopt),
               stepscope::InputError);  // V100 has no BF16 path
  EXPECT_EQ(roofline_machine(std::string("v100"), std::nullopt, std::nullopt, std::nullopt).dtype,
            Dtype::fp16);
  EXPECT_THROW(custom_op(1e9, 0), stepscope::InputError);
}

// Seed: 7B BF16 gradients (14 GB) on 8 GPUs, ring all-reduce moves 2*7/8*14 = 24.5 GB per GPU:
// 0.49 s at 50 GB/s and 1.96 s at 12.5 GB/s (latency left out, as in the seed).
TEST(PlanComm, RingAllReduceSevenBillion) {
  CommInput in;
  in.payload_bytes = 14e9;
  in.gpus = 8;
  in.link = {"seed", 50, 0};
  auto r = plan_comm(in);
  EXPECT_DOUBLE_EQ(r.collectives[0].bytes_per_gpu, 24.5e9);
  EXPECT_NEAR(r.collectives[0].time_s, 0.49, 1e-12);
  in.link.bandwidth_gbs = 12.5;
  EXPECT_NEAR(plan_comm(in).collectives[0].time_s, 1.96, 1e-12);
}

// Reduce-scatter and all-gather each move (N-1)/N of the payload: 12.25 GB -> 0.245 s at 50;
// tree all-reduce ~2S/B = 0.56 s. Latency: ring 2(N-1)=14 hops, tree 2*log2(8)=6 hops.
TEST(PlanComm, OtherCollectivesAndLatency) {
  CommInput in;
  in.payload_bytes = 14e9;
  in.gpus = 8;
  in.link = {"l", 50, 10};
  auto r = plan_comm(in);
  EXPECT_EQ(r.collectives[1].name, "tree all-reduce");
  EXPECT_NEAR(r.collectives[1].bandwidth_s, 0.56, 1e-12);
  EXPECT_NEAR(r.collectives[1].latency_s, 6 * 10e-6, 1e-15);
  EXPECT_NEAR(r.collectives[0].latency_s, 14 * 10e-6, 1e-15);
  EXPECT_NEAR(r.collectives[2].bandwidth_s, 0.245, 1e-12);
  EXPECT_NEAR(r.collectives[3].time_s, 0.245 + 7 * 10e-6, 1e-12);
}

// Seed: with 1.5 s of compute and no overlap the 0.49 s all-reduce is 0.49 / 1.99 = 24.6% of
// the step ("25% overhead"). With 80% of a 0.5 s backward usable, 0.4 s hides, 0.09 s shows.
TEST(PlanComm, ExposedCommunication) {
  CommInput in;
  in.payload_bytes = 14e9;
  in.gpus = 8;
  in.link = {"seed", 50, 0};
  in.backward_s = 1.5;
  auto r = plan_comm(in);
  EXPECT_NEAR(*r.exposed_s, 0.49, 1e-12);
  EXPECT_NEAR(*r.exposed_share_of_step, 0.49 / 1.99, 1e-12);
  EXPECT_TRUE(r.communication_bound);  // 0.49 / 1.5 = 33% of the backward > 20%
  in.backward_s = 0.5;
  in.overlap = 0.8;
  r = plan_comm(in);
  EXPECT_NEAR(*r.hidden_s, 0.4, 1e-12);
  EXPECT_NEAR(*r.exposed_s, 0.09, 1e-12);
}

TEST(PlanComm, LinksAndBadInputs) {
  EXPECT_DOUBLE_EQ(find_link("infiniband").bandwidth_gbs, 25);   // HDR 200 Gb/s
  EXPECT_DOUBLE_EQ(find_link("ib-edr").bandwidth_gbs, 12.5);     // 100 Gb/s
  EXPECT_DOUBLE_EQ(find_link("nvlink", std::string("a100")).bandwidth_gbs, 300);
  EXPECT_THROW(find_link("nvlink", std::string("rtx4090")), stepscope::InputError);
  EXPECT_THROW(find_link("carrier-pigeon"), stepscope::InputError);
  CommInput in;
  in.payload_bytes = 1e9;
  in.gpus = 1;
  in.link = {"l", 50, 0};
  EXPECT_THROW(plan_comm(in), stepscope::InputError);
  in.gpus = 8;
  in.overlap = 1.5;
  EXPECT_THROW(plan_comm(in), stepscope::InputError);
}

// Seed: 1 GPU 100 samples/s, 8 GPUs 600 (6x, 75%), 64 GPUs 3200 (32x, 50%).
TEST(PlanScaling, SeedExample) {
  auto r = plan_scaling({{8, 600}, {1, 100}, {64, 3200}});
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[0].gpus, 1);
  EXPECT_DOUBLE_EQ(r.points[1].speedup, 6);
  EXPECT_DOUBLE_EQ(r.points[1].efficiency, 0.75);
  EXPECT_DOUBLE_EQ(r.points[2].efficiency, 0.5);
  EXPECT_NE(r.points[2].verdict.find("poor"), std::string::npos);
  EXPECT_THROW(plan_scaling({{1, 100}}), stepscope::InputError);
  EXPECT_THROW(parse_scaling_point("8-600"), stepscope::InputError);
  EXPECT_EQ(parse_scaling_point("8:600").first, 8);
}

// Seed: 4 stages with no micro-batching leave each GPU busy 25% of the time: bubble 3/4.
// With m micro-batches the bubble costs (p-1)/m of useful time (seed's (N-1)/M): 3/8 for m=8,
// i.e. 3/11 of the step. Interleaving v=2 halves it: 3/(16+3).
TEST(PlanPipeline, BubbleFractions) {
  auto r = plan_pipeline({4, 1, 1, std::nullopt, 0.1});
  EXPECT_DOUBLE_EQ(r.schedules[0].bubble_fraction, 0.75);
  EXPECT_DOUBLE_EQ(r.schedules[0].efficiency, 0.25);
  r = plan_pipeline({4, 8, 2, 0.010, 0.1});
  EXPECT_DOUBLE_EQ(r.schedules[0].bubble_overhead, 3.0 / 8);
  EXPECT_DOUBLE_EQ(r.schedules[1].bubble_fraction, 3.0 / 11);
  EXPECT_EQ(*r.schedules[0].micro_batches_in_flight, 8);  // GPipe keeps all m
  EXPECT_EQ(*r.schedules[1].micro_batches_in_flight, 4);  // 1F1B keeps at most p
  ASSERT_EQ(r.schedules.size(), 3u);
  EXPECT_DOUBLE_EQ(r.schedules[2].bubble_fraction, 3.0 / 19);
  // Step = (m + (p-1)/v) micro-batch slots: 10 ms x 11 for 1F1B, 10 ms x 9.5 interleaved.
  EXPECT_NEAR(*r.schedules[1].step_s, 0.110, 1e-12);
  EXPECT_NEAR(*r.schedules[2].step_s, 0.095, 1e-12);
  // Bubble <= 10% with p=4 needs m >= 3 * 0.9 / 0.1 = 27.
  EXPECT_EQ(r.schedules[1].micro_batches_for_target, 27);
}

TEST(PlanPipeline, BadInputs) {
  EXPECT_THROW(plan_pipeline({0, 8, 1, std::nullopt, 0.1}), stepscope::InputError);
  EXPECT_THROW(plan_pipeline({4, -2, 1, std::nullopt, 0.1}), stepscope::InputError);
  EXPECT_THROW(plan_pipeline({4, 6, 2, std::nullopt, 0.1}), stepscope::InputError);
}
