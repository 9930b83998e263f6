// `stepscope.plan.<calculator>(...)`: the same inputs as `stepscope plan <calculator>`, as keyword
// arguments (dashes become underscores; an argument left at None is an option not given), and the
// same JSON document as `--json`. Error messages name the CLI's options, so they read the same.
#include <fmt/core.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "stepscope/error.hpp"
#include "stepscope/plan.hpp"

namespace py = pybind11;

namespace stepscope::python {
namespace {

namespace sp = stepscope::plan;
using std::optional;
using Int = std::int64_t;

std::string plan_json(const nlohmann::json& j) { return j.dump(2); }

// A count given as text ("7B", "350M") or as a number.
double count_arg(const py::handle& v, const char* what) {
  if (py::isinstance<py::str>(v)) return sp::parse_count(v.cast<std::string>(), what);
  const double n = v.cast<double>();
  sp::require_positive(n, what);
  return n;
}

// A size given as text ("14GB", "512MiB") or as a number of bytes.
double bytes_arg(const py::handle& v, const char* what) {
  if (py::isinstance<py::str>(v)) return sp::parse_bytes(v.cast<std::string>(), what);
  const double n = v.cast<double>();
  sp::require_positive(n, what);
  return n;
}

// Sizes given as "M,N,K" / "MxNxK" or as a sequence of integers.
std::vector<Int> dims_arg(const py::handle& v, std::size_t count, const char* what) {
  if (py::isinstance<py::str>(v)) return sp::parse_dims(v.cast<std::string>(), count, what);
  auto dims = v.cast<std::vector<Int>>();
  if (dims.size() != count)
    throw InputError(fmt::format("{} '{}': expected {} sizes", what, py::str(v).cast<std::string>(), count));
  return dims;
}

// Context lengths: an int, "2048,4096,8K" (K = 1024 tokens), or a sequence of either.
std::vector<Int> seq_list_arg(const py::handle& v) {
  std::vector<std::string> items;
  auto add = [&](const py::handle& item) {
    items.push_back(py::isinstance<py::str>(item) ? item.cast<std::string>() : std::to_string(item.cast<Int>()));
  };
  if (py::isinstance<py::str>(v) || py::isinstance<py::int_>(v)) add(v);
  else
    for (const auto& item : v) add(item);
  return sp::parse_seq_list(items);
}

// A list of "TEXT" items, a mapping name -> value (joined as "name=value"), or pairs.
std::vector<std::string> pairs_arg(const py::handle& v, const char* sep) {
  std::vector<std::string> out;
  auto join = [&](const py::handle& a, const py::handle& b) {
    return py::str(a).cast<std::string>() + sep + py::str(b).cast<std::string>();
  };
  if (py::isinstance<py::str>(v)) return {v.cast<std::string>()};
  if (py::isinstance<py::dict>(v)) {
    for (const auto& [k, val] : v.cast<py::dict>()) out.push_back(join(k, val));
    return out;
  }
  for (const auto& item : v) {
    if (py::isinstance<py::str>(item)) out.push_back(item.cast<std::string>());
    else {
      auto t = item.cast<py::sequence>();
      if (t.size() != 2) throw InputError("expected a 'NAME" + std::string(sep) + "VALUE' text or a pair");
      out.push_back(join(t[0], t[1]));
    }
  }
  return out;
}

// The model options every model-based calculator takes.
struct ModelArgs {
  optional<std::string> preset;
  optional<py::object> params;
  optional<Int> hidden, layers, heads, kv_heads, ffn, vocab;

  sp::ModelArch resolve(optional<Int> seq = std::nullopt) const {
    sp::ModelOverrides o;
    o.hidden = hidden;
    o.layers = layers;
    o.heads = heads;
    o.kv_heads = kv_heads;
    o.ffn = ffn;
    o.vocab = vocab;
    o.seq = seq;
    if (params) o.params = count_arg(*params, "--params");
    return sp::resolve_model(preset, o);
  }
};

// ---- memory -----------------------------------------------------------------------------------

std::string memory(optional<std::string> model, optional<py::object> params, optional<Int> hidden,
                   optional<Int> layers, optional<Int> heads, optional<Int> kv_heads,
                   optional<Int> ffn, optional<Int> vocab, const std::string& dtype,
                   const std::string& optimizer, bool no_master_weights, Int batch,
                   optional<Int> seq, int gpus, int tp, int pp, optional<int> zero,
                   optional<std::string> sharding, const std::string& offload,
                   const py::object& checkpoint, const std::string& attention, bool flash,
                   bool sequence_parallel,
                   const std::string& activations, const std::string& gpu, double headroom) {
  sp::MemoryInput in;
  in.model = ModelArgs{model, params, hidden, layers, heads, kv_heads, ffn, vocab}.resolve();
  in.dtype = sp::parse_dtype(dtype);
  in.optimizer = sp::parse_optimizer(optimizer);
  if (no_master_weights) in.master_weights = false;
  in.batch = batch;
  in.seq = seq.value_or(0);
  if (seq && *seq <= 0) throw InputError(fmt::format("--seq must be positive (got {})", *seq));
  in.gpus = gpus;
  in.tp = tp;
  in.pp = pp;
  if (zero && sharding) throw InputError("give either --zero or --sharding, not both");
  if (zero) {
    if (*zero < 0 || *zero > 3) throw InputError(fmt::format("--zero must be 0-3 (got {})", *zero));
    in.sharding = static_cast<sp::Sharding>(*zero);
  }
  if (sharding) in.sharding = sp::parse_sharding(*sharding);
  in.offload = sp::parse_offload(offload);
  in.checkpointing = sp::parse_checkpointing(py::str(checkpoint).cast<std::string>());
  if (flash && !sp::parse_attention(attention))
    throw InputError("give either --flash or --attention eager, not both");
  in.flash_attention = sp::parse_attention(attention);
  in.sequence_parallel = sequence_parallel;
  in.activation_model = sp::parse_activation_model(activations);
  in.gpu = gpu;
  in.headroom = headroom;
  return plan_json(sp::to_json(sp::plan_memory(in)));
}

// ---- roofline ---------------------------------------------------------------------------------

std::string roofline(optional<std::string> gpu, optional<std::string> dtype,
                     optional<double> peak_tflops, optional<double> bandwidth,
                     optional<py::object> gemm, optional<py::object> attention, bool fused,
                     optional<Int> layernorm, optional<Int> softmax, optional<Int> gelu,
                     optional<Int> elementwise, int inputs, optional<py::object> flops,
                     optional<py::object> bytes, bool layer, optional<std::string> model,
                     Int batch, optional<Int> seq, optional<Int> hidden, optional<Int> heads,
                     optional<Int> kv_heads, optional<Int> ffn) {
  optional<sp::Dtype> dt_given;
  if (dtype) dt_given = sp::parse_dtype(*dtype);
  const auto machine = sp::roofline_machine(gpu, dt_given, peak_tflops, bandwidth);
  const sp::Dtype dt = machine.dtype;
  std::vector<sp::RooflineOp> ops;
  if (layer) {
    sp::LayerShape shape{batch, seq.value_or(2048), 4096, 0, 0, false};
    if (model) {
      const auto& m = sp::find_model(*model);
      shape.hidden = m.hidden;
      shape.heads = m.heads;
      shape.kv_heads = m.kv_heads;
      shape.ffn = m.ffn;
      shape.gated = m.gated_mlp;
    }
    if (hidden) shape.hidden = *hidden;
    if (heads) {
      if (*heads <= 0) throw InputError(fmt::format("--heads must be positive (got {})", *heads));
      if (shape.kv_heads == shape.heads) shape.kv_heads = *heads;
      shape.heads = *heads;
    }
    if (kv_heads) {
      if (*kv_heads <= 0) throw InputError(fmt::format("--kv-heads must be positive (got {})", *kv_heads));
      shape.kv_heads = *kv_heads;
    }
    if (ffn) {
      if (*ffn <= 0) throw InputError(fmt::format("--ffn must be positive (got {})", *ffn));
      shape.ffn = *ffn;
    }
    ops = sp::transformer_layer_ops(shape, dt);
  }
  if (gemm) {
    auto d = dims_arg(*gemm, 3, "--gemm");
    ops.push_back(sp::gemm_op(d[0], d[1], d[2], dt));
  }
  if (attention) {
    auto d = dims_arg(*attention, 4, "--attention");
    ops.push_back(sp::attention_op(d[0], d[1], d[2], d[3], dt, fused));
  }
  if (layernorm) ops.push_back(sp::layernorm_op(*layernorm));
  if (softmax) ops.push_back(sp::softmax_op(*softmax, dt));
  if (gelu) ops.push_back(sp::gelu_op(*gelu, dt));
  if (elementwise) ops.push_back(sp::elementwise_op(*elementwise, inputs, dt));
  if (flops || bytes) {
    if (!(flops && bytes)) throw InputError("a custom op needs both --flops and --bytes");
    ops.push_back(sp::custom_op(count_arg(*flops, "--flops"), bytes_arg(*bytes, "--bytes")));
  }
  if (ops.empty())
    throw InputError("nothing to place on the roofline: give --gemm, --attention, --layernorm, "
                     "--softmax, --gelu, --elementwise, --flops/--bytes or --layer");
  return plan_json(sp::to_json(sp::plan_roofline(ops, machine)));
}

// ---- comm, scaling ----------------------------------------------------------------------------

std::string comm(optional<py::object> bytes, optional<py::object> params, const std::string& dtype,
                 int gpus, optional<std::string> link, optional<std::string> gpu,
                 optional<double> bandwidth, optional<double> latency_us,
                 optional<double> backward_ms, double overlap, optional<double> compute_ms) {
  sp::CommInput in;
  if (bytes.has_value() == params.has_value())
    throw InputError("give the payload as either --bytes or --params");
  in.payload_bytes = bytes ? bytes_arg(*bytes, "--bytes")
                           : count_arg(*params, "--params") * sp::dtype_bytes(sp::parse_dtype(dtype));
  in.gpus = gpus;
  const std::string link_name = link.value_or("nvlink");
  if (bandwidth) {
    sp::require_positive(*bandwidth, "--bandwidth");
    in.link = {fmt::format("{:g} GB/s link", *bandwidth), *bandwidth, 0};
    if (link) in.link.latency_us = sp::find_link(*link, gpu).latency_us;
  } else {
    in.link = sp::find_link(link_name, gpu);
  }
  if (latency_us) in.link.latency_us = *latency_us;
  if (backward_ms) in.backward_s = *backward_ms / 1e3;
  in.overlap = overlap;
  if (compute_ms) in.compute_s = *compute_ms / 1e3;
  return plan_json(sp::to_json(sp::plan_comm(in)));
}

std::string scaling(const py::object& points) {
  std::vector<std::pair<int, double>> pts;
  for (const auto& p : pairs_arg(points, ":")) pts.push_back(sp::parse_scaling_point(p));
  return plan_json(sp::to_json(sp::plan_scaling(pts)));
}

// ---- pipeline, stack --------------------------------------------------------------------------

std::string pipeline(int stages, int micro_batches, int interleave, optional<double> micro_batch_ms,
                     double target_bubble) {
  sp::PipelineInput in;
  in.stages = stages;
  in.micro_batches = micro_batches;
  in.interleave = interleave;
  if (micro_batch_ms) in.micro_batch_s = *micro_batch_ms / 1e3;
  in.target_bubble = target_bubble;
  return plan_json(sp::to_json(sp::plan_pipeline(in)));
}

std::string stack(double step_ms, const py::object& speedups, optional<double> cost,
                  optional<double> hours, optional<py::object> shares) {
  sp::StackInput in;
  in.step_s = step_ms / 1e3;
  for (const auto& s : pairs_arg(speedups, "=")) in.items.push_back(sp::parse_stack_item(s));
  if (shares)
    for (const auto& s : pairs_arg(*shares, "=")) in.shares.push_back(sp::parse_stack_share(s));
  if (in.items.empty()) throw InputError("--speedup is required");
  in.run_cost = cost;
  in.run_hours = hours;
  return plan_json(sp::to_json(sp::plan_stack(in)));
}

// ---- kv, serve, specdec -----------------------------------------------------------------------

std::string kv(optional<std::string> model, optional<py::object> params, optional<Int> hidden,
               optional<Int> layers, optional<Int> heads, optional<Int> kv_heads,
               optional<Int> ffn, optional<Int> vocab, optional<Int> head_dim,
               optional<py::object> seq, Int batch, const std::string& dtype) {
  const ModelArgs margs{model, params, hidden, layers, heads, kv_heads, ffn, vocab};
  sp::KvInput in;
  if (head_dim) {
    // Shape given directly: head_dim need not come from a hidden size.
    const auto base = model ? sp::find_model(*model) : sp::ModelArch{};
    in.layers = layers.value_or(base.layers);
    in.heads = heads.value_or(base.heads);
    in.kv_heads = kv_heads ? *kv_heads : (heads ? *heads : base.kv_heads);
    in.head_dim = *head_dim;
    in.seqs = base.max_seq > 0 ? std::vector<Int>{base.max_seq} : std::vector<Int>{};
  } else {
    const auto m = margs.resolve();
    in = sp::kv_input_from(m);
    if (m.max_seq > 0) in.seqs = {m.max_seq};
  }
  if (seq) {
    auto seqs = seq_list_arg(*seq);
    if (!seqs.empty()) in.seqs = std::move(seqs);
  }
  in.batch = batch;
  in.dtype = sp::parse_dtype(dtype);
  return plan_json(sp::to_json(sp::plan_kv(in)));
}

std::string serve(optional<std::string> model, optional<py::object> params, optional<Int> hidden,
                  optional<Int> layers, optional<Int> heads, optional<Int> kv_heads,
                  optional<Int> ffn, optional<Int> vocab, Int users, Int avg_seq,
                  const std::string& gpu, const std::string& weights, const std::string& kv_dtype,
                  double kv_overhead, double headroom) {
  sp::ServeInput in;
  in.model = ModelArgs{model, params, hidden, layers, heads, kv_heads, ffn, vocab}.resolve();
  in.users = users;
  in.avg_seq = avg_seq;
  in.gpu = gpu;
  in.weights = sp::parse_dtype(weights);
  in.kv_dtype = sp::parse_dtype(kv_dtype);
  in.kv_overhead = kv_overhead;
  in.headroom = headroom;
  return plan_json(sp::to_json(sp::plan_serve(in)));
}

std::string specdec(double draft_ms, double target_ms, double accept, int k, int max_k) {
  sp::SpecDecInput in;
  in.accept = accept;
  in.k = k;
  in.draft_s = draft_ms / 1e3;
  in.target_s = target_ms / 1e3;
  in.max_k = max_k;
  return plan_json(sp::to_json(sp::plan_specdec(in)));
}

}  // namespace

void bind_plan(py::module_& m) {
  // The command line's spellings of sizes ("8K") and durations ("1.2s"), for the Python
  // wrappers to read a text argument as the CLI reads the same option.
  m.def("_size", [](const std::string& text, const std::string& what) {
    return sp::parse_size(text, what);
  });
  m.def("_duration_s", [](const std::string& text, double unit_s, const std::string& what) {
    return sp::parse_duration_s(text, unit_s, what);
  });
  const sp::MemoryInput mem;
  m.def("memory", &memory, py::kw_only(), py::arg("model") = py::none(),
        py::arg("params") = py::none(), py::arg("hidden") = py::none(),
        py::arg("layers") = py::none(), py::arg("heads") = py::none(),
        py::arg("kv_heads") = py::none(), py::arg("ffn") = py::none(),
        py::arg("vocab") = py::none(), py::arg("dtype") = "bf16", py::arg("optimizer") = "adam",
        py::arg("no_master_weights") = false, py::arg("batch") = mem.batch,
        py::arg("seq") = py::none(), py::arg("gpus") = mem.gpus, py::arg("tp") = mem.tp,
        py::arg("pp") = mem.pp, py::arg("zero") = py::none(), py::arg("sharding") = py::none(),
        py::arg("offload") = "none", py::arg("checkpoint") = "none",
        py::arg("attention") = "flash", py::arg("flash") = false,
        py::arg("sequence_parallel") = false, py::arg("activations") = "auto",
        py::arg("gpu") = mem.gpu, py::arg("headroom") = mem.headroom,
        "Training memory per GPU; does it fit, and the cheapest change that makes it fit.");

  m.def("roofline", &roofline, py::kw_only(), py::arg("gpu") = py::none(),
        py::arg("dtype") = py::none(), py::arg("peak_tflops") = py::none(),
        py::arg("bandwidth") = py::none(), py::arg("gemm") = py::none(),
        py::arg("attention") = py::none(), py::arg("fused") = false,
        py::arg("layernorm") = py::none(), py::arg("softmax") = py::none(),
        py::arg("gelu") = py::none(), py::arg("elementwise") = py::none(), py::arg("inputs") = 2,
        py::arg("flops") = py::none(), py::arg("bytes") = py::none(), py::arg("layer") = false,
        py::arg("model") = py::none(), py::arg("batch") = 4, py::arg("seq") = py::none(),
        py::arg("hidden") = py::none(), py::arg("heads") = py::none(),
        py::arg("kv_heads") = py::none(), py::arg("ffn") = py::none(),
        "Memory- or compute-bound? Arithmetic intensity against a GPU's ridge point.");

  const sp::PipelineInput pipe;
  m.def("comm", &comm, py::kw_only(), py::arg("bytes") = py::none(), py::arg("params") = py::none(),
        py::arg("dtype") = "bf16", py::arg("gpus") = 8, py::arg("link") = py::none(),
        py::arg("gpu") = py::none(), py::arg("bandwidth") = py::none(),
        py::arg("latency_us") = py::none(), py::arg("backward_ms") = py::none(),
        py::arg("overlap") = 0.0, py::arg("compute_ms") = py::none(),
        "All-reduce, reduce-scatter and all-gather time; how much of it the backward hides.");
  m.def("scaling", &scaling, py::arg("points"),
        "Scaling efficiency from measured throughputs: {gpus: throughput}, pairs or 'G:T' texts.");
  m.def("pipeline", &pipeline, py::kw_only(), py::arg("stages") = pipe.stages,
        py::arg("micro_batches") = pipe.micro_batches, py::arg("interleave") = pipe.interleave,
        py::arg("micro_batch_ms") = py::none(), py::arg("target_bubble") = pipe.target_bubble,
        "Pipeline bubble for GPipe, 1F1B and interleaved 1F1B.");
  m.def("stack", &stack, py::kw_only(), py::arg("step_ms"), py::arg("speedups"),
        py::arg("cost") = py::none(), py::arg("hours") = py::none(),
        py::arg("shares") = py::none(),
        "Stack speedups ({name: factor} in the order applied; 'name@category' for levers on one "
        "part of the step, {category: fraction} as shares) into step time and cost.");

  const sp::ServeInput srv;
  const sp::SpecDecInput spec;
  m.def("kv", &kv, py::kw_only(), py::arg("model") = py::none(), py::arg("params") = py::none(),
        py::arg("hidden") = py::none(), py::arg("layers") = py::none(),
        py::arg("heads") = py::none(), py::arg("kv_heads") = py::none(),
        py::arg("ffn") = py::none(), py::arg("vocab") = py::none(),
        py::arg("head_dim") = py::none(), py::arg("seq") = py::none(), py::arg("batch") = 1,
        py::arg("dtype") = "bf16", "KV-cache size (MHA, GQA, MQA).");
  m.def("serve", &serve, py::kw_only(), py::arg("model") = py::none(),
        py::arg("params") = py::none(), py::arg("hidden") = py::none(),
        py::arg("layers") = py::none(), py::arg("heads") = py::none(),
        py::arg("kv_heads") = py::none(), py::arg("ffn") = py::none(),
        py::arg("vocab") = py::none(), py::arg("users"), py::arg("avg_seq"),
        py::arg("gpu") = srv.gpu, py::arg("weights") = "bf16", py::arg("kv_dtype") = "bf16",
        py::arg("kv_overhead") = srv.kv_overhead, py::arg("headroom") = srv.headroom,
        "GPUs needed to serve a model to N concurrent users.");
  m.def("specdec", &specdec, py::kw_only(), py::arg("draft_ms"), py::arg("target_ms"),
        py::arg("accept") = spec.accept, py::arg("k") = spec.k, py::arg("max_k") = spec.max_k,
        "Speculative decoding: tokens per step and speedup.");

  m.def("gpus", [] { return plan_json(sp::gpus_to_json(sp::gpu_database())); }, "The GPU database.");
  m.def("models", [] { return plan_json(sp::models_to_json(sp::model_presets())); },
        "The model presets.");
}

}  // namespace stepscope::python
