// Kernel names and launch configurations as CUPTI / roctracer report them.
#pragma once

#include <string>
#include <vector>

#include "schedule.hpp"

namespace stepscope::tracegen {

struct KernelSet {
  const KernelSpec* gemm_fwd;
  const KernelSpec* gemm_dgrad;
  const KernelSpec* gemm_wgrad;
  const KernelSpec* norm_fwd;
  const KernelSpec* norm_bwd_input;
  const KernelSpec* norm_bwd_gamma;
  const KernelSpec* gelu_fwd;
  const KernelSpec* gelu_bwd;
  const KernelSpec* add;
  const KernelSpec* mul;
  const KernelSpec* tiny;
  const KernelSpec* softmax_fwd;
  const KernelSpec* nll_fwd;
  const KernelSpec* softmax_bwd;
  const KernelSpec* nll_bwd;
  const KernelSpec* adam;
  const KernelSpec* allreduce;
  // Copy names: pinned / pageable host-to-device, the small .item() copy, checkpoint copies.
  std::string_view h2d_pinned, h2d_pageable, d2h_item, d2h_pageable;
};

// `compute_major` picks the architecture's kernel names (7: Volta/Turing fp32, all-float ATen
// kernels).
// `fp32_aten`: without tensor cores on a newer GPU, the ATen kernels run on float too (else they
// keep the bf16 names of the no-tensor-cores preset).
const KernelSet& kernels_for(Platform p, bool tensor_cores, int compute_major = 8, bool fp32_aten = false);

// Kernels of the footgun presets (CUDA names; ROCm traces reuse them).
struct FootgunKernels {
  const KernelSpec* conv_fwd;
  const KernelSpec* conv_dgrad;
  const KernelSpec* conv_wgrad;
  const KernelSpec* nchw_to_nhwc;
  const KernelSpec* nhwc_to_nchw;
  std::vector<const KernelSpec*> conv_trials;  // the algorithms cudnnFind benchmarks
  const KernelSpec* bmm;
  const KernelSpec* softmax_fwd;
  const KernelSpec* softmax_bwd;
  const KernelSpec* isnan;
  const KernelSpec* any;
  std::vector<const KernelSpec*> adam_steps;  // one per op of a per-parameter AdamW update
};
const FootgunKernels& footgun_kernels();
// Kernels of the real-world trace classes: an fp8 MoE block on H100 with expert-parallel
// communication (DeepEP), and a Triton pointwise kernel.
struct MoeKernels {
  const KernelSpec* fp8_gemm;          // CUTLASS GemmUniversal on float_e4m3_t (torch._scaled_mm)
  const KernelSpec* fp8_transpose;     // CUTLASS transpose of an fp8 tensor: not a GEMM
  const KernelSpec* grouped_gemm;      // DeepGEMM grouped fp8 GEMM over the local experts
  const KernelSpec* router_gemm;       // bf16 cuBLAS GEMM on sm90
  const KernelSpec* topk;
  const KernelSpec* silu;
  const KernelSpec* notify_dispatch;   // DeepEP
  const KernelSpec* dispatch;
  const KernelSpec* combine;
};
const MoeKernels& moe_kernels();
// Kernels of a serving engine's decode step (vLLM on A100, bf16).
struct ServingKernels {
  const KernelSpec* embedding;
  const KernelSpec* rms_norm;
  const KernelSpec* fused_add_rms_norm;
  const KernelSpec* gemm;       // cuBLAS small-M GEMM (qkv, o, gate_up, down, lm_head)
  const KernelSpec* rotary;
  const KernelSpec* attention;  // FlashAttention split-KV decode
  const KernelSpec* act_and_mul;
  const KernelSpec* argmax;     // the sampler (greedy)
};
const ServingKernels& serving_kernels();
const KernelSpec& triton_gelu();

// NCCL before 2.19 named its kernels per collective/algorithm/type (ncclKernel_*).
const KernelSpec& legacy_nccl_allreduce();
const KernelSpec& legacy_nccl_sendrecv();
bool legacy_nccl(const std::string& version);

}  // namespace stepscope::tracegen
