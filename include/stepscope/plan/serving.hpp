// Inference sizing: KV cache, GPUs for a serving load, speculative decoding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepscope/plan/model.hpp"
#include "stepscope/plan/units.hpp"

namespace stepscope::plan {

struct KvInput {
  std::int64_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  std::vector<std::int64_t> seqs;
  std::int64_t batch = 1;
  Dtype dtype = Dtype::bf16;
};

// From a model: layers, heads, kv-heads and head_dim (hidden / heads).
KvInput kv_input_from(const ModelArch& m);

struct KvRow {
  std::int64_t seq = 0;
  double bytes = 0;           // whole cache: all sequences of the batch
  double bytes_per_sequence = 0;
};

struct KvResult {
  KvInput input;
  std::string attention;      // "MHA", "GQA (4 query heads per kv head)", "MQA"
  double bytes_per_token = 0; // one sequence, all layers, K and V
  double mha_bytes_per_token = 0;
  std::vector<KvRow> rows;
};

KvResult plan_kv(const KvInput& in);

struct ServeInput {
  ModelArch model;            // params required; shape optional (exact KV size when known)
  std::int64_t users = 0;     // concurrent sequences
  std::int64_t avg_seq = 0;   // average tokens held per sequence (prompt + generated)
  std::string gpu = "a100-80gb";
  Dtype weights = Dtype::bf16;
  Dtype kv_dtype = Dtype::bf16;
  double kv_overhead = 0.30;  // paging / fragmentation overhead on the KV cache
  double headroom = 0.20;     // GPU memory kept free (activations, CUDA graphs, allocator)
};

struct ServeResult {
  ServeInput input;
  double params = 0;
  std::string kv_method;      // "from the architecture" or the 7B rule of thumb
  double weights_bytes = 0;
  double kv_bytes_per_token = 0;
  double kv_bytes_per_user = 0;
  double kv_total_bytes = 0;  // with overhead
  double total_bytes = 0;
  double usable_per_gpu = 0;
  int gpus_pooled = 0;        // weights sharded once across the group (tensor parallel)
  std::optional<int> users_per_replica;  // when a full copy fits on one GPU
  std::optional<int> gpus_replicated;    // one full copy per GPU
};

ServeResult plan_serve(const ServeInput& in);

struct SpecDecInput {
  double accept = 0.8;  // probability the target accepts each drafted token
  int k = 5;            // drafted tokens per step
  double draft_s = 0;   // one draft-model forward
  double target_s = 0;  // one target-model forward (verifies all k at once)
  int max_k = 16;       // search range for the best k
};

struct SpecDecResult {
  SpecDecInput input;
  double expected_tokens = 0;  // per target forward, including the target's own token
  double step_s = 0;
  double speedup = 0;
  int best_k = 0;
  double best_speedup = 0;
};

SpecDecResult plan_specdec(const SpecDecInput& in);
double expected_tokens_per_step(double accept, int k);

}  // namespace stepscope::plan
