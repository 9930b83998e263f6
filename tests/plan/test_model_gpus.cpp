// Model presets, parameter counts, units, and the GPU database.
#include <gtest/gtest.h>

#include "stepscope/error.hpp"
#include "stepscope/plan.hpp"

using namespace stepscope::plan;

// Published parameter counts: LLaMA-2-7B 6,738,415,616; LLaMA-2-13B 13,015,864,320;
// LLaMA-2-70B 68,976,648,192; LLaMA-3-8B 8,030,261,248; GPT-2 XL 1,557,611,200.
TEST(PlanModel, PresetParameterCounts) {
  EXPECT_DOUBLE_EQ(count_parameters(find_model("llama-2-7b")), 6738415616.0);
  EXPECT_DOUBLE_EQ(count_parameters(find_model("llama-2-13b")), 13015864320.0);
  EXPECT_DOUBLE_EQ(count_parameters(find_model("llama-2-70b")), 68976648192.0);
  EXPECT_DOUBLE_EQ(count_parameters(find_model("llama-3-8b")), 8030261248.0);
  EXPECT_DOUBLE_EQ(count_parameters(find_model("gpt2-1.5b")), 1557611200.0);
  // GPT-3: 12 h^2 L + 13 h L + V h + 2048 h + 2h = 174.6B ("175B").
  EXPECT_NEAR(count_parameters(find_model("gpt3-175b")) / 1e9, 174.6, 0.05);
  EXPECT_NEAR(count_parameters(find_model("llama-3-70b")) / 1e9, 70.55, 0.01);
}

TEST(PlanModel, InconsistentHeadsAreRejected) {
  EXPECT_THROW(resolve_model(std::nullopt, ModelOverrides{.hidden = 4096, .layers = 2, .heads = 30}),
               stepscope::InputError);
  EXPECT_THROW(resolve_model(std::nullopt,
                             ModelOverrides{.hidden = 4096, .layers = 2, .heads = 32, .kv_heads = 6}),
               stepscope::InputError);
  EXPECT_THROW(resolve_model(std::string("llama-3-8b"), ModelOverrides{.kv_heads = 64}),
               stepscope::InputError);
  EXPECT_THROW(resolve_model(std::nullopt, ModelOverrides{.hidden = -1}), stepscope::InputError);
  EXPECT_THROW(find_model("llama-9-1t"), stepscope::InputError);
}

TEST(PlanModel, OverridesApplyOnTopOfAPreset) {
  auto m = resolve_model(std::string("llama-2-7b"), ModelOverrides{.layers = 16});
  EXPECT_EQ(m.layers, 16);
  EXPECT_EQ(m.hidden, 4096);
  // Half the blocks: 16 x 202,383,360 + embeddings 262,144,000 + final norm 4096.
  EXPECT_DOUBLE_EQ(count_parameters(m), 16.0 * 202383360 + 262144000 + 4096);
}

TEST(PlanUnits, CountsAndSizes) {
  EXPECT_DOUBLE_EQ(parse_count("7B", "x"), 7e9);
  EXPECT_DOUBLE_EQ(parse_count("1.5b", "x"), 1.5e9);
  EXPECT_DOUBLE_EQ(parse_count("350M", "x"), 350e6);
  EXPECT_DOUBLE_EQ(parse_count("7e9", "x"), 7e9);
  EXPECT_DOUBLE_EQ(parse_bytes("14GB", "x"), 14e9);
  EXPECT_DOUBLE_EQ(parse_bytes("1 GiB", "x"), 1073741824.0);
  EXPECT_THROW(parse_count("-7B", "x"), stepscope::InputError);
  EXPECT_THROW(parse_count("seven", "x"), stepscope::InputError);
  EXPECT_THROW(parse_bytes("14 parsecs", "x"), stepscope::InputError);
  EXPECT_THROW(parse_dtype("fp12"), stepscope::InputError);
  EXPECT_DOUBLE_EQ(dtype_bytes(parse_dtype("bfloat16")), 2);
  EXPECT_DOUBLE_EQ(dtype_bytes(Dtype::int4), 0.5);
}

// Ridge points from the datasheet figures: A100 80GB 312e12 / 2039e9 = 153.0 (the seed's 156
// uses 2.0 TB/s); H100 SXM 989.4 / 3.35 = 295.3; H200 989.4 / 4.8 = 206.1; B200 2250 / 8 = 281.3.
TEST(PlanGpus, RidgePoints) {
  EXPECT_NEAR(find_gpu("a100-80gb").ridge_point(Dtype::bf16), 153.02, 0.01);
  EXPECT_NEAR(find_gpu("h100-sxm").ridge_point(Dtype::bf16), 295.34, 0.01);
  EXPECT_NEAR(find_gpu("h200").ridge_point(Dtype::bf16), 206.13, 0.01);
  EXPECT_NEAR(find_gpu("b200").ridge_point(Dtype::bf16), 281.25, 0.01);
}

// Dense figures only: H100 SXM BF16 is 989.4 (1,979 is the 2:4-sparse headline).
TEST(PlanGpus, DenseNotSparse) {
  EXPECT_DOUBLE_EQ(*find_gpu("h100").peak_tflops(Dtype::bf16), 989.4);
  EXPECT_DOUBLE_EQ(*find_gpu("h100").peak_tflops(Dtype::fp8), 1978.9);
  EXPECT_DOUBLE_EQ(*find_gpu("a100").peak_tflops(Dtype::tf32), 156);
  EXPECT_DOUBLE_EQ(*find_gpu("mi300x").peak_tflops(Dtype::bf16), 1307.4);
  EXPECT_FALSE(find_gpu("v100").peak_tflops(Dtype::bf16).has_value());
  EXPECT_FALSE(find_gpu("a100").peak_tflops(Dtype::fp8).has_value());
  EXPECT_EQ(default_half_dtype(find_gpu("t4")), Dtype::fp16);
}

TEST(PlanGpus, DatabaseCoversTheListedParts) {
  for (const char* key : {"v100", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200",
                          "l4", "a10", "t4", "rtx3090", "rtx4090", "mi250x", "mi300x"}) {
    const auto& g = find_gpu(key);
    EXPECT_GT(g.memory_gb, 0) << key;
    EXPECT_GT(g.memory_bw_gbs, 0) << key;
    EXPECT_GT(g.fp32_tflops, 0) << key;
    EXPECT_FALSE(g.source.empty()) << key;
  }
  EXPECT_THROW(find_gpu("a200"), stepscope::InputError);
}

// Trace device names map onto the database; whole tokens only (A10 is not an A100, L40S is
// not an L4), and the memory size picks the A100 variant.
TEST(PlanGpus, DeviceNameMatching) {
  auto key = [](const char* name, std::optional<std::uint64_t> mem = std::nullopt) {
    const GpuSpec* g = match_device_name(name, mem);
    return g ? g->key : std::string("none");
  };
  EXPECT_EQ(key("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(key("NVIDIA A100-SXM4-40GB"), "a100-40gb");
  EXPECT_EQ(key("NVIDIA A100-PCIE-40GB"), "a100-40gb");
  EXPECT_EQ(key("NVIDIA A100", 85899345920ULL), "a100-80gb");
  EXPECT_EQ(key("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(key("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(key("NVIDIA H200"), "h200");
  EXPECT_EQ(key("NVIDIA A10"), "a10");
  EXPECT_EQ(key("Tesla T4"), "t4");
  EXPECT_EQ(key("Tesla V100-SXM2-32GB"), "v100");
  EXPECT_EQ(key("NVIDIA GeForce RTX 4090"), "rtx4090");
  EXPECT_EQ(key("AMD Instinct MI300X"), "mi300x");
  EXPECT_EQ(key("NVIDIA L40S"), "none");
  EXPECT_EQ(key("NVIDIA L4"), "l4");
}

// Sizes are powers of 1024 and whole; durations take any unit, a bare number the caller's.
TEST(Units, SizesAndDurations) {
  EXPECT_EQ(parse_size("4096", "x"), 4096);
  EXPECT_EQ(parse_size("8K", "x"), 8192);
  EXPECT_EQ(parse_size("8k", "x"), 8192);
  EXPECT_EQ(parse_size("1.5M", "x"), 1572864);
  EXPECT_EQ(parse_size("2G", "x"), 2147483648);
  EXPECT_EQ(parse_size("1e4", "x"), 10000);
  EXPECT_EQ(parse_size("-1", "x"), -1);
  EXPECT_THROW(parse_size("1.3K", "x"), stepscope::InputError);  // 1331.2
  EXPECT_THROW(parse_size("8Q", "x"), stepscope::InputError);
  EXPECT_THROW(parse_size("", "x"), stepscope::InputError);
  EXPECT_THROW(parse_size("1e30", "x"), stepscope::InputError);
  EXPECT_DOUBLE_EQ(parse_duration_s("500ms", 1, "x"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration_s("250us", 1, "x"), 250e-6);
  EXPECT_DOUBLE_EQ(parse_duration_s("2min", 1, "x"), 120);
  EXPECT_DOUBLE_EQ(parse_duration_s("1h", 1, "x"), 3600);
  EXPECT_DOUBLE_EQ(parse_duration_s("120", 1e-3, "x"), 0.12);
  EXPECT_THROW(parse_duration_s("2 weeks", 1, "x"), stepscope::InputError);
  EXPECT_THROW(parse_duration_s("inf", 1, "x"), stepscope::InputError);
  EXPECT_EQ(parse_seq_list({"2048,8K"}), (std::vector<std::int64_t>{2048, 8192}));
}


