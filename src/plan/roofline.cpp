#include "stepscope/plan/roofline.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "stepscope/error.hpp"

namespace stepscope::plan {

namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

void check_dims(std::initializer_list<std::int64_t> dims, const char* what) {
  for (auto v : dims)
    if (v <= 0) throw InputError(fmt::format("{}: sizes must be positive (got {})", what, v));
}

}  // namespace

RooflineMachine roofline_machine(std::optional<std::string> gpu, std::optional<Dtype> dtype,
                                 std::optional<double> peak_tflops,
                                 std::optional<double> bandwidth_gbs) {
  RooflineMachine m;
  if (peak_tflops) require_positive(*peak_tflops, "--peak-tflops");
  if (bandwidth_gbs) require_positive(*bandwidth_gbs, "--bandwidth");
  if (peak_tflops && bandwidth_gbs && !gpu) {
    m.gpu = "custom";
    m.dtype = dtype.value_or(Dtype::bf16);
    m.peak_tflops = *peak_tflops;
    m.bandwidth_gbs = *bandwidth_gbs;
    return m;
  }
  const GpuSpec& g = find_gpu(gpu.value_or("a100-80gb"));
  m.gpu = g.key;
  m.dtype = dtype.value_or(default_half_dtype(g));
  auto peak = g.peak_tflops(m.dtype);
  if (!peak && !peak_tflops)
    throw InputError(fmt::format("{} has no {} path (its datasheet lists none); pick another "
                                 "--dtype or give --peak-tflops", g.key, dtype_name(m.dtype)));
  m.peak_tflops = peak_tflops.value_or(peak.value_or(0));
  m.bandwidth_gbs = bandwidth_gbs.value_or(g.memory_bw_gbs);
  return m;
}

RooflinePoint evaluate_roofline(const RooflineOp& op, const RooflineMachine& m) {
  RooflinePoint p;
  p.op = op;
  p.intensity = op.flops / op.bytes;
  p.memory_bound = p.intensity < m.ridge();
  p.attainable_tflops = std::min(m.peak_tflops, p.intensity * m.bandwidth_gbs / 1e3);
  p.fraction_of_peak = p.attainable_tflops / m.peak_tflops;
  p.time_s = std::max(op.flops / (m.peak_tflops * 1e12), op.bytes / (m.bandwidth_gbs * 1e9));
  return p;
}

RooflineOp gemm_op(std::int64_t m, std::int64_t n, std::int64_t k, Dtype dtype) {
  check_dims({m, n, k}, "GEMM");
  const double b = dtype_bytes(dtype);
  // One multiply-add = 2 FLOPs; read A (MxK) and B (KxN) once, write C (MxN) once.
  return {fmt::format("GEMM {}x{}x{}", m, n, k), 2 * d(m) * d(n) * d(k),
          (d(m) * d(k) + d(k) * d(n) + d(m) * d(n)) * b, "2MNK FLOPs; (MK + KN + MN) x bytes"};
}

RooflineOp attention_op(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                        std::int64_t head_dim, Dtype dtype, bool fused) {
  check_dims({batch, heads, seq, head_dim}, "attention");
  const double b = dtype_bytes(dtype);
  const double flops = 4 * d(batch) * d(heads) * d(seq) * d(seq) * d(head_dim);  // QK^T and PV
  const double qkvo = 4 * d(batch) * d(seq) * d(heads) * d(head_dim) * b;
  if (fused)
    return {"attention (fused/flash)", flops, qkvo,
            "4*b*a*s^2*d FLOPs; Q, K, V read and O written once"};
  // Unfused: scores written by QK^T, read and written by softmax, read by PV.
  const double scores = 4 * d(batch) * d(heads) * d(seq) * d(seq) * b;
  return {"attention (unfused)", flops, qkvo + scores,
          "4*b*a*s^2*d FLOPs; Q, K, V, O plus the s x s scores 4 times"};
}

RooflineOp layernorm_op(std::int64_t elements) {
  check_dims({elements}, "layernorm");
  // Autocast runs norms in fp32: statistics pass and normalise pass read the input, one write.
  return {"LayerNorm", 4 * d(elements), 12 * d(elements), "4 FLOPs, 12 bytes (fp32) per element"};
}

RooflineOp softmax_op(std::int64_t elements, Dtype dtype) {
  check_dims({elements}, "softmax");
  return {"Softmax", 5 * d(elements), 2 * d(elements) * dtype_bytes(dtype),
          "5 FLOPs per element (max, sub, exp, sum, div); read + write"};
}

RooflineOp gelu_op(std::int64_t elements, Dtype dtype) {
  check_dims({elements}, "gelu");
  // Counted as 1 FLOP per element like the layer table it feeds; the tanh form is ~8, still far
  // below any ridge point.
  return {"GELU", d(elements), 2 * d(elements) * dtype_bytes(dtype),
          "1 FLOP per element; read + write"};
}

RooflineOp elementwise_op(std::int64_t elements, int inputs, Dtype dtype) {
  check_dims({elements, inputs}, "elementwise");
  return {fmt::format("elementwise ({} input{})", inputs, inputs == 1 ? "" : "s"), d(elements),
          (inputs + 1) * d(elements) * dtype_bytes(dtype),
          "1 FLOP per element; each input read, output written"};
}

RooflineOp custom_op(double flops, double bytes) {
  require_positive(flops, "--flops");
  require_positive(bytes, "--bytes");
  return {"custom", flops, bytes, "given"};
}

std::vector<RooflineOp> transformer_layer_ops(const LayerShape& s, Dtype dtype) {
  check_dims({s.batch, s.seq, s.hidden}, "layer");
  const std::int64_t heads = s.heads > 0 ? s.heads : std::max<std::int64_t>(1, s.hidden / 128);
  const std::int64_t ffn = s.ffn > 0 ? s.ffn : 4 * s.hidden;
  const std::int64_t kv_heads = s.kv_heads > 0 ? s.kv_heads : heads;
  if (s.heads < 0 || s.ffn < 0 || s.kv_heads < 0)
    throw InputError("layer: sizes must be positive");
  if (kv_heads > heads || heads % kv_heads != 0)
    throw InputError(fmt::format("inconsistent heads: {} query heads are not divisible into {} "
                                 "kv-head groups", heads, kv_heads));
  if (s.hidden % heads != 0)
    throw InputError(fmt::format("inconsistent heads: hidden size {} is not divisible by {} heads",
                                 s.hidden, heads));
  const double B = d(s.batch), S = d(s.seq), D = d(s.hidden), A = d(heads), F = d(ffn);
  const double T = B * S;  // tokens
  // Grouped-query attention: K and V have kv_heads x head_dim columns each, not D.
  const double KV = d(kv_heads) * (D / A);
  const double QKV = D + 2 * KV;
  const double w = dtype_bytes(dtype);
  std::vector<RooflineOp> ops;
  auto add = [&](std::string name, double flops, double bytes, std::string formula) {
    ops.push_back({std::move(name), flops, bytes, std::move(formula)});
  };
  add("QKV projection", 2 * T * D * QKV, (T * D + D * QKV + T * QKV) * w,
      kv_heads == heads ? "GEMM T x 3D x D" : "GEMM T x (D + 2 x kv_heads x head_dim) x D");
  // Every query head still scores the whole sequence: the FLOPs do not shrink with GQA, only
  // the K and V reads.
  add("attention QK^T", 2 * B * S * S * D, (T * D + T * KV + B * A * S * S) * w,
      "2*B*S^2*D; reads Q, K, writes a scores per head");
  add("softmax", 5 * B * A * S * S, 2 * B * A * S * S * w, "5 FLOPs per score; read + write");
  add("attention x V", 2 * B * S * S * D, (B * A * S * S + T * KV + T * D) * w,
      "2*B*S^2*D; reads scores and V, writes output");
  add("output projection", 2 * T * D * D, (2 * T * D + D * D) * w, "GEMM T x D x D");
  add("LayerNorm", 4 * T * D, 12 * T * D, "4 FLOPs, 12 bytes (fp32) per element");
  add("FFN up", 2 * T * D * F, (T * D + D * F + T * F) * w, "GEMM T x F x D");
  if (s.gated) {
    add("FFN gate", 2 * T * D * F, (T * D + D * F + T * F) * w, "GEMM T x F x D");
    add("SiLU x up", 2 * T * F, 3 * T * F * w, "2 FLOPs per element; two reads, one write");
  } else {
    add("GELU", T * F, 2 * T * F * w, "1 FLOP per element; read + write");
  }
  add("FFN down", 2 * T * F * D, (T * F + F * D + T * D) * w, "GEMM T x D x F");
  return ops;
}

RooflineResult plan_roofline(const std::vector<RooflineOp>& ops, const RooflineMachine& m) {
  RooflineResult r;
  r.machine = m;
  for (const auto& op : ops) {
    RooflinePoint p = evaluate_roofline(op, m);
    r.total_flops += op.flops;
    r.total_bytes += op.bytes;
    r.total_time_s += p.time_s;
    if (p.memory_bound) r.memory_bound_time_s += p.time_s;
    r.points.push_back(std::move(p));
  }
  return r;
}

}  // namespace stepscope::plan
