#include "stepscope/plan/render.hpp"

#include <nlohmann/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace stepscope::plan {

using nlohmann::json;

namespace {

json envelope(const char* calculator) {
  return json{{"schema", kPlanSchema}, {"calculator", calculator}};
}

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

std::string percent(double f) { return fmt::format("{:.1f}%", f * 100); }

std::string tflops(double v) {
  return v > 0 ? fmt::format("{:g}", v) : std::string("-");
}

json arch_json(const ModelArch& m) {
  return json{{"name", m.name},         {"hidden", m.hidden},
              {"layers", m.layers},     {"heads", m.heads},
              {"kv_heads", m.kv_heads}, {"ffn", m.ffn},
              {"vocab", m.vocab},       {"max_seq", m.max_seq},
              {"gated_mlp", m.gated_mlp}, {"dropout", m.dropout},
              {"tied_embeddings", m.tied_embeddings}, {"parameters", model_parameters(m)}};
}

}  // namespace

std::string format_bytes(double bytes) {
  const double a = std::fabs(bytes);
  if (a >= 1e12) return fmt::format("{:.2f} TB", bytes / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} KB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string format_seconds(double s) {
  const double a = std::fabs(s);
  if (a >= 1) return fmt::format("{:.3f} s", s);
  if (a >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

// ---- memory -------------------------------------------------------------------------------

json to_json(const MemoryResult& r) {
  const auto& in = r.input;
  json j = envelope("memory");
  j["input"] = {{"model", arch_json(in.model)},
                {"dtype", dtype_name(in.dtype)},
                {"optimizer", optimizer_name(in.optimizer)},
                {"batch", in.batch},
                {"seq", r.seq},
                {"gpus", in.gpus},
                {"data_parallel", r.dp},
                {"tensor_parallel", in.tp},
                {"pipeline_parallel", in.pp},
                {"sharding", sharding_name(in.sharding)},
                {"offload", offload_name(in.offload)},
                {"checkpoint", in.checkpointing.mode == Recompute::none        ? "none"
                               : in.checkpointing.mode == Recompute::selective ? "selective"
                                                                               : "full"},
                {"checkpoint_every", in.checkpointing.every},
                {"flash_attention", in.flash_attention},
                {"attention", in.flash_attention ? "flash" : "eager"},
                {"sequence_parallel", in.sequence_parallel},
                {"gpu", r.gpu_key},
                {"headroom", in.headroom}};
  j["parameters"] = r.params;
  json items = json::array();
  for (const auto& i : r.items) items.push_back({{"name", i.name}, {"bytes", i.bytes}, {"note", i.note}});
  j["per_gpu"] = items;
  j["model_state_bytes"] = r.model_state_bytes;
  j["activation_bytes"] = r.activation_bytes;
  j["total_bytes"] = r.total_bytes;
  j["cpu_offloaded_bytes"] = r.cpu_bytes;
  j["activation_model"] = r.activation_model;
  j["activation_formula"] = r.activation_formula;
  j["gpu_memory_bytes"] = r.gpu_memory_bytes;
  j["usable_bytes"] = r.usable_bytes;
  j["fits"] = r.fits;
  j["notes"] = r.notes;
  if (r.cheapest_fix)
    j["cheapest_fix"] = {{"change", r.cheapest_fix->change},
                         {"cost", r.cheapest_fix->cost},
                         {"total_bytes", r.cheapest_fix->total_bytes}};
  else
    j["cheapest_fix"] = nullptr;
  if (r.more_gpus)
    j["more_gpus"] = {{"change", r.more_gpus->change},
                      {"cost", r.more_gpus->cost},
                      {"total_bytes", r.more_gpus->total_bytes}};
  else
    j["more_gpus"] = nullptr;
  json tried = json::array();
  for (const auto& t : r.tried)
    tried.push_back({{"change", t.change}, {"cost", t.cost}, {"total_bytes", t.total_bytes}});
  j["alternatives"] = tried;
  return j;
}

std::string render_text(const MemoryResult& r) {
  const auto& in = r.input;
  std::string out;
  out += fmt::format("Training memory per GPU: {} ({:.2f}B parameters), {}, {}\n", in.model.name,
                     r.params / 1e9, dtype_name(in.dtype), optimizer_name(in.optimizer));
  out += fmt::format("  {} GPU{}: data {} x tensor {} x pipeline {}, sharding {}, offload {}\n",
                     in.gpus, in.gpus == 1 ? "" : "s", r.dp, in.tp, in.pp,
                     sharding_name(in.sharding), offload_name(in.offload));
  if (in.model.has_shape())
    out += fmt::format("  micro-batch {} x seq {}, checkpointing {}{}{}\n", in.batch, r.seq,
                       in.checkpointing.mode == Recompute::none        ? "none"
                       : in.checkpointing.mode == Recompute::selective ? "selective"
                       : in.checkpointing.every == 1
                           ? "full"
                           : fmt::format("every {} layers", in.checkpointing.every),
                       in.flash_attention ? ", flash attention" : ", eager attention",
                       in.sequence_parallel ? ", sequence parallel" : "");
  out += "\n";
  for (const auto& i : r.items)
    out += fmt::format("  {:<24} {:>12}   {}\n", i.name, format_bytes(i.bytes), i.note);
  out += fmt::format("  {:<24} {:>12}\n", "total", format_bytes(r.total_bytes));
  if (!r.activation_model.empty() && r.activation_model != "none")
    out += fmt::format("\n  activation model: {}; per layer {}\n", r.activation_model,
                       r.activation_formula);
  out += "\n";
  const double left = r.usable_bytes - r.total_bytes;
  if (r.fits)
    out += fmt::format("FITS on {} ({:g} GiB, {} usable after {:.0f}% headroom): {} spare\n",
                       r.gpu_key, r.gpu_memory_bytes / kGiB, format_bytes(r.usable_bytes),
                       in.headroom * 100, format_bytes(left));
  else
    out += fmt::format("DOES NOT FIT on {} ({:g} GiB, {} usable after {:.0f}% headroom): "
                       "{} over\n",
                       r.gpu_key, r.gpu_memory_bytes / kGiB, format_bytes(r.usable_bytes),
                       in.headroom * 100, format_bytes(-left));
  if (r.cheapest_fix)
    out += fmt::format("Cheapest change that fits: {} -> {} per GPU (cost: {})\n",
                       r.cheapest_fix->change, format_bytes(r.cheapest_fix->total_bytes),
                       r.cheapest_fix->cost);
  else if (!r.fits)
    out += "No change tried here makes it fit; it needs more or larger GPUs than searched.\n";
  if (r.more_gpus)
    out += fmt::format("Or, with more GPUs: {} -> {} per GPU\n", r.more_gpus->change,
                       format_bytes(r.more_gpus->total_bytes));
  for (const auto& n : r.notes) out += fmt::format("note: {}\n", n);
  return out;
}

// ---- roofline -----------------------------------------------------------------------------

json to_json(const RooflineResult& r) {
  json j = envelope("roofline");
  j["machine"] = {{"gpu", r.machine.gpu},
                  {"dtype", dtype_name(r.machine.dtype)},
                  {"peak_tflops", r.machine.peak_tflops},
                  {"bandwidth_gbs", r.machine.bandwidth_gbs},
                  {"ridge_flops_per_byte", r.machine.ridge()}};
  json ops = json::array();
  for (const auto& p : r.points)
    ops.push_back({{"name", p.op.name},
                   {"flops", p.op.flops},
                   {"bytes", p.op.bytes},
                   {"formula", p.op.formula},
                   {"intensity", p.intensity},
                   {"bound", p.memory_bound ? "memory" : "compute"},
                   {"attainable_tflops", p.attainable_tflops},
                   {"fraction_of_peak", p.fraction_of_peak},
                   {"time_s", p.time_s}});
  j["ops"] = ops;
  j["total_flops"] = r.total_flops;
  j["total_bytes"] = r.total_bytes;
  j["total_time_s"] = r.total_time_s;
  j["memory_bound_time_s"] = r.memory_bound_time_s;
  return j;
}

std::string render_text(const RooflineResult& r) {
  const auto& m = r.machine;
  std::string out = fmt::format(
      "Roofline on {} at {}: peak {:g} TFLOP/s (dense), {:g} GB/s -> ridge {:.1f} FLOP/byte\n\n",
      m.gpu, dtype_name(m.dtype), m.peak_tflops, m.bandwidth_gbs, m.ridge());
  out += fmt::format("  {:<26} {:>12} {:>12} {:>10}  {:<8} {:>11} {:>8} {:>10}\n", "operation",
                     "GFLOP", "MB moved", "FLOP/B", "bound", "TFLOP/s", "of peak", "time");
  for (const auto& p : r.points)
    out += fmt::format("  {:<26} {:>12.3f} {:>12.3f} {:>10.2f}  {:<8} {:>11.2f} {:>8} {:>10}\n",
                       p.op.name, p.op.flops / 1e9, p.op.bytes / 1e6, p.intensity,
                       p.memory_bound ? "memory" : "compute", p.attainable_tflops,
                       percent(p.fraction_of_peak), format_seconds(p.time_s));
  if (r.points.size() > 1)
    out += fmt::format("\n  total {:.1f} GFLOP, {:.1f} MB, {} at the roofline; memory-bound "
                       "operations take {} of it\n",
                       r.total_flops / 1e9, r.total_bytes / 1e6, format_seconds(r.total_time_s),
                       percent(r.memory_bound_time_s / r.total_time_s));
  out += "\nBelow the ridge an operation waits on memory: fuse it with its neighbours rather "
         "than speed up its math.\n";
  return out;
}

// ---- comm ---------------------------------------------------------------------------------

json to_json(const CommResult& r) {
  const auto& in = r.input;
  json j = envelope("comm");
  j["input"] = {{"payload_bytes", in.payload_bytes},
                {"gpus", in.gpus},
                {"link", in.link.name},
                {"bandwidth_gbs", in.link.bandwidth_gbs},
                {"latency_us", in.link.latency_us},
                {"backward_s", opt(in.backward_s)},
                {"overlap", in.overlap},
                {"compute_s", opt(in.compute_s)}};
  json cs = json::array();
  for (const auto& c : r.collectives)
    cs.push_back({{"name", c.name},
                  {"bytes_per_gpu", c.bytes_per_gpu},
                  {"bandwidth_s", c.bandwidth_s},
                  {"latency_s", c.latency_s},
                  {"time_s", c.time_s},
                  {"formula", c.formula}});
  j["collectives"] = cs;
  j["hidden_s"] = opt(r.hidden_s);
  j["exposed_s"] = opt(r.exposed_s);
  j["exposed_fraction_of_backward"] = opt(r.exposed_fraction_of_backward);
  j["exposed_share_of_step"] = opt(r.exposed_share_of_step);
  j["communication_bound"] = r.communication_bound;
  return j;
}

std::string render_text(const CommResult& r) {
  const auto& in = r.input;
  std::string out = fmt::format(
      "Collectives for {} per GPU across {} GPUs over {} ({:g} GB/s per direction, {:g} us "
      "per hop)\n\n",
      format_bytes(in.payload_bytes), in.gpus, in.link.name, in.link.bandwidth_gbs,
      in.link.latency_us);
  out += fmt::format("  {:<18} {:>14} {:>12} {:>12} {:>12}   {}\n", "collective", "sent per GPU",
                     "bandwidth", "latency", "time", "model");
  for (const auto& c : r.collectives)
    out += fmt::format("  {:<18} {:>14} {:>12} {:>12} {:>12}   {}\n", c.name,
                       format_bytes(c.bytes_per_gpu), format_seconds(c.bandwidth_s),
                       format_seconds(c.latency_s), format_seconds(c.time_s), c.formula);
  if (r.exposed_s) {
    out += fmt::format(
        "\n  ring all-reduce behind a {} backward at {:.0f}% overlap: {} hidden, {} exposed\n",
        format_seconds(*in.backward_s), in.overlap * 100, format_seconds(*r.hidden_s),
        format_seconds(*r.exposed_s));
    out += fmt::format("  exposed = {} of the backward, {} of the step\n",
                       percent(*r.exposed_fraction_of_backward), percent(*r.exposed_share_of_step));
    out += r.communication_bound
               ? "  COMMUNICATION-BOUND: exposed all-reduce above 20% of the backward; more "
                 "overlap, gradient accumulation, or a faster link\n"
               : "  within budget (exposed all-reduce at most 20% of the backward)\n";
  }
  return out;
}

json to_json(const ScalingResult& r) {
  json j = envelope("scaling");
  json pts = json::array();
  for (const auto& p : r.points)
    pts.push_back({{"gpus", p.gpus},
                   {"throughput", p.throughput},
                   {"speedup", p.speedup},
                   {"efficiency", p.efficiency},
                   {"verdict", p.verdict}});
  j["points"] = pts;
  return j;
}

std::string render_text(const ScalingResult& r) {
  std::string out = fmt::format("Scaling efficiency against {} GPU{}\n\n", r.points.front().gpus,
                                r.points.front().gpus == 1 ? "" : "s");
  out += fmt::format("  {:>6} {:>14} {:>9} {:>11}   {}\n", "GPUs", "throughput", "speedup",
                     "efficiency", "verdict");
  for (const auto& p : r.points)
    out += fmt::format("  {:>6} {:>14.6g} {:>8.2f}x {:>11}   {}\n", p.gpus, p.throughput,
                       p.speedup, percent(p.efficiency), p.verdict);
  return out;
}

// ---- pipeline, stack --------------------------------------------------------------------------

json to_json(const PipelineResult& r) {
  json j = envelope("pipeline");
  j["input"] = {{"stages", r.input.stages},
                {"micro_batches", r.input.micro_batches},
                {"interleave", r.input.interleave},
                {"micro_batch_s", opt(r.input.micro_batch_s)},
                {"target_bubble", r.input.target_bubble}};
  json ss = json::array();
  for (const auto& s : r.schedules)
    ss.push_back({{"name", s.name},
                  {"bubble_fraction", s.bubble_fraction},
                  {"bubble_overhead", s.bubble_overhead},
                  {"efficiency", s.efficiency},
                  {"micro_batches_in_flight", opt(s.micro_batches_in_flight)},
                  {"step_s", opt(s.step_s)},
                  {"micro_batches_for_target", s.micro_batches_for_target}});
  j["schedules"] = ss;
  return j;
}

std::string render_text(const PipelineResult& r) {
  const auto& in = r.input;
  std::string out = fmt::format("Pipeline bubble: {} stages, {} micro-batches\n\n", in.stages,
                                in.micro_batches);
  out += fmt::format("  {:<22} {:>8} {:>10} {:>11} {:>10} {:>10} {:>12}\n", "schedule", "bubble",
                     "overhead", "efficiency", "in flight", "step",
                     fmt::format("m for {:.0f}%", in.target_bubble * 100));
  for (const auto& s : r.schedules)
    out += fmt::format("  {:<22} {:>8} {:>10} {:>11} {:>10} {:>10} {:>12}\n", s.name,
                       percent(s.bubble_fraction), percent(s.bubble_overhead),
                       percent(s.efficiency),
                       s.micro_batches_in_flight ? fmt::format("{}", *s.micro_batches_in_flight)
                                                 : std::string("-"),
                       s.step_s ? format_seconds(*s.step_s) : std::string("-"),
                       s.micro_batches_for_target);
  out += "\n  bubble = (p-1)/(v*m + p-1) of the step; overhead = (p-1)/(v*m) on top of the "
         "useful work.\n  1F1B has GPipe's bubble but keeps at most p micro-batches of "
         "activations instead of m.\n";
  return out;
}

json to_json(const StackResult& r) {
  json j = envelope("stack");
  json rows = json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"name", row.name},
                    {"speedup", row.speedup},
                    {"category", row.category.empty() ? json(nullptr) : json(row.category)},
                    {"effective", row.effective},
                    {"cumulative", row.cumulative},
                    {"step_s", row.step_s},
                    {"cost", opt(row.cost)},
                    {"hours", opt(row.hours)}});
  j["rows"] = rows;
  j["total_speedup"] = r.rows.back().cumulative;
  json shares = json::object();
  for (const auto& [category, share] : r.input.shares) shares[category] = share;
  j["shares"] = shares;
  j["notes"] = r.notes;
  return j;
}

std::string render_text(const StackResult& r) {
  const bool categories = std::any_of(r.rows.begin(), r.rows.end(),
                                      [](const StackRow& row) { return !row.category.empty(); });
  std::string out = categories
                        ? "Stacked speedups (levers on one category share its time; the "
                          "categories add up, Amdahl over the step)\n\n"
                        : "Stacked speedups (throughput multipliers compound)\n\n";
  const bool cost = r.input.run_cost.has_value(), hours = r.input.run_hours.has_value();
  out += fmt::format("  {:<28} {:>9}{} {:>11} {:>12}{}{}\n", "step", "factor",
                     categories ? fmt::format(" {:>9}", "adds") : "", "cumulative", "step time",
                     cost ? fmt::format(" {:>12}", "run cost") : "",
                     hours ? fmt::format(" {:>10}", "hours") : "");
  for (const auto& row : r.rows)
    out += fmt::format("  {:<28} {:>8.2f}x{} {:>10.2f}x {:>12}{}{}\n",
                       row.category.empty() ? row.name : row.name + " @" + row.category,
                       row.speedup, categories ? fmt::format(" {:>8.2f}x", row.effective) : "",
                       row.cumulative, format_seconds(row.step_s),
                       row.cost ? fmt::format(" {:>12.0f}", *row.cost) : "",
                       row.hours ? fmt::format(" {:>10.1f}", *row.hours) : "");
  const auto& last = r.rows.back();
  out += fmt::format("\n  {} -> {}: {:.2f}x overall", format_seconds(r.input.step_s),
                     format_seconds(last.step_s), last.cumulative);
  if (cost) out += fmt::format(", saving {:.0f} per run", *r.input.run_cost - *last.cost);
  out += "\n";
  for (const auto& note : r.notes) out += "  note: " + note + "\n";
  return out;
}

// ---- serving ------------------------------------------------------------------------------

json to_json(const KvResult& r) {
  json j = envelope("kv");
  j["input"] = {{"layers", r.input.layers},
                {"heads", r.input.heads},
                {"kv_heads", r.input.kv_heads},
                {"head_dim", r.input.head_dim},
                {"batch", r.input.batch},
                {"dtype", dtype_name(r.input.dtype)}};
  j["attention"] = r.attention;
  j["bytes_per_token"] = r.bytes_per_token;
  j["mha_bytes_per_token"] = r.mha_bytes_per_token;
  json rows = json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"seq", row.seq}, {"bytes", row.bytes}, {"bytes_per_sequence", row.bytes_per_sequence}});
  j["rows"] = rows;
  return j;
}

std::string render_text(const KvResult& r) {
  const auto& in = r.input;
  std::string out = fmt::format(
      "KV cache: {} layers, {} heads, {} kv heads x {} dims, {}, batch {} -> {}\n",
      in.layers, in.heads, in.kv_heads, in.head_dim, dtype_name(in.dtype), in.batch, r.attention);
  out += fmt::format("  {} per token (2 x layers x kv-heads x head-dim x bytes)", format_bytes(r.bytes_per_token));
  if (r.mha_bytes_per_token > r.bytes_per_token)
    out += fmt::format("; MHA would need {} ({:g}x)", format_bytes(r.mha_bytes_per_token),
                       r.mha_bytes_per_token / r.bytes_per_token);
  out += "\n\n";
  out += fmt::format("  {:>10} {:>16} {:>16}\n", "seq", "per sequence", "whole batch");
  for (const auto& row : r.rows)
    out += fmt::format("  {:>10} {:>16} {:>16}\n", row.seq, format_bytes(row.bytes_per_sequence),
                       format_bytes(row.bytes));
  return out;
}

json to_json(const ServeResult& r) {
  const auto& in = r.input;
  json j = envelope("serve");
  j["input"] = {{"model", arch_json(in.model)},
                {"users", in.users},
                {"avg_seq", in.avg_seq},
                {"gpu", in.gpu},
                {"weights_dtype", dtype_name(in.weights)},
                {"kv_dtype", dtype_name(in.kv_dtype)},
                {"kv_overhead", in.kv_overhead},
                {"headroom", in.headroom}};
  j["parameters"] = r.params;
  j["kv_method"] = r.kv_method;
  j["weights_bytes"] = r.weights_bytes;
  j["kv_bytes_per_token"] = r.kv_bytes_per_token;
  j["kv_bytes_per_user"] = r.kv_bytes_per_user;
  j["kv_total_bytes"] = r.kv_total_bytes;
  j["total_bytes"] = r.total_bytes;
  j["usable_bytes_per_gpu"] = r.usable_per_gpu;
  j["gpus_pooled"] = r.gpus_pooled;
  j["users_per_replica"] = opt(r.users_per_replica);
  j["gpus_replicated"] = opt(r.gpus_replicated);
  return j;
}

std::string render_text(const ServeResult& r) {
  const auto& in = r.input;
  std::string out = fmt::format(
      "Serving {} ({:.2f}B parameters, weights {}) for {} concurrent users at {} tokens "
      "each on {}\n\n",
      in.model.name, r.params / 1e9, dtype_name(in.weights), in.users, in.avg_seq, in.gpu);
  out += fmt::format("  {:<28} {:>12}\n", "weights", format_bytes(r.weights_bytes));
  out += fmt::format("  {:<28} {:>12}   {}, {}\n", "KV cache per token", format_bytes(r.kv_bytes_per_token),
                     r.kv_method, dtype_name(in.kv_dtype));
  out += fmt::format("  {:<28} {:>12}\n", "KV cache per user", format_bytes(r.kv_bytes_per_user));
  out += fmt::format("  {:<28} {:>12}   users x per-user x {:.2f} (paging overhead)\n",
                     "KV cache, all users", format_bytes(r.kv_total_bytes), 1 + in.kv_overhead);
  out += fmt::format("  {:<28} {:>12}\n", "total", format_bytes(r.total_bytes));
  out += fmt::format("  {:<28} {:>12}   {:.0f}% kept free\n\n", "usable per GPU",
                     format_bytes(r.usable_per_gpu), in.headroom * 100);
  out += fmt::format("GPUs needed, weights sharded across the group: {}\n", r.gpus_pooled);
  if (r.gpus_replicated)
    out += fmt::format("GPUs needed, one full copy per GPU: {} ({} users per GPU)\n",
                       *r.gpus_replicated, *r.users_per_replica);
  else
    out += "One full copy per GPU: does not fit (weights plus one user exceed a GPU); shard.\n";
  return out;
}

json to_json(const SpecDecResult& r) {
  json j = envelope("specdec");
  j["input"] = {{"accept", r.input.accept},
                {"k", r.input.k},
                {"draft_s", r.input.draft_s},
                {"target_s", r.input.target_s}};
  j["expected_tokens_per_step"] = r.expected_tokens;
  j["step_s"] = r.step_s;
  j["speedup"] = r.speedup;
  j["best_k"] = r.best_k;
  j["best_speedup"] = r.best_speedup;
  return j;
}

std::string render_text(const SpecDecResult& r) {
  const auto& in = r.input;
  std::string out = fmt::format(
      "Speculative decoding: accept {:.0f}%, k = {}, draft {} and target {} per forward\n\n",
      in.accept * 100, in.k, format_seconds(in.draft_s), format_seconds(in.target_s));
  out += fmt::format("  expected tokens per target forward  {:.2f}   (1 - a^(k+1)) / (1 - a)\n",
                     r.expected_tokens);
  out += fmt::format("  time per step                       {}   k x draft + target\n",
                     format_seconds(r.step_s));
  out += fmt::format("  speedup over plain decoding         {:.2f}x\n", r.speedup);
  out += fmt::format("  best k in 1..{}                      {} ({:.2f}x)\n", in.max_k, r.best_k,
                     r.best_speedup);
  if (r.speedup < 1) out += "\nSlower than plain decoding: the draft costs more than it saves.\n";
  return out;
}

// ---- databases ----------------------------------------------------------------------------

json gpus_to_json(const std::vector<GpuSpec>& gpus) {
  json j = envelope("gpus");
  json list = json::array();
  auto tf = [](double v) { return v > 0 ? json(v) : json(nullptr); };
  for (const auto& g : gpus)
    list.push_back({{"key", g.key},
                    {"name", g.name},
                    {"vendor", g.vendor},
                    {"memory_gb", g.memory_gb},
                    {"memory_bytes", g.memory_bytes()},
                    {"memory_bandwidth_gbs", g.memory_bw_gbs},
                    {"dense_tflops",
                     {{"fp32", tf(g.fp32_tflops)},
                      {"tf32", tf(g.tf32_tflops)},
                      {"bf16", tf(g.bf16_tflops)},
                      {"fp16", tf(g.fp16_tflops)},
                      {"fp8", tf(g.fp8_tflops)}}},
                    {"int8_tops", tf(g.int8_tops)},
                    {"interconnect", g.interconnect},
                    {"interconnect_gbs", g.interconnect_gbs},
                    {"ridge_bf16_or_fp16", g.ridge_point(default_half_dtype(g))},
                    {"source", g.source}});
  j["gpus"] = list;
  j["note"] = "all TFLOP/s figures are dense (without 2:4 sparsity)";
  return j;
}

std::string render_gpus_text(const std::vector<GpuSpec>& gpus) {
  std::string out = "GPU database (dense peak TFLOP/s, no sparsity; '-' = no hardware path)\n\n";
  out += fmt::format("  {:<10} {:<24} {:>6} {:>8} {:>6} {:>7} {:>8} {:>8} {:>7} {:>6}  {}\n", "key",
                     "name", "GiB", "GB/s", "fp32", "tf32", "bf16", "fp16", "fp8", "ridge",
                     "interconnect");
  for (const auto& g : gpus)
    out += fmt::format("  {:<10} {:<24} {:>6g} {:>8g} {:>6} {:>7} {:>8} {:>8} {:>7} {:>6.0f}  {} {:g} GB/s\n",
                       g.key, g.name, g.memory_gb, g.memory_bw_gbs, tflops(g.fp32_tflops),
                       tflops(g.tf32_tflops), tflops(g.bf16_tflops), tflops(g.fp16_tflops),
                       tflops(g.fp8_tflops), g.ridge_point(default_half_dtype(g)), g.interconnect,
                       g.interconnect_gbs);
  out += "\n  ridge = 16-bit peak / memory bandwidth (FLOP per byte); interconnect is the total "
         "of both directions.\n  Sources: vendor datasheets (`--json` lists each).\n";
  return out;
}

json models_to_json(const std::vector<ModelArch>& models) {
  json j = envelope("models");
  json list = json::array();
  for (const auto& m : models) list.push_back(arch_json(m));
  j["models"] = list;
  return j;
}

std::string render_models_text(const std::vector<ModelArch>& models) {
  std::string out = "Model presets\n\n";
  out += fmt::format("  {:<12} {:>9} {:>7} {:>7} {:>6} {:>9} {:>7} {:>7} {:>7}  {}\n", "name",
                     "params", "hidden", "layers", "heads", "kv-heads", "ffn", "vocab", "seq",
                     "block");
  for (const auto& m : models)
    out += fmt::format("  {:<12} {:>8.2f}B {:>7} {:>7} {:>6} {:>9} {:>7} {:>7} {:>7}  {}\n",
                       m.name, model_parameters(m) / 1e9, m.hidden, m.layers, m.heads,
                       m.kv_heads, m.ffn, m.vocab, m.max_seq,
                       m.gated_mlp ? "SwiGLU, RMSNorm, untied" : "GELU, LayerNorm, tied");
  return out;
}

}  // namespace stepscope::plan
