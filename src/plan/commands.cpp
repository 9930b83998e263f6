#include "stepscope/plan/commands.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"
#include "stepscope/plan.hpp"

namespace stepscope::plan {

namespace {

using enum OptionCheck;

template <std::size_t N, std::size_t M>
constexpr std::array<OptionSpec, N + M> operator+(const std::array<OptionSpec, N>& a, const std::array<OptionSpec, M>& b) {
  std::array<OptionSpec, N + M> out{};
  std::copy(a.begin(), a.end(), out.begin());
  std::copy(b.begin(), b.end(), out.begin() + N);
  return out;
}

template <class... O>
constexpr std::array<OptionSpec, sizeof...(O)> options(O... o) {
  return {o...};
}

// ---- a model: a preset and/or shape overrides ---------------------------------------------

constexpr auto kModel = options(
    text("model", "architecture preset (see `stepscope plan models`)").short_flag("-m"),
    text("params", "parameter count, e.g. 7B, 350M, 1.3e9 (overrides the shape's count)").short_flag("-p"),
    count("hidden", "hidden size"), count("layers", "transformer layers"), count("heads", "attention (query) heads"),
    count("kv-heads", "key/value heads (GQA; 1 = MQA)"), count("ffn", "MLP inner size (default 4 x hidden)"),
    count("vocab", "vocabulary size"));

ModelArch model_of(const OptionValues& v) {
  ModelOverrides o;
  o.hidden = v.count("hidden");
  o.layers = v.count("layers");
  o.heads = v.count("heads");
  o.kv_heads = v.count("kv-heads");
  o.ffn = v.count("ffn");
  o.vocab = v.count("vocab");
  if (const auto p = v.text("params")) o.params = parse_count(*p, "--params");
  return resolve_model(v.text("model"), o);
}

template <class R>
CalculatorResult result(const R& r) {
  return {to_json(r), render_text(r)};
}

int whole_count(const OptionValues& v, std::string_view name) { return static_cast<int>(*v.count(name)); }

// ---- memory -------------------------------------------------------------------------------

constexpr auto kMemory = kModel + options(
    text("dtype", "training precision: fp32, bf16, fp16 (mixed) or fp8").default_is("bf16"),
    text("optimizer", "adam, adamw, sgd, sgd-momentum or adam-8bit").default_is("adam"),
    flag("no-master-weights", "mixed precision without an fp32 master copy"),
    count("batch", "micro-batch per GPU (sequences)").short_flag("-b").default_is("1"),
    count("seq", "sequence length (default: the model's context, else 2048)").short_flag("-s").checked(Positive),
    count("gpus", "total GPUs (data x tensor x pipeline)").short_flag("-g").default_is("1"),
    count("tp", "tensor-parallel degree").default_is("1"),
    count("pp", "pipeline-parallel degree (1F1B)").default_is("1"),
    count("zero", "ZeRO stage 0-3 (0 = DDP)").checked(Range, 0, 3),
    text("sharding", "ddp, zero1, zero2, zero3, FULL_SHARD or SHARD_GRAD_OP (FSDP)"),
    text("offload", "CPU offload: none, optimizer (ZeRO-Offload), all (params too; needs ZeRO-3)").default_is("none"),
    text("checkpoint", "activation checkpointing: none, selective, full, or K (segments of K layers)").default_is("none"),
    text("attention", "flash (fused or memory-efficient SDPA: no s x s score matrices kept) or eager (scores kept "
                      "for backward)").default_is("flash"),
    flag("flash", "same as --attention flash (the default)"),
    flag("sequence-parallel", "Megatron sequence parallelism (with --tp)"),
    // per-layer is the documented spelling; per_layer, perlayer, exact and korthikanti read alike.
    text("activations", "activation model: auto, simple (12x factor) or per-layer (Korthikanti et al.)").default_is("auto"),
    text("gpu", "GPU to fit on (see `stepscope plan gpus`)").default_is("a100-80gb"),
    real("headroom", "fraction of GPU memory kept free").default_is("0.1"));

CalculatorResult run_memory(const OptionValues& v) {
  MemoryInput in;
  in.model = model_of(v);
  in.dtype = parse_dtype(*v.text("dtype"));
  in.optimizer = parse_optimizer(*v.text("optimizer"));
  if (v.flag("no-master-weights")) in.master_weights = false;
  in.batch = *v.count("batch");
  in.seq = v.count("seq").value_or(0);
  in.gpus = whole_count(v, "gpus");
  in.tp = whole_count(v, "tp");
  in.pp = whole_count(v, "pp");
  if (v.given("zero") && v.given("sharding")) throw InputError("give either --zero or --sharding, not both");
  if (v.given("zero")) in.sharding = static_cast<Sharding>(*v.count("zero"));
  if (const auto s = v.text("sharding")) in.sharding = parse_sharding(*s);
  in.offload = parse_offload(*v.text("offload"));
  in.checkpointing = parse_checkpointing(*v.text("checkpoint"));
  in.flash_attention = parse_attention(*v.text("attention"));
  if (v.flag("flash") && !in.flash_attention) throw InputError("give either --flash or --attention eager, not both");
  in.sequence_parallel = v.flag("sequence-parallel");
  in.activation_model = parse_activation_model(*v.text("activations"));
  in.gpu = *v.text("gpu");
  in.headroom = *v.number("headroom");
  return result(plan_memory(in));
}

// ---- roofline -----------------------------------------------------------------------------

constexpr auto kRoofline = options(
    text("gpu", "GPU (default a100-80gb)"), text("dtype", "data type (default: bf16, or fp16 without bf16)"),
    real("peak-tflops", "override the peak TFLOP/s"), real("bandwidth", "override the memory bandwidth (GB/s)"),
    text("gemm", "GEMM M,N,K (or MxNxK)"), text("attention", "attention BATCH,HEADS,SEQ,HEAD_DIM"),
    flag("fused", "attention is fused (FlashAttention): no score matrix in HBM"),
    count("layernorm", "LayerNorm over N elements"), count("softmax", "softmax over N elements"),
    count("gelu", "GELU over N elements"), count("elementwise", "elementwise op over N elements"),
    count("inputs", "inputs of the elementwise op").default_is("2"),
    text("flops", "custom op: FLOPs (e.g. 2.7e11)"), text("bytes", "custom op: bytes moved (e.g. 100MB)"),
    flag("layer", "every operation of one transformer layer (forward)"),
    text("model", "--layer: take hidden/heads/ffn from a preset").short_flag("-m"),
    count("batch", "--layer: batch").short_flag("-b").default_is("4"),
    count("seq", "--layer: sequence length").short_flag("-s").default_is("2048"),
    count("hidden", "--layer: hidden size").default_is("4096"),
    count("heads", "--layer: heads (default hidden / 128)").checked(Positive),
    count("kv-heads", "--layer: key/value heads (GQA; default --heads)").checked(Positive),
    count("ffn", "--layer: MLP size (default 4 x hidden)").checked(Positive));

std::vector<RooflineOp> layer_ops(const OptionValues& v, Dtype dt) {
  LayerShape shape{*v.count("batch"), *v.count("seq"), *v.count("hidden"), 0, 0, false};
  if (const auto name = v.text("model")) {
    const auto& m = find_model(*name);
    shape.hidden = m.hidden;
    shape.heads = m.heads;
    shape.kv_heads = m.kv_heads;
    shape.ffn = m.ffn;
    shape.gated = m.gated_mlp;
  }
  if (v.given("hidden")) shape.hidden = *v.count("hidden");
  if (const auto heads = v.count("heads")) {
    // As with a preset's --heads: an MHA shape stays MHA unless --kv-heads says otherwise.
    if (shape.kv_heads == shape.heads) shape.kv_heads = *heads;
    shape.heads = *heads;
  }
  if (const auto kv = v.count("kv-heads")) shape.kv_heads = *kv;
  if (const auto ffn = v.count("ffn")) shape.ffn = *ffn;
  return transformer_layer_ops(shape, dt);
}

CalculatorResult run_roofline(const OptionValues& v) {
  std::optional<Dtype> dtype;
  if (const auto d = v.text("dtype")) dtype = parse_dtype(*d);
  const auto machine = roofline_machine(v.text("gpu"), dtype, v.number("peak-tflops"), v.number("bandwidth"));
  const Dtype dt = machine.dtype;
  std::vector<RooflineOp> ops;
  if (v.flag("layer")) ops = layer_ops(v, dt);
  if (const auto g = v.text("gemm")) {
    const auto d = parse_dims(*g, 3, "--gemm");
    ops.push_back(gemm_op(d[0], d[1], d[2], dt));
  }
  if (const auto a = v.text("attention")) {
    const auto d = parse_dims(*a, 4, "--attention");
    ops.push_back(attention_op(d[0], d[1], d[2], d[3], dt, v.flag("fused")));
  }
  if (const auto n = v.count("layernorm")) ops.push_back(layernorm_op(*n));
  if (const auto n = v.count("softmax")) ops.push_back(softmax_op(*n, dt));
  if (const auto n = v.count("gelu")) ops.push_back(gelu_op(*n, dt));
  if (const auto n = v.count("elementwise")) ops.push_back(elementwise_op(*n, whole_count(v, "inputs"), dt));
  if (v.given("flops") || v.given("bytes")) {
    if (!(v.given("flops") && v.given("bytes"))) throw InputError("a custom op needs both --flops and --bytes");
    ops.push_back(custom_op(parse_count(*v.text("flops"), "--flops"), parse_bytes(*v.text("bytes"), "--bytes")));
  }
  if (ops.empty())
    throw InputError("nothing to place on the roofline: give --gemm, --attention, --layernorm, "
                     "--softmax, --gelu, --elementwise, --flops/--bytes or --layer");
  return result(plan_roofline(ops, machine));
}

// ---- comm, scaling ------------------------------------------------------------------------

constexpr auto kComm = options(
    text("bytes", "payload per GPU, e.g. 14GB"),
    text("params", "payload as gradients of N parameters (7B)").short_flag("-p"),
    text("dtype", "gradient type with --params").default_is("bf16"),
    count("gpus", "GPUs in the collective").short_flag("-g").default_is("8"),
    text("link", "nvlink, pcie, infiniband, ethernet, or nvlink3/4/5, pcie3/4/5, ib-edr/hdr/ndr/xdr, "
                 "eth-25/100/200/400").default_is("nvlink"),
    text("gpu", "take the NVLink bandwidth from this GPU"),
    real("bandwidth", "link bandwidth per direction, GB/s (overrides --link)").in_units("GB/s"),
    duration("latency-us", "us", "per-hop latency (a bare number is µs; 2us, 0.5ms)"),
    duration("backward-ms", "ms", "backward time the all-reduce can hide behind (a bare number is ms)"),
    real("overlap", "fraction of the backward usable for overlap (0-1)").default_is("0"),
    duration("compute-ms", "ms", "step compute time, a bare number in ms (default: the backward)"));

CalculatorResult run_comm(const OptionValues& v) {
  CommInput in;
  if (v.given("bytes") == v.given("params")) throw InputError("give the payload as either --bytes or --params");
  in.payload_bytes = v.given("bytes") ? parse_bytes(*v.text("bytes"), "--bytes")
                                      : parse_count(*v.text("params"), "--params") * dtype_bytes(parse_dtype(*v.text("dtype")));
  in.gpus = whole_count(v, "gpus");
  if (const auto bw = v.number("bandwidth")) {
    require_positive(*bw, "--bandwidth");
    in.link = {fmt::format("{:g} GB/s link", *bw), *bw, 0};
    if (v.given("link")) in.link.latency_us = find_link(*v.text("link"), v.text("gpu")).latency_us;
  } else {
    in.link = find_link(*v.text("link"), v.text("gpu"));
  }
  if (const auto lat = v.number("latency-us")) in.link.latency_us = *lat;
  if (const auto ms = v.number("backward-ms")) in.backward_s = *ms / 1e3;
  in.overlap = *v.number("overlap");
  if (const auto ms = v.number("compute-ms")) in.compute_s = *ms / 1e3;
  return result(plan_comm(in));
}

constexpr auto kScaling = options(
    text_list("point", "GPUS:THROUGHPUT, repeated (e.g. --point 1:100 --point 8:600)").python_name("points").shown_as("GPUS:THROUGHPUT").needed());

CalculatorResult run_scaling(const OptionValues& v) {
  std::vector<std::pair<int, double>> points;
  for (const auto& p : v.list("point")) points.push_back(parse_scaling_point(p));
  return result(plan_scaling(points));
}

// ---- pipeline, stack ----------------------------------------------------------------------

constexpr auto kPipeline = options(
    count("stages", "pipeline stages (p)").default_is("4"),
    count("micro-batches", "micro-batches per step (m)").default_is("8"),
    count("interleave", "virtual stages per GPU (v)").default_is("1"),
    duration("micro-batch-ms", "ms", "forward+backward time of one micro-batch on one stage (a bare number is ms)"),
    real("target-bubble", "bubble to size the micro-batch count for").default_is("0.1"));

CalculatorResult run_pipeline(const OptionValues& v) {
  PipelineInput in;
  in.stages = whole_count(v, "stages");
  in.micro_batches = whole_count(v, "micro-batches");
  in.interleave = whole_count(v, "interleave");
  if (const auto ms = v.number("micro-batch-ms")) in.micro_batch_s = *ms / 1e3;
  in.target_bubble = *v.number("target-bubble");
  return result(plan_pipeline(in));
}

constexpr auto kStack = options(
    duration("step-ms", "ms", "baseline step time (a bare number is ms; 1.2s)").needed(),
    text_list("speedup", "NAME=FACTOR, repeated in the order applied; NAME@CATEGORY=FACTOR for a lever measured "
                         "alone on one part of the step (levers of one category share it)")
        .python_name("speedups").shown_as("NAME=FACTOR").needed(),
    text_list("share", "CATEGORY=FRACTION: the part of the baseline step a category takes (e.g. 'data wait=0.3')")
        .python_name("shares").shown_as("CATEGORY=FRACTION"),
    real("cost", "baseline cost of the run"),
    duration("hours", "h", "baseline duration of the run (a bare number is hours; 90min)"));

CalculatorResult run_stack(const OptionValues& v) {
  StackInput in;
  in.step_s = *v.number("step-ms") / 1e3;
  for (const auto& s : v.list("speedup")) in.items.push_back(parse_stack_item(s));
  for (const auto& s : v.list("share")) in.shares.push_back(parse_stack_share(s));
  in.run_cost = v.number("cost");
  in.run_hours = v.number("hours");
  return result(plan_stack(in));
}

// ---- kv, serve, specdec -------------------------------------------------------------------

constexpr auto kKv = kModel + options(
    count("head-dim", "dimensions per head (default hidden / heads)"),
    text_list("seq", "sequence length(s), e.g. 2048,4096,8K (K = 1024; default: the model's context)").short_flag("-s"),
    count("batch", "concurrent sequences").short_flag("-b").default_is("1"),
    text("dtype", "cache element type (bf16, fp16, fp8, int8, fp32)").default_is("bf16"));

CalculatorResult run_kv(const OptionValues& v) {
  KvInput in;
  if (const auto head_dim = v.count("head-dim")) {
    // Shape given directly: head_dim need not come from a hidden size.
    const auto preset = v.text("model");
    const auto base = preset ? find_model(*preset) : ModelArch{};
    in.layers = v.count("layers").value_or(base.layers);
    in.heads = v.count("heads").value_or(base.heads);
    in.kv_heads = v.count("kv-heads").value_or(v.count("heads").value_or(base.kv_heads));
    in.head_dim = *head_dim;
    in.seqs = base.max_seq > 0 ? std::vector<std::int64_t>{base.max_seq} : std::vector<std::int64_t>{};
  } else {
    const auto m = model_of(v);
    in = kv_input_from(m);
    if (m.max_seq > 0) in.seqs = {m.max_seq};
  }
  if (const auto seqs = v.list("seq"); !seqs.empty()) in.seqs = parse_seq_list(seqs);
  in.batch = *v.count("batch");
  in.dtype = parse_dtype(*v.text("dtype"));
  return result(plan_kv(in));
}

constexpr auto kServe = kModel + options(
    count("users", "concurrent users (sequences)").short_flag("-u").needed(),
    count("avg-seq", "average tokens per sequence (prompt + output)").needed(),
    text("gpu", "GPU type").default_is("a100-80gb"),
    text("weights", "weight precision: bf16, fp16, fp8, int8 or int4").default_is("bf16"),
    text("kv-dtype", "KV-cache precision").default_is("bf16"),
    real("kv-overhead", "paging/fragmentation overhead on the KV cache").default_is("0.3"),
    real("headroom", "fraction of GPU memory kept free").default_is("0.2"));

CalculatorResult run_serve(const OptionValues& v) {
  ServeInput in;
  in.model = model_of(v);
  in.users = *v.count("users");
  in.avg_seq = *v.count("avg-seq");
  in.gpu = *v.text("gpu");
  in.weights = parse_dtype(*v.text("weights"));
  in.kv_dtype = parse_dtype(*v.text("kv-dtype"));
  in.kv_overhead = *v.number("kv-overhead");
  in.headroom = *v.number("headroom");
  return result(plan_serve(in));
}

constexpr auto kSpecDec = options(
    real("accept", "per-token acceptance rate (0-1)").short_flag("-a").default_is("0.8"),
    count("k", "tokens drafted per step").short_flag("-k").default_is("5"),
    duration("draft-ms", "ms", "one draft-model forward (a bare number is ms)").needed(),
    duration("target-ms", "ms", "one target-model forward (a bare number is ms)").needed(),
    count("max-k", "search the best k up to this").default_is("16"));

CalculatorResult run_specdec(const OptionValues& v) {
  SpecDecInput in;
  in.accept = *v.number("accept");
  in.k = whole_count(v, "k");
  in.draft_s = *v.number("draft-ms") / 1e3;
  in.target_s = *v.number("target-ms") / 1e3;
  in.max_k = whole_count(v, "max-k");
  return result(plan_specdec(in));
}

// ---- databases ----------------------------------------------------------------------------

CalculatorResult run_gpus(const OptionValues&) {
  return {gpus_to_json(gpu_database()), render_gpus_text(gpu_database())};
}

CalculatorResult run_models(const OptionValues&) {
  return {models_to_json(model_presets()), render_models_text(model_presets())};
}

const std::array kCalculators{
    Calculator{"memory", "training memory per GPU; does it fit, and what is the cheapest change that makes it fit",
               "Examples:\n  stepscope plan memory --model llama-3-8b --gpus 8 --zero 3 --batch 4 --seq 4096\n"
               "  stepscope plan memory --params 7B   # model states only: 16 bytes/param with Adam",
               kMemory, run_memory},
    Calculator{"roofline", "memory- or compute-bound? arithmetic intensity against a GPU's ridge point",
               "Examples:\n  stepscope plan roofline --gemm 4096,4096,4096 --layernorm 4096\n"
               "  stepscope plan roofline --layer --gpu h100-sxm --batch 4 --seq 2048 --hidden 4096",
               kRoofline, run_roofline},
    Calculator{"comm", "all-reduce, reduce-scatter and all-gather time; how much of it the backward hides",
               "Examples:\n  stepscope plan comm --params 7B --gpus 8 --bandwidth 50\n"
               "  stepscope plan comm --bytes 14GB --gpus 16 --link infiniband --backward-ms 900 --overlap 0.8",
               kComm, run_comm},
    Calculator{"scaling", "scaling efficiency from measured throughputs",
               "Example:\n  stepscope plan scaling --point 1:100 --point 8:600 --point 64:3200", kScaling, run_scaling},
    Calculator{"pipeline", "pipeline bubble for GPipe, 1F1B and interleaved 1F1B",
               "Examples:\n  stepscope plan pipeline --stages 4 --micro-batches 16 --interleave 2\n"
               "  stepscope plan pipeline --stages 8 --micro-batch-ms 120 --target-bubble 0.05",
               kPipeline, run_pipeline},
    Calculator{"kv", "KV-cache size (MHA, GQA, MQA)",
               "Examples:\n  stepscope plan kv --model llama-3-70b --seq 8192\n"
               "  stepscope plan kv --layers 32 --heads 32 --head-dim 128 --seq 2048,4096,8192,32768",
               kKv, run_kv},
    Calculator{"serve", "GPUs needed to serve a model to N concurrent users",
               "Example:\n  stepscope plan serve --model llama-2-7b --users 1000 --avg-seq 1000 --weights int4", kServe,
               run_serve},
    Calculator{"specdec", "speculative decoding: tokens per step and speedup",
               "Example:\n  stepscope plan specdec --accept 0.8 --k 5 --draft-ms 2 --target-ms 30", kSpecDec,
               run_specdec},
    Calculator{"stack", "compound stacked speedups into step time and run cost",
               "Example:\n  stepscope plan stack --step-ms 850 --cost 50000 --speedup 'loader workers=1.4' "
               "--speedup 'BF16 AMP=1.7' --speedup torch.compile=1.15 --speedup 'fused AdamW=1.12'",
               kStack, run_stack},
    Calculator{"gpus", "list the GPU database", "Examples:\n  stepscope plan gpus\n  stepscope plan gpus --json gpus.json",
               {}, run_gpus},
    Calculator{"models", "list the model presets",
               "Examples:\n  stepscope plan models\n  stepscope plan models --json - | head", {}, run_models},
};

// The number a text gives for the option: a count takes sizes ("8K"), a duration a unit.
double read_number(const OptionSpec& o, std::string_view text) {
  const std::string what = fmt::format("--{}", o.name);
  if (o.type == OptionType::Count) return static_cast<double>(parse_size(text, what));
  if (o.type == OptionType::Duration) {
    const double unit_s = parse_duration_s(fmt::format("1{}", o.unit), 1, what);
    return parse_duration_s(text, unit_s, what) / unit_s;
  }
  if (const auto d = parse_double(text)) return *d;
  throw InputError(fmt::format("{}: '{}' is not a number", what, text));
}

bool numeric(OptionType t) { return t == OptionType::Count || t == OptionType::Real || t == OptionType::Duration; }

}  // namespace

OptionValues::OptionValues(std::span<const OptionSpec> schema, GivenOptions given_options)
    : schema_(schema), given_(std::move(given_options)) {
  for (const auto& [name, texts] : given_) {
    const OptionSpec& o = spec(name);
    if (texts.size() != 1 && o.type != OptionType::TextList)
      throw InputError(fmt::format("--{} takes one value (got {})", name, texts.size()));
    if (numeric(o.type)) check_option_value(o, read_number(o, texts.front()));
  }
  for (const OptionSpec& o : schema_)
    if (o.required && !given_.contains(o.name)) throw InputError(fmt::format("--{} is required", o.name));
}

const OptionSpec& OptionValues::spec(std::string_view name) const {
  const auto it = std::find_if(schema_.begin(), schema_.end(), [&](const OptionSpec& o) { return o.name == name; });
  if (it == schema_.end()) throw InputError(fmt::format("no option --{}", name));
  return *it;
}

std::optional<std::string> OptionValues::text(std::string_view name) const {
  if (const auto it = given_.find(name); it != given_.end()) return it->second.front();
  const OptionSpec& o = spec(name);
  if (o.default_text.empty()) return std::nullopt;
  return std::string(o.default_text);
}

std::optional<std::int64_t> OptionValues::count(std::string_view name) const {
  const auto t = text(name);
  if (!t) return std::nullopt;
  return parse_size(*t, fmt::format("--{}", name));
}

std::optional<double> OptionValues::number(std::string_view name) const {
  const auto t = text(name);
  if (!t) return std::nullopt;
  return read_number(spec(name), *t);
}

std::vector<std::string> OptionValues::list(std::string_view name) const {
  spec(name);
  const auto it = given_.find(name);
  return it == given_.end() ? std::vector<std::string>{} : it->second;
}

std::span<const Calculator> calculators() { return kCalculators; }

const Calculator* find_calculator(std::string_view name) {
  const auto it = std::find_if(kCalculators.begin(), kCalculators.end(), [&](const Calculator& c) { return c.name == name; });
  return it == kCalculators.end() ? nullptr : &*it;
}

CalculatorResult run_calculator(const Calculator& c, GivenOptions given) {
  return c.run(OptionValues(c.options, std::move(given)));
}

}  // namespace stepscope::plan
