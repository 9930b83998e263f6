// The GPU models the presets name: deviceProperties as CUDA / HIP report them.
#pragma once

#include <cstdint>
#include <string_view>

namespace stepscope::tracegen {

struct GpuModel {
  std::string_view match;  // substring of the device name
  std::int64_t total_mem;
  int major, minor, sms, warp;
  int smem_per_sm, smem_optin;
  int threads_per_sm;
  // Dense peaks, TFLOP/s, and memory bandwidth, GB/s (the datasheets of src/plan/gpus.cpp): fp32
  // on the SIMT units, and the 16-bit tensor-core type autocast would use (bf16, fp16 before Ampere).
  double fp32_tflops, tc16_tflops, memory_gbs;
};

// The first model whose `match` occurs in `name`; unknown names get A100 numbers.
const GpuModel& gpu_model(std::string_view name);

}  // namespace stepscope::tracegen
