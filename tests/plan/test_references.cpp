// The calculators against published figures: model cards' parameter counts, the activation
// memory of Korthikanti et al. (2022), the vendors' memory sizes and the KV cache per token.
// Each test names its source; a failure here means a formula drifted from the literature.
#include <gtest/gtest.h>

#include <cmath>

#include "stepscope/plan.hpp"

using namespace stepscope::plan;

namespace {

constexpr double kGiBytes = 1024.0 * 1024.0 * 1024.0;

double params_of(const char* preset) { return count_parameters(find_model(preset)); }

}  // namespace

// ---- parameter counts ------------------------------------------------------------------------

// Meta Llama 3 model card: "8B" (Hugging Face meta-llama/Meta-Llama-3-8B: 8.03B parameters in
// the safetensors, 8,030,261,248 exactly). 8 KV heads: K and V are 4096 x 1024 each.
TEST(PlanReferences, Llama3_8BParameters) {
  EXPECT_DOUBLE_EQ(params_of("llama-3-8b"), 8030261248.0);
}

// Meta Llama 3 model card: "70B" (Hugging Face meta-llama/Meta-Llama-3-70B: 70.6B,
// 70,553,706,496 exactly).
TEST(PlanReferences, Llama3_70BParameters) {
  EXPECT_DOUBLE_EQ(params_of("llama-3-70b"), 70553706496.0);
}

// Llama 2 model card: 7B, 13B, 70B (Hugging Face meta-llama/Llama-2-*-hf safetensors:
// 6,738,415,616; 13,015,864,320; 68,976,648,192; the 70B uses 8 KV heads).
TEST(PlanReferences, Llama2Parameters) {
  EXPECT_DOUBLE_EQ(params_of("llama-2-7b"), 6738415616.0);
  EXPECT_DOUBLE_EQ(params_of("llama-2-13b"), 13015864320.0);
  EXPECT_DOUBLE_EQ(params_of("llama-2-70b"), 68976648192.0);
}

// Mistral 7B model card / Jiang et al. 2023 "Mistral 7B": 7.24B parameters (Hugging Face
// mistralai/Mistral-7B-v0.1: 7,241,732,096), 32 query and 8 KV heads.
TEST(PlanReferences, Mistral7BParameters) {
  EXPECT_DOUBLE_EQ(params_of("mistral-7b"), 7241732096.0);
}

// GPT-2 model cards (Hugging Face openai-community/gpt2 and gpt2-xl): 124M and 1.5B
// (124,439,808 and 1,557,611,200 with tied embeddings and learned positions).
TEST(PlanReferences, Gpt2Parameters) {
  EXPECT_DOUBLE_EQ(params_of("gpt2-124m"), 124439808.0);
  EXPECT_DOUBLE_EQ(params_of("gpt2-1.5b"), 1557611200.0);
}

// Brown et al. 2020, "Language Models are Few-Shot Learners", table 2.1: GPT-3 175.0B
// (96 layers, d_model 12288, 96 heads, context 2048). The paper rounds; within 0.5%.
TEST(PlanReferences, Gpt3Parameters) {
  EXPECT_NEAR(params_of("gpt3-175b") / 175.0e9, 1.0, 0.005);
}

// Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1: the forward pass
// costs 2N FLOPs per token for N non-embedding parameters. The roofline's layer GEMMs must add
// up to 2 x (the layer's weight matrices) x tokens, with K and V at kv_heads x head_dim.
TEST(PlanReferences, LayerGemmFlopsAreTwicePerLayerWeights) {
  for (const char* preset : {"llama-3-8b", "llama-3-70b", "mistral-7b", "llama-2-7b"}) {
    SCOPED_TRACE(preset);
    const auto& m = find_model(preset);
    LayerShape shape{1, 1024, m.hidden, m.heads, m.ffn, m.gated_mlp, m.kv_heads};
    double gemm_flops = 0;
    for (const auto& op : transformer_layer_ops(shape, Dtype::bf16))
      if (op.name.find("projection") != std::string::npos || op.name.rfind("FFN", 0) == 0)
        gemm_flops += op.flops;
    const double norms = 2.0 * static_cast<double>(m.hidden);  // two RMSNorm weight vectors
    EXPECT_DOUBLE_EQ(gemm_flops, 2.0 * 1024 * (parameters_per_layer(m) - norms));
  }
}

// ---- activation memory: Korthikanti et al. 2022 -------------------------------------------

// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// section 4.1, equation (1): a GPT layer stores sbh(34 + 5as/h) bytes at 16 bit without
// parallelism; section 5 (selective recomputation) and FlashAttention both leave sbh x 34.
// GPT-3 175B (their table 3 model: a 96, h 12288), s 2048, b 1.
TEST(PlanReferences, KorthikantiActivationsEagerAndFlash) {
  const auto& m = find_model("gpt3-175b");
  const double s = 2048, b = 1, h = 12288, a = 96;
  MemoryInput in;
  in.model = m;
  in.model.layers = 1;
  in.seq = 2048;
  in.flash_attention = false;
  auto r = estimate_memory(in);
  auto activations = [](const MemoryResult& res) {
    for (const auto& i : res.items)
      if (i.name == "activations") return i.bytes;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(activations(r), s * b * h * (34 + 5 * a * s / h));
  in.flash_attention = true;  // the default
  EXPECT_DOUBLE_EQ(activations(estimate_memory(in)), s * b * h * 34);
  in.flash_attention = false;
  in.checkpointing = {Recompute::selective, 1};
  EXPECT_DOUBLE_EQ(activations(estimate_memory(in)), s * b * h * 34);
  // Table 2: tensor parallelism t = 8 without sequence parallelism keeps sbh(10 + 24/t +
  // 5as/(ht)); with it, sbh(34/t + 5as/(ht)).
  in.checkpointing = {};
  in.gpus = 8;
  in.tp = 8;
  EXPECT_DOUBLE_EQ(activations(estimate_memory(in)), s * b * h * (10 + 24.0 / 8 + 5 * a * s / (h * 8)));
  in.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(activations(estimate_memory(in)), s * b * h * (34.0 / 8 + 5 * a * s / (h * 8)));
}

// The default attention is flash/memory-efficient, as PyTorch's scaled_dot_product_attention
// picks: without it a llama-3-8b step at 8192 tokens would hold 32 layers x 32 heads x 8192^2
// bf16 scores (137 GB) that no fused kernel keeps.
TEST(PlanReferences, DefaultAttentionKeepsNoScores) {
  MemoryInput in;
  in.model = find_model("llama-3-8b");
  EXPECT_TRUE(in.flash_attention);
  const double flash = estimate_memory(in).activation_bytes;
  in.flash_attention = false;
  EXPECT_DOUBLE_EQ(estimate_memory(in).activation_bytes - flash, 32.0 * 32 * 8192.0 * 8192 * 2);
}

// Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", section 3.1: mixed-precision Adam keeps 16 bytes per parameter (2 + 2 + 12).
TEST(PlanReferences, ZeroSixteenBytesPerParameter) {
  MemoryInput in;
  in.model = find_model("llama-3-8b");
  EXPECT_DOUBLE_EQ(estimate_memory(in).model_state_bytes, 16 * 8030261248.0);
}

// ---- GPU memory sizes ------------------------------------------------------------------------

// Vendors' datasheets write the capacity in "GB" and mean GiB: NVIDIA H100 (SXM and PCIe) and
// A100 80GB: 80 GiB = 85,899,345,920 bytes; A100 40GB: 40 GiB; V100 32GB: 32 GiB; H200 141GB;
// AMD MI300X "192 GB HBM3": 192 GiB; MI250X "128 GB HBM2e": 128 GiB.
TEST(PlanReferences, GpuMemoryInBytes) {
  EXPECT_DOUBLE_EQ(find_gpu("h100-sxm").memory_bytes(), 85899345920.0);
  EXPECT_DOUBLE_EQ(find_gpu("h100-pcie").memory_bytes(), 85899345920.0);
  EXPECT_DOUBLE_EQ(find_gpu("a100-80gb").memory_bytes(), 85899345920.0);
  EXPECT_DOUBLE_EQ(find_gpu("a100-40gb").memory_bytes(), 42949672960.0);
  EXPECT_DOUBLE_EQ(find_gpu("v100").memory_bytes(), 32 * kGiBytes);
  EXPECT_DOUBLE_EQ(find_gpu("h200").memory_bytes(), 141 * kGiBytes);
  EXPECT_DOUBLE_EQ(find_gpu("mi300x").memory_bytes(), 206158430208.0);
  EXPECT_DOUBLE_EQ(find_gpu("mi250x").memory_bytes(), 128 * kGiBytes);
  EXPECT_DOUBLE_EQ(find_gpu("t4").memory_bytes(), 16 * kGiBytes);
  // The memory calculator fits against the same bytes.
  MemoryInput in;
  in.model = resolve_model(std::nullopt, ModelOverrides{.params = 1e9});
  in.gpu = "h100-sxm";
  EXPECT_DOUBLE_EQ(estimate_memory(in).gpu_memory_bytes, 85899345920.0);
  // A trace's reported total (nvidia-smi: 81559 MiB on an H100 80GB HBM3) picks the 80 GiB part.
  const GpuSpec* g = match_device_name("NVIDIA H100 80GB HBM3", 81559ull * 1024 * 1024);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->key, "h100-sxm");
  g = match_device_name("NVIDIA A100-SXM4-40GB", 40960ull * 1024 * 1024);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->key, "a100-40gb");
}

// ---- KV cache --------------------------------------------------------------------------------

// KV cache per token = 2 (K and V) x layers x kv_heads x head_dim x bytes (e.g. the vLLM and
// NVIDIA "Mastering LLM Techniques: Inference Optimization" formula). At bf16:
// Llama-3-8B 2 x 32 x 8 x 128 x 2 = 131,072 B (128 KiB); Llama-3-70B 2 x 80 x 8 x 128 x 2 =
// 327,680 B; Llama-2-7B (MHA) 2 x 32 x 32 x 128 x 2 = 524,288 B; Mistral-7B as Llama-3-8B.
TEST(PlanReferences, KvCachePerToken) {
  const std::pair<const char*, double> cases[] = {{"llama-3-8b", 131072.0},
                                                  {"llama-3-70b", 327680.0},
                                                  {"llama-2-7b", 524288.0},
                                                  {"llama-2-70b", 327680.0},
                                                  {"mistral-7b", 131072.0}};
  for (const auto& [preset, bytes] : cases) {
    SCOPED_TRACE(preset);
    KvInput in = kv_input_from(find_model(preset));
    in.seqs = {8192};
    const auto r = plan_kv(in);
    EXPECT_DOUBLE_EQ(r.bytes_per_token, bytes);
    EXPECT_DOUBLE_EQ(r.rows[0].bytes, bytes * 8192);
    ServeInput s;
    s.model = find_model(preset);
    s.users = 1;
    s.avg_seq = 1000;
    EXPECT_DOUBLE_EQ(plan_serve(s).kv_bytes_per_token, bytes);
  }
}

// ---- collectives, pipeline, speculative decoding ---------------------------------------------

// NCCL tests, doc/PERFORMANCE.md: a ring all-reduce moves 2(n-1)/n x S bytes per rank (bus
// bandwidth = algorithm bandwidth x 2(n-1)/n); reduce-scatter and all-gather (n-1)/n x S each.
TEST(PlanReferences, RingCollectiveBytes) {
  CommInput in;
  in.payload_bytes = 14e9;
  in.gpus = 8;
  in.link = {"test link", 100, 0};
  const auto r = plan_comm(in);
  int checked = 0;
  for (const auto& c : r.collectives) {
    SCOPED_TRACE(c.name);
    if (c.name == "ring all-reduce") {
      EXPECT_DOUBLE_EQ(c.bytes_per_gpu, 2.0 * 7 / 8 * 14e9);
      ++checked;
    }
    if (c.name == "reduce-scatter" || c.name == "all-gather") {
      EXPECT_DOUBLE_EQ(c.bytes_per_gpu, 7.0 / 8 * 14e9);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3);
}

// Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", section 2.2: the 1F1B bubble is (p-1)/m of the ideal time, (p-1)/(v m) with v
// interleaved stages per GPU; as a share of the step, (p-1)/(v m + p - 1).
TEST(PlanReferences, PipelineBubble) {
  PipelineInput in;
  in.stages = 8;
  in.micro_batches = 32;
  in.interleave = 2;
  const auto r = plan_pipeline(in);
  ASSERT_EQ(r.schedules.size(), 3u);
  EXPECT_DOUBLE_EQ(r.schedules[1].bubble_overhead, 7.0 / 32);
  EXPECT_DOUBLE_EQ(r.schedules[1].bubble_fraction, 7.0 / (32 + 7));
  EXPECT_DOUBLE_EQ(r.schedules[2].bubble_overhead, 7.0 / (2 * 32));
}

// Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding", equation
// (1): a step of gamma drafts yields (1 - alpha^(gamma+1)) / (1 - alpha) tokens.
TEST(PlanReferences, SpeculativeDecodingExpectedTokens) {
  EXPECT_DOUBLE_EQ(expected_tokens_per_step(0.8, 5), (1 - std::pow(0.8, 6)) / (1 - 0.8));
  EXPECT_DOUBLE_EQ(expected_tokens_per_step(0.6, 3), (1 - std::pow(0.6, 4)) / 0.4);
}
