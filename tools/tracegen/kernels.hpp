// Kernel names and launch configurations as CUPTI / roctracer report them.
#pragma once

#include <string>

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

const KernelSet& kernels_for(Platform p, bool tensor_cores);
// NCCL before 2.19 named its kernels per collective/algorithm/type (ncclKernel_*).
const KernelSpec& legacy_nccl_allreduce();
bool legacy_nccl(const std::string& version);

}  // namespace stepscope::tracegen
