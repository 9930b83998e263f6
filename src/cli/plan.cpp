// `stepscope plan <calculator>`: parses options, calls the planning library, prints the result
// as text or JSON.
#include <fmt/core.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/output.hpp"
#include "cli/units.hpp"
#include "stepscope/error.hpp"
#include "stepscope/plan.hpp"
#include "stepscope/report.hpp"

namespace stepscope::cli {

namespace {

namespace sp = stepscope::plan;

template <typename T>
std::optional<T> given(const CLI::Option* o, const T& value) {
  return o->count() > 0 ? std::optional<T>(value) : std::nullopt;
}

// `--json [FILE]`, as every command takes it: FILE, or standard output when no FILE (or "-")
// is given, which then holds the JSON alone.
struct JsonOut {
  std::string path;
  CLI::Option* option = nullptr;
  bool given() const { return option && option->count() > 0; }
  bool to_stdout() const { return given() && (path.empty() || path == "-"); }
};

void add_json_option(CLI::App* app, JsonOut& out) {
  out.option = app->add_option("--json", out.path, "Write the result as JSON to FILE ('-' or no FILE: standard output, instead of text)")
                   ->expected(0, 1)
                   ->type_name("[FILE]");
}

int emit(const JsonOut& json, const nlohmann::json& j, const std::string& text) {
  if (json.given()) write_json(json.to_stdout() ? "-" : json.path, j);
  if (!json.to_stdout()) write_stdout(fit_to_width(text, report_columns()));
  return kExitOk;
}

// Options that describe a model: a preset and/or shape overrides.
struct ModelOptions {
  std::string preset, params;
  std::int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
  CLI::Option *o_preset{}, *o_params{}, *o_hidden{}, *o_layers{}, *o_heads{}, *o_kv{}, *o_ffn{},
      *o_vocab{};

  void add(CLI::App* app) {
    o_preset = app->add_option("--model,-m", preset,
                               "architecture preset (see `stepscope plan models`)");
    o_params = app->add_option("--params,-p", params,
                               "parameter count, e.g. 7B, 350M, 1.3e9 (overrides the shape's count)");
    o_hidden = app->add_option("--hidden", hidden, "hidden size");
    o_layers = app->add_option("--layers", layers, "transformer layers");
    o_heads = app->add_option("--heads", heads, "attention (query) heads");
    o_kv = app->add_option("--kv-heads", kv_heads, "key/value heads (GQA; 1 = MQA)");
    o_ffn = app->add_option("--ffn", ffn, "MLP inner size (default 4 x hidden)");
    o_vocab = app->add_option("--vocab", vocab, "vocabulary size");
  }

  sp::ModelArch resolve(std::optional<std::int64_t> seq = std::nullopt) const {
    sp::ModelOverrides o;
    o.hidden = given(o_hidden, hidden);
    o.layers = given(o_layers, layers);
    o.heads = given(o_heads, heads);
    o.kv_heads = given(o_kv, kv_heads);
    o.ffn = given(o_ffn, ffn);
    o.vocab = given(o_vocab, vocab);
    o.seq = seq;
    if (o_params->count()) o.params = sp::parse_count(params, "--params");
    return sp::resolve_model(given(o_preset, preset), o);
  }
};

// ---- memory -------------------------------------------------------------------------------

std::function<int()> setup_memory(CLI::App& plan) {
  struct Opts {
    ModelOptions model;
    std::string dtype = "bf16", optimizer = "adam", sharding, offload = "none",
                checkpoint = "none", activations = "auto", gpu = "a100-80gb", attention = "flash";
    int zero = 0, gpus = 1, tp = 1, pp = 1;
    std::int64_t batch = 1, seq = 0;
    bool no_master = false, flash = false, seq_parallel = false;
    JsonOut json;
    double headroom = 0.10;
    CLI::Option *o_zero{}, *o_sharding{}, *o_seq{}, *o_attention{};
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("memory", "training memory per GPU; does it fit, and what is "
                                            "the cheapest change that makes it fit");
  o->model.add(app);
  app->add_option("--dtype", o->dtype, "training precision: fp32, bf16, fp16 (mixed) or fp8")
      ->capture_default_str();
  app->add_option("--optimizer", o->optimizer, "adam, adamw, sgd, sgd-momentum or adam-8bit")
      ->capture_default_str();
  app->add_flag("--no-master-weights", o->no_master, "mixed precision without an fp32 master copy");
  app->add_option("--batch,-b", o->batch, "micro-batch per GPU (sequences)")->capture_default_str();
  o->o_seq = app->add_option("--seq,-s", o->seq, "sequence length (default: the model's context, else 2048)");
  app->add_option("--gpus,-g", o->gpus, "total GPUs (data x tensor x pipeline)")->capture_default_str();
  app->add_option("--tp", o->tp, "tensor-parallel degree")->capture_default_str();
  app->add_option("--pp", o->pp, "pipeline-parallel degree (1F1B)")->capture_default_str();
  o->o_zero = app->add_option("--zero", o->zero, "ZeRO stage 0-3 (0 = DDP)");
  o->o_sharding = app->add_option("--sharding", o->sharding,
                                  "ddp, zero1, zero2, zero3, FULL_SHARD or SHARD_GRAD_OP (FSDP)");
  app->add_option("--offload", o->offload,
                  "CPU offload: none, optimizer (ZeRO-Offload), all (params too; needs ZeRO-3)")
      ->capture_default_str();
  app->add_option("--checkpoint", o->checkpoint,
                  "activation checkpointing: none, selective, full, or K (segments of K layers)")
      ->capture_default_str();
  o->o_attention = app->add_option("--attention", o->attention,
                                   "flash (fused or memory-efficient SDPA: no s x s score matrices "
                                   "kept) or eager (scores kept for backward)")
                       ->capture_default_str();
  app->add_flag("--flash", o->flash, "same as --attention flash (the default)");
  app->add_flag("--sequence-parallel", o->seq_parallel, "Megatron sequence parallelism (with --tp)");
  app->add_option("--activations", o->activations,
                  "activation model: auto, simple (12x factor) or per-layer (Korthikanti et al.)")
      ->capture_default_str();
  app->add_option("--gpu", o->gpu, "GPU to fit on (see `stepscope plan gpus`)")->capture_default_str();
  app->add_option("--headroom", o->headroom, "fraction of GPU memory kept free")->capture_default_str();
  add_json_option(app, o->json);
  app->footer("Examples:\n  stepscope plan memory --model llama-3-8b --gpus 8 --zero 3 --batch 4 --seq 4096\n"
              "  stepscope plan memory --params 7B   # model states only: 16 bytes/param with Adam");
  return [o, app]() {
    if (!app->parsed()) return -1;
    sp::MemoryInput in;
    in.model = o->model.resolve();
    in.dtype = sp::parse_dtype(o->dtype);
    in.optimizer = sp::parse_optimizer(o->optimizer);
    if (o->no_master) in.master_weights = false;
    in.batch = o->batch;
    in.seq = o->o_seq->count() ? o->seq : 0;
    if (o->o_seq->count() && o->seq <= 0)
      throw InputError(fmt::format("--seq must be positive (got {})", o->seq));
    in.gpus = o->gpus;
    in.tp = o->tp;
    in.pp = o->pp;
    if (o->o_zero->count() && o->o_sharding->count())
      throw InputError("give either --zero or --sharding, not both");
    if (o->o_zero->count()) {
      if (o->zero < 0 || o->zero > 3) throw InputError(fmt::format("--zero must be 0-3 (got {})", o->zero));
      in.sharding = static_cast<sp::Sharding>(o->zero);
    }
    if (o->o_sharding->count()) in.sharding = sp::parse_sharding(o->sharding);
    in.offload = sp::parse_offload(o->offload);
    in.checkpointing = sp::parse_checkpointing(o->checkpoint);
    if (o->flash && o->o_attention->count() && !sp::parse_attention(o->attention))
      throw InputError("give either --flash or --attention eager, not both");
    in.flash_attention = sp::parse_attention(o->attention);
    in.sequence_parallel = o->seq_parallel;
    in.activation_model = sp::parse_activation_model(o->activations);
    in.gpu = o->gpu;
    in.headroom = o->headroom;
    const auto r = sp::plan_memory(in);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

// ---- roofline -----------------------------------------------------------------------------

std::function<int()> setup_roofline(CLI::App& plan) {
  struct Opts {
    std::string gpu, dtype, gemm, attention, flops, bytes, model;
    std::int64_t layernorm = 0, softmax = 0, gelu = 0, elementwise = 0;
    int inputs = 2;
    bool fused = false, layer = false;
    JsonOut json;
    double peak = 0, bandwidth = 0;
    std::int64_t batch = 4, seq = 2048, hidden = 4096, heads = 0, kv_heads = 0, ffn = 0;
    CLI::Option *o_gpu{}, *o_dtype{}, *o_gemm{}, *o_att{}, *o_flops{}, *o_bytes{}, *o_ln{},
        *o_sm{}, *o_gelu{}, *o_ew{}, *o_peak{}, *o_bw{}, *o_model{}, *o_heads{}, *o_kv{},
        *o_ffn{}, *o_hidden{}, *o_seq{};
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("roofline", "memory- or compute-bound? arithmetic intensity "
                                              "against a GPU's ridge point");
  o->o_gpu = app->add_option("--gpu", o->gpu, "GPU (default a100-80gb)");
  o->o_dtype = app->add_option("--dtype", o->dtype, "data type (default: bf16, or fp16 without bf16)");
  o->o_peak = app->add_option("--peak-tflops", o->peak, "override the peak TFLOP/s");
  o->o_bw = app->add_option("--bandwidth", o->bandwidth, "override the memory bandwidth (GB/s)");
  o->o_gemm = app->add_option("--gemm", o->gemm, "GEMM M,N,K (or MxNxK)");
  o->o_att = app->add_option("--attention", o->attention, "attention BATCH,HEADS,SEQ,HEAD_DIM");
  app->add_flag("--fused", o->fused, "attention is fused (FlashAttention): no score matrix in HBM");
  o->o_ln = app->add_option("--layernorm", o->layernorm, "LayerNorm over N elements");
  o->o_sm = app->add_option("--softmax", o->softmax, "softmax over N elements");
  o->o_gelu = app->add_option("--gelu", o->gelu, "GELU over N elements");
  o->o_ew = app->add_option("--elementwise", o->elementwise, "elementwise op over N elements");
  app->add_option("--inputs", o->inputs, "inputs of the elementwise op")->capture_default_str();
  o->o_flops = app->add_option("--flops", o->flops, "custom op: FLOPs (e.g. 2.7e11)");
  o->o_bytes = app->add_option("--bytes", o->bytes, "custom op: bytes moved (e.g. 100MB)");
  app->add_flag("--layer", o->layer, "every operation of one transformer layer (forward)");
  o->o_model = app->add_option("--model,-m", o->model, "--layer: take hidden/heads/ffn from a preset");
  app->add_option("--batch,-b", o->batch, "--layer: batch")->capture_default_str();
  o->o_seq = app->add_option("--seq,-s", o->seq, "--layer: sequence length")->capture_default_str();
  o->o_hidden = app->add_option("--hidden", o->hidden, "--layer: hidden size")->capture_default_str();
  o->o_heads = app->add_option("--heads", o->heads, "--layer: heads (default hidden / 128)");
  o->o_kv = app->add_option("--kv-heads", o->kv_heads, "--layer: key/value heads (GQA; default --heads)");
  o->o_ffn = app->add_option("--ffn", o->ffn, "--layer: MLP size (default 4 x hidden)");
  add_json_option(app, o->json);
  app->footer("Examples:\n  stepscope plan roofline --gemm 4096,4096,4096 --layernorm 4096\n"
              "  stepscope plan roofline --layer --gpu h100-sxm --batch 4 --seq 2048 --hidden 4096");
  return [o, app]() {
    if (!app->parsed()) return -1;
    std::optional<sp::Dtype> dtype;
    if (o->o_dtype->count()) dtype = sp::parse_dtype(o->dtype);
    const auto machine = sp::roofline_machine(given(o->o_gpu, o->gpu), dtype,
                                              given(o->o_peak, o->peak), given(o->o_bw, o->bandwidth));
    const sp::Dtype dt = machine.dtype;
    std::vector<sp::RooflineOp> ops;
    if (o->layer) {
      sp::LayerShape shape{o->batch, o->seq, o->hidden, 0, 0, false};
      if (o->o_model->count()) {
        const auto& m = sp::find_model(o->model);
        shape.hidden = m.hidden;
        shape.heads = m.heads;
        shape.kv_heads = m.kv_heads;
        shape.ffn = m.ffn;
        shape.gated = m.gated_mlp;
      }
      if (o->o_hidden->count()) shape.hidden = o->hidden;
      if (o->o_heads->count()) {
        if (o->heads <= 0) throw InputError(fmt::format("--heads must be positive (got {})", o->heads));
        // As with a preset's --heads: an MHA shape stays MHA unless --kv-heads says otherwise.
        if (shape.kv_heads == shape.heads) shape.kv_heads = o->heads;
        shape.heads = o->heads;
      }
      if (o->o_kv->count()) {
        if (o->kv_heads <= 0) throw InputError(fmt::format("--kv-heads must be positive (got {})", o->kv_heads));
        shape.kv_heads = o->kv_heads;
      }
      if (o->o_ffn->count()) {
        if (o->ffn <= 0) throw InputError(fmt::format("--ffn must be positive (got {})", o->ffn));
        shape.ffn = o->ffn;
      }
      ops = sp::transformer_layer_ops(shape, dt);
    }
    if (o->o_gemm->count()) {
      auto d = sp::parse_dims(o->gemm, 3, "--gemm");
      ops.push_back(sp::gemm_op(d[0], d[1], d[2], dt));
    }
    if (o->o_att->count()) {
      auto d = sp::parse_dims(o->attention, 4, "--attention");
      ops.push_back(sp::attention_op(d[0], d[1], d[2], d[3], dt, o->fused));
    }
    if (o->o_ln->count()) ops.push_back(sp::layernorm_op(o->layernorm));
    if (o->o_sm->count()) ops.push_back(sp::softmax_op(o->softmax, dt));
    if (o->o_gelu->count()) ops.push_back(sp::gelu_op(o->gelu, dt));
    if (o->o_ew->count()) ops.push_back(sp::elementwise_op(o->elementwise, o->inputs, dt));
    if (o->o_flops->count() || o->o_bytes->count()) {
      if (!(o->o_flops->count() && o->o_bytes->count()))
        throw InputError("a custom op needs both --flops and --bytes");
      ops.push_back(sp::custom_op(sp::parse_count(o->flops, "--flops"),
                                  sp::parse_bytes(o->bytes, "--bytes")));
    }
    if (ops.empty())
      throw InputError("nothing to place on the roofline: give --gemm, --attention, --layernorm, "
                       "--softmax, --gelu, --elementwise, --flops/--bytes or --layer");
    const auto r = sp::plan_roofline(ops, machine);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

// ---- comm, scaling --------------------------------------------------------------------------

std::function<int()> setup_comm(CLI::App& plan) {
  struct Opts {
    std::string bytes, params, dtype = "bf16", link = "nvlink", gpu;
    int gpus = 8;
    double bandwidth = 0, latency = 0, backward_ms = 0, overlap = 0, compute_ms = 0;
    JsonOut json;
    CLI::Option *o_bytes{}, *o_params{}, *o_bw{}, *o_lat{}, *o_bwd{}, *o_comp{}, *o_gpu{},
        *o_link{};
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("comm", "all-reduce, reduce-scatter and all-gather time; how "
                                          "much of it the backward hides");
  o->o_bytes = app->add_option("--bytes", o->bytes, "payload per GPU, e.g. 14GB");
  o->o_params = app->add_option("--params,-p", o->params, "payload as gradients of N parameters (7B)");
  app->add_option("--dtype", o->dtype, "gradient type with --params")->capture_default_str();
  app->add_option("--gpus,-g", o->gpus, "GPUs in the collective")->capture_default_str();
  o->o_link = app->add_option("--link", o->link,
                              "nvlink, pcie, infiniband, ethernet, or nvlink3/4/5, pcie3/4/5, "
                              "ib-edr/hdr/ndr/xdr, eth-25/100/200/400")->capture_default_str();
  o->o_gpu = app->add_option("--gpu", o->gpu, "take the NVLink bandwidth from this GPU");
  o->o_bw = app->add_option("--bandwidth", o->bandwidth, "link bandwidth per direction, GB/s (overrides --link)");
  o->o_lat = as_duration(app->add_option("--latency-us", o->latency, "per-hop latency (a bare number is µs; 2us, 0.5ms)"), 1e-6);
  o->o_bwd = as_duration(app->add_option("--backward-ms", o->backward_ms, "backward time the all-reduce can hide behind (a bare number is ms)"), 1e-3);
  app->add_option("--overlap", o->overlap, "fraction of the backward usable for overlap (0-1)")
      ->capture_default_str();
  o->o_comp = as_duration(app->add_option("--compute-ms", o->compute_ms, "step compute time, a bare number in ms (default: the backward)"), 1e-3);
  add_json_option(app, o->json);
  app->footer("Examples:\n  stepscope plan comm --params 7B --gpus 8 --bandwidth 50\n"
              "  stepscope plan comm --bytes 14GB --gpus 16 --link infiniband --backward-ms 900 --overlap 0.8");
  return [o, app]() {
    if (!app->parsed()) return -1;
    sp::CommInput in;
    if (o->o_bytes->count() == o->o_params->count())
      throw InputError("give the payload as either --bytes or --params");
    in.payload_bytes = o->o_bytes->count()
                           ? sp::parse_bytes(o->bytes, "--bytes")
                           : sp::parse_count(o->params, "--params") *
                                 sp::dtype_bytes(sp::parse_dtype(o->dtype));
    in.gpus = o->gpus;
    if (o->o_bw->count()) {
      sp::require_positive(o->bandwidth, "--bandwidth");
      in.link = {fmt::format("{:g} GB/s link", o->bandwidth), o->bandwidth, 0};
      if (o->o_link->count()) in.link.latency_us = sp::find_link(o->link, given(o->o_gpu, o->gpu)).latency_us;
    } else {
      in.link = sp::find_link(o->link, given(o->o_gpu, o->gpu));
    }
    if (o->o_lat->count()) in.link.latency_us = o->latency;
    if (o->o_bwd->count()) in.backward_s = o->backward_ms / 1e3;
    in.overlap = o->overlap;
    if (o->o_comp->count()) in.compute_s = o->compute_ms / 1e3;
    const auto r = sp::plan_comm(in);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

std::function<int()> setup_scaling(CLI::App& plan) {
  struct Opts {
    std::vector<std::string> points;
    JsonOut json;
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("scaling", "scaling efficiency from measured throughputs");
  app->add_option("--point", o->points, "GPUS:THROUGHPUT, repeated (e.g. --point 1:100 --point 8:600)")
      ->required();
  add_json_option(app, o->json);
  app->footer("Example:\n  stepscope plan scaling --point 1:100 --point 8:600 --point 64:3200");
  return [o, app]() {
    if (!app->parsed()) return -1;
    std::vector<std::pair<int, double>> pts;
    for (const auto& p : o->points) pts.push_back(sp::parse_scaling_point(p));
    const auto r = sp::plan_scaling(pts);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

// ---- pipeline, stack ----------------------------------------------------------------------

std::function<int()> setup_pipeline(CLI::App& plan) {
  struct Opts {
    sp::PipelineInput in;
    double micro_ms = 0;
    JsonOut json;
    CLI::Option* o_ms{};
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("pipeline", "pipeline bubble for GPipe, 1F1B and interleaved 1F1B");
  app->add_option("--stages", o->in.stages, "pipeline stages (p)")->capture_default_str();
  app->add_option("--micro-batches", o->in.micro_batches, "micro-batches per step (m)")->capture_default_str();
  app->add_option("--interleave", o->in.interleave, "virtual stages per GPU (v)")->capture_default_str();
  o->o_ms = as_duration(app->add_option("--micro-batch-ms", o->micro_ms,
                                        "forward+backward time of one micro-batch on one stage (a bare number is ms)"),
                        1e-3);
  app->add_option("--target-bubble", o->in.target_bubble, "bubble to size the micro-batch count for")
      ->capture_default_str();
  add_json_option(app, o->json);
  app->footer("Examples:\n  stepscope plan pipeline --stages 4 --micro-batches 16 --interleave 2\n"
              "  stepscope plan pipeline --stages 8 --micro-batch-ms 120 --target-bubble 0.05");
  return [o, app]() {
    if (!app->parsed()) return -1;
    sp::PipelineInput in = o->in;
    if (o->o_ms->count()) in.micro_batch_s = o->micro_ms / 1e3;
    const auto r = sp::plan_pipeline(in);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

std::function<int()> setup_stack(CLI::App& plan) {
  struct Opts {
    double step_ms = 0, cost = 0, hours = 0;
    std::vector<std::string> speedups, shares;
    JsonOut json;
    CLI::Option *o_cost{}, *o_hours{};
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("stack", "compound stacked speedups into step time and run cost");
  as_duration(app->add_option("--step-ms", o->step_ms, "baseline step time (a bare number is ms; 1.2s)"), 1e-3)->required();
  app->add_option("--speedup", o->speedups,
                  "NAME=FACTOR, repeated in the order applied; NAME@CATEGORY=FACTOR for a lever "
                  "measured alone on one part of the step (levers of one category share it)")
      ->required();
  app->add_option("--share", o->shares, "CATEGORY=FRACTION: the part of the baseline step a "
                                        "category takes (e.g. 'data wait=0.3')");
  o->o_cost = app->add_option("--cost", o->cost, "baseline cost of the run");
  o->o_hours = as_duration(app->add_option("--hours", o->hours, "baseline duration of the run (a bare number is hours; 90min)"), 3600.0);
  add_json_option(app, o->json);
  app->footer("Example:\n  stepscope plan stack --step-ms 850 --cost 50000 --speedup 'loader workers=1.4' "
              "--speedup 'BF16 AMP=1.7' --speedup torch.compile=1.15 --speedup 'fused AdamW=1.12'");
  return [o, app]() {
    if (!app->parsed()) return -1;
    sp::StackInput in;
    in.step_s = o->step_ms / 1e3;
    for (const auto& s : o->speedups) in.items.push_back(sp::parse_stack_item(s));
    for (const auto& s : o->shares) in.shares.push_back(sp::parse_stack_share(s));
    in.run_cost = given(o->o_cost, o->cost);
    in.run_hours = given(o->o_hours, o->hours);
    const auto r = sp::plan_stack(in);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

// ---- kv, serve, specdec -------------------------------------------------------------------

std::function<int()> setup_kv(CLI::App& plan) {
  struct Opts {
    ModelOptions model;
    std::int64_t head_dim = 0, batch = 1;
    std::vector<std::string> seqs;
    std::string dtype = "bf16";
    JsonOut json;
    CLI::Option* o_hd{};
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("kv", "KV-cache size (MHA, GQA, MQA)");
  o->model.add(app);
  o->o_hd = app->add_option("--head-dim", o->head_dim, "dimensions per head (default hidden / heads)");
  app->add_option("--seq,-s", o->seqs, "sequence length(s), e.g. 2048,4096,8K (K = 1024; default: the model's context)");
  app->add_option("--batch,-b", o->batch, "concurrent sequences")->capture_default_str();
  app->add_option("--dtype", o->dtype, "cache element type (bf16, fp16, fp8, int8, fp32)")->capture_default_str();
  add_json_option(app, o->json);
  app->footer("Examples:\n  stepscope plan kv --model llama-3-70b --seq 8192\n"
              "  stepscope plan kv --layers 32 --heads 32 --head-dim 128 --seq 2048,4096,8192,32768");
  return [o, app]() {
    if (!app->parsed()) return -1;
    sp::KvInput in;
    if (o->o_hd->count()) {
      // Shape given directly: head_dim need not come from a hidden size.
      const auto base = o->model.o_preset->count() ? sp::find_model(o->model.preset) : sp::ModelArch{};
      in.layers = o->model.o_layers->count() ? o->model.layers : base.layers;
      in.heads = o->model.o_heads->count() ? o->model.heads : base.heads;
      in.kv_heads = o->model.o_kv->count() ? o->model.kv_heads
                    : (o->model.o_heads->count() ? o->model.heads : base.kv_heads);
      in.head_dim = o->head_dim;
      in.seqs = base.max_seq > 0 ? std::vector<std::int64_t>{base.max_seq} : std::vector<std::int64_t>{};
    } else {
      const auto m = o->model.resolve();
      in = sp::kv_input_from(m);
      if (m.max_seq > 0) in.seqs = {m.max_seq};
    }
    if (!o->seqs.empty()) in.seqs = sp::parse_seq_list(o->seqs);
    in.batch = o->batch;
    in.dtype = sp::parse_dtype(o->dtype);
    const auto r = sp::plan_kv(in);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

std::function<int()> setup_serve(CLI::App& plan) {
  struct Opts {
    ModelOptions model;
    sp::ServeInput in;
    std::string weights = "bf16", kv_dtype = "bf16";
    JsonOut json;
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("serve", "GPUs needed to serve a model to N concurrent users");
  o->model.add(app);
  app->add_option("--users,-u", o->in.users, "concurrent users (sequences)")->required();
  app->add_option("--avg-seq", o->in.avg_seq, "average tokens per sequence (prompt + output)")->required();
  app->add_option("--gpu", o->in.gpu, "GPU type")->capture_default_str();
  app->add_option("--weights", o->weights, "weight precision: bf16, fp16, fp8, int8 or int4")->capture_default_str();
  app->add_option("--kv-dtype", o->kv_dtype, "KV-cache precision")->capture_default_str();
  app->add_option("--kv-overhead", o->in.kv_overhead, "paging/fragmentation overhead on the KV cache")
      ->capture_default_str();
  app->add_option("--headroom", o->in.headroom, "fraction of GPU memory kept free")->capture_default_str();
  add_json_option(app, o->json);
  app->footer("Example:\n  stepscope plan serve --model llama-2-7b --users 1000 --avg-seq 1000 --weights int4");
  return [o, app]() {
    if (!app->parsed()) return -1;
    sp::ServeInput in = o->in;
    in.model = o->model.resolve();
    in.weights = sp::parse_dtype(o->weights);
    in.kv_dtype = sp::parse_dtype(o->kv_dtype);
    const auto r = sp::plan_serve(in);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

std::function<int()> setup_specdec(CLI::App& plan) {
  struct Opts {
    sp::SpecDecInput in;
    double draft_ms = 0, target_ms = 0;
    JsonOut json;
  };
  auto o = std::make_shared<Opts>();
  auto* app = plan.add_subcommand("specdec", "speculative decoding: tokens per step and speedup");
  app->add_option("--accept,-a", o->in.accept, "per-token acceptance rate (0-1)")->capture_default_str();
  app->add_option("--k,-k", o->in.k, "tokens drafted per step")->capture_default_str();
  as_duration(app->add_option("--draft-ms", o->draft_ms, "one draft-model forward (a bare number is ms)"), 1e-3)->required();
  as_duration(app->add_option("--target-ms", o->target_ms, "one target-model forward (a bare number is ms)"), 1e-3)->required();
  app->add_option("--max-k", o->in.max_k, "search the best k up to this")->capture_default_str();
  add_json_option(app, o->json);
  app->footer("Example:\n  stepscope plan specdec --accept 0.8 --k 5 --draft-ms 2 --target-ms 30");
  return [o, app]() {
    if (!app->parsed()) return -1;
    sp::SpecDecInput in = o->in;
    in.draft_s = o->draft_ms / 1e3;
    in.target_s = o->target_ms / 1e3;
    const auto r = sp::plan_specdec(in);
    return emit(o->json, sp::to_json(r), sp::render_text(r));
  };
}

// ---- databases ----------------------------------------------------------------------------

std::function<int()> setup_gpus(CLI::App& plan) {
  auto json = std::make_shared<JsonOut>();
  auto* app = plan.add_subcommand("gpus", "list the GPU database");
  add_json_option(app, *json);
  app->footer("Examples:\n  stepscope plan gpus\n  stepscope plan gpus --json gpus.json");
  return [json, app]() {
    if (!app->parsed()) return -1;
    return emit(*json, sp::gpus_to_json(sp::gpu_database()), sp::render_gpus_text(sp::gpu_database()));
  };
}

std::function<int()> setup_models(CLI::App& plan) {
  auto json = std::make_shared<JsonOut>();
  auto* app = plan.add_subcommand("models", "list the model presets");
  add_json_option(app, *json);
  app->footer("Examples:\n  stepscope plan models\n  stepscope plan models --json - | head");
  return [json, app]() {
    if (!app->parsed()) return -1;
    return emit(*json, sp::models_to_json(sp::model_presets()),
                sp::render_models_text(sp::model_presets()));
  };
}

std::function<int()> setup_plan(CLI::App& app) {
  auto* plan = app.add_subcommand(
      "plan", "capacity and cost calculators: memory, roofline, comm, scaling, pipeline, kv, "
              "serve, specdec, stack, gpus, models");
  plan->require_subcommand(1);
  // Each runner returns -1 when its subcommand was not the one parsed.
  std::vector<std::function<int()>> runners = {
      setup_memory(*plan), setup_roofline(*plan), setup_comm(*plan),  setup_scaling(*plan),
      setup_pipeline(*plan), setup_kv(*plan),     setup_serve(*plan), setup_specdec(*plan),
      setup_stack(*plan),  setup_gpus(*plan),     setup_models(*plan)};
  // After the calculators: CLI11 gives a new subcommand its parent's footer, and these examples
  // are not theirs.
  plan->footer("Examples:\n  stepscope plan memory --model llama-3-8b --gpus 8 --zero 3 --batch 4 --seq 4096\n"
               "  stepscope plan comm --params 7B --gpus 8 --bandwidth 50\n"
               "  stepscope plan kv --model llama-3-70b --seq 8K,32K");
  return [runners]() {
    for (const auto& run : runners) {
      const int rc = run();
      if (rc >= 0) return rc;
    }
    return kExitBadInput;
  };
}

const RegisterCommand kRegisterPlan{Command{"plan", setup_plan}};

}  // namespace

}  // namespace stepscope::cli
