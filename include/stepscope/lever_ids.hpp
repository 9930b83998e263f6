// The registry of levers: every change stepscope can recommend, once, with its stable string
// (JSON, summaries, docs/levers.md), the time it acts on and what it changes. A new lever is one
// line here and a row in docs/levers.md's table (a test holds the two to each other); the
// diagnosis, the what-if models and the reports compare levers through LeverId, never by
// spelling. A lever's numbers (the time it can remove, its physics) live with the catalogue
// (src/diagnose/levers.cpp) and the what-if models (src/whatif/levers.cpp); docs/extending.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "stepscope/registry.hpp"

namespace stepscope {

// The time a lever acts on: the part of the step it shrinks, and so the verdict's bound it answers
// (the diagnosis maps each to its Bound). docs/levers.md's "acts on" column is lever_time_label.
enum class LeverTime : std::uint8_t { BatchWait, Copies, SyncStalls, HostLaunch, GpuCompute, Communication, SideWork, Straggler };
constexpr std::string_view lever_time_label(LeverTime t) {
  constexpr std::string_view kLabels[] = {"batch wait",  "copies",                "sync stalls", "host and launch time",
                                          "GPU compute", "exposed communication", "side work",   "waits for a straggler"};
  return kLabels[static_cast<std::size_t>(t)];
}

// X(id, stable string, the time it acts on, what it changes)
#define STEPSCOPE_LEVERS(X)                                                                                                     \
  X(NumWorkers, "num_workers", BatchWait, "more DataLoader workers")                                                            \
  X(PreprocessCache, "preprocess_cache", BatchWait, "pre-process or cache the data once, outside the loop")                     \
  X(PersistentWorkers, "persistent_workers", BatchWait, "loader workers kept alive across epochs")                              \
  X(PrefetchFactor, "prefetch_factor", BatchWait, "a deeper loader prefetch queue")                                             \
  X(PinMemory, "pin_memory", Copies, "pinned host memory and non-blocking copies")                                              \
  X(CopyStream, "copy_stream", Copies, "input copies on a side stream")                                                         \
  X(D2hReadback, "d2h_readback", Copies, "less device-to-host readback, out of the step's way")                                 \
  X(RemoveItem, "remove_item", SyncStalls, "no per-step host syncs (.item(), print, synchronize)")                              \
  X(MicroBatch, "micro_batch", HostLaunch, "a larger micro-batch, the global batch kept by accumulation")                       \
  X(AmpBf16, "amp_bf16", GpuCompute, "bf16 autocast")                                                                           \
  X(AmpFp16, "amp_fp16", GpuCompute, "fp16 autocast with a GradScaler")                                                         \
  X(Tf32, "tf32", GpuCompute, "TF32 for fp32 matmuls and convolutions")                                                         \
  X(ChannelsLast, "channels_last", GpuCompute, "channels_last memory format for conv nets")                                     \
  X(TorchCompile, "torch_compile", GpuCompute, "torch.compile (of the model, or of what runs outside compiled regions)")        \
  X(CudaGraphs, "cuda_graphs", HostLaunch, "CUDA graphs: the step's launches replayed without the host")                        \
  X(FusedOptimizer, "fused_optimizer", GpuCompute, "a fused optimizer step")                                                    \
  X(Sdpa, "sdpa", GpuCompute, "fused attention (scaled_dot_product_attention)")                                                 \
  X(EpOverlap, "ep_overlap", Communication, "the all-to-all exchange overlapped with compute")                                  \
  X(PipelineSchedule, "pipeline_schedule", Communication, "a smaller pipeline bubble: more micro-batches, interleaved stages")  \
  X(TpOverlap, "tp_overlap", Communication, "tensor-parallel collectives overlapped with compute")                              \
  X(DdpBuckets, "ddp_buckets", Communication, "DDP buckets sized so that all-reduce overlaps backward")                         \
  X(AccumulateAllreduce, "accumulate_allreduce", Communication, "gradient accumulation: one all-reduce per few micro-batches")  \
  X(FsdpPrefetch, "fsdp_prefetch", Communication, "FSDP forward and backward prefetch")                                         \
  X(AsyncCheckpoint, "async_checkpoint", SideWork, "asynchronous or less frequent checkpoints")                                 \
  X(FixStraggler, "fix_straggler", Straggler, "the straggling rank fixed (data skew, hardware, placement)")                     \
  X(NoActivationCheckpointing, "no_activation_checkpointing", GpuCompute, "activation checkpointing off where memory allows")   \
  X(FixedShapes, "fixed_shapes", GpuCompute, "fixed input shapes (padded or bucketed)")                                         \
  X(NoDebugApis, "no_debug_apis", GpuCompute, "debugging APIs (anomaly detection) off in training runs")                        \
  X(ZeroGradSetToNone, "zero_grad_set_to_none", GpuCompute, "zero_grad(set_to_none=True)")                                      \
  X(SyncOncePerStep, "sync_once_per_step", SyncStalls, "one synchronisation per step, not one per kernel")                      \
  X(KeepAllocatorCache, "keep_allocator_cache", HostLaunch, "the caching allocator keeps its memory (no empty_cache)")

STEPSCOPE_REGISTRY_ENUM(LeverId, STEPSCOPE_LEVERS);

struct LeverInfo {
  LeverId id;
  std::string_view name;  // stable: JSON, summaries and docs spell the lever so
  LeverTime acts_on;
  std::string_view what;  // one line
};

inline constexpr LeverInfo kLevers[] = {
#define STEPSCOPE_LEVER_ROW(id, name, acts_on, what) {LeverId::id, name, LeverTime::acts_on, what},
    STEPSCOPE_LEVERS(STEPSCOPE_LEVER_ROW)
#undef STEPSCOPE_LEVER_ROW
};

constexpr const LeverInfo& lever_info(LeverId l) { return registry_row(kLevers, l); }
constexpr std::string_view lever_name(LeverId l) { return lever_info(l).name; }
// The lever a stable string names: "num_workers" -> NumWorkers; an unregistered string -> nullopt.
constexpr std::optional<LeverId> find_lever(std::string_view name) { return registry_find<&LeverInfo::id>(kLevers, name); }

}  // namespace stepscope
