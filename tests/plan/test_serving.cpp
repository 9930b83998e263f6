// KV cache, serving capacity, speculative decoding and stacked speedups.
#include <gtest/gtest.h>

#include "stepscope/error.hpp"
#include "stepscope/plan.hpp"

using namespace stepscope::plan;

// Seed: LLaMA-7B (32 layers, 32 heads, 128 dims, BF16): 2*32*32*128*2 = 524,288 B per token;
// 2K/4K/8K/32K -> 1.07 / 2.15 / 4.29 / 17.18 GB (seed: 1.1, 2.1, 4.3, 17.2). The seed's
// quick-reference "~16 KB per token" is this figure for a single layer (524,288 / 32).
TEST(PlanKv, LlamaSevenB) {
  KvInput in{32, 32, 32, 128, {2048, 4096, 8192, 32768}, 1, Dtype::bf16};
  auto r = plan_kv(in);
  EXPECT_EQ(r.attention, "MHA");
  EXPECT_DOUBLE_EQ(r.bytes_per_token, 524288.0);
  EXPECT_NEAR(r.rows[0].bytes / 1e9, 1.07, 0.005);
  EXPECT_NEAR(r.rows[1].bytes / 1e9, 2.15, 0.005);
  EXPECT_NEAR(r.rows[2].bytes / 1e9, 4.29, 0.005);
  EXPECT_NEAR(r.rows[3].bytes / 1e9, 17.18, 0.005);
  EXPECT_DOUBLE_EQ(r.bytes_per_token / 32, 16384.0);
}

// Seed: LLaMA-3-70B (80 layers, 8 KV heads, 128 dims) at 8K: 2*80*8*128*2*8192 =
// 2,684,354,560 B = 2.68 GB (the seed prints 2.6), 8x less than MHA with 64 heads.
TEST(PlanKv, LlamaThreeSeventyGqa) {
  auto in = kv_input_from(find_model("llama-3-70b"));
  in.seqs = {8192};
  auto r = plan_kv(in);
  EXPECT_DOUBLE_EQ(r.rows[0].bytes, 2684354560.0);
  EXPECT_DOUBLE_EQ(r.mha_bytes_per_token / r.bytes_per_token, 8.0);
  EXPECT_EQ(r.attention, "GQA (8 query heads per kv head)");
}

TEST(PlanKv, MqaBatchDtypeAndErrors) {
  KvInput in{32, 32, 1, 128, {1000}, 4, Dtype::fp8};
  auto r = plan_kv(in);
  EXPECT_EQ(r.attention, "MQA");
  EXPECT_DOUBLE_EQ(r.rows[0].bytes, 2.0 * 32 * 1 * 128 * 1 * 1000 * 4);
  in.kv_heads = 5;  // 32 heads cannot be grouped 5 ways
  EXPECT_THROW(plan_kv(in), stepscope::InputError);
  in.kv_heads = 8;
  in.seqs = {-1};
  EXPECT_THROW(plan_kv(in), stepscope::InputError);
}

// Seed capacity_plan(7, 1000 users, 1000 tokens, 80 GB, INT4), following its formula:
// weights 7e9 * 4/8 = 3.5 GB; KV 0.5 MB/token -> 0.5 GB/user -> 1000 * 0.5 * 1.3 = 650 GB;
// total 653.5 GB over 0.8 x 80 GiB = 68.72 GB usable per GPU -> 10 GPUs (the seed's 64 GB
// took the card for 80e9 bytes, which would give 11). The seed's printed "kv: 92.9 GB,
// gpus: 2" is 650 / 7, i.e. its printout divides by the 7B scale twice; the formula gives 11.
TEST(PlanServe, SeedSevenBThousandUsers) {
  ServeInput in;
  in.model = resolve_model(std::nullopt, ModelOverrides{.params = 7e9});
  in.users = 1000;
  in.avg_seq = 1000;
  in.weights = Dtype::int4;
  auto r = plan_serve(in);
  EXPECT_DOUBLE_EQ(r.weights_bytes, 3.5e9);
  EXPECT_NEAR(r.kv_total_bytes, 650e9, 1e-3);
  EXPECT_NEAR(r.total_bytes, 653.5e9, 1e-3);
  EXPECT_DOUBLE_EQ(r.usable_per_gpu, 0.8 * 80 * 1073741824.0);
  EXPECT_EQ(r.gpus_pooled, 10);
  // One copy per GPU: (68.72 - 3.5) / 0.65 = 100 users each -> ceil(1000 / 100) = 10 GPUs.
  EXPECT_EQ(*r.users_per_replica, 100);
  EXPECT_EQ(*r.gpus_replicated, 10);
}

// With the architecture known the KV size is exact: LLaMA-2-7B 524,288 B/token.
TEST(PlanServe, ExactKvFromPreset) {
  ServeInput in;
  in.model = find_model("llama-2-7b");
  in.users = 10;
  in.avg_seq = 4096;
  auto r = plan_serve(in);
  EXPECT_DOUBLE_EQ(r.kv_bytes_per_token, 524288.0);
  EXPECT_DOUBLE_EQ(r.kv_total_bytes, 524288.0 * 4096 * 10 * 1.3);
  in.users = 0;
  EXPECT_THROW(plan_serve(in), stepscope::InputError);
}

// Expected tokens per target forward = sum_{i=0..k} a^i = (1 - 0.8^6) / 0.2 = 3.689;
// step = 5 * 2 + 30 = 40 ms; speedup = 3.689 * 30 / 40 = 2.77x. The seed's code computes
// exactly this, but its printed "2.5x, 3.4 tokens" is (1 - 0.8^5) / 0.2 = 3.36 (the target's
// own extra token left out); the test follows the formula.
TEST(PlanSpecDec, SeedEightyPercentKFive) {
  auto r = plan_specdec({0.8, 5, 0.002, 0.030, 16});
  EXPECT_NEAR(r.expected_tokens, 3.68928, 1e-9);
  EXPECT_NEAR(r.step_s, 0.040, 1e-12);
  EXPECT_NEAR(r.speedup, 3.68928 * 30 / 40, 1e-9);
  // Best k by hand: k=6 2.822, k=7 4.16114*30/44 = 2.837, k=8 2.823.
  EXPECT_EQ(r.best_k, 7);
  EXPECT_NEAR(r.best_speedup, 2.8371, 1e-4);
  EXPECT_DOUBLE_EQ(expected_tokens_per_step(1.0, 5), 6.0);
  EXPECT_DOUBLE_EQ(expected_tokens_per_step(0.0, 5), 1.0);
  EXPECT_THROW(plan_specdec({1.2, 5, 0.002, 0.030, 16}), stepscope::InputError);
  EXPECT_THROW(plan_specdec({0.8, 0, 0.002, 0.030, 16}), stepscope::InputError);
}

// Seed optimisation stack: 850 ms, x1.4, x1.7, x1.15, x1.12 -> cumulative 3.065x, 277 ms,
// $50,000 -> $16,311 (seed rounds to $16,300); intermediate steps 607, 357, 311 ms.
TEST(PlanStack, SeedStack850To277) {
  StackInput in;
  in.step_s = 0.850;
  in.run_cost = 50000;
  for (const char* s : {"loader workers=1.4", "BF16 AMP=1.7", "torch.compile=1.15x", "fused AdamW=1.12"})
    in.items.push_back(parse_stack_item(s));
  auto r = plan_stack(in);
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_NEAR(r.rows[1].step_s * 1e3, 607.14, 0.01);
  EXPECT_NEAR(r.rows[2].step_s * 1e3, 357.14, 0.01);
  EXPECT_NEAR(r.rows[3].step_s * 1e3, 310.56, 0.01);
  EXPECT_NEAR(r.rows[4].step_s * 1e3, 277.29, 0.01);
  EXPECT_NEAR(r.rows[4].cumulative, 3.06544, 1e-5);
  EXPECT_NEAR(*r.rows[4].cost, 16311, 1);
  EXPECT_EQ(r.rows[2].name, "BF16 AMP");
  EXPECT_THROW(parse_stack_item("amp=-2"), stepscope::InputError);
  EXPECT_THROW(parse_stack_item("amp=fast"), stepscope::InputError);
}

// Two levers measured alone on the same 50% data wait (2x and 1.9x) cannot make 3.8x: together
// they can at most remove the wait, 2x by Amdahl's law. With the wait's share known (60%), each
// removes its part of what is left: 60 ms x (1 - 50/60) x (1 - 47.37/60) = 2.11 ms left.
TEST(PlanStack, LeversOnOneCategoryDoNotCompoundPastIt) {
  StackInput in;
  in.step_s = 0.100;
  for (const char* s : {"loader workers@data wait=2", "pin memory@data wait=1.9"})
    in.items.push_back(parse_stack_item(s));
  EXPECT_EQ(in.items[1].name, "pin memory");
  EXPECT_EQ(in.items[1].category, "data wait");
  auto r = plan_stack(in);
  EXPECT_NEAR(r.rows.back().cumulative, 2.0, 1e-12);
  EXPECT_FALSE(r.notes.empty());
  in.shares = {parse_stack_share("data wait=0.6")};
  r = plan_stack(in);
  const double left = 0.060 * (1 - 0.050 / 0.060) * (1 - 0.100 * (1 - 1 / 1.9) / 0.060);
  EXPECT_NEAR(r.rows.back().step_s, 0.040 + left, 1e-12);
  EXPECT_LT(r.rows.back().cumulative, 1 / 0.4);  // never past removing the whole wait
  // Another category adds its own saving (Amdahl); a lever without one compounds on top.
  in.items.push_back(parse_stack_item("AMP@compute=1.25"));
  in.items.push_back(parse_stack_item("fused AdamW=1.1"));
  r = plan_stack(in);
  EXPECT_NEAR(r.rows.back().step_s, (0.040 + left - 0.100 * (1 - 1 / 1.25)) / 1.1, 1e-12);
  // Shares that add up to more than the step, or name no lever, are refused.
  in.shares.push_back(parse_stack_share("compute=0.5"));
  EXPECT_THROW(plan_stack(in), stepscope::InputError);
  in.shares = {parse_stack_share("optimizer=0.1")};
  EXPECT_THROW(plan_stack(in), stepscope::InputError);
  EXPECT_THROW(parse_stack_share("data wait=1.5"), stepscope::InputError);
  EXPECT_THROW(parse_stack_item("x@=2"), stepscope::InputError);
}
