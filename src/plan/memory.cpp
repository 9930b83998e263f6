#include "stepscope/plan/memory.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <string>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::plan {

namespace {

// Lower case with "_" read as "-": "ZeRO_3" -> "zero-3".
std::string dashed_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

bool mixed_precision(Dtype d) { return d != Dtype::fp32 && d != Dtype::tf32; }

// Weights and gradients live in the compute type's storage width; FP8 training (Transformer
// Engine) keeps BF16 weights and gradients and only casts GEMM inputs to FP8.
double state_bytes_per_param(Dtype d) { return mixed_precision(d) ? 2.0 : 4.0; }

double optimizer_bytes_per_param(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return 8;       // fp32 first and second moments
    case Optimizer::sgd_momentum: return 4;  // fp32 momentum buffer
    case Optimizer::sgd: return 0;
    case Optimizer::adam_8bit: return 2;  // int8 moments (block-wise scales are negligible)
  }
  return 0;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / kGB); }

void validate_memory_inputs(const MemoryInput& in, const ModelArch& m) {
  if (in.batch < 1) throw InputError(fmt::format("--batch must be positive (got {})", in.batch));
  if (in.seq < 0) throw InputError(fmt::format("--seq must be positive (got {})", in.seq));
  if (in.gpus < 1) throw InputError(fmt::format("--gpus must be positive (got {})", in.gpus));
  if (in.tp < 1) throw InputError(fmt::format("--tp must be positive (got {})", in.tp));
  if (in.pp < 1) throw InputError(fmt::format("--pp must be positive (got {})", in.pp));
  if (in.gpus % (in.tp * in.pp) != 0)
    throw InputError(fmt::format("--gpus {} is not a multiple of tensor x pipeline = {} x {}",
                                 in.gpus, in.tp, in.pp));
  if (!(in.headroom >= 0 && in.headroom < 1))
    throw InputError(fmt::format("--headroom must be in [0, 1) (got {})", in.headroom));
  if (in.checkpointing.every < 1)
    throw InputError("--checkpoint: the segment length must be at least 1 layer");
  if (m.heads > 0 && m.heads % in.tp != 0)
    throw InputError(fmt::format("tensor-parallel degree {} does not divide {} attention heads",
                                 in.tp, m.heads));
  if (m.layers > 0 && in.pp > m.layers)
    throw InputError(fmt::format("pipeline degree {} exceeds the {} layers", in.pp, m.layers));
  if (in.offload == Offload::all && in.sharding != Sharding::zero3)
    throw InputError("--offload all (parameters too) needs --zero 3 / FSDP FULL_SHARD");
  if (in.sequence_parallel && in.tp == 1)
    throw InputError("--sequence-parallel needs --tp > 1");
  if (in.dtype == Dtype::int8 || in.dtype == Dtype::int4)
    throw InputError(fmt::format("--dtype {}: training precision must be fp32, tf32, bf16, fp16 "
                                 "or fp8", dtype_name(in.dtype)));
  if (model_parameters(m) <= 0)
    throw InputError("no model size: give --model <preset>, --params, or --hidden and --layers");
}

// Per-layer saved activations after Korthikanti et al. (2022), "Reducing Activation
// Recomputation in Large Transformer Models", generalised from their GPT block (MHA, 4h GELU
// MLP, dropout) to GQA, any MLP width, SwiGLU and dropout-free blocks. Their 16-bit total is
// sbh(34 + 5as/h); counts below are in stored values (2 bytes each at 16 bit) plus 1-byte masks.
struct LayerActivation {
  double replicated = 0;  // bytes per token not split by tensor parallelism (unless SP)
  double split = 0;       // bytes per token split by tensor parallelism
  double quadratic = 0;   // bytes per (head x seq x token): attention scores
};

LayerActivation korthikanti_terms(const ModelArch& m, double value_bytes) {
  const double h = static_cast<double>(m.hidden);
  const double kv = static_cast<double>(m.kv_heads) / static_cast<double>(m.heads);
  const double f = static_cast<double>(m.ffn) / h;
  LayerActivation t;
  // Two norm inputs, the QKV input and the MLP input; plus two dropout masks (1 byte each).
  t.replicated = (4 * value_bytes + (m.dropout ? 2.0 : 0.0)) * h;
  // Q, K and V, the output-projection input, and the MLP intermediates: GELU in and out, or
  // SwiGLU's gate, up, activated gate and their product.
  const double mlp_values = m.gated_mlp ? 4 * f : 2 * f;
  t.split = (1 + 2 * kv + 1 + mlp_values) * value_bytes * h;
  // Softmax output; with dropout also the dropped-out copy and its mask.
  t.quadratic = m.dropout ? 2 * value_bytes + 1 : value_bytes;
  return t;
}

struct ActivationEstimate {
  double layers_bytes = 0;
  double logits_bytes = 0;
  std::string model;
  std::string formula;
  std::vector<std::string> notes;
};

ActivationEstimate estimate_activations(const MemoryInput& in, const ModelArch& m,
                                        std::int64_t seq) {
  ActivationEstimate est;
  if (!m.has_shape()) {
    est.model = "none";
    est.notes.push_back("activations not estimated: give --hidden and --layers, or a --model preset");
    return est;
  }
  ActivationModel which = in.activation_model;
  if (which == ActivationModel::automatic)
    which = m.has_heads() ? ActivationModel::per_layer : ActivationModel::simple;
  if (which == ActivationModel::per_layer && !m.has_heads())
    throw InputError("the per-layer activation model needs --heads (or a --model preset)");

  const double value_bytes = dtype_bytes(in.dtype == Dtype::tf32 ? Dtype::fp32 : in.dtype);
  const double s = static_cast<double>(seq), b = static_cast<double>(in.batch);
  const double h = static_cast<double>(m.hidden);
  const double t = static_cast<double>(in.tp);
  const double sp = in.sequence_parallel ? t : 1.0;
  const bool drop_scores = in.flash_attention || in.checkpointing.mode == Recompute::selective;

  double per_layer = 0;    // bytes one layer keeps for backward, one micro-batch
  double layer_input = 0;  // bytes of a layer's input (what full recompute keeps)
  if (which == ActivationModel::simple) {
    est.model = "simple (12x factor)";
    est.formula = "batch x seq x hidden x 12 x bytes per layer";
    per_layer = b * s * h * 12 * value_bytes / t;
    layer_input = b * s * h * value_bytes / sp;
    if (!in.flash_attention || in.checkpointing.mode == Recompute::selective)
      est.notes.push_back("the 12x factor leaves attention scores out, so eager attention and "
                          "selective recompute do not change it; use --activations per-layer");
  } else {
    est.model = "per-layer (Korthikanti et al. 2022)";
    const auto terms = korthikanti_terms(m, value_bytes);
    const double a = static_cast<double>(m.heads);
    per_layer = s * b * (terms.replicated / sp + terms.split / t);
    if (!drop_scores) per_layer += a * s * s * b * terms.quadratic / t;
    est.formula = fmt::format(
        "s*b*({:.0f}h{} + {:.1f}h/t){}", terms.replicated / h, sp > 1 ? "/t" : "",
        terms.split / h, drop_scores ? "" : fmt::format(" + {:.0f}*a*s^2*b/t", terms.quadratic));
    layer_input = s * b * h * value_bytes / sp;
    // fp32 logits for the cross-entropy on the last stage (Korthikanti's 4sbv/t term).
    est.logits_bytes = 4.0 * s * b * static_cast<double>(m.vocab) / t;
  }

  // 1F1B: the first pipeline stage holds `pp` micro-batches of its layers; the last holds one.
  const std::int64_t layers_stage = ceil_div(m.layers, in.pp);
  const double in_flight_first = static_cast<double>(in.pp);
  auto stage_bytes = [&](double in_flight) {
    if (in.checkpointing.mode != Recompute::full)
      return in_flight * static_cast<double>(layers_stage) * per_layer;
    const std::int64_t k = std::min<std::int64_t>(in.checkpointing.every, layers_stage);
    const double boundaries = static_cast<double>(ceil_div(layers_stage, k));
    // Keep each segment's input; rebuild one segment's full activations at a time in backward.
    return in_flight * boundaries * layer_input + static_cast<double>(k) * per_layer;
  };
  const double first = stage_bytes(in_flight_first);
  const double last = stage_bytes(1.0) + est.logits_bytes;
  if (in.pp == 1 || last >= first) {
    est.layers_bytes = stage_bytes(1.0);
  } else {
    est.layers_bytes = first;
    est.logits_bytes = 0;
    est.notes.push_back(fmt::format("pipeline: the first stage is the fullest ({} micro-batches in "
                                    "flight under 1F1B); logits live on the last stage", in.pp));
  }
  if (in.checkpointing.mode == Recompute::full)
    est.notes.push_back(fmt::format("activation checkpointing: keeps each {}-layer segment's input "
                                    "and recomputes one segment at a time",
                                    std::min<std::int64_t>(in.checkpointing.every, layers_stage)));
  return est;
}

}  // namespace

Optimizer parse_optimizer(std::string_view text) {
  const std::string t = dashed_lower(text);
  if (t == "adam" || t == "adamw") return Optimizer::adam;
  if (t == "sgd") return Optimizer::sgd;
  if (t == "sgd-momentum" || t == "momentum") return Optimizer::sgd_momentum;
  if (t == "adam-8bit" || t == "adam8bit" || t == "8bit-adam" || t == "adamw-8bit" ||
      t == "adamw8bit")
    return Optimizer::adam_8bit;
  throw InputError(fmt::format(
      "unknown optimizer '{}' (expected adam, adamw, sgd, sgd-momentum or adam-8bit)", text));
}

ActivationModel parse_activation_model(std::string_view text) {
  const std::string t = dashed_lower(text);
  if (t == "auto") return ActivationModel::automatic;
  if (t == "simple") return ActivationModel::simple;
  if (t == "per-layer" || t == "perlayer" || t == "exact" || t == "korthikanti")
    return ActivationModel::per_layer;
  throw InputError(fmt::format("--activations '{}': expected auto, simple or per-layer", text));
}

bool parse_attention(std::string_view text) {
  const std::string t = dashed_lower(text);
  if (t == "flash" || t == "sdpa" || t == "fused" || t == "memory-efficient" ||
      t == "mem-efficient" || t == "efficient" || t == "flash-attention")
    return true;
  if (t == "eager" || t == "math" || t == "unfused" || t == "naive") return false;
  throw InputError(fmt::format("--attention '{}': expected flash (fused/memory-efficient SDPA, "
                               "the default) or eager", text));
}

Sharding parse_sharding(std::string_view text) {
  const std::string t = dashed_lower(text);
  if (t == "ddp" || t == "none" || t == "0" || t == "no-shard") return Sharding::none;
  if (t == "zero1" || t == "zero-1" || t == "1") return Sharding::zero1;
  if (t == "zero2" || t == "zero-2" || t == "2" || t == "shard-grad-op" || t == "fsdp-grad-op")
    return Sharding::zero2;
  if (t == "zero3" || t == "zero-3" || t == "3" || t == "full-shard" || t == "fsdp" ||
      t == "fsdp-full")
    return Sharding::zero3;
  throw InputError(fmt::format("unknown sharding '{}' (expected ddp, zero1, zero2, zero3, "
                               "FULL_SHARD or SHARD_GRAD_OP)", text));
}

Offload parse_offload(std::string_view text) {
  const std::string t = dashed_lower(text);
  if (t == "none" || t == "no") return Offload::none;
  if (t == "optimizer" || t == "cpu") return Offload::optimizer;
  if (t == "all" || t == "params" || t == "parameters") return Offload::all;
  throw InputError(fmt::format("unknown offload '{}' (expected none, optimizer or all)", text));
}

std::string_view optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return "adam";
    case Optimizer::sgd: return "sgd";
    case Optimizer::sgd_momentum: return "sgd-momentum";
    case Optimizer::adam_8bit: return "adam-8bit";
  }
  return "?";
}

std::string_view sharding_name(Sharding s) {
  switch (s) {
    case Sharding::none: return "ddp";
    case Sharding::zero1: return "zero1";
    case Sharding::zero2: return "zero2";
    case Sharding::zero3: return "zero3";
  }
  return "?";
}

std::string_view offload_name(Offload o) {
  switch (o) {
    case Offload::none: return "none";
    case Offload::optimizer: return "optimizer";
    case Offload::all: return "all";
  }
  return "?";
}

Checkpointing parse_checkpointing(std::string_view text) {
  const std::string t = dashed_lower(text);
  if (t == "none" || t == "no" || t == "off") return {Recompute::none, 1};
  if (t == "selective") return {Recompute::selective, 1};
  if (t == "full" || t == "all") return {Recompute::full, 1};
  const int k = parse_int<int>(t).value_or(0);
  if (k < 1)
    throw InputError(fmt::format("--checkpoint '{}': expected none, selective, full, or a "
                                 "positive number of layers per checkpointed segment", text));
  return {Recompute::full, k};
}

namespace {

// Weights, gradients, optimizer states and master weights per GPU, after tensor/pipeline
// splitting, ZeRO sharding and CPU offload.
void add_model_states(const MemoryInput& in, MemoryResult& r) {
  const ModelArch& m = in.model;
  const bool master = in.master_weights.value_or(mixed_precision(in.dtype)) &&
                      mixed_precision(in.dtype);
  if (in.master_weights.value_or(false) && !mixed_precision(in.dtype))
    r.notes.push_back("fp32 training keeps no separate master copy");

  // Tensor and pipeline parallelism split the parameters; assumed even across ranks.
  const double local = r.params / static_cast<double>(in.tp * in.pp);
  const double dp = static_cast<double>(r.dp);
  const double w_div = in.sharding >= Sharding::zero3 ? dp : 1;
  const double g_div = in.sharding >= Sharding::zero2 ? dp : 1;
  const double o_div = in.sharding >= Sharding::zero1 ? dp : 1;
  const double sb = state_bytes_per_param(in.dtype);
  const double ob = optimizer_bytes_per_param(in.optimizer);

  double weights = local * sb / w_div;
  double grads = local * sb / g_div;
  double optim = local * ob / o_div;
  double masters = master ? local * 4.0 / o_div : 0.0;
  if (in.offload != Offload::none) {
    r.cpu_bytes += optim + masters;
    optim = masters = 0;
  }
  if (in.offload == Offload::all) {
    r.cpu_bytes += weights + grads;
    weights = grads = 0;
  }
  if (r.dp == 1 && in.sharding != Sharding::none)
    r.notes.push_back("sharding has no effect with a single data-parallel rank");

  const std::string shard_note =
      r.dp > 1 ? fmt::format(" / {} data-parallel ranks", r.dp) : std::string();
  const std::string tp_note = in.tp * in.pp > 1
                                  ? fmt::format(" / (tp {} x pp {})", in.tp, in.pp) : std::string();
  const std::string all_off = in.offload == Offload::all ? " (held on the CPU)" : "";
  r.items.push_back({"weights", weights, fmt::format("params x {} B{}{}{}", sb, tp_note,
                                                     w_div > 1 ? shard_note : "", all_off)});
  r.items.push_back({"gradients", grads, fmt::format("params x {} B{}{}{}", sb, tp_note,
                                                     g_div > 1 ? shard_note : "", all_off)});
  const std::string offloaded = in.offload != Offload::none ? " (held on the CPU)" : "";
  r.items.push_back({"optimizer states", optim,
                     fmt::format("{}: params x {} B{}{}{}", optimizer_name(in.optimizer), ob, tp_note,
                                 o_div > 1 ? shard_note : "", offloaded)});
  r.items.push_back({"fp32 master weights", masters,
                     master ? fmt::format("params x 4 B{}{}{}", tp_note, o_div > 1 ? shard_note : "",
                                          offloaded)
                            : std::string("none (fp32 training or disabled)")});

  if (in.sharding == Sharding::zero3 && r.dp > 1) {
    // ZeRO-3/FSDP gather each layer before use; the next layer is prefetched while the current
    // one computes, and a layer's full gradients exist until they are reduce-scattered.
    const double per_layer = m.layers > 0 ? parameters_per_layer(m) / static_cast<double>(in.tp)
                                          : 0;
    if (per_layer > 0)
      r.items.push_back({"gathered layer buffers", per_layer * sb * 3,
                         "2 layers of gathered weights (current + prefetch) + 1 layer of "
                         "unsharded gradients"});
    else
      r.notes.push_back("ZeRO-3 gather buffers not counted: the layer count is unknown");
  }
  if (in.offload != Offload::none)
    r.notes.push_back(fmt::format("{} held in CPU memory per GPU", gb(r.cpu_bytes)));

  for (const auto& item : r.items) r.model_state_bytes += item.bytes;

}

void add_activations(const MemoryInput& in, MemoryResult& r) {
  const ActivationEstimate act = estimate_activations(in, in.model, r.seq);
  r.activation_model = act.model;
  r.activation_formula = act.formula;
  r.notes.insert(r.notes.end(), act.notes.begin(), act.notes.end());
  if (!act.model.empty() && act.model != "none") {
    r.items.push_back({"activations", act.layers_bytes,
                       fmt::format("{}, micro-batch {} x seq {}", act.model, in.batch, r.seq)});
    if (act.logits_bytes > 0)
      r.items.push_back({"logits (fp32, loss)", act.logits_bytes, "4 B x seq x batch x vocab / tp"});
  }
  r.activation_bytes = act.layers_bytes + act.logits_bytes;
  r.total_bytes = r.model_state_bytes + r.activation_bytes;

}

void judge_fit(const MemoryInput& in, MemoryResult& r) {
  const GpuSpec& gpu = find_gpu(in.gpu);
  r.gpu_key = gpu.key;
  r.gpu_memory_bytes = gpu.memory_bytes();
  r.usable_bytes = r.gpu_memory_bytes * (1.0 - in.headroom);
  r.fits = r.total_bytes <= r.usable_bytes;

}

}  // namespace

MemoryResult estimate_memory(const MemoryInput& in) {
  const ModelArch& m = in.model;
  validate_memory_inputs(in, m);
  MemoryResult r;
  r.input = in;
  r.params = model_parameters(m);
  r.dp = in.gpus / (in.tp * in.pp);
  r.seq = in.seq > 0 ? in.seq : (m.max_seq > 0 ? m.max_seq : 2048);

  add_model_states(in, r);
  add_activations(in, r);
  judge_fit(in, r);
  return r;
}

namespace {

struct Candidate {
  std::string change;
  std::string cost;
  std::function<bool(MemoryInput&)> apply;  // false: not applicable to this input
  std::string group;  // a later change of the same group supersedes an earlier one (ZeRO-1 -> 3)
};

std::vector<Candidate> candidates(const MemoryResult& base) {
  const MemoryInput& in = base.input;
  const bool per_layer = base.activation_model.rfind("per-layer", 0) == 0;
  std::vector<Candidate> c;
  c.push_back({"use FlashAttention / fused SDPA", "none; usually faster",
               [per_layer](MemoryInput& x) {
                 if (x.flash_attention || !per_layer) return false;
                 x.flash_attention = true;
                 return true;
               },
               "flash"});
  c.push_back({"enable sequence parallelism", "none; reduce-scatter + all-gather replace the "
               "tensor-parallel all-reduce",
               [](MemoryInput& x) {
                 if (x.tp == 1 || x.sequence_parallel) return false;
                 x.sequence_parallel = true;
                 return true;
               },
               "sequence-parallel"});
  for (Sharding s : {Sharding::zero1, Sharding::zero2}) {
    c.push_back({fmt::format("shard with ZeRO-{}{}", static_cast<int>(s),
                             s == Sharding::zero2 ? " (FSDP SHARD_GRAD_OP)" : ""),
                 "no more communication than DDP",
                 [s, &base](MemoryInput& x) {
                   if (base.dp == 1 || x.sharding >= s) return false;
                   x.sharding = s;
                   return true;
                 },
                 "sharding"});
  }
  c.push_back({"selective activation recompute (attention scores)", "a few % more compute",
               [per_layer](MemoryInput& x) {
                 if (!per_layer || x.flash_attention || x.checkpointing.mode != Recompute::none)
                   return false;
                 x.checkpointing = {Recompute::selective, 1};
                 return true;
               },
               "recompute"});
  c.push_back({"shard with ZeRO-3 (FSDP FULL_SHARD)",
               "about 1.5x DDP's communication (weights all-gathered for forward and backward)",
               [&base](MemoryInput& x) {
                 if (base.dp == 1 || x.sharding >= Sharding::zero3) return false;
                 x.sharding = Sharding::zero3;
                 return true;
               },
               "sharding"});
  const bool has_activations = base.activation_bytes > 0;
  c.push_back({"full activation checkpointing", "about 33% more compute (forward runs twice)",
               [has_activations](MemoryInput& x) {
                 if (!has_activations ||
                     (x.checkpointing.mode == Recompute::full && x.checkpointing.every == 1))
                   return false;
                 x.checkpointing = {Recompute::full, 1};
                 return true;
               },
               "recompute"});
  for (std::int64_t div : {2, 4, 8, 16}) {
    if (in.batch / div < 1 || in.batch % div != 0) continue;
    const std::int64_t smaller = in.batch / div;
    c.push_back({fmt::format("micro-batch {} with {}x gradient accumulation", smaller, div),
                 "same global batch and math; smaller GEMMs run less efficiently",
                 [smaller, has_activations](MemoryInput& x) {
                   if (!has_activations || x.batch <= smaller) return false;
                   x.batch = smaller;
                   return true;
                 },
                 "batch"});
  }
  c.push_back({"8-bit Adam (bitsandbytes)", "changes optimizer numerics",
               [](MemoryInput& x) {
                 if (x.optimizer != Optimizer::adam) return false;
                 x.optimizer = Optimizer::adam_8bit;
                 return true;
               },
               "optimizer"});
  c.push_back({"offload optimizer states to CPU", "optimizer step on the CPU; often much slower",
               [](MemoryInput& x) {
                 if (x.offload != Offload::none) return false;
                 x.offload = Offload::optimizer;
                 return true;
               },
               "offload"});
  return c;
}

// More GPUs divide the model states but not the activations, so when doubling alone never
// fits, the search repeats with flash attention and full checkpointing applied.
std::optional<MemoryChange> try_more_gpus(const MemoryInput& in, bool per_layer) {
  for (bool slim : {false, true}) {
    MemoryInput x = in;
    x.sharding = Sharding::zero3;
    std::string extra;
    if (slim) {
      if (per_layer) x.flash_attention = true;
      x.checkpointing = {Recompute::full, 1};
      extra = per_layer ? ", FlashAttention and full checkpointing" : " and full checkpointing";
    }
    for (int gpus = in.gpus * 2; gpus <= 4096; gpus *= 2) {
      x.gpus = gpus;
      MemoryResult r = estimate_memory(x);
      if (r.fits)
        return MemoryChange{fmt::format("{} GPUs with ZeRO-3 (FSDP FULL_SHARD){}", gpus, extra),
                            fmt::format("{}x the GPUs", gpus / in.gpus), r.total_bytes};
    }
  }
  return std::nullopt;
}

std::optional<MemoryChange> try_bigger_gpu(const MemoryInput& in, double current_memory) {
  std::vector<const GpuSpec*> bigger;
  for (const auto& g : gpu_database())
    if (g.memory_bytes() > current_memory) bigger.push_back(&g);
  std::sort(bigger.begin(), bigger.end(),
            [](const GpuSpec* a, const GpuSpec* b) { return a->memory_gb < b->memory_gb; });
  for (const GpuSpec* g : bigger) {
    MemoryInput x = in;
    x.gpu = g->key;
    MemoryResult r = estimate_memory(x);
    if (r.fits)
      return MemoryChange{fmt::format("a GPU with more memory: {} ({:g} GiB)", g->key, g->memory_gb),
                          "different hardware", r.total_bytes};
  }
  return std::nullopt;
}

}  // namespace

MemoryResult plan_memory(const MemoryInput& in) {
  MemoryResult base = estimate_memory(in);
  if (base.fits) return base;

  // One change at a time, cheapest first.
  const auto cands = candidates(base);
  for (const auto& c : cands) {
    MemoryInput x = in;
    if (!c.apply(x)) continue;
    MemoryResult r = estimate_memory(x);
    base.tried.push_back({c.change, c.cost, r.total_bytes});
    if (r.fits && !base.cheapest_fix) base.cheapest_fix = MemoryChange{c.change, c.cost, r.total_bytes};
  }
  if (base.cheapest_fix) return base;

  // No single change is enough: stack them in the same order until it fits. More GPUs are
  // reported beside the stack, since which is cheaper depends on what GPUs cost.
  base.more_gpus = try_more_gpus(in, base.activation_model.rfind("per-layer", 0) == 0);
  MemoryInput x = in;
  std::vector<const Candidate*> applied;
  for (const auto& c : cands) {
    MemoryInput y = x;
    if (!c.apply(y)) continue;
    MemoryResult r = estimate_memory(y);
    if (r.total_bytes >= estimate_memory(x).total_bytes) continue;  // no help: leave it out
    x = y;
    if (!c.group.empty())
      std::erase_if(applied, [&](const Candidate* a) { return a->group == c.group; });
    applied.push_back(&c);
    if (r.fits) {
      MemoryChange fix{"", "", r.total_bytes};
      for (const Candidate* a : applied) {
        fix.change += (fix.change.empty() ? "" : " + ") + a->change;
        fix.cost += (fix.cost.empty() ? "" : "; ") + a->cost;
      }
      base.cheapest_fix = fix;
      return base;
    }
  }
  if (base.more_gpus) {
    base.cheapest_fix = base.more_gpus;
    base.more_gpus.reset();
    return base;
  }
  if (auto bigger = try_bigger_gpu(in, base.gpu_memory_bytes)) base.cheapest_fix = bigger;
  return base;
}

}  // namespace stepscope::plan
