// Training memory per GPU: model states (weights, gradients, optimizer, master weights) under
// data-parallel sharding, tensor and pipeline parallelism, plus activations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepscope/plan/gpus.hpp"
#include "stepscope/plan/model.hpp"
#include "stepscope/plan/units.hpp"

namespace stepscope::plan {

enum class Optimizer { adam, sgd, sgd_momentum, adam_8bit };
// DDP keeps everything replicated; ZeRO stage k shards progressively more across data-parallel
// ranks (FSDP SHARD_GRAD_OP = stage 2, FULL_SHARD = stage 3).
enum class Sharding { none, zero1, zero2, zero3 };
enum class Offload { none, optimizer, all };
enum class Recompute { none, selective, full };
enum class ActivationModel { automatic, simple, per_layer };

Optimizer parse_optimizer(std::string_view text);
// "auto", "simple", "per-layer" (also "per_layer", "exact"): the CLI and Python share it.
ActivationModel parse_activation_model(std::string_view text);
// "flash" (also "sdpa", "fused", "memory-efficient") -> true; "eager" (also "math", "unfused")
// -> false.
bool parse_attention(std::string_view text);
Sharding parse_sharding(std::string_view text);
Offload parse_offload(std::string_view text);
std::string_view optimizer_name(Optimizer o);
std::string_view sharding_name(Sharding s);
std::string_view offload_name(Offload o);

struct Checkpointing {
  Recompute mode = Recompute::none;
  int every = 1;  // full recompute in segments of `every` layers (1 = every layer)
};
// "none", "selective", "full", or a number k: checkpoint segments of k layers.
Checkpointing parse_checkpointing(std::string_view text);

struct MemoryInput {
  ModelArch model;
  Dtype dtype = Dtype::bf16;   // training precision: fp32, or bf16/fp16/fp8 mixed precision
  Optimizer optimizer = Optimizer::adam;
  std::optional<bool> master_weights;  // default: on for mixed precision, off for fp32
  std::int64_t batch = 1;      // micro-batch per GPU (sequences)
  std::int64_t seq = 0;        // 0: the model's context length, else 2048
  int gpus = 1;                // total GPUs = data x tensor x pipeline
  int tp = 1;
  int pp = 1;
  Sharding sharding = Sharding::none;
  Offload offload = Offload::none;
  Checkpointing checkpointing;
  // PyTorch's scaled_dot_product_attention picks a flash or memory-efficient kernel whenever
  // it can, and neither keeps the s x s score matrix; eager (math) attention is the exception.
  bool flash_attention = true;
  bool sequence_parallel = false;
  ActivationModel activation_model = ActivationModel::automatic;
  std::string gpu = "a100-80gb";
  double headroom = 0.10;      // fraction of GPU memory kept free (allocator, CUDA context, NCCL)
};

struct MemoryItem {
  std::string name;
  double bytes = 0;
  std::string note;  // how it was computed
};

struct MemoryChange {
  std::string change;  // what to do, in words
  std::string cost;    // what it costs
  double total_bytes = 0;
};

struct MemoryResult {
  MemoryInput input;
  double params = 0;
  int dp = 1;
  std::int64_t seq = 0;
  std::vector<MemoryItem> items;  // per-GPU breakdown; sums to total_bytes
  double model_state_bytes = 0;
  double activation_bytes = 0;
  double total_bytes = 0;
  double cpu_bytes = 0;           // offloaded to host memory, per GPU
  std::string activation_model;   // "simple (12x factor)", "per-layer (Korthikanti et al.)", or none
  std::string activation_formula;
  std::vector<std::string> notes;
  std::string gpu_key;
  double gpu_memory_bytes = 0;
  double usable_bytes = 0;        // after headroom
  bool fits = false;
  std::optional<MemoryChange> cheapest_fix;  // first change (cheapest first) that makes it fit
  std::optional<MemoryChange> more_gpus;     // when the fix stacks changes: the GPU-count route
  std::vector<MemoryChange> tried;           // every candidate evaluated, for the JSON report
};

MemoryResult plan_memory(const MemoryInput& in);

// The same estimate without the search for a fix (used by that search).
MemoryResult estimate_memory(const MemoryInput& in);

}  // namespace stepscope::plan
