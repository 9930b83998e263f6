// The step partition's types: the categories, each step's times and a rank's partition. The
// what-if replay reads a rank's partition as well as the analyses, so they sit below both;
// computing them is the analysis's (stepscope/partition.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/kernel_class.hpp"
#include "stepscope/trace.hpp"
#include "stepscope/warning_ids.hpp"

namespace stepscope {

enum class Category : std::uint8_t {
  ComputeForward,
  ComputeBackward,
  ComputeOptimizer,
  ComputeOther,
  GradSyncExposed,
  H2DCopy,
  D2HCopy,
  Memset,
  BatchWait,
  SyncStall,
  SideWork,
  LaunchOverhead,
  HostCompute,
  Idle,
};
inline constexpr int kCategoryCount = 14;
using CategoryTimes = std::array<ns_t, kCategoryCount>;
inline bool is_compute(Category c) { return c <= Category::ComputeOther; }

// Where the steps came from.
enum class StepSource : std::uint8_t {
  ProfilerStep,     // ProfilerStep#N annotations
  Annotation,       // a repeated top-level annotation (record_function("forward") ...)
  OptimizerStep,    // Optimizer.step#... boundaries
  WholeTrace,       // nothing to split on: one window
};

struct StepPartition {
  std::int64_t number = 0;     // N of ProfilerStep#N, else the 0-based index
  std::string name;            // "ProfilerStep#12", or the annotation that opened the step
  ns_t start = 0, end = 0;     // window: host start .. max(host end, end of GPU work launched in it)
  ns_t host_start = 0, host_end = 0;  // the host span, kept when the window is measured on the GPU side
  bool warmup = false;         // excluded from the steady-state figures
  std::string warmup_reason;   // "first step", "compilation"
  CategoryTimes ns{};          // sums to end - start exactly
  ns_t duration() const { return end - start; }
};

// Time of compute kernels by class inside the steady-state windows (sum of kernel durations,
// not a union: used for the mix, not for the partition).
struct ComputeMix {
  std::array<ns_t, kKernelClassCount> class_ns{};
  std::uint64_t kernels = 0;         // compute kernels in steady-state windows
  ns_t softmax_ns = 0;               // softmax kernels beside attention-score matmuls (unfused attention)
  // GEMM time by the math type its kernel names carry (DataType order; "unknown" when they do not say).
  std::array<ns_t, kDataTypeCount> gemm_ns_by_dtype{};
  // fp32 GEMMs (not GEMVs) and convolutions on SIMT units: the time TF32 or mixed precision can cut.
  ns_t fp32_simt_gemm_ns = 0, fp32_simt_conv_ns = 0;
  // Communication kernel time by kind (CommKind order): NCCL, expert-parallel, NVSHMEM, custom.
  std::array<ns_t, 5> comm_ns_by_kind{};
  // The same time by what the communication is for (CommRole order).
  std::array<ns_t, kCommRoleCount> comm_ns_by_role{};
  // Compute kernels launched from inside torch.compile'd regions (on the launching thread, a call
  // nested in "Torch-Compiled Region", CompiledFunction or a CompiledFxGraph call), and the
  // elementwise/norm part of them: what compiling has already fused.
  ns_t compiled_ns = 0, compiled_eltwise_norm_ns = 0;
  bool recompute_seen = false;       // activation checkpointing recomputes forward in backward
  bool fused_optimizer_seen = false; // the optimizer already runs a fused (single-kernel) step
  ns_t kernel_ns() const;
};

// The rank's number is its RankAnalysis's (ingest.rank), not held here.
struct RankPartition {
  bool gpu = false;                    // partitioned with GPU activity (else host timeline only)
  StepSource source = StepSource::WholeTrace;
  std::string source_detail;           // StepDetection::detail: the annotation, or a whole trace's span
  std::string main_thread;             // "pid/tid (name)"
  std::vector<StepPartition> steps;
  // Steady state: the mean window and the mean of each category over non-warm-up steps (all steps
  // when every step is warm-up).
  std::size_t steady_steps = 0;
  double steady_mean_ns = 0;
  std::array<double, kCategoryCount> steady_mean_category{};
  ComputeMix mix;
  // Host synchronisations that waited on the device in steady-state steps, each counted once at
  // its outermost call (facts: RankFacts::device_syncs).
  std::uint64_t sync_calls = 0;
  std::uint64_t item_calls = 0;        // of which scalar reads (loss.item() and friends)
  std::uint64_t model_syncs = 0;       // of which inside forward or backward (no CUDA graph can hold them)
  // Mean per steady step: GPU idle after each sync until the next GPU work starts (the queue
  // refilling behind the sync; the partition counts it as launch overhead / host compute).
  double sync_refill_ns = 0;
  // Mean per steady step: time the host sat in device syncs while the GPU was busy, the wait a
  // host running ahead would have spent on its own work instead.
  double sync_wait_ns = 0;
  double profiler_overhead_ns = 0;     // estimated host cost of the profiler itself per steady step
  bool host_runs_ahead = false;        // steps measured on the GPU side (see docs/partition.md)
  ns_t startup_skipped_ns = 0;         // whole-trace window: one-time start-up left out at its start
  std::vector<Warning> notes;         // how the windows were drawn where that is not plain (docs/warnings.md)
  std::vector<TrustWarning> trust;     // step-level trust warnings (few_steps, host_runs_ahead, ...)
};

}  // namespace stepscope
