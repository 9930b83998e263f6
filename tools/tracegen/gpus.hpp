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
};

// The first model whose `match` occurs in `name`; unknown names get A100 numbers.
const GpuModel& gpu_model(std::string_view name);

}  // namespace stepscope::tracegen
