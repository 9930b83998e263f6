// The GPU database: dense peak throughput per data type, memory and interconnect, per vendor
// datasheet. Every TFLOP/s figure here is DENSE (no 2:4 structured sparsity); vendors often
// headline the sparse figure, which is exactly twice the dense one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepscope/plan/units.hpp"

namespace stepscope::plan {

struct GpuSpec {
  std::string key;           // short name used on the command line: "a100-80gb"
  std::string name;          // marketing name: "NVIDIA A100 80GB SXM4"
  std::string vendor;        // "NVIDIA" or "AMD"
  double memory_gb = 0;      // device memory as the datasheet writes it ("80GB"), in GiB

  double memory_bw_gbs = 0;  // device memory bandwidth, GB/s
  // Dense peak TFLOP/s; 0 means the data type has no hardware path on this GPU.
  double fp32_tflops = 0;  // plain (non-tensor-core) FP32
  double tf32_tflops = 0;
  double bf16_tflops = 0;
  double fp16_tflops = 0;
  double fp8_tflops = 0;
  double int8_tops = 0;
  std::string interconnect;        // "NVLink 3", "PCIe 4.0 x16", ...
  double interconnect_gbs = 0;     // total GPU-to-GPU bandwidth, both directions, GB/s
  std::string source;              // datasheet the figures come from
  std::vector<std::string> device_names;  // substrings of the CUDA/ROCm device name

  // Capacity in bytes: the datasheet's "GB" counts binary GiB (80 GiB = 85,899,345,920 bytes).
  double memory_bytes() const { return memory_gb * kGiB; }
  // Dense peak for a data type, or nullopt when the GPU has no path for it.
  std::optional<double> peak_tflops(Dtype d) const;
  // FLOPs per byte at which the GPU turns from memory-bound to compute-bound.
  double ridge_point(Dtype d) const;
};

const std::vector<GpuSpec>& gpu_database();

// Looks a GPU up by key or a close spelling ("A100", "h100", "mi300x"); throws InputError
// listing the known keys if nothing matches.
const GpuSpec& find_gpu(std::string_view name);

// Maps a device name as a trace reports it (Kineto deviceProperties "name", nvidia-smi "name")
// to the database; total memory, when known, separates variants such as A100 40GB vs 80GB.
const GpuSpec* match_device_name(std::string_view device_name,
                                 std::optional<std::uint64_t> total_memory_bytes = std::nullopt);

// The preferred 16-bit training type on a GPU: bf16 where supported, else fp16.
Dtype default_half_dtype(const GpuSpec& gpu);

}  // namespace stepscope::plan
