// The named presets. Each starts from the defaults (a 16-block bf16 model on one A100, ~47 ms of
// GPU work per step, fed in time) and changes only what makes its bottleneck.
#include <string>

#include "tracegen.hpp"

namespace stepscope::tracegen {
namespace {

void healthy(Params& p) {
  p.ranks = 2;
  p.expected_verdict = "gpu-bound";
  p.description = "GPU-bound DDP: compute >= 90% of every step, all-reduce hidden under backward";
}

void input_bound(Params& p) {
  p.num_workers = 0;
  p.fetch_us = 70'000;
  p.expected_verdict = "input-bound";
  p.description = "DataLoader(num_workers=0): each batch is loaded on the main thread (70 ms) "
                  "while the GPU waits; loading takes longer than the compute";
}

void loader_stall(Params& p) {
  p.num_workers = 2;
  p.stall_every = 4;
  p.stall_us = 60'000;
  p.expected_verdict = "input-bound";
  p.description = "2 loader workers with shallow prefetch: every 4th step waits 60 ms for a batch";
}

void epoch_stall(Params& p) {
  p.steps = 10;
  p.epoch_steps = 5;
  p.epoch_stall_us = 400'000;
  p.expected_verdict = "input-bound";
  p.description = "persistent_workers=False: workers respawn at each epoch start (every 5 steps), "
                  "the first batch of the epoch waits 400 ms";
}

void pageable_copy(Params& p) {
  p.layers = 12;
  p.pinned = false;
  p.batch_mb = 96;
  p.h2d_gbps = 5;
  p.expected_verdict = "copy-bound";
  p.description = "96 MB batch copied from pageable memory (pin_memory=False) at ~5 GB/s on the "
                  "critical path; the host blocks in cudaMemcpyAsync";
}

void sync_stall(Params& p) {
  p.layers = 12;
  p.mid_sync = true;
  p.sync_gap_us = 20'000;
  p.expected_verdict = "sync-bound";
  p.description = "loss.item() after forward drains the GPU queue, then 20 ms of host-side "
                  "logging run while the GPU has nothing queued";
}

void launch_bound(Params& p) {
  p.gemm_us = 30;
  p.eltwise_us = 4;
  p.norm_us = 5;
  p.opt_us = 20;
  p.tiny_ops = 40;
  p.tiny_us = 2.0;
  p.op_us = 14;
  p.launch_us = 7;
  p.batch_mb = 1;
  p.expected_verdict = "host/launch-bound";
  p.description = "small model, thousands of 2 us kernels: the GPU idles between launches";
}

void comms_bound(Params& p) {
  p.ranks = 4;
  p.overlap = false;
  p.grad_mb = 600;
  p.busbw_gbps = 12;
  p.expected_verdict = "comms-bound";
  p.description = "600 MB of fp32 gradients all-reduced after backward (no overlap) over a "
                  "12 GB/s link: the exposed all-reduce dominates the step";
}

void straggler(Params& p) {
  p.ranks = 4;
  p.straggler_rank = 2;
  p.straggler_factor = 1.3;
  p.expected_verdict = "straggler";
  p.description = "rank 2 computes 30% slower; the other ranks wait for it inside the all-reduce";
}

void checkpoint(Params& p) {
  p.ckpt_every = 4;
  p.ckpt_us = 150'000;
  p.ckpt_mb = 400;
  p.expected_verdict = "side-work";
  p.description = "torch.save every 4 steps: 400 MB copied to host then 150 ms of serialisation";
}

void memory_bound(Params& p) {
  p.gemm_us = 150;
  p.eltwise_us = 120;
  p.norm_us = 150;
  p.extra_eltwise = 6;
  p.zero_grad_memsets = 8;
  p.expected_verdict = "gpu-bound";
  p.description = "elementwise and normalisation kernels dominate GPU time (unfused, "
                  "memory-bandwidth bound); GEMMs are a small share; zero_grad(set_to_none="
                  "False) memsets the gradients";
}

void no_tensor_cores(Params& p) {
  p.tensor_cores = false;
  p.gemm_us = 1400;
  p.expected_verdict = "gpu-bound";
  p.description = "fp32 training: GEMMs run as SIMT sgemm kernels (~3x slower) where bf16 "
                  "autocast would use tensor cores";
}

// Footguns (docs/footguns.md): each keeps the job GPU-bound and plants one silent mistake.
void conv_common(Params& p) {
  p.convs = 2;
  p.conv_us = 300;
  p.expected_verdict = "gpu-bound";
}

void conv_nchw_amp(Params& p) {
  conv_common(p);
  p.nchw_transposes = true;
  p.description = "conv net under bf16 autocast in NCHW: cuDNN converts every convolution's "
                  "input and output between NCHW and NHWC (channels_last would avoid it)";
}

void cudnn_autotune(Params& p) {
  conv_common(p);
  p.autotune_trials = 4;
  p.description = "cudnn.benchmark=True with a new input shape every step: each convolution "
                  "times 4 algorithms before running, in every steady-state step";
}

void unfused_attention(Params& p) {
  p.unfused_attention = true;
  p.expected_verdict = "gpu-bound";
  p.description = "attention written as bmm + softmax + bmm: the seq x seq scores are "
                  "materialised where a fused SDPA kernel would run";
}

void unfused_optimizer(Params& p) {
  p.opt_params = 96;
  p.opt_param_us = 5;
  p.expected_verdict = "gpu-bound";
  p.description = "AdamW(foreach=False): five small kernels per parameter (96 parameters) "
                  "instead of one fused multi-tensor step";
}

void anomaly_detection(Params& p) {
  p.anomaly = true;
  p.expected_verdict = "gpu-bound";
  p.description = "torch.autograd.set_detect_anomaly(True) left on: every backward node's "
                  "outputs are checked for NaN and read back with .item()";
}

void recompile(Params& p) {
  p.steps = 10;
  p.recompile_every = 3;
  p.compile_us = 300'000;
  p.expected_verdict = "gpu-bound";
  p.description = "torch.compile with a changing input shape: the frame recompiles every 3 "
                  "steps (300 ms of host compilation each time)";
}

void compile_fallback(Params& p) {
  p.steps = 10;
  p.eager_after = 5;
  p.compile_us = 300'000;
  p.expected_verdict = "gpu-bound";
  p.description = "torch.compile hits its recompile limit and falls back to eager from the 6th "
                  "step on: no compiled region, 4 more unfused pointwise ops per block";
}

void zero_grad_memsets(Params& p) {
  p.zero_grad_memsets = 96;
  p.expected_verdict = "gpu-bound";
  p.description = "zero_grad(set_to_none=False) on 96 parameters: one memset launch per gradient "
                  "at the start of every step";
}

void cpu_common(Params& p) {
  p.platform = Platform::Cpu;
  p.gpu_name.clear();
  p.layers = 4;
  p.gemm_us = 2'500;
  p.eltwise_us = 200;
  p.norm_us = 300;
  p.opt_kernels = 4;
  p.opt_us = 800;
}

void cpu_input_bound(Params& p) {
  cpu_common(p);
  p.num_workers = 0;
  p.fetch_us = 80'000;
  p.expected_verdict = "input-bound";
  p.description = "CPU-only training, DataLoader(num_workers=0) with a slow transform: the batch "
                  "load is longer than forward+backward";
}

void cpu_compute_bound(Params& p) {
  cpu_common(p);
  p.gemm_us = 25'000;
  p.num_workers = 2;
  p.fetch_us = 200;
  p.expected_verdict = "gpu-bound";
  p.description = "CPU-only training of a large MLP: the model's own ops take the whole step "
                  "(the compute bound; no GPU)";
}

void rocm_common(Params& p) {
  p.platform = Platform::Rocm;
  p.gpu_name = "AMD Instinct MI300X";
}

void rocm_healthy(Params& p) {
  healthy(p);
  rocm_common(p);
  p.description = "ROCm (MI300X, HIP/RCCL names): GPU-bound DDP, all-reduce overlapped";
}

void rocm_input_bound(Params& p) {
  input_bound(p);
  rocm_common(p);
  p.description = "ROCm (MI300X, HIP names): DataLoader(num_workers=0) starves the GPU";
}


// Real-world trace classes where a bottleneck analyser goes wrong. Each states, besides the
// verdict, the warnings, run kind and levers a correct analysis arrives at.

// One cold forward pass (an inference call right after loading the model): the first kernel
// launch pays for lazy module loading, ~900 ms, while hundreds of others take ~5 us.
void cold_start(Params& p) {
  p.training = false;
  p.step_markers = false;
  p.stage_annotations = false;
  p.steps = 1;
  p.first_step = 0;
  p.layers = 24;
  p.extra_eltwise = 6;
  p.gemm_us = 20;
  p.eltwise_us = 5;
  p.norm_us = 6;
  p.launch_us = 5;
  p.batch_mb = 1;
  p.cold_start_us = 900'000;
  p.expected_verdict = "inconclusive";
  p.expected_run_kind = "one-shot";
  p.expected_warnings = {"cold_start", "no_step_markers", "one_step"};
  p.expected_not_levers = {"cuda_graphs"};
  p.description = "one cold forward pass without step markers: the first cudaLaunchKernel takes 900 ms "
                  "(lazy module loading), the ~260 others 5 us; a start-up cost, not launch overhead, "
                  "and one pass is no steady state";
}

// CUPTI activity lost: the host side of normal training steps, and no GPU rows at all.
void missing_gpu_records(Params& p) {
  p.gpu_records = false;
  p.triton_pointwise = true;
  p.expected_verdict = "inconclusive";
  p.expected_warnings = {"incomplete_gpu_records"};
  p.description = "training steps whose GPU activity records were lost: cudaLaunchKernel, cuLaunchKernel "
                  "and cudaMemcpyAsync with correlation ids, deviceProperties of an A100, but no kernel or "
                  "memcpy rows and no ac2g flows; not a CPU-only job";
}

// The dialect of 2021: Operator/Kernel/Runtime/Memcpy categories, integer microseconds, no stage
// annotations, backward nodes by their old names on the autograd thread.
void autograd_thread_old_cats(Params& p) {
  p.kineto_dialect = "2021";
  p.stage_annotations = false;
  p.convs = 1;
  p.expected_verdict = "gpu-bound";
  p.description = "a 2021 Kineto trace: Operator/Kernel/Runtime/Memcpy categories, integer us, no "
                  "## forward ## range; backward (MmBackward, CudnnConvolutionBackward, AddmmBackward0) "
                  "on the autograd thread, linked to the forward by fwdbwd flows";
}

// fp32 on GPUs without bf16 or TF32: fp16 autocast (with a GradScaler) is the lever.
void old_gpu_fp32(Params& p) {
  p.tensor_cores = false;
  p.expected_verdict = "gpu-bound";
  p.expected_gemm_dtype = "fp32";
  p.expected_first_lever = "amp_fp16";
  p.expected_not_levers = {"amp_bf16", "tf32"};
}

void v100_fp32(Params& p) {
  old_gpu_fp32(p);
  p.gpu_name = "Tesla V100-SXM2-16GB";
  p.gemm_us = 1750;
  p.eltwise_us = 90;
  p.norm_us = 120;
  p.opt_us = 400;
  p.description = "fp32 training on a V100 (compute 7.0): volta_sgemm kernels; no bf16 and no TF32 on "
                  "this GPU, fp16 autocast with a GradScaler is the lever";
}

void t4_fp32(Params& p) {
  old_gpu_fp32(p);
  p.gpu_name = "Tesla T4";
  p.gemm_us = 3400;
  p.eltwise_us = 250;
  p.norm_us = 330;
  p.opt_us = 1100;
  p.description = "fp32 training on a T4 (compute 7.5): volta_sgemm kernels; no bf16 and no TF32 on this "
                  "GPU, fp16 autocast with a GradScaler is the lever";
}

// fp8 MoE with expert parallelism on H100: DeepEP dispatch/combine hold ~35% of the step.
void fp8_moe_ep(Params& p) {
  p.gpu_name = "NVIDIA H100 80GB HBM3";
  p.ranks = 2;
  p.fp8_moe = true;
  p.layers = 8;
  p.gemm_us = 200;
  p.expert_gemm_us = 250;
  p.ep_us = 400;
  p.eltwise_us = 25;
  p.norm_us = 30;
  p.buckets = 2;
  p.grad_mb = 100;
  p.busbw_gbps = 150;
  p.expected_verdict = "comms-bound";
  p.expected_gemm_dtype = "fp8";
  p.report_comm_kernel_ns = true;
  p.description = "fp8 MoE training on H100: CUTLASS and DeepGEMM e4m3 GEMMs, DeepEP dispatch/combine "
                  "kernels serialised with compute (~35% of the step) and a DDP all-reduce; a CUTLASS "
                  "transpose that is not a GEMM";
}

// The same MoE with its exchange on NCCL's all_to_all_single: SendRecv kernels, which only the
// host's nccl:all_to_all tells from pipeline sends or gradient all-reduces.
void moe_nccl_a2a(Params& p) {
  fp8_moe_ep(p);
  p.ep_nccl = true;
  p.nccl_version = "2.18.3";
  p.description = "fp8 MoE training on H100 whose expert dispatch/combine are torch.distributed all_to_all_single "
                  "calls on NCCL 2.18 (ncclKernel_SendRecv kernels, ~35% of the step, serialised with compute) "
                  "beside a DDP all-reduce";
}

// Three nested .item() syncs per step, and one .item() on a CPU tensor that is no sync.
void nested_item(Params& p) {
  p.item_syncs = 3;
  p.cpu_item = true;
  p.expected_verdict = "gpu-bound";
  p.expected_sync_calls_per_step = 3;
  p.description = "loss.item() after forward, the gradient norm's .item() after backward and loss.item() "
                  "at the end: aten::item > _local_scalar_dense > cudaMemcpyAsync + cudaStreamSynchronize, "
                  "each waiting for queued GPU work; plus one .item() on a CPU tensor (no copy, no sync)";
}

// Only two profiled steps of a small model whose cost is a blocking pageable copy.
void two_step(Params& p) {
  p.steps = 2;
  p.layers = 2;
  p.gemm_us = 80;
  p.eltwise_us = 15;
  p.norm_us = 15;
  p.opt_kernels = 4;
  p.opt_us = 30;
  p.batch_mb = 4;
  p.pinned = false;
  p.blocking_copy = true;
  p.h2d_gbps = 5;
  p.final_device_sync = true;
  p.expected_verdict = "copy-bound";
  p.expected_warnings = {"few_steps"};
  p.expected_first_lever = "pin_memory";
  p.description = "only 2 profiled steps; each copies a 4 MB batch from pageable memory with a blocking "
                  "cudaMemcpy (~800 us, a third of the step); the last step ends in cudaDeviceSynchronize";
}

// No per-step sync: the host enqueues a step in ~30% of its GPU time and runs up to 2 steps ahead.
void host_runs_ahead(Params& p) {
  p.item_syncs = 0;
  p.host_ahead = 2;
  p.gemm_us = 100;
  p.eltwise_us = 15;
  p.norm_us = 20;
  p.opt_us = 120;
  p.expected_verdict = "gpu-bound";
  p.expected_warnings = {"host_runs_ahead"};
  p.description = "GPU-bound loop without a per-step sync: the host enqueues a step in ~30% of its GPU "
                  "time and, held back by the launch queue, runs up to 2 steps ahead; ProfilerStep#N on "
                  "the host overlaps the GPU work of step N-1 (windows measured on the GPU)";
}

// Runs that are not a training loop, and loops whose trace misleads in other ways. Each states
// the kind of run and the steps a correct analysis finds.

// Every lever id of src/diagnose/levers.cpp (the bound levers and the footguns' own): none applies
// to a process without model work.
const std::vector<std::string> kEveryLever = {
    "num_workers",     "preprocess_cache", "persistent_workers",  "prefetch_factor",  "pin_memory",
    "remove_item",     "micro_batch",      "amp_bf16",            "amp_fp16",         "tf32",
    "channels_last",   "torch_compile",    "cuda_graphs",         "fused_optimizer",  "sdpa",
    "ddp_buckets",     "accumulate_allreduce", "fsdp_prefetch",   "async_checkpoint", "fix_straggler",
    "no_activation_checkpointing", "fixed_shapes", "no_debug_apis", "zero_grad_set_to_none",
    "sync_once_per_step"};

// A vLLM-style decode engine: one user_annotation per engine iteration, the model replayed as a
// CUDA graph, sampled tokens copied back while the GPU is saturated.
void inference_decode(Params& p) {
  p.workload = "decode";
  p.training = false;
  p.stage_annotations = false;
  p.cuda_graph = true;
  p.step_marker = "execute_context_0(0)_generation_32(32)";
  p.steps = 12;
  p.first_step = 0;
  p.layers = 4;
  p.gemm_us = 200;
  p.attn_us = 150;
  p.norm_us = 12;
  p.eltwise_us = 10;
  p.op_us = 10;
  p.launch_us = 5;
  p.expected_verdict = "gpu-bound";
  p.expected_run_kind = "inference";
  p.expected_steps = 12;
  p.expected_not_levers = {"remove_item", "micro_batch", "fused_optimizer", "ddp_buckets", "accumulate_allreduce",
                           "cuda_graphs"};
  p.description = "vLLM-style decode engine, 12 iterations (execute_context_0(0)_generation_32(32)): each one "
                  "cudaGraphLaunch replaying 39 small kernels, greedy sampling, the token ids copied back "
                  "(cudaMemcpyAsync DtoH + cudaStreamSynchronize) while the GPU is busy; no backward, no "
                  "optimizer, no ProfilerStep";
}

// The API server's process: Python only, for 24 s.
void serving_frontend(Params& p) {
  p.workload = "frontend";
  p.platform = Platform::Cpu;
  p.gpu_name.clear();
  p.training = false;
  p.step_markers = false;
  p.stage_annotations = false;
  p.with_stack = true;
  p.steps = 1;
  p.first_step = 0;
  p.expected_verdict = "inconclusive";
  p.expected_run_kind = "inference";
  p.expected_warnings = {"no_model_work"};
  p.expected_steps = 0;
  p.expected_not_levers = kEveryLever;
  p.description = "a serving frontend (uvicorn + FastAPI) profiled for 24 s: python_function frames only, the "
                  "event loop waiting in select and tokenising 60 requests, 4 worker threads parked in "
                  "queue.get; no op, no runtime call, no GPU, no deviceProperties";
}

// A kernel benchmark: each repetition times one GEMM with CUDA events and synchronises.
void timing_harness(Params& p) {
  p.workload = "harness";
  p.training = false;
  p.stage_annotations = false;
  p.step_marker = "measure";
  p.warmup_steps = 5;
  p.steps = 20;
  p.first_step = 0;
  p.gemm_us = 1500;
  p.expected_verdict = "gpu-bound";
  p.expected_run_kind = "benchmark";
  p.expected_steps = 20;
  p.expected_not_levers = {"micro_batch", "accumulate_allreduce", "torch_compile", "remove_item", "num_workers",
                           "cuda_graphs", "sync_once_per_step"};
  p.description = "a GEMM benchmark: 20 repetitions (5 in a warmup range, 15 in a measure range) of "
                  "cudaEventRecord, one bf16 GEMM, cudaEventRecord, cudaEventSynchronize and "
                  "cudaDeviceSynchronize; no backward, optimizer or DataLoader";
}

// One batch-1 forward pass after model.cuda(), in the shape of an NVTX capture.
void one_shot_nvtx(Params& p) {
  p.training = false;
  p.step_markers = false;
  p.steps = 1;
  p.first_step = 0;
  p.param_moves = 10;
  p.param_move_mb = 2;
  p.h2d_gbps = 10;
  p.forward_range = "forward";
  p.layers = 15;
  p.extra_eltwise = 5;
  p.gemm_us = 8;
  p.eltwise_us = 3;
  p.norm_us = 4;
  p.op_us = 32;
  p.launch_us = 8;
  p.batch_mb = 0.01;
  p.expected_verdict = "host/launch-bound";
  p.expected_run_kind = "one-shot";
  p.expected_steps = 1;
  p.expected_warnings = {"no_step_markers", "one_step"};
  p.expected_not_levers = {"cuda_graphs", "torch_compile", "micro_batch"};
  p.description = "one batch-1 forward pass written as an NVTX-style capture: 10 Module._apply ranges each "
                  "moving a module's parameters by a blocking HtoD cudaMemcpy (~200 us), then one forward "
                  "range launching 150 small kernels; no ProfilerStep";
}

// Every op's result read back on the host before the next launch.
void readback_loop(Params& p) {
  p.steps = 6;
  p.layers = 5;
  p.stage_annotations = false;
  p.readback_us = 15;
  p.gemm_us = 30;
  p.eltwise_us = 6;
  p.norm_us = 8;
  p.opt_us = 20;
  p.batch_mb = 1;
  p.expected_verdict = "sync-bound";
  p.expected_first_lever = "remove_item";
  p.expected_not_levers = {"cuda_graphs"};
  p.description = "training loop that reads every op's result back: after each of ~60 kernel-producing ops "
                  "per step, .item() (a 4-byte cudaMemcpyAsync DtoH + cudaStreamSynchronize) and 15 us of "
                  "host work before the next launch";
}

// The batch copied on a side stream that was created blocking: it serialises with compute.
void blocking_streams(Params& p) {
  p.steps = 6;
  p.layers = 4;
  p.tensor_cores = false;
  p.fp32_aten = true;
  p.gemm_us = 105;
  p.opt_us = 25;
  p.batch_mb = 40;
  p.h2d_gbps = 20;
  p.copy_stream_blocking = true;
  p.expected_verdict = "copy-bound";
  p.expected_first_lever = "copy_stream";
  p.description = "fp32 training whose 40 MB pinned batch (cudaMemcpyAsync, 20 GB/s) is copied on a side "
                  "stream created without cudaStreamNonBlocking: it serialises with the default stream's "
                  "compute, never overlaps a kernel and holds ~30% of each step";
}

// A toy loop recorded with with_stack, record_shapes and profile_memory.
void profiler_heavy(Params& p) {
  p.steps = 8;
  p.layers = 8;
  p.with_stack = true;
  p.record_shapes = true;
  p.profile_memory = true;
  p.gemm_us = 6;
  p.eltwise_us = 2;
  p.norm_us = 3;
  p.opt_us = 4;
  p.op_us = 2.2;
  p.launch_us = 3;
  p.fetch_us = 30;
  p.batch_mb = 0.5;
  p.expected_verdict = "host/launch-bound";
  p.expected_warnings = {"profiler_overhead"};
  p.expected_not_levers = {"cuda_graphs"};
  p.description = "a toy training loop profiled with with_stack, record_shapes and profile_memory: ~1,100 "
                  "events per ~1.3 ms step (python_function frames, cpu_ops with Input Dims, [memory] "
                  "instants) around tiny kernels; the host time is the profiler's";
}

const std::vector<Scenario> kScenarios = {
    {"healthy", "GPU-bound, compute >= 90%, comm overlapped", healthy},
    {"input-bound", "num_workers=0, batch fetch longer than compute", input_bound},
    {"loader-stall", "every N-th step waits for the loader", loader_stall},
    {"epoch-stall", "worker respawn at each epoch start", epoch_stall},
    {"pageable-copy", "large HtoD copies from pageable memory", pageable_copy},
    {"sync-stall", ".item() mid-step drains the GPU queue", sync_stall},
    {"launch-bound", "thousands of tiny kernels, launch gaps", launch_bound},
    {"comms-bound", "all-reduce not overlapped with backward", comms_bound},
    {"straggler", "one rank 30% slower, others wait in the collective", straggler},
    {"checkpoint", "torch.save side work every K steps", checkpoint},
    {"memory-bound", "elementwise/normalisation kernels dominate", memory_bound},
    {"no-tensor-cores", "fp32 sgemm kernels where bf16 would apply", no_tensor_cores},
    {"cpu-input-bound", "CPU-only trace, input-bound", cpu_input_bound},
    {"cpu-compute-bound", "CPU-only trace, compute-bound", cpu_compute_bound},
    {"rocm-healthy", "ROCm names, GPU-bound", rocm_healthy},
    {"rocm-input-bound", "ROCm names, input-bound", rocm_input_bound},
    {"conv-nchw-amp", "conv net under AMP in NCHW: layout conversions", conv_nchw_amp},
    {"cudnn-autotune", "cudnn.benchmark re-tuning every step", cudnn_autotune},
    {"unfused-attention", "bmm + softmax + bmm attention", unfused_attention},
    {"unfused-optimizer", "per-parameter AdamW kernels", unfused_optimizer},
    {"anomaly-detection", "autograd anomaly mode left on", anomaly_detection},
    {"recompile", "torch.compile recompiles every N steps", recompile},
    {"zero-grad-memsets", "zero_grad without set_to_none, per-parameter memsets", zero_grad_memsets},
    {"compile-fallback", "torch.compile falls back to eager mid-run", compile_fallback},
    {"v100-fp32", "fp32 on a V100: no bf16/TF32, fp16 autocast is the lever", v100_fp32},
    {"t4-fp32", "fp32 on a T4: no bf16/TF32, fp16 autocast is the lever", t4_fp32},
    {"fp8-moe-ep", "fp8 MoE on H100, expert-parallel comm ~35% of the step", fp8_moe_ep},
    {"moe-nccl-a2a", "MoE exchange as NCCL all-to-all (SendRecv kernels) ~35% of the step", moe_nccl_a2a},
    {"nested-item", "three nested .item() syncs per step, one CPU .item()", nested_item},
    {"two-step", "two profiled steps, blocking pageable cudaMemcpy", two_step},
    {"readback-loop", "every op's result read back with .item(): sync-bound", readback_loop},
    {"blocking-streams", "batch copy on a blocking side stream, serialised with compute", blocking_streams},
    {"profiler-heavy", "with_stack + record_shapes + profile_memory on a toy loop", profiler_heavy},
};

const std::vector<Scenario> kIrregular = {
    {"cold-start", "one cold forward pass, 900 ms first launch, no step markers", cold_start},
    {"missing-gpu-records", "host side only: GPU activity records lost", missing_gpu_records},
    {"autograd-thread-old-cats", "2021 dialect, backward on the autograd thread", autograd_thread_old_cats},
    {"host-runs-ahead", "no per-step sync, host up to 2 steps ahead of the GPU", host_runs_ahead},
    {"inference-decode", "vLLM-style decode iterations, CUDA graph replay, no ProfilerStep", inference_decode},
    {"serving-frontend", "Python-only API server process: no model work", serving_frontend},
    {"timing-harness", "GEMM benchmark: warmup/measure ranges, event timing, syncs", timing_harness},
    {"one-shot-nvtx", "one forward pass after model.cuda(), NVTX-style ranges", one_shot_nvtx},
};

}  // namespace

const char* platform_name(Platform p) {
  switch (p) {
    case Platform::Cuda: return "cuda";
    case Platform::Rocm: return "rocm";
    case Platform::Cpu: return "cpu";
  }
  return "cuda";
}

const std::vector<Scenario>& scenarios() { return kScenarios; }
const std::vector<Scenario>& irregular_scenarios() { return kIrregular; }

void set_platform(Params& p, std::string_view platform) {
  if (platform == "rocm") {
    p.platform = Platform::Rocm;
    p.gpu_name = "AMD Instinct MI300X";
  } else if (platform == "cpu") {
    p.platform = Platform::Cpu;
    p.gpu_name.clear();
  } else {
    p.platform = Platform::Cuda;
    if (p.gpu_name.empty() || p.gpu_name.find("AMD") != std::string::npos)
      p.gpu_name = "NVIDIA A100-SXM4-80GB";
  }
}

const Scenario* find_scenario(std::string_view name) {
  for (const auto* list : {&kScenarios, &kIrregular})
    for (const auto& s : *list)
      if (name == s.name) return &s;
  return nullptr;
}

bool apply_scenario(std::string_view name, Params& p) {
  const Scenario* s = find_scenario(name);
  if (!s) return false;
  p = Params{};
  p.scenario = s->name;
  s->apply(p);
  return true;
}

}  // namespace stepscope::tracegen
