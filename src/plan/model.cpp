#include "stepscope/plan/model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::plan {

namespace {

// GPT-style block: fused QKV and output projection with biases, 4h GELU MLP, LayerNorm with
// bias, learned positions, tied embeddings, dropout.
ModelArch gpt(std::string name, std::int64_t h, std::int64_t l, std::int64_t a, std::int64_t seq) {
  return ModelArch{.name = std::move(name), .hidden = h, .layers = l, .heads = a, .kv_heads = a,
                   .ffn = 4 * h, .vocab = 50257, .max_seq = seq, .gated_mlp = false,
                   .dropout = true, .tied_embeddings = true, .learned_positions = true,
                   .biases = true};
}

// LLaMA-style block: no biases, RMSNorm, SwiGLU MLP, rotary positions, untied embeddings.
ModelArch llama(std::string name, std::int64_t h, std::int64_t l, std::int64_t a, std::int64_t kv,
                std::int64_t ffn, std::int64_t vocab, std::int64_t seq) {
  return ModelArch{.name = std::move(name), .hidden = h, .layers = l, .heads = a, .kv_heads = kv,
                   .ffn = ffn, .vocab = vocab, .max_seq = seq, .gated_mlp = true,
                   .dropout = false, .tied_embeddings = false, .learned_positions = false,
                   .biases = false};
}

std::vector<ModelArch> build_presets() {
  // Shapes from the published model configs (GPT-2 and GPT-2 XL, GPT-3 paper table 2.1, LLaMA 2,
  // LLaMA 3 and Mistral-7B-v0.1 config.json files).
  return {
      gpt("gpt2-124m", 768, 12, 12, 1024),
      gpt("gpt2-1.5b", 1600, 48, 25, 1024),
      gpt("gpt3-175b", 12288, 96, 96, 2048),
      llama("llama-2-7b", 4096, 32, 32, 32, 11008, 32000, 4096),
      llama("llama-2-13b", 5120, 40, 40, 40, 13824, 32000, 4096),
      llama("llama-2-70b", 8192, 80, 64, 8, 28672, 32000, 4096),
      llama("llama-3-8b", 4096, 32, 32, 8, 14336, 128256, 8192),
      llama("llama-3-70b", 8192, 80, 64, 8, 28672, 128256, 8192),
      llama("mistral-7b", 4096, 32, 32, 8, 14336, 32000, 32768),
  };
}

void check_positive(std::int64_t v, const char* what) {
  if (v <= 0) throw InputError(fmt::format("{} must be positive (got {})", what, v));
}

}  // namespace

const std::vector<ModelArch>& model_presets() {
  static const std::vector<ModelArch> presets = build_presets();
  return presets;
}

const ModelArch& find_model(std::string_view name) {
  const std::string want = ascii_lower(name);
  for (const auto& m : model_presets())
    if (m.name == want) return m;
  std::string keys;
  for (const auto& m : model_presets()) keys += (keys.empty() ? "" : ", ") + m.name;
  throw InputError(fmt::format("unknown model '{}' (presets: {}; or give --params, or --hidden "
                               "and --layers)", name, keys));
}

ModelArch resolve_model(std::optional<std::string> preset, const ModelOverrides& o) {
  ModelArch m = preset ? find_model(*preset) : ModelArch{.name = "custom"};
  const bool reshaped = o.hidden || o.layers || o.heads || o.kv_heads || o.ffn || o.vocab;
  if (preset && reshaped) m.name += " (modified)";
  if (o.hidden) { check_positive(*o.hidden, "--hidden"); m.hidden = *o.hidden; }
  if (o.layers) { check_positive(*o.layers, "--layers"); m.layers = *o.layers; }
  if (o.heads) {
    check_positive(*o.heads, "--heads");
    // Changing the head count of a preset keeps its attention kind unless kv-heads is given.
    if (m.kv_heads == m.heads) m.kv_heads = *o.heads;
    m.heads = *o.heads;
  }
  if (o.kv_heads) { check_positive(*o.kv_heads, "--kv-heads"); m.kv_heads = *o.kv_heads; }
  if (o.ffn) { check_positive(*o.ffn, "--ffn"); m.ffn = *o.ffn; }
  if (o.vocab) { check_positive(*o.vocab, "--vocab"); m.vocab = *o.vocab; }
  if (o.seq) { check_positive(*o.seq, "--seq"); m.max_seq = *o.seq; }
  if (o.params) {
    if (!(*o.params > 0)) throw InputError("--params must be positive");
    m.params = *o.params;
  }
  if (m.heads > 0 && m.kv_heads == 0) m.kv_heads = m.heads;
  if (m.hidden > 0 && m.ffn == 0) m.ffn = 4 * m.hidden;
  if (m.heads > 0 && m.hidden > 0 && m.hidden % m.heads != 0)
    throw InputError(fmt::format("inconsistent heads: hidden size {} is not divisible by {} heads",
                                 m.hidden, m.heads));
  if (m.heads > 0 && m.kv_heads > m.heads)
    throw InputError(fmt::format("inconsistent heads: {} kv-heads is more than {} query heads",
                                 m.kv_heads, m.heads));
  if (m.heads > 0 && m.heads % m.kv_heads != 0)
    throw InputError(fmt::format("inconsistent heads: {} query heads are not divisible into {} "
                                 "kv-head groups", m.heads, m.kv_heads));
  if (m.heads > 0 && m.hidden == 0)
    throw InputError("--heads needs --hidden (or a --model preset)");
  return m;
}

double parameters_per_layer(const ModelArch& m) {
  if (!m.has_heads()) {
    // Without heads assume MHA with a 4h MLP: 12h^2 is the classic per-block count.
    return m.hidden > 0 ? 12.0 * m.hidden * m.hidden : 0;
  }
  const double h = static_cast<double>(m.hidden);
  const double kv_width = static_cast<double>(m.kv_heads * m.head_dim());
  const double f = static_cast<double>(m.ffn);
  double attn = h * h + 2 * h * kv_width + h * h;  // Q, K, V, output
  double mlp = (m.gated_mlp ? 3.0 : 2.0) * h * f;
  double norms = m.biases ? 4 * h : 2 * h;  // two norms, weight (+ bias)
  if (m.biases) {
    attn += h + 2 * kv_width + h;
    mlp += f + h;
  }
  return attn + mlp + norms;
}

double count_parameters(const ModelArch& m) {
  if (!m.has_shape()) return 0;
  const double h = static_cast<double>(m.hidden);
  double total = parameters_per_layer(m) * static_cast<double>(m.layers);
  const double embed = static_cast<double>(m.vocab) * h;
  total += m.tied_embeddings ? embed : 2 * embed;
  if (m.learned_positions) total += static_cast<double>(m.max_seq) * h;
  total += m.biases ? 2 * h : h;  // final norm
  return total;
}

double model_parameters(const ModelArch& m) {
  return m.params > 0 ? m.params : count_parameters(m);
}

}  // namespace stepscope::plan
