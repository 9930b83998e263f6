#include "stepscope/plan/gpus.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::plan {

namespace {

std::string normalise(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c)) out.push_back(static_cast<char>(std::tolower(c)));
  return out;
}

std::vector<GpuSpec> build_database() {
  std::vector<GpuSpec> db;

  // NVIDIA Tesla V100 datasheet (SXM2 32GB): FP32 15.7, Tensor (FP16) 125 TFLOPS,
  // HBM2 900 GB/s, NVLink 2 300 GB/s. No BF16, TF32 or FP8 path.
  // Memory: datasheet "32 GB HBM2" = 32 GiB (4 stacks of 8 GiB).
  db.push_back({.key = "v100", .name = "NVIDIA V100 SXM2 32GB", .vendor = "NVIDIA",
                .memory_gb = 32, .memory_bw_gbs = 900, .fp32_tflops = 15.7, .tf32_tflops = 0,
                .bf16_tflops = 0, .fp16_tflops = 125, .fp8_tflops = 0, .int8_tops = 62,
                .interconnect = "NVLink 2", .interconnect_gbs = 300,
                .source = "NVIDIA Tesla V100 datasheet (SXM2)",
                .device_names = {"v100"}});
  // NVIDIA A100 datasheet (SXM4 40GB): FP32 19.5, TF32 156 (312 sparse), BF16/FP16 312
  // (624 sparse), INT8 624 (1248 sparse) TOPS, HBM2 1,555 GB/s, NVLink 3 600 GB/s.
  // Memory: datasheet "40GB HBM2" = 40 GiB (nvidia-smi: 40960 MiB).
  db.push_back({.key = "a100-40gb", .name = "NVIDIA A100 40GB SXM4", .vendor = "NVIDIA",
                .memory_gb = 40, .memory_bw_gbs = 1555, .fp32_tflops = 19.5, .tf32_tflops = 156,
                .bf16_tflops = 312, .fp16_tflops = 312, .fp8_tflops = 0, .int8_tops = 624,
                .interconnect = "NVLink 3", .interconnect_gbs = 600,
                .source = "NVIDIA A100 Tensor Core GPU datasheet (SXM 40GB)",
                .device_names = {"a100"}});
  // Same datasheet, SXM4 80GB: same compute, HBM2e 2,039 GB/s.
  // Memory: datasheet "80GB HBM2e" = 80 GiB (nvidia-smi: 81920 MiB).
  db.push_back({.key = "a100-80gb", .name = "NVIDIA A100 80GB SXM4", .vendor = "NVIDIA",
                .memory_gb = 80, .memory_bw_gbs = 2039, .fp32_tflops = 19.5, .tf32_tflops = 156,
                .bf16_tflops = 312, .fp16_tflops = 312, .fp8_tflops = 0, .int8_tops = 624,
                .interconnect = "NVLink 3", .interconnect_gbs = 600,
                .source = "NVIDIA A100 Tensor Core GPU datasheet (SXM 80GB)",
                .device_names = {"a100"}});
  // NVIDIA H100 datasheet (SXM5): FP32 67, TF32 494.7 (989 sparse), BF16/FP16 989.4
  // (1,979 sparse), FP8 1,978.9 (3,958 sparse), HBM3 3.35 TB/s, NVLink 4 900 GB/s.
  // Memory: datasheet "80GB" HBM3 = 80 GiB = 85,899,345,920 bytes (nvidia-smi: 81559 MiB
  // after the driver's reservation).
  db.push_back({.key = "h100-sxm", .name = "NVIDIA H100 SXM5 80GB", .vendor = "NVIDIA",
                .memory_gb = 80, .memory_bw_gbs = 3350, .fp32_tflops = 67, .tf32_tflops = 494.7,
                .bf16_tflops = 989.4, .fp16_tflops = 989.4, .fp8_tflops = 1978.9,
                .int8_tops = 1978.9, .interconnect = "NVLink 4", .interconnect_gbs = 900,
                .source = "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM)",
                .device_names = {"h100 sxm5", "h100 80gb hbm3", "h100"}});
  // Same datasheet, H100 PCIe: FP32 51, TF32 378 (756 sparse), BF16/FP16 756 (1,513 sparse),
  // FP8 1,513 (3,026 sparse), HBM2e 2.0 TB/s, PCIe 5.0 x16 128 GB/s (NVLink bridge 600 GB/s).
  // Memory: datasheet "80GB" HBM2e = 80 GiB.
  db.push_back({.key = "h100-pcie", .name = "NVIDIA H100 PCIe 80GB", .vendor = "NVIDIA",
                .memory_gb = 80, .memory_bw_gbs = 2000, .fp32_tflops = 51, .tf32_tflops = 378,
                .bf16_tflops = 756, .fp16_tflops = 756, .fp8_tflops = 1513, .int8_tops = 1513,
                .interconnect = "PCIe 5.0 x16", .interconnect_gbs = 128,
                .source = "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe)",
                .device_names = {"h100 pcie"}});
  // NVIDIA H200 datasheet (SXM): compute as H100 SXM, 141 GB HBM3e at 4.8 TB/s, NVLink 900 GB/s.
  // Memory: datasheet "141GB" HBM3e, taken as 141 GiB (nvidia-smi: 143771 MiB = 140.4 GiB;
  // 141e9 bytes would be 9.6 GB short of it).
  db.push_back({.key = "h200", .name = "NVIDIA H200 SXM 141GB", .vendor = "NVIDIA",
                .memory_gb = 141, .memory_bw_gbs = 4800, .fp32_tflops = 67, .tf32_tflops = 494.7,
                .bf16_tflops = 989.4, .fp16_tflops = 989.4, .fp8_tflops = 1978.9,
                .int8_tops = 1978.9, .interconnect = "NVLink 4", .interconnect_gbs = 900,
                .source = "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM)",
                .device_names = {"h200"}});
  // NVIDIA HGX B200 datasheet, divided by its 8 GPUs and by 2 for sparsity: FP32 75,
  // TF32 1,125, BF16/FP16 2,250, FP8 4,500 dense; 1,440 GB HBM3e (180 GB usable per GPU of the
  // 192 GB fitted) at 8 TB/s; NVLink 5 1.8 TB/s.
  // Memory: "180GB" usable per GPU, taken as 180 GiB (nvidia-smi: 183359 MiB = 179.1 GiB).
  db.push_back({.key = "b200", .name = "NVIDIA B200 180GB", .vendor = "NVIDIA",
                .memory_gb = 180, .memory_bw_gbs = 8000, .fp32_tflops = 75, .tf32_tflops = 1125,
                .bf16_tflops = 2250, .fp16_tflops = 2250, .fp8_tflops = 4500, .int8_tops = 4500,
                .interconnect = "NVLink 5", .interconnect_gbs = 1800,
                .source = "NVIDIA HGX B200 datasheet (per GPU, dense)",
                .device_names = {"b200"}});
  // NVIDIA L4 datasheet: FP32 30.3, TF32 60 (120 sparse), BF16/FP16 121 (242 sparse),
  // FP8 242 (485 sparse), 24 GB GDDR6 300 GB/s, PCIe 4.0 x16 64 GB/s.
  // Memory: datasheet "24GB" GDDR6 = 24 GiB.
  db.push_back({.key = "l4", .name = "NVIDIA L4 24GB", .vendor = "NVIDIA", .memory_gb = 24,
                .memory_bw_gbs = 300, .fp32_tflops = 30.3, .tf32_tflops = 60, .bf16_tflops = 121,
                .fp16_tflops = 121, .fp8_tflops = 242, .int8_tops = 242,
                .interconnect = "PCIe 4.0 x16", .interconnect_gbs = 64,
                .source = "NVIDIA L4 Tensor Core GPU datasheet", .device_names = {"l4"}});
  // NVIDIA A10 datasheet: FP32 31.2, TF32 62.5 (125 sparse), BF16/FP16 125 (250 sparse),
  // 24 GB GDDR6 600 GB/s, PCIe 4.0 x16 64 GB/s.
  // Memory: datasheet "24 GB GDDR6" = 24 GiB.
  db.push_back({.key = "a10", .name = "NVIDIA A10 24GB", .vendor = "NVIDIA", .memory_gb = 24,
                .memory_bw_gbs = 600, .fp32_tflops = 31.2, .tf32_tflops = 62.5,
                .bf16_tflops = 125, .fp16_tflops = 125, .fp8_tflops = 0, .int8_tops = 250,
                .interconnect = "PCIe 4.0 x16", .interconnect_gbs = 64,
                .source = "NVIDIA A10 Tensor Core GPU datasheet", .device_names = {"a10"}});
  // NVIDIA T4 datasheet: FP32 8.1, mixed-precision FP16 65, INT8 130 TOPS, 16 GB GDDR6
  // 320 GB/s, PCIe 3.0 x16 32 GB/s. Turing has no BF16 or TF32.
  // Memory: datasheet "16 GB GDDR6" = 16 GiB.
  db.push_back({.key = "t4", .name = "NVIDIA T4 16GB", .vendor = "NVIDIA", .memory_gb = 16,
                .memory_bw_gbs = 320, .fp32_tflops = 8.1, .tf32_tflops = 0, .bf16_tflops = 0,
                .fp16_tflops = 65, .fp8_tflops = 0, .int8_tops = 130,
                .interconnect = "PCIe 3.0 x16", .interconnect_gbs = 32,
                .source = "NVIDIA T4 Tensor Core GPU datasheet", .device_names = {"t4"}});
  // NVIDIA Ampere GA102 whitepaper (RTX 3090): FP32 35.6, tensor FP16/BF16 with FP32
  // accumulate 71 (142 sparse; 142 dense with FP16 accumulate), TF32 35.6, 24 GB GDDR6X
  // 936 GB/s, PCIe 4.0 x16 64 GB/s (NVLink bridge 112.5 GB/s).
  // Memory: "24 GB GDDR6X" = 24 GiB (24 chips of 8 Gbit: 24,576 MiB).
  db.push_back({.key = "rtx3090", .name = "NVIDIA GeForce RTX 3090", .vendor = "NVIDIA",
                .memory_gb = 24, .memory_bw_gbs = 936, .fp32_tflops = 35.6, .tf32_tflops = 35.6,
                .bf16_tflops = 71, .fp16_tflops = 71, .fp8_tflops = 0, .int8_tops = 284,
                .interconnect = "PCIe 4.0 x16", .interconnect_gbs = 64,
                .source = "NVIDIA Ampere GA102 GPU architecture whitepaper",
                .device_names = {"rtx 3090", "3090"}});
  // NVIDIA Ada Lovelace architecture whitepaper (RTX 4090): FP32 82.6, TF32 82.6, FP16/BF16
  // with FP32 accumulate 165.2 (330.3 sparse), FP8 with FP32 accumulate 330.3 (660.6 sparse),
  // 24 GB GDDR6X 1,008 GB/s, PCIe 4.0 x16 64 GB/s, no NVLink.
  // Memory: "24 GB GDDR6X" = 24 GiB (twelve 16 Gbit chips: 24,576 MiB).
  db.push_back({.key = "rtx4090", .name = "NVIDIA GeForce RTX 4090", .vendor = "NVIDIA",
                .memory_gb = 24, .memory_bw_gbs = 1008, .fp32_tflops = 82.6,
                .tf32_tflops = 82.6, .bf16_tflops = 165.2, .fp16_tflops = 165.2,
                .fp8_tflops = 330.3, .int8_tops = 660.6, .interconnect = "PCIe 4.0 x16",
                .interconnect_gbs = 64, .source = "NVIDIA Ada Lovelace GPU architecture whitepaper",
                .device_names = {"rtx 4090", "4090"}});
  // AMD Instinct MI250X datasheet (OAM, both dies): FP32 vector 47.9, FP16/BF16 matrix 383,
  // INT8 383 TOPS, 128 GB HBM2e 3.2 TB/s, Infinity Fabric up to 800 GB/s. No TF32 or FP8.
  // Each of its two dies shows up as a separate 64 GiB device.
  // Memory: datasheet "128 GB HBM2e" = 128 GiB (8 stacks of 16 GiB; 64 GiB per die).
  db.push_back({.key = "mi250x", .name = "AMD Instinct MI250X", .vendor = "AMD",
                .memory_gb = 128, .memory_bw_gbs = 3277, .fp32_tflops = 47.9, .tf32_tflops = 0,
                .bf16_tflops = 383, .fp16_tflops = 383, .fp8_tflops = 0, .int8_tops = 383,
                .interconnect = "Infinity Fabric", .interconnect_gbs = 800,
                .source = "AMD Instinct MI250X accelerator datasheet",
                .device_names = {"mi250x", "mi250"}});
  // AMD Instinct MI300X datasheet: FP32 vector 81.7, TF32 653.7 (1,307.4 sparse), FP16/BF16
  // 1,307.4 (2,614.9 sparse), FP8 2,614.9 (5,229.8 sparse), 192 GB HBM3 5.3 TB/s,
  // Infinity Fabric 7 links x 128 GB/s = 896 GB/s.
  // Memory: datasheet "192 GB HBM3" = 192 GiB (8 stacks of 24 GiB).
  db.push_back({.key = "mi300x", .name = "AMD Instinct MI300X", .vendor = "AMD",
                .memory_gb = 192, .memory_bw_gbs = 5300, .fp32_tflops = 81.7,
                .tf32_tflops = 653.7, .bf16_tflops = 1307.4, .fp16_tflops = 1307.4,
                .fp8_tflops = 2614.9, .int8_tops = 2614.9, .interconnect = "Infinity Fabric",
                .interconnect_gbs = 896, .source = "AMD Instinct MI300X accelerator datasheet",
                .device_names = {"mi300x"}});
  return db;
}

}  // namespace

std::optional<double> GpuSpec::peak_tflops(Dtype d) const {
  double v = 0;
  switch (d) {
    case Dtype::fp32: v = fp32_tflops; break;
    case Dtype::tf32: v = tf32_tflops; break;
    case Dtype::bf16: v = bf16_tflops; break;
    case Dtype::fp16: v = fp16_tflops; break;
    case Dtype::fp8: v = fp8_tflops; break;
    case Dtype::int8:
    case Dtype::int4: v = int8_tops; break;  // int4 GEMMs usually run on the int8 path
  }
  if (v <= 0) return std::nullopt;
  return v;
}

double GpuSpec::ridge_point(Dtype d) const {
  auto peak = peak_tflops(d);
  if (!peak) return 0;
  return *peak * 1e12 / (memory_bw_gbs * 1e9);
}

const std::vector<GpuSpec>& gpu_database() {
  static const std::vector<GpuSpec> db = build_database();
  return db;
}

const GpuSpec& find_gpu(std::string_view name) {
  const std::string want = normalise(name);
  const auto& db = gpu_database();
  for (const auto& g : db)
    if (normalise(g.key) == want) return g;
  // Friendly spellings: "a100" means the 80 GB part, "h100" the SXM part.
  static const std::pair<const char*, const char*> aliases[] = {
      {"a100", "a100-80gb"},  {"a10080", "a100-80gb"}, {"a10040", "a100-40gb"},
      {"h100", "h100-sxm"},   {"h100sxm5", "h100-sxm"}, {"h200sxm", "h200"},
      {"3090", "rtx3090"},    {"4090", "rtx4090"},      {"v10032gb", "v100"},
      {"geforcertx3090", "rtx3090"}, {"geforcertx4090", "rtx4090"}};
  for (const auto& [alias, key] : aliases)
    if (want == alias)
      for (const auto& g : db)
        if (g.key == key) return g;
  std::string keys;
  for (const auto& g : db) keys += (keys.empty() ? "" : ", ") + g.key;
  throw InputError(fmt::format("unknown GPU '{}' (known: {}; see `stepscope plan gpus`)", name, keys));
}

namespace {

// Lower-case alphanumeric tokens: "NVIDIA A100-SXM4-80GB" -> {nvidia, a100, sxm4, 80gb}.
std::vector<std::string> tokens_of(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char c : s) {
    if (std::isalnum(c)) {
      cur.push_back(static_cast<char>(std::tolower(c)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Whole-token match, so that "a10" does not match "a100" and "l4" does not match "l40s".
bool contains_tokens(const std::vector<std::string>& hay, const std::vector<std::string>& needle) {
  if (needle.empty() || needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (std::equal(needle.begin(), needle.end(), hay.begin() + static_cast<long>(i))) return true;
  return false;
}

// A "80gb" token in the device name stands in for the memory size when none is given.
std::optional<double> memory_hint_gb(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens) {
    if (t.size() < 3 || t.substr(t.size() - 2) != "gb") continue;
    const std::string digits = t.substr(0, t.size() - 2);
    if (std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
      if (auto gb = parse_double(digits)) return gb;
  }
  return std::nullopt;
}

}  // namespace

const GpuSpec* match_device_name(std::string_view device_name,
                                 std::optional<std::uint64_t> total_memory_bytes) {
  const auto tokens = tokens_of(device_name);
  std::optional<double> memory_gb = memory_hint_gb(tokens);
  if (total_memory_bytes) memory_gb = static_cast<double>(*total_memory_bytes) / kGiB;
  const GpuSpec* best = nullptr;
  size_t best_len = 0;
  double best_gap = 1e300;
  for (const auto& g : gpu_database()) {
    for (const auto& pattern : g.device_names) {
      const auto needle = tokens_of(pattern);
      if (!contains_tokens(tokens, needle)) continue;
      // Prefer the most specific pattern, then the variant whose memory size is nearest.
      const double gap = memory_gb ? std::fabs(*memory_gb - g.memory_gb) : 0;
      if (needle.size() > best_len || (needle.size() == best_len && gap < best_gap)) {
        best = &g;
        best_len = needle.size();
        best_gap = gap;
      }
    }
  }
  return best;
}

Dtype default_half_dtype(const GpuSpec& gpu) {
  return gpu.bf16_tflops > 0 ? Dtype::bf16 : Dtype::fp16;
}

}  // namespace stepscope::plan
