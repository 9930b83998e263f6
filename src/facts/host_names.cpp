// Facts of a host event from its name: the role it plays when the GPU idles, the stage it
// marks, how it synchronises, and the flags the detectors ask for.
//
// Worked examples:
//   "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"  -> Loader
//   "aten::item"                   -> Sync, ScalarRead (a device wait only if one runs inside it)
//   "cudaStreamSynchronize"        -> Sync, DeviceWait
//   "cudaMemcpy"                   -> Sync, BlockingCopy
//   "autograd::engine::evaluate_function: AddmmBackward0" -> stage Backward
//   "CudnnConvolutionBackward"     -> stage Backward (2021-era autograd node names)
//   "Optimizer.step#AdamW.step"    -> stage Optimizer
#include <array>
#include <cctype>
#include <cstdint>
#include <limits>

#include "facts/name_match.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/parse.hpp"

namespace stepscope {
namespace {

using namespace facts_detail;

constexpr std::array<std::string_view, 8> kDeviceWaits = {
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent_blocking",
    "hipStreamSynchronize",  "hipDeviceSynchronize",  "hipEventSynchronize",  "cuCtxSynchronize"};
constexpr std::array<std::string_view, 6> kBlockingCopies = {"cudaMemcpy",  "hipMemcpy", "hipMemcpyWithStream",
                                                             "cudaMemcpy2D", "cuMemcpyDtoH", "cuMemcpyHtoD"};

bool is_loader(std::string_view n) {
  return starts(n, "enumerate(DataLoader)") || has(n, "DataLoaderIter.__next__") || n == "## data_load ##" ||
         n == "data_load";
}

SyncKind sync_kind(std::string_view n) {
  for (auto s : kDeviceWaits)
    if (n == s) return SyncKind::DeviceWait;
  for (auto s : kBlockingCopies)
    if (n == s) return SyncKind::BlockingCopy;
  if (n == "aten::item" || n == "aten::_local_scalar_dense") return SyncKind::ScalarRead;
  return SyncKind::None;
}

// Communication the host performs: gloo's collectives ("gloo:all_reduce") and MPI calls, which an
// Nsight capture records as MPI_Send, MPI_Allreduce, ... ranges.
bool is_host_comm(std::string_view n) { return starts(n, "gloo:") || starts(n, "MPI_"); }

// The collective a communication library's host call names, after its prefix:
//   "nccl:all_to_all" -> AllToAll   "c10d::_reduce_scatter_base_" -> ReduceScatter
//   "nccl:send" -> SendRecv         "## alltoall_fwd_single ##" -> None (a user's range, not a call)
Collective host_collective(std::string_view n) {
  for (std::string_view p : {"nccl:", "rccl:", "gloo:", "hccl:", "xccl:", "ucc:", "MPI_", "c10d::",
                             "c10d_functional::", "_c10d_functional::"})
    if (starts(n, p)) return collective_in(lower(n.substr(p.size())));
  return Collective::None;
}

bool is_side_work(std::string_view n) {
  return n == "checkpoint" || n == "torch.save" || n == "save_checkpoint" || n == "## checkpoint ##";
}

// An autograd node: "AddmmBackward0", "CudnnConvolutionBackward", "torch::autograd::AccumulateGrad".
bool is_autograd_node(std::string_view n) {
  if (starts(n, "torch::autograd::") || starts(n, "autograd::engine::evaluate_function:")) return true;
  std::size_t end = n.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(n[end - 1]))) --end;
  const std::string_view stem = n.substr(0, end);
  return stem.size() > 8 && stem.substr(stem.size() - 8) == "Backward" && !has(stem, " ") && !has(stem, "::");
}

StageHint stage_hint(std::string_view n) {
  if (is_autograd_node(n) || n == "## backward ##" || n == "backward") return StageHint::Backward;
  if (starts(n, "Optimizer.step#") || n == "## optimizer ##" || n == "optimizer") return StageHint::Optimizer;
  if (n == "## forward ##" || n == "DistributedDataParallel.forward" || n == "FullyShardedDataParallel.forward" ||
      n == "forward")
    return StageHint::Forward;
  return StageHint::None;
}

bool is_compilation(std::string_view n) {
  return has_any(n, {"convert_frame", "compile_fx", "torch/_inductor/compile", "(dynamo_timed)"});
}

bool is_recompute(std::string_view n) {
  return has_any(n, {"CheckpointFunction", "torch/utils/checkpoint.py", "checkpoint.py("}) || n == "recompute";
}

bool is_conv_op(std::string_view n) {
  return starts(n, "aten::") && has_any(n, {"conv", "cudnn_convolution", "miopen_convolution"});
}

bool is_launch_call(std::string_view n) {
  return (has(n, "LaunchKernel") || has(n, "LaunchCooperativeKernel") || n == "cudaGraphLaunch" ||
          n == "hipGraphLaunch" || has(n, "ModuleLaunchKernel")) &&
         (starts(n, "cu") || starts(n, "hip"));
}

// Runtime/driver calls that block the host until the device drains: explicit synchronisation,
// and copies unless they are the *Async variants (a pageable async copy also blocks, but that
// shows as a copy finding).
bool is_blocking_call(std::string_view n) {
  if (is_any(n, {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
                 "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "hipStreamSynchronize",
                 "hipDeviceSynchronize", "hipEventSynchronize", "hipCtxSynchronize"}))
    return true;
  const bool copy = starts(n, "cudaMemcpy") || starts(n, "hipMemcpy") || starts(n, "cuMemcpy");
  return copy && !has(n, "Async");
}

// The device allocator's own calls, which the caching allocator makes only when its pool grows or
// is emptied; the stream-ordered *Async variants neither block nor synchronise and are left out.
bool is_device_alloc(std::string_view n) {
  return is_any(n, {"cudaMalloc", "cudaFree", "hipMalloc", "hipFree", "cuMemAlloc", "cuMemAlloc_v2", "cuMemFree",
                    "cuMemFree_v2"});
}

// The ops a module's forward calls and autograd never does: backward formulas call their
// *_backward ops or plain matmuls. One of these inside a backward node is a forward recomputed
// for activation checkpointing (non-reentrant checkpointing leaves no other mark).
bool is_forward_only_op(std::string_view n) {
  return is_any(n, {"aten::linear", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::layer_norm",
                    "aten::group_norm", "aten::batch_norm", "aten::embedding", "aten::gelu", "aten::silu",
                    "aten::scaled_dot_product_attention"});
}

// Names that only a GPU job calls, whatever else the trace lost: the runtime and driver APIs and
// the device libraries, as calls or inside op names ("aten::cudnn_convolution", the legacy
// profiler's "cudnn_convolution", "aten::_cudnn_rnn"). Python frames are not asked: a CPU-only
// script also calls torch.cuda.is_available().
//   "cudaLaunchKernel", "cuInit", "hipMalloc", "cudnn_convolution", "nccl:all_reduce" -> true
//   "aten::mm", "aten::to", "curandom_walk" -> false
bool is_device_api(std::string_view n, std::string_view lowered) {
  const bool driver = n.size() > 2 && starts(n, "cu") && std::isupper(static_cast<unsigned char>(n[2]));
  return driver || starts(n, "cuda") || starts(n, "hip") || starts(lowered, "nccl") || starts(lowered, "rccl") ||
         has_any(lowered, {"cudnn", "cublas", "miopen", "rocblas", "hipblas", "_cuda", "cuda_", "::cuda"});
}

// The calls a process makes once, as it starts to use a GPU: a capture that holds only these
// (and their minutes of lazy loading or autotuning) holds no step.
bool is_one_time_setup(std::string_view n) {
  return is_device_alloc(n) ||
         is_any(n, {"cuInit", "cudaGetDeviceCount", "cudaSetDevice", "cudaGetDeviceProperties", "cudaGetDevice",
                    "cuDevicePrimaryCtxRetain", "cuCtxCreate", "cuCtxCreate_v2", "cudaDeviceGetAttribute",
                    "cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cudaHostAlloc",
                    "cudaMallocHost", "hipInit", "hipGetDeviceCount", "hipSetDevice", "hipGetDeviceProperties",
                    "hipStreamCreate", "hipHostMalloc", "cudnnCreate", "cublasCreate_v2", "cublasLtCreate",
                    "miopenCreate", "rocblas_create_handle"}) ||
         starts(n, "cuModuleLoad") || starts(n, "cuLibraryLoad") || has_any(n, {"cudnnFind", "miopenFind"});
}

void set_host_flags(NameFact& f, std::string_view n) {
  const std::string l = lower(n);
  auto set = [&](bool on, NameFlag bit) {
    if (on) f.flags |= bit;
  };
  set(has(n, "zero_grad"), kNameZeroGrad);
  set(is_recompute(n), kNameRecompute);
  set(is_conv_op(n), kNameConvOp);
  set(has(n, "Synchronize"), kNameSynchronize);
  set(has_any(n, {"cudnnFind", "miopenFind"}), kNameAutotune);
  set(starts(n, "Torch-Compiled Region") || n == "CompiledFunction" || has(n, "CompiledFxGraph"), kNameCompiledRegion);
  set(is_compilation(n), kNameCompile);
  set(starts(n, "Optimizer.step#"), kNameOptimizerStep);
  set(has_any(l, {"multi_tensor_apply", "_foreach_", "_fused_", "fusedadam", "fused_adam", "fusedsgd"}),
      kNameFusedOptimizer);
  set(n == "aten::isnan" || n == "aten::any" || n == "aten::item" || n == "aten::_local_scalar_dense", kNameAnomalyOp);
  set(n == "aten::item", kNameItem);
  set(n == "aten::isnan", kNameIsnan);
  set(n == "aten::bmm" || n == "aten::baddbmm", kNameBmm);
  set(is_autograd_node(n), kNameBackwardOp);
  set(profiler_step_number(n) >= 0, kNameProfilerStep);
  set(is_launch_call(n), kNameLaunchCall);
  set(n == "cudaMemcpyAsync" || n == "hipMemcpyAsync" || n == "hipMemcpyWithStream", kNameAsyncCopyCall);
  // A module's or a user's forward region; aten ops named *_forward are kernels' host calls.
  set(starts(n, "nn.Module:") || (has(l, "forward") && !starts(n, "aten::") && !has(l, "backward")),
      kNameForwardEntry);
  set(has_any(l, {"execute_context", "_generation_", "execute_model", "llmengine.step", "step[decode", "step[prefill",
                  "model_runner", "modelrunner", "engine_core", "scheduler.schedule", "uvicorn", "fastapi",
                  "api_server", "openai", "serving_chat", "serving_completion", "async_llm", "asyncllm"}),
      kNameServing);
  set(l == "warmup" || l == "measure" || starts(l, "[param|") || has_any(l, {"benchmark", "timeit", "## warmup", "## measure"}),
      kNameHarness);
  set(has_any(l, {"gloo:all_reduce", "nccl:all_reduce", "c10d::allreduce"}), kNameGradCollective);
  set(has(l, "warmup") || has(l, "warm-up") || has(l, "warm_up"), kNameWarmupRange);
  set(n == "cudaEventRecord" || n == "cudaEventElapsedTime" || n == "cudaEventSynchronize" || n == "hipEventRecord" ||
          n == "hipEventElapsedTime" || n == "hipEventSynchronize",
      kNameEventTiming);
  set(n == "cudaGraphLaunch" || n == "hipGraphLaunch" || n == "cuGraphLaunch", kNameGraphLaunch);
  set(has(n, "Launch"), kNameLaunchApi);
  set(is_blocking_call(n), kNameBlockingCall);
  set(is_device_alloc(n), kNameDeviceAlloc);
  set(is_forward_only_op(n), kNameForwardOnlyOp);
  set(is_device_api(n, l), kNameDeviceApi);
  set(is_one_time_setup(n), kNameOneTimeSetup);
  set(starts(n, kModuleRangePrefix), kNameModuleRange);
  set(n == "nccl:coalesced" || n == "rccl:coalesced", kNameCoalescedComm);
  // Megatron's tensor- and sequence-parallel mappings: autograd functions _CopyToModelParallelRegion,
  // _ReduceScatterToSequenceParallelRegion (their backward nodes append "Backward"), the helpers
  // reduce_from_tensor_model_parallel_region, and the linear layer that all-reduces its input's
  // gradient asynchronously.
  set(has_any(l, {"parallelregion", "parallel_region", "linearwithgradaccumulationandasynccommunication"}),
      kNameTensorParallel);
  set(n == "aten::cross_entropy_loss" || n == "aten::nll_loss" || n == "aten::log_softmax" ||
          n == "aten::_log_softmax" || n == "aten::softmax" || n == "aten::_softmax",
      kNameLossOrOutput);
}

}  // namespace

std::int64_t profiler_step_number(std::string_view n) {
  constexpr std::string_view prefix = "ProfilerStep#";
  if (!starts(n, prefix)) return -1;
  // Unsigned, so that a sign makes no step number: "ProfilerStep#-0" is no marker.
  const auto step = parse_int<std::uint64_t>(n.substr(prefix.size()));
  if (!step || *step > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return -1;
  return static_cast<std::int64_t>(*step);
}

NameFact host_name_fact(std::string_view n) {
  NameFact f;
  set_host_flags(f, n);
  f.stage = stage_hint(n);
  f.sync = sync_kind(n);
  f.collective = host_collective(n);
  if (f.has(kNameProfilerStep)) f.role = HostRole::Marker;
  else if (is_loader(n)) f.role = HostRole::Loader;
  else if (f.sync != SyncKind::None) f.role = HostRole::Sync;
  else if (is_host_comm(n)) f.role = HostRole::Comm;
  else if (is_side_work(n)) f.role = HostRole::Side;
  else f.role = HostRole::Op;
  return f;
}

}  // namespace stepscope
