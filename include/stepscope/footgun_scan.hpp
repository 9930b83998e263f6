// One pass over a rank's events that collects what the footgun detectors need: which host
// region launched each GPU activity (zero_grad, optimizer step, a backward node, a convolution
// op, recomputation under activation checkpointing), per steady-state step. It is part of each
// rank's analysis, so that the detectors (src/diagnose) read only the analysis result: a rank's
// summary carries its scan, and a merge of summaries finds the same footguns as the direct run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/partition.hpp"
#include "stepscope/trace.hpp"

namespace stepscope::footgun {

struct NameTime {
  std::int64_t count = 0;
  ns_t time = 0;
};
using ByName = std::map<std::string, NameTime>;

// A convolution call running this many different convolution kernels and waiting on the device
// is timing algorithms (FFT and Winograd launch several kernels too, but never synchronise).
inline constexpr std::size_t kTuneDistinctKernels = 3;

// One convolution op instance (its outermost aten::conv*/convolution op) and the convolution
// kernels it launched.
struct ConvCall {
  std::int64_t step = -1;
  bool synchronises = false;         // a synchronising runtime call inside (cudnnFind times algorithms)
  std::vector<std::string> kernels;  // distinct convolution kernel names, in launch order
  std::int64_t conv_kernels = 0;
  ns_t conv_time = 0, last_conv_time = 0;
  ns_t op_gpu_idle = 0;              // time inside the op with no GPU work on any stream (tuning calls only)
  bool tunes() const { return kernels.size() >= kTuneDistinctKernels && synchronises; }
};

struct RankScan {
  int rank = 0;
  bool gpu = false;
  bool mtia = false;            // MTIA kernels: CUDA-only knobs (fused optimizers) do not apply
  std::size_t steady_steps = 0;
  double step_ns = 0;  // the rank's steady mean step

  // GEMMs (steady steps).
  ns_t compute_kernel_time = 0;
  ns_t gemm_simt_time = 0, gemm_tc_time = 0;
  ByName simt_gemms;
  // Convolutions.
  std::vector<ConvCall> convs;
  std::int64_t conv_kernels = 0;
  ns_t conv_time = 0;
  ByName conv_names;
  // Convolutions or layout conversions in a 16-bit type: mixed precision is on (NHWC pays off).
  std::int64_t half_conv_or_layout = 0;
  ByName layout_kernels;        // nchwToNhwc / nhwcToNchw kernels launched by convolution ops
  std::int64_t layout_outside_conv = 0;
  ByName autotune_calls;        // host events named cudnnFind* / *cudnnFind*
  // Attention.
  ByName softmax_kernels;       // softmax (not log-softmax) kernels
  std::int64_t attention_kernels = 0;  // fused attention kernels
  ByName score_ops;             // aten::bmm / aten::baddbmm / aten::matmul host ops
  // Optimizer step.
  std::int64_t opt_kernels = 0;
  ns_t opt_kernel_time = 0;
  ns_t opt_host_time = 0;       // summed Optimizer.step# spans
  bool opt_fused = false;       // a fused / foreach / multi-tensor kernel or op
  ByName opt_ops;
  // zero_grad.
  ByName zero_grad_gpu;         // memsets and fill kernels launched from zero_grad
  ns_t zero_grad_host_time = 0; // summed outermost zero_grad spans
  // Scalar reads outside backward nodes (loss.item(), logging): count, and what they cost:
  // per read, min(host blocked, GPU idle from its end to the next GPU activity).
  std::int64_t items = 0;
  ns_t item_gpu_idle = 0;
  ns_t item_host_time = 0;
  // Anomaly mode: NaN checks and scalar reads inside backward nodes.
  ByName anomaly_ops;
  ns_t anomaly_item_time = 0;
  std::int64_t anomaly_items = 0, anomaly_isnan = 0;
  ns_t anomaly_kernel_time = 0;
  ns_t anomaly_gpu_idle = 0;    // the same cost for those reads
  // Activation checkpointing: GPU work launched under a checkpoint marker inside backward.
  std::int64_t recompute_kernels = 0;
  ns_t recompute_time = 0;
  ByName recompute_markers;
  // DDP: steps with all-reduces, and those whose all-reduces all start after backward ended.
  std::int64_t allreduce_steps = 0, allreduce_after_backward_steps = 0;
  std::int64_t allreduces = 0;
  ns_t allreduce_time = 0;
  // torch.compile: compilation events in steps after the steady state began.
  ByName late_compile;          // outermost compile events in those steps
  std::int64_t late_compile_steps = 0;
  ns_t late_compile_time = 0;
  std::int64_t compiled_steps = 0;  // steps that ran a compiled region
  // Fallback to eager: steady steps with a compiled region, then only steady steps without one.
  std::int64_t fallback_compiled = 0, fallback_eager = 0;
  double compiled_mean_ns = 0, eager_mean_ns = 0;
  std::int64_t first_eager_step = -1;  // ProfilerStep number (or index) of the first eager step
  // Pageable host-to-device copies in steady steps.
  std::int64_t pageable_h2d = 0;
  ns_t pageable_h2d_time = 0;
  std::int64_t pageable_h2d_bytes = 0;
  // The device allocator's own calls (cudaMalloc, cudaFree) in steady steps: a caching allocator
  // makes none once its pool has grown, unless the pool is emptied (torch.cuda.empty_cache()).
  ByName device_allocs;
  std::int64_t device_alloc_steps = 0;  // steady steps holding at least one of them
};

RankScan scan_rank(const RankTrace& t, const RankFacts& facts, const RankPartition& p);

}  // namespace stepscope::footgun
