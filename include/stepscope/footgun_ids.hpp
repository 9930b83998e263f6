// The registry of footguns: every mistake a detector names, once, with its stable string (the
// finding's `id` in JSON, docs/footguns.md), the lever that fixes it and what it is. A new footgun
// is one line here, its detector (src/analysis/footguns/, registered in its table) and a row in
// docs/footguns.md's table (a test holds the table to this list); code compares FootgunId, never
// the spelling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "stepscope/lever_ids.hpp"

namespace stepscope {

// X(id, stable string, the lever that fixes it, what it is)
#define STEPSCOPE_FOOTGUNS(X)                                                                                     \
  X(Fp32NoTf32, "fp32_no_tf32", Tf32, "fp32 GEMMs on SIMT kernels on a GPU with TF32 tensor cores")               \
  X(Fp32NoAmp, "fp32_no_amp", AmpFp16, "fp32 GEMMs on SIMT kernels on a GPU whose tensor cores take fp16 only")   \
  X(CudnnAutotune, "cudnn_autotune", FixedShapes, "cudnn.benchmark re-tuning convolutions in steady steps")       \
  X(NchwLayout, "nchw_layout", ChannelsLast, "layout conversions around NCHW convolutions under mixed precision")  \
  X(AnomalyMode, "anomaly_mode", NoDebugApis, "autograd anomaly detection left on")                             \
  X(ActivationRecompute, "activation_recompute", NoActivationCheckpointing, "forward recomputed inside backward") \
  X(CompileRecompile, "compile_recompile", FixedShapes, "torch.compile recompiling after the steady state began")  \
  X(CompileFallback, "compile_fallback", FixedShapes, "torch.compile falling back to eager mid-run")              \
  X(UnfusedAttention, "unfused_attention", Sdpa, "attention over materialised scores, no fused kernel")           \
  X(UnfusedOptimizer, "unfused_optimizer", FusedOptimizer, "an optimizer step of per-parameter kernels")          \
  X(ZeroGradMemset, "zero_grad_memset", ZeroGradSetToNone, "zero_grad() writing zeros into every gradient")       \
  X(HostSyncLogging, "host_sync_logging", RemoveItem, "per-step scalar reads draining the GPU queue")             \
  X(PageableCopy, "pageable_copy", PinMemory, "host-to-device copies from pageable memory")                      \
  X(AllocatorChurn, "allocator_churn", KeepAllocatorCache, "the caching allocator emptied and refilled every step") \
  X(LoaderRespawn, "loader_respawn", PersistentWorkers, "DataLoader workers restarted at every epoch")            \
  X(DdpNoOverlap, "ddp_no_overlap", DdpBuckets, "gradient all-reduce starting only after backward ended")        \
  X(SyncAfterEveryKernel, "sync_after_every_kernel", SyncOncePerStep, "a synchronising call after every kernel launch")

STEPSCOPE_REGISTRY_ENUM(FootgunId, STEPSCOPE_FOOTGUNS);

struct FootgunInfo {
  FootgunId id;
  std::string_view name;  // stable: JSON and docs spell the footgun so
  LeverId lever;          // what fixes it
  std::string_view what;  // one line
};

inline constexpr FootgunInfo kFootguns[] = {
#define STEPSCOPE_FOOTGUN_ROW(id, name, lever, what) {FootgunId::id, name, LeverId::lever, what},
    STEPSCOPE_FOOTGUNS(STEPSCOPE_FOOTGUN_ROW)
#undef STEPSCOPE_FOOTGUN_ROW
};

constexpr const FootgunInfo& footgun_info(FootgunId f) { return registry_row(kFootguns, f); }
constexpr std::string_view footgun_name(FootgunId f) { return footgun_info(f).name; }
// The footgun a stable string names; an unregistered string -> nullopt.
constexpr std::optional<FootgunId> find_footgun(std::string_view name) { return registry_find<&FootgunInfo::id>(kFootguns, name); }

}  // namespace stepscope
