// stepscope-tracegen: write synthetic Kineto traces of a named scenario plus ground truth.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tracegen.hpp"

namespace tg = stepscope::tracegen;

namespace {

// Options bind to a scratch Params; only those given on the command line are copied over the
// scenario preset, so a preset's own values survive unless overridden.
class Overrides {
 public:
  template <typename T>
  void add(CLI::App& app, const std::string& flag, T tg::Params::*field, const std::string& help) {
    CLI::Option* opt = app.add_option(flag, scratch_.*field, help);
    copies_.push_back([opt, field, this](tg::Params& p) {
      if (opt->count() > 0) p.*field = scratch_.*field;
    });
  }
  void add_flag(CLI::App& app, const std::string& flag, bool tg::Params::*field,
                const std::string& help) {
    CLI::Option* opt = app.add_flag(flag, scratch_.*field, help);
    copies_.push_back([opt, field, this](tg::Params& p) {
      if (opt->count() > 0) p.*field = scratch_.*field;
    });
  }
  void apply(tg::Params& p) const {
    for (const auto& c : copies_) c(p);
  }

 private:
  tg::Params scratch_;
  std::vector<std::function<void(tg::Params&)>> copies_;
};

void add_options(CLI::App& app, Overrides& o) {
  o.add(app, "--ranks", &tg::Params::ranks, "number of ranks (one trace file each)");
  o.add(app, "--steps", &tg::Params::steps, "profiled steps per rank");
  o.add(app, "--first-step", &tg::Params::first_step, "N of the first ProfilerStep#N");
  o.add(app, "--seed", &tg::Params::seed, "random seed (same seed, same bytes)");
  o.add(app, "--jitter", &tg::Params::jitter, "relative standard deviation of durations");
  o.add(app, "--gpu-name", &tg::Params::gpu_name, "deviceProperties name");
  o.add(app, "--layers", &tg::Params::layers, "model blocks");
  o.add(app, "--gemm-us", &tg::Params::gemm_us, "forward GEMM kernel time");
  o.add(app, "--eltwise-us", &tg::Params::eltwise_us, "elementwise kernel time");
  o.add(app, "--norm-us", &tg::Params::norm_us, "layer-norm kernel time");
  o.add(app, "--extra-eltwise", &tg::Params::extra_eltwise, "extra elementwise ops per block");
  o.add(app, "--tiny-ops", &tg::Params::tiny_ops, "extra tiny ops per block");
  o.add(app, "--tiny-us", &tg::Params::tiny_us, "tiny kernel time");
  o.add(app, "--tensor-cores", &tg::Params::tensor_cores, "bf16 tensor-core GEMMs (1) or fp32 sgemm (0)");
  o.add(app, "--bwd-factor", &tg::Params::bwd_factor, "backward GEMM work relative to forward");
  o.add(app, "--zero-grad-memsets", &tg::Params::zero_grad_memsets, "memsets in zero_grad (0: set_to_none)");
  o.add(app, "--opt-kernels", &tg::Params::opt_kernels, "optimizer kernels per step");
  o.add(app, "--opt-us", &tg::Params::opt_us, "optimizer kernel time");
  o.add(app, "--op-us", &tg::Params::op_us, "host time of an op outside its launches");
  o.add(app, "--launch-us", &tg::Params::launch_us, "kernel launch call time");
  o.add(app, "--num-workers", &tg::Params::num_workers, "DataLoader workers (0: main thread)");
  o.add(app, "--fetch-us", &tg::Params::fetch_us, "DataLoader __next__ time");
  o.add(app, "--stall-every", &tg::Params::stall_every, "every N-th step the loader stalls");
  o.add(app, "--stall-us", &tg::Params::stall_us, "loader stall time");
  o.add(app, "--epoch-steps", &tg::Params::epoch_steps, "steps per epoch");
  o.add(app, "--epoch-stall-us", &tg::Params::epoch_stall_us, "first fetch of an epoch");
  o.add(app, "--batch-mb", &tg::Params::batch_mb, "batch size copied to the GPU (MB)");
  o.add(app, "--pinned", &tg::Params::pinned, "pinned (1) or pageable (0) host memory");
  o.add(app, "--h2d-gbps", &tg::Params::h2d_gbps, "host-to-device bandwidth");
  o.add(app, "--mid-sync", &tg::Params::mid_sync, "loss.item() after forward (1/0)");
  o.add(app, "--sync-gap-us", &tg::Params::sync_gap_us, "host work after the mid-step sync");
  o.add(app, "--mid-sync-read", &tg::Params::mid_sync_read, "the mid-step logging reads loss.item() (1/0)");
  o.add(app, "--buckets", &tg::Params::buckets, "DDP gradient buckets");
  o.add(app, "--grad-mb", &tg::Params::grad_mb, "gradient bytes all-reduced per step (MB)");
  o.add(app, "--busbw-gbps", &tg::Params::busbw_gbps, "all-reduce bus bandwidth");
  o.add(app, "--overlap", &tg::Params::overlap, "all-reduce overlapped with backward (1/0)");
  o.add(app, "--nccl-version", &tg::Params::nccl_version, "NCCL version (kernel naming)");
  o.add(app, "--straggler-rank", &tg::Params::straggler_rank, "slow rank (-1: none)");
  o.add(app, "--straggler-factor", &tg::Params::straggler_factor, "slow rank's compute factor");
  o.add(app, "--clock-skew-us", &tg::Params::clock_skew_us, "each rank's clock off the true one by up to this");
  o.add(app, "--base-time-split", &tg::Params::base_time_split, "odd ranks write a base time one period earlier (1/0)");
  o.add(app, "--ckpt-every", &tg::Params::ckpt_every, "checkpoint every K steps (0: never)");
  o.add(app, "--ckpt-us", &tg::Params::ckpt_us, "checkpoint serialisation time");
  o.add(app, "--ckpt-mb", &tg::Params::ckpt_mb, "weights copied to host per checkpoint (MB)");
  o.add(app, "--convs", &tg::Params::convs, "convolution ops per block");
  o.add(app, "--conv-us", &tg::Params::conv_us, "convolution kernel time");
  o.add(app, "--nchw-transposes", &tg::Params::nchw_transposes, "layout conversions around convolutions (1/0)");
  o.add(app, "--transpose-us", &tg::Params::transpose_us, "layout conversion kernel time");
  o.add(app, "--autotune-trials", &tg::Params::autotune_trials, "cuDNN algorithms tried per convolution each step");
  o.add(app, "--unfused-attention", &tg::Params::unfused_attention, "bmm + softmax + bmm attention (1/0)");
  o.add(app, "--attn-gemm-us", &tg::Params::attn_gemm_us, "attention bmm kernel time");
  o.add(app, "--softmax-us", &tg::Params::softmax_us, "attention softmax kernel time");
  o.add(app, "--opt-params", &tg::Params::opt_params, "per-parameter optimizer updates (0: fused step)");
  o.add(app, "--opt-param-us", &tg::Params::opt_param_us, "per-parameter optimizer kernel time");
  o.add(app, "--anomaly", &tg::Params::anomaly, "anomaly detection in backward (1/0)");
  o.add(app, "--recompile-every", &tg::Params::recompile_every, "torch.compile recompiles every N steps (0: never)");
  o.add(app, "--compile-us", &tg::Params::compile_us, "host time of one compilation");
  o.add(app, "--eager-after", &tg::Params::eager_after, "step index from which compiled code falls back to eager (0: never)");
  o.add(app, "--training", &tg::Params::training, "training steps (1) or one forward pass per window (0)");
  o.add(app, "--step-markers", &tg::Params::step_markers, "ProfilerStep#N ranges (1/0)");
  o.add(app, "--stage-annotations", &tg::Params::stage_annotations, "## forward ## / DDP forward ranges (1/0)");
  o.add(app, "--gpu-records", &tg::Params::gpu_records, "GPU activity rows and launch flows (1/0)");
  o.add(app, "--kineto-dialect", &tg::Params::kineto_dialect, "trace layout: current or 2021");
  o.add(app, "--cold-start-us", &tg::Params::cold_start_us, "extra time in the trace's first kernel launch");
  o.add(app, "--triton-pointwise", &tg::Params::triton_pointwise, "GELU as a Triton kernel via cuLaunchKernel (1/0)");
  o.add(app, "--item-syncs", &tg::Params::item_syncs, ".item() syncs per step (0-3)");
  o.add(app, "--cpu-item", &tg::Params::cpu_item, "one .item() on a CPU tensor per step (1/0)");
  o.add(app, "--blocking-copy", &tg::Params::blocking_copy, "batch copied with cudaMemcpy (1/0)");
  o.add(app, "--final-device-sync", &tg::Params::final_device_sync, "last step ends with cudaDeviceSynchronize (1/0)");
  o.add(app, "--host-ahead", &tg::Params::host_ahead, "steps the host may run ahead of the GPU (0: per-step sync)");
  o.add(app, "--fp8-moe", &tg::Params::fp8_moe, "fp8 MoE blocks with expert-parallel kernels (1/0)");
  o.add(app, "--ep-us", &tg::Params::ep_us, "expert-parallel dispatch/combine kernel time");
  o.add(app, "--ep-nccl", &tg::Params::ep_nccl,
        "expert dispatch/combine as NCCL all_to_all_single (SendRecv kernels) instead of DeepEP (1/0)");
  o.add(app, "--expert-gemm-us", &tg::Params::expert_gemm_us, "grouped expert GEMM kernel time");
  o.add(app, "--workload", &tg::Params::workload, "model (the loop of --training), decode, frontend or harness");
  o.add(app, "--step-marker", &tg::Params::step_marker, "per-step host range (ProfilerStep# gets the step number)");
  o.add(app, "--warmup-steps", &tg::Params::warmup_steps, "with a custom step marker: first N ranges named warmup");
  o.add(app, "--cuda-graph", &tg::Params::cuda_graph, "decode: kernels replayed by one cudaGraphLaunch (1/0)");
  o.add(app, "--attn-us", &tg::Params::attn_us, "decode: attention kernel time");
  o.add(app, "--param-moves", &tg::Params::param_moves, "Module._apply parameter moves before the first pass");
  o.add(app, "--param-move-mb", &tg::Params::param_move_mb, "parameters moved by one Module._apply (MB)");
  o.add(app, "--forward-range", &tg::Params::forward_range, "name of the forward stage annotation");
  o.add(app, "--readback-us", &tg::Params::readback_us, "after every kernel op: .item() then this much host work (0: off)");
  o.add(app, "--copy-stream-blocking", &tg::Params::copy_stream_blocking, "batch copy on a blocking side stream (1/0)");
  o.add(app, "--fp32-aten", &tg::Params::fp32_aten, "without tensor cores: ATen kernels on float too (1/0)");
  o.add(app, "--with-stack", &tg::Params::with_stack, "profiler with_stack: python_function frames (1/0)");
  o.add(app, "--record-shapes", &tg::Params::record_shapes, "profiler record_shapes: Input Dims on cpu_ops (1/0)");
  o.add(app, "--profile-memory", &tg::Params::profile_memory, "profiler profile_memory: [memory] instants (1/0)");
  o.add(app, "--py-frames", &tg::Params::py_frames, "with_stack: Python frames around each op (1-4)");
  o.add(app, "--worker-threads", &tg::Params::worker_threads, "frontend: parked worker threads");
  o.add(app, "--requests", &tg::Params::requests, "frontend: requests handled");
  o.add(app, "--session-s", &tg::Params::session_s, "frontend: captured session length (s)");
  o.add_flag(app, "--gzip", &tg::Params::gzip, "write .json.gz");
}

void list_scenarios() {
  for (const auto* list : {&tg::scenarios(), &tg::irregular_scenarios()})
    for (const auto& s : *list) std::printf("%-24s %s\n", s.name, s.summary);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stepscope-tracegen: synthetic Kineto traces with ground truth"};
  std::string scenario = "healthy", out_dir, platform, apply;
  bool list = false;
  app.add_option("-s,--scenario", scenario, "scenario preset (see --list)");
  CLI::Option* platform_opt = app.add_option("--platform", platform, "cuda, rocm or cpu (names and layout)")
                                  ->check(CLI::IsMember({"cuda", "rocm", "cpu"}));
  app.add_option("-o,--out", out_dir, "output directory");
  app.add_flag("--list", list, "list the scenarios and exit");
  app.add_option("--apply", apply,
                 "write the scenario with one lever applied: LEVER or LEVER=SETTING (num_workers=4); the ground "
                 "truth gives the speedup it brings");
  Overrides overrides;
  add_options(app, overrides);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "stepscope-tracegen: %s\n", e.what());
    return 2;
  }
  if (list) {
    list_scenarios();
    return 0;
  }
  tg::Params p;
  if (!tg::apply_scenario(scenario, p)) {
    std::fprintf(stderr, "stepscope-tracegen: unknown scenario '%s' (see --list)\n",
                 scenario.c_str());
    return 2;
  }
  if (platform_opt->count() > 0) tg::set_platform(p, platform);
  overrides.apply(p);
  if (out_dir.empty()) {
    std::fprintf(stderr, "stepscope-tracegen: --out DIR is required\n");
    return 2;
  }
  if (auto why = tg::validate(p); !why.empty()) {
    std::fprintf(stderr, "stepscope-tracegen: %s\n", why.c_str());
    return 2;
  }
  try {
    const auto r = apply.empty() ? tg::generate(p, out_dir) : tg::generate_applied(p, apply, out_dir);
    std::printf("%s: %zu trace file(s), %.1f MB uncompressed, ground truth %s\n", p.scenario.c_str(),
                r.files.size(), static_cast<double>(r.bytes_written) / 1e6, r.ground_truth.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stepscope-tracegen: %s\n", e.what());
    return 2;
  }
  return 0;
}
