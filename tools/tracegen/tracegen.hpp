// stepscope-tracegen: synthetic Kineto traces of named training bottlenecks, with ground truth.
//
// Every trace is built step by step as explicit intervals (host ops, runtime calls, GPU
// activities); the JSON events and the ground-truth partition are both derived from those same
// intervals, so they agree by construction. Output is streamed: memory stays bounded by one step.
#pragma once

#include <nlohmann/json.hpp>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope::tracegen {

using ns_t = std::int64_t;

enum class Platform : std::uint8_t { Cuda, Rocm, Cpu };
const char* platform_name(Platform p);

// Every knob of the synthetic training job. Scenario presets set a subset; the command line can
// override any field afterwards. Durations are in microseconds (as people think about them),
// sizes in MB (10^6 bytes), bandwidths in GB/s.
struct Params {
  std::string scenario = "healthy";
  std::string description;
  std::string expected_verdict = "gpu-bound";
  Platform platform = Platform::Cuda;
  std::string gpu_name = "NVIDIA A100-SXM4-80GB";

  int ranks = 1;
  int steps = 8;
  int first_step = 10;  // number of the first ProfilerStep#N (profiler schedule wait+warmup)
  std::uint64_t seed = 1;
  double jitter = 0.03;  // relative standard deviation of every duration

  // Model: `layers` transformer-like blocks (2 GEMMs, a norm, an activation, a residual add).
  int layers = 16;
  double gemm_us = 420;
  double eltwise_us = 40;
  double norm_us = 55;
  int extra_eltwise = 0;  // extra elementwise ops per layer (memory-bound mixes)
  int tiny_ops = 0;       // extra tiny ops per layer (launch-bound models)
  double tiny_us = 2.0;
  bool tensor_cores = true;  // bf16 tensor-core GEMMs, or fp32 SIMT sgemm
  double bwd_factor = 2.0;   // backward GEMM work relative to forward
  int zero_grad_memsets = 0;  // zero_grad(set_to_none=False): one memset per gradient bucket
  int opt_kernels = 8;
  double opt_us = 180;

  // Host costs.
  double op_us = 12;      // host time of one aten op outside its launches
  double launch_us = 6;   // one cudaLaunchKernel

  // Input pipeline.
  int num_workers = 8;
  double fetch_us = 120;      // DataLoader __next__ when the batch is ready
  int stall_every = 0;        // every N-th step the workers are behind...
  double stall_us = 0;        // ...and __next__ waits this long
  int epoch_steps = 0;        // steps per epoch; the first fetch of an epoch respawns workers
  double epoch_stall_us = 0;

  // Host-to-device copy of the batch.
  double batch_mb = 8;
  bool pinned = true;
  double h2d_gbps = 22;

  // Host synchronisation in the middle of the step (loss.item() then host-side logging).
  bool mid_sync = false;
  double sync_gap_us = 0;
  bool mid_sync_read = true;  // false: the same logging, its value kept on the device (no .item())

  // Gradient all-reduce (DDP); only when ranks > 1.
  int buckets = 4;
  double grad_mb = 200;
  double busbw_gbps = 90;
  bool overlap = true;  // launched from backward hooks (DDP) or after backward (no overlap)
  std::string nccl_version = "2.21.5";  // before 2.19: ncclKernel_* names, no collective args
  int straggler_rank = -1;
  double straggler_factor = 1.3;
  // Hosts' clocks: each rank's trace clock is off the true one by up to this much either way
  // (0: one clock). With base_time_split, odd ranks write a base time one Kineto period earlier
  // (as a run straddling the boundary does) and times larger by as much.
  double clock_skew_us = 0;
  bool base_time_split = false;

  // Side work: checkpoint every K steps (device-to-host copy of the weights, then serialise).
  int ckpt_every = 0;
  double ckpt_us = 0;
  double ckpt_mb = 0;

  // Footguns (docs/footguns.md); every one is off by default.
  int convs = 0;                 // convolution ops per block (conv nets), after the first GEMM
  double conv_us = 300;
  bool nchw_transposes = false;  // AMP in NCHW: cuDNN converts layouts around every convolution
  double transpose_us = 35;
  int autotune_trials = 0;       // cudnn.benchmark with changing shapes: algorithms tried per conv, every step
  bool unfused_attention = false;  // bmm + softmax + bmm per block instead of a fused SDPA kernel
  double attn_gemm_us = 160;
  double softmax_us = 140;
  int opt_params = 0;            // >0: AdamW(foreach=False): per-parameter elementwise ops, no fused step
  double opt_param_us = 5;
  bool anomaly = false;          // torch.autograd.set_detect_anomaly(True): NaN check + .item() per backward node
  int recompile_every = 0;       // torch.compile recompiles every N steps (changing shapes)
  double compile_us = 0;         // host time of one compilation
  int eager_after = 0;           // >0: torch.compile gives up (cache limit) from this step index on: eager, unfused

  // Trace classes where analysers go wrong (docs/tracegen.md, "Real-world trace classes"); every
  // one is off by default.
  bool training = true;            // false: one forward pass per window (no loader, backward, optimizer)
  bool step_markers = true;        // false: no ProfilerStep#N; a window opens at its first host event
  bool stage_annotations = true;   // false: no "## forward ##" range; the stage is the phase the job is in
  bool gpu_records = true;         // false: CUPTI activity lost: runtime calls only, no GPU rows or ac2g flows
  std::string kineto_dialect = "current";  // "2021": Operator/Kernel/Runtime/Memcpy cats, integer µs
  double cold_start_us = 0;        // extra time in the trace's first kernel launch (lazy module loading)
  bool triton_pointwise = false;   // GELU as a Triton kernel launched through cuLaunchKernel
  int item_syncs = 1;              // loss.item() per step (end; then after forward, after backward); 0: none
  bool cpu_item = false;           // one .item() on a CPU tensor per step: no copy, no sync
  bool blocking_copy = false;      // the batch is copied with cudaMemcpy (blocking) instead of cudaMemcpyAsync
  bool final_device_sync = false;  // the trace's last step ends with cudaDeviceSynchronize
  int host_ahead = 0;              // >0: no per-step sync, the host runs up to N steps ahead (GPU-side windows)
  bool fp8_moe = false;            // MoE blocks: fp8 GEMMs, expert-parallel dispatch/combine kernels
  double ep_us = 350;              // one EP dispatch or combine kernel
  bool ep_nccl = false;            // dispatch/combine as torch.distributed all_to_all_single on NCCL, whose
                                   // kernels are ncclKernel_SendRecv: only the host call names the all-to-all
  double expert_gemm_us = 250;     // one grouped expert GEMM

  // Runs that are not a training loop, and profiler options (docs/tracegen.md, "Runs that are not
  // a training loop"); every one is off by default.
  std::string workload = "model";  // "model": the loop of `training`; "decode": serving-engine iterations;
                                   // "frontend": a Python-only API server; "harness": a kernel timing loop
  std::string step_marker = "ProfilerStep#";  // the per-step host range; any other name is written as is
  int warmup_steps = 0;            // with a custom step marker: the first N steps' range is named "warmup"
  bool cuda_graph = false;         // decode: the model's kernels replayed by one cudaGraphLaunch
  double attn_us = 150;            // decode: one attention kernel
  int param_moves = 0;             // one Module._apply range (a blocking HtoD cudaMemcpy) per module, first window
  double param_move_mb = 2;        // parameters moved by one of them
  std::string forward_range = "## forward ##";  // name of the forward pass's stage annotation
  double readback_us = 0;          // >0: after every kernel-producing op, .item() then this much host work
  bool copy_stream_blocking = false;  // the batch copy runs on a blocking side stream: serialised with compute
  bool fp32_aten = false;          // with tensor_cores off: ATen kernels on float too (not only the GEMMs)
  bool with_stack = false;         // profiler with_stack: python_function frames around every op
  bool record_shapes = false;      // profiler record_shapes: Input Dims / Input type on every cpu_op
  bool profile_memory = false;     // profiler profile_memory: [memory] allocation instants
  int py_frames = 4;               // with_stack: Python frames around each op on the Python thread
  int worker_threads = 4;          // frontend: worker threads parked in a queue for the whole session
  int requests = 60;               // frontend: requests handled by the event loop
  double session_s = 24;           // frontend: length of the captured session

  // What a correct analysis concludes beyond the verdict; written to ground_truth.json as is.
  std::vector<std::string> expected_warnings;  // stable trust codes (cold_start, few_steps, ...)
  std::string expected_run_kind = "training";  // training, inference, benchmark, one-shot
  int expected_sync_calls_per_step = -1;       // <0: not stated
  bool report_comm_kernel_ns = false;          // state the measured comm kernel time per step
  std::string expected_gemm_dtype;             // "fp8", "fp32", ...; empty: not stated
  std::string expected_first_lever;            // lever id; empty: not stated
  std::vector<std::string> expected_not_levers;  // lever ids that must not be offered
  int expected_steps = -1;                     // steps a correct analysis finds; <0: not stated

  // --apply LEVER: the scenario's job after the one change the lever names (generate_applied).
  std::string applied_lever;                   // empty: the scenario as preset
  std::string applied_setting;                 // the lever's setting ("8" workers); empty where it has none
  std::vector<std::string> applied_changes;    // "fetch_us: 70000 -> 120", one per changed parameter
  double base_mean_step_ns = 0;                // the scenario's mean step without the change
  double applied_mean_step_ns = 0;             // and with it
  double applied_samples = 1;                  // samples a step after the change, against before (a larger batch)

  bool gzip = false;

  bool legacy_dialect() const { return kineto_dialect == "2021"; }
  bool custom_marker() const { return step_marker != "ProfilerStep#"; }
};

struct Scenario {
  const char* name;
  const char* summary;
  void (*apply)(Params&);
};
// Presets whose traces keep the guarantees of a well-formed profile of a training loop: every
// step is a host ProfilerStep#N that opens its window, GPU records present on GPU platforms, the
// newer Kineto layout.
const std::vector<Scenario>& scenarios();
// Presets that break one of those guarantees on purpose (no step markers, lost GPU records, the
// 2021 dialect, a host running ahead of the GPU): trace classes an analyser must recognise and
// warn about. Kept apart so that contract checks over scenarios() need no exceptions.
const std::vector<Scenario>& irregular_scenarios();
// Looks in both lists.
const Scenario* find_scenario(std::string_view name);
// Resets `p` to the defaults and applies the named preset; false when the name is unknown.
bool apply_scenario(std::string_view name, Params& p);

// The exclusive partition of one step window (see DESIGN.md), in priority order.
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
  Count
};
inline constexpr std::size_t kCategoryCount = static_cast<std::size_t>(Category::Count);
const char* category_name(Category c);
using Breakdown = std::array<ns_t, kCategoryCount>;

struct StepTruth {
  int rank = 0;
  int step = 0;        // N of ProfilerStep#N
  ns_t start = 0;      // window start, ns on the trace clock (ts in µs × 1000)
  ns_t end = 0;        // window end
  ns_t host_end = 0;   // end of ProfilerStep#N on the host
  Breakdown categories{};
  std::string verdict;
  std::string dominant;  // largest non-compute group, for reference
  std::string name;      // "ProfilerStep#N"; empty when the trace has no step markers
  ns_t host_start = -1;  // ProfilerStep start when the window does not open there (GPU-side windows)
  ns_t comm_kernel_ns = 0;  // communication kernels launched in the step, summed
};

// Verdict of one step from its partition (rules documented in docs/tracegen.md).
std::string step_verdict(const Params& p, int rank, const Breakdown& b, ns_t window,
                         std::string* dominant = nullptr);

struct GenerateResult {
  std::vector<std::string> files;  // rank traces, in rank order
  std::string ground_truth;
  std::uint64_t bytes_written = 0;
};

// Writes rank-N.pt.trace.json[.gz] for every rank plus ground_truth.json into `out_dir`
// (created if missing). Throws std::runtime_error on I/O failure, std::invalid_argument on
// inconsistent parameters.
GenerateResult generate(const Params& p, const std::string& out_dir);

// The levers `--apply` knows, and whether the scenario in `p` shows what each one changes.
std::vector<std::string> applicable_levers(const Params& p);

// Writes the scenario in `p` with one lever applied (`spec`: "LEVER" or "LEVER=SETTING") into
// `out_dir`, as generate() does; its ground truth carries the change and the speedup it gives
// by construction (the mean step of the scenario as preset over the mean step after). Throws
// std::invalid_argument with a one-line reason for an unknown lever, a bad setting, or a
// scenario that shows nothing the lever changes.
GenerateResult generate_applied(Params p, const std::string& spec, const std::string& out_dir);

// Switches the platform and the GPU model that goes with it (overridable afterwards).
void set_platform(Params& p, std::string_view platform);

// Checks parameter ranges; returns an empty string when valid, else a one-line reason.
std::string validate(const Params& p);

}  // namespace stepscope::tracegen
