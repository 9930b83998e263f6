// Roofline: is an operation limited by memory bandwidth or by math throughput on a GPU?
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepscope/plan/gpus.hpp"
#include "stepscope/plan/units.hpp"

namespace stepscope::plan {

struct RooflineOp {
  std::string name;
  double flops = 0;
  double bytes = 0;  // HBM traffic: reads + writes
  std::string formula;
};

// The machine side of the roofline: a database GPU at a data type, or user-given peaks.
struct RooflineMachine {
  std::string gpu;  // key, or "custom"
  Dtype dtype = Dtype::bf16;
  double peak_tflops = 0;
  double bandwidth_gbs = 0;
  double ridge() const { return peak_tflops * 1e12 / (bandwidth_gbs * 1e9); }
};

// gpu defaults to a100-80gb, dtype to the GPU's 16-bit type; the overrides replace the
// database figures (both given: no GPU needed). Throws InputError when the GPU lacks the type.
RooflineMachine roofline_machine(std::optional<std::string> gpu, std::optional<Dtype> dtype,
                                 std::optional<double> peak_tflops,
                                 std::optional<double> bandwidth_gbs);

struct RooflinePoint {
  RooflineOp op;
  double intensity = 0;          // FLOPs per byte
  bool memory_bound = false;
  double attainable_tflops = 0;  // min(peak, intensity x bandwidth)
  double fraction_of_peak = 0;
  double time_s = 0;             // max(flops / peak, bytes / bandwidth)
};

RooflinePoint evaluate_roofline(const RooflineOp& op, const RooflineMachine& m);

// Operation models (bytes at the given element width unless stated).
RooflineOp gemm_op(std::int64_t m, std::int64_t n, std::int64_t k, Dtype dtype);
RooflineOp attention_op(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                        std::int64_t head_dim, Dtype dtype, bool fused);
RooflineOp layernorm_op(std::int64_t elements);  // 4 FLOPs, 12 bytes per element (fp32 math)
RooflineOp softmax_op(std::int64_t elements, Dtype dtype);
RooflineOp gelu_op(std::int64_t elements, Dtype dtype);
RooflineOp elementwise_op(std::int64_t elements, int inputs, Dtype dtype);
RooflineOp custom_op(double flops, double bytes);

struct LayerShape {
  std::int64_t batch = 4, seq = 2048, hidden = 4096;
  std::int64_t heads = 0;  // 0: hidden / 128
  std::int64_t ffn = 0;    // 0: 4 x hidden
  bool gated = false;      // SwiGLU MLP: a gate GEMM beside the up GEMM, SiLU(gate) x up
  std::int64_t kv_heads = 0;  // 0: heads (MHA); fewer: grouped-query attention
};

// Every operation of one transformer layer's forward pass, unfused.
std::vector<RooflineOp> transformer_layer_ops(const LayerShape& shape, Dtype dtype);

struct RooflineResult {
  RooflineMachine machine;
  std::vector<RooflinePoint> points;
  double total_flops = 0, total_bytes = 0, total_time_s = 0;
  double memory_bound_time_s = 0;  // time spent in memory-bound operations
};

RooflineResult plan_roofline(const std::vector<RooflineOp>& ops, const RooflineMachine& m);

}  // namespace stepscope::plan
