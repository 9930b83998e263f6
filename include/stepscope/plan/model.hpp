// Transformer architectures: presets, user overrides, and the parameter count they imply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope::plan {

struct ModelArch {
  std::string name;          // preset key or "custom"
  std::int64_t hidden = 0;   // model width h
  std::int64_t layers = 0;   // transformer blocks L
  std::int64_t heads = 0;    // query heads a
  std::int64_t kv_heads = 0; // key/value heads (== heads: MHA, 1: MQA, otherwise GQA)
  std::int64_t ffn = 0;      // MLP inner width
  std::int64_t vocab = 0;
  std::int64_t max_seq = 0;  // trained context length (default sequence for calculators)
  bool gated_mlp = false;        // SwiGLU-style MLP: three weight matrices instead of two
  bool dropout = false;          // dropout layers present (their masks are saved activations)
  bool tied_embeddings = true;   // output projection shares the input embedding
  bool learned_positions = false;
  bool biases = false;           // linear/LayerNorm biases (GPT) vs none (LLaMA, RMSNorm)
  double params = 0;             // explicit parameter count; 0 = derive from the shape

  std::int64_t head_dim() const { return heads > 0 ? hidden / heads : 0; }
  bool has_shape() const { return hidden > 0 && layers > 0; }
  bool has_heads() const { return has_shape() && heads > 0; }
};

struct ModelOverrides {
  std::optional<std::int64_t> hidden{}, layers{}, heads{}, kv_heads{}, ffn{}, vocab{}, seq{};
  std::optional<double> params{};
};

const std::vector<ModelArch>& model_presets();
const ModelArch& find_model(std::string_view name);  // throws InputError listing presets

// Preset (optional) + overrides -> a validated architecture. Throws InputError on sizes that
// are not positive or heads that do not divide (hidden % heads, heads % kv_heads).
ModelArch resolve_model(std::optional<std::string> preset, const ModelOverrides& o);

// Parameters implied by the shape (attention, MLP, norms, embeddings).
double count_parameters(const ModelArch& m);
// The explicit count if given, else count_parameters; 0 when neither is known.
double model_parameters(const ModelArch& m);
// Parameters in one transformer block (for ZeRO-3's gathered-layer buffer).
double parameters_per_layer(const ModelArch& m);

}  // namespace stepscope::plan
