#include "stepscope/plan/serving.hpp"

#include <fmt/core.h>

#include <cmath>

#include "stepscope/error.hpp"
#include "stepscope/plan/gpus.hpp"

namespace stepscope::plan {

KvInput kv_input_from(const ModelArch& m) {
  if (!m.has_heads())
    throw InputError("the KV cache needs layers, heads and head size (a --model preset, or "
                     "--layers, --heads and --hidden/--head-dim)");
  KvInput in;
  in.layers = m.layers;
  in.heads = m.heads;
  in.kv_heads = m.kv_heads > 0 ? m.kv_heads : m.heads;
  in.head_dim = m.head_dim();
  return in;
}

KvResult plan_kv(const KvInput& in) {
  auto positive = [](std::int64_t v, const char* what) {
    if (v <= 0) throw InputError(fmt::format("{} must be positive (got {})", what, v));
  };
  positive(in.layers, "--layers");
  positive(in.heads, "--heads");
  positive(in.kv_heads, "--kv-heads");
  positive(in.head_dim, "--head-dim");
  positive(in.batch, "--batch");
  if (in.seqs.empty()) throw InputError("give at least one --seq");
  for (auto s : in.seqs) positive(s, "--seq");
  if (in.kv_heads > in.heads || in.heads % in.kv_heads != 0)
    throw InputError(fmt::format("inconsistent heads: {} query heads cannot share {} kv heads",
                                 in.heads, in.kv_heads));
  KvResult r;
  r.input = in;
  if (in.kv_heads == in.heads) r.attention = "MHA";
  else if (in.kv_heads == 1) r.attention = "MQA";
  else r.attention = fmt::format("GQA ({} query heads per kv head)", in.heads / in.kv_heads);
  const double b = dtype_bytes(in.dtype);
  // K and V, for every layer and kv head, head_dim values each.
  r.bytes_per_token = 2.0 * in.layers * in.kv_heads * in.head_dim * b;
  r.mha_bytes_per_token = 2.0 * in.layers * in.heads * in.head_dim * b;
  for (auto s : in.seqs) {
    KvRow row{s, 0, r.bytes_per_token * static_cast<double>(s)};
    row.bytes = row.bytes_per_sequence * static_cast<double>(in.batch);
    r.rows.push_back(row);
  }
  return r;
}

ServeResult plan_serve(const ServeInput& in) {
  ServeResult r;
  r.input = in;
  r.params = model_parameters(in.model);
  if (r.params <= 0) throw InputError("no model size: give --model <preset> or --params");
  if (in.users <= 0) throw InputError(fmt::format("--users must be positive (got {})", in.users));
  if (in.avg_seq <= 0) throw InputError(fmt::format("--avg-seq must be positive (got {})", in.avg_seq));
  require_non_negative(in.kv_overhead, "--kv-overhead");
  if (!(in.headroom >= 0 && in.headroom < 1))
    throw InputError(fmt::format("--headroom must be in [0, 1) (got {})", in.headroom));
  const GpuSpec& gpu = find_gpu(in.gpu);

  r.weights_bytes = r.params * dtype_bytes(in.weights);
  if (in.model.has_heads()) {
    r.kv_method = "from the architecture (2 x layers x kv-heads x head-dim x bytes)";
    const double kv_heads = static_cast<double>(in.model.kv_heads > 0 ? in.model.kv_heads
                                                                      : in.model.heads);
    r.kv_bytes_per_token = 2.0 * static_cast<double>(in.model.layers) * kv_heads *
                           static_cast<double>(in.model.head_dim()) * dtype_bytes(in.kv_dtype);
  } else {
    // Rule of thumb for an MHA model: ~0.5 MB per token for 7B parameters at 16 bit, scaled
    // linearly with size and with the KV element width.
    r.kv_method = "rule of thumb (0.5 MB per token per 7B parameters at 16 bit)";
    r.kv_bytes_per_token = r.params / 7e9 * 0.5e6 * dtype_bytes(in.kv_dtype) / 2.0;
  }
  r.kv_bytes_per_user = r.kv_bytes_per_token * static_cast<double>(in.avg_seq);
  r.kv_total_bytes = r.kv_bytes_per_user * static_cast<double>(in.users) * (1 + in.kv_overhead);
  r.total_bytes = r.weights_bytes + r.kv_total_bytes;
  r.usable_per_gpu = gpu.memory_bytes() * (1 - in.headroom);
  r.gpus_pooled = std::max(1, static_cast<int>(std::ceil(r.total_bytes / r.usable_per_gpu)));
  const double kv_room = r.usable_per_gpu - r.weights_bytes;
  const double per_user = r.kv_bytes_per_user * (1 + in.kv_overhead);
  if (kv_room >= per_user) {
    r.users_per_replica = static_cast<int>(std::floor(kv_room / per_user));
    r.gpus_replicated = static_cast<int>(
        std::ceil(static_cast<double>(in.users) / static_cast<double>(*r.users_per_replica)));
  }
  return r;
}

double expected_tokens_per_step(double accept, int k) {
  // Drafted token i survives with probability accept^i; the target always adds one token of
  // its own (the correction, or the bonus token after k acceptances): sum_{i=0..k} accept^i.
  if (accept >= 1.0) return k + 1.0;
  return (1 - std::pow(accept, k + 1)) / (1 - accept);
}

SpecDecResult plan_specdec(const SpecDecInput& in) {
  require_fraction(in.accept, "--accept");
  if (in.k < 1) throw InputError(fmt::format("--k must be at least 1 (got {})", in.k));
  require_non_negative(in.draft_s, "--draft-ms");
  require_positive(in.target_s, "--target-ms");
  if (in.max_k < in.k) throw InputError("--max-k must be at least --k");
  SpecDecResult r;
  r.input = in;
  auto speedup = [&](int k) {
    return expected_tokens_per_step(in.accept, k) * in.target_s / (k * in.draft_s + in.target_s);
  };
  r.expected_tokens = expected_tokens_per_step(in.accept, in.k);
  r.step_s = in.k * in.draft_s + in.target_s;
  r.speedup = speedup(in.k);
  for (int k = 1; k <= in.max_k; ++k) {
    const double s = speedup(k);
    if (s > r.best_speedup + 1e-12) {
      r.best_speedup = s;
      r.best_k = k;
    }
  }
  return r;
}

}  // namespace stepscope::plan
