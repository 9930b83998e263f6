// The lever catalogue: one entry per lever, its expected gain an Amdahl bound from this trace.
//
// A lever acts on some categories of the step; it can remove at most a fraction of their time
// (the fractions below, each with its source). The step then becomes step - removable, so the
// speedup can be no more than step / (step - removable): an upper bound, never a promise.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <optional>
#include <set>

#include "diagnose/diagnose_internal.hpp"
#include "stepscope/drilldown.hpp"
#include "stepscope/facts.hpp"

namespace stepscope {
namespace {

using namespace diagnose_detail;

// Workers prefetching in the background can hide the whole batch wait (seed 001 T4: with
// num_workers=0 nothing overlaps; with enough workers fetching overlaps compute entirely).
constexpr double kHideAll = 1.0;
// Pinned memory + non_blocking copies run on a copy stream under compute (seed 001 T6).
constexpr double kAsyncCopyHides = 1.0;
// A larger micro-batch spreads the per-step host and launch overhead over more samples: doubling
// it halves their share a sample (seed 001 T18), and the limit, as it grows, is all of it. The
// replay prices twice and four times the micro-batch within that bound.
constexpr double kMicroBatchAmortize = 1.0;
// bf16 tensor-core GEMMs/convolutions run several times faster than fp32 SIMT ones (seed 001
// T13): the bound is their whole time gone, and the replay's roofline says how much of it goes
// (an H200's 8192-wide GEMMs drop from 21.4 to 1.3 ms, 94%). Half of it, as this once claimed,
// sat below the replay's own prediction: "predicted 1.58x (bound 1.14x)".
constexpr double kLowPrecisionCut = 1.0;
// TF32 on fp32 matmuls: seed 001 T9 reports fp32 runs 2-4x slow without it; bounded as above.
constexpr double kTf32Cut = 1.0;
// channels_last: a layout speedup for conv nets under AMP (seed 001 T11); a fifth of conv time.
constexpr double kChannelsLastCut = 0.2;
// torch.compile fuses pointwise chains: half of elementwise/norm time and of launch overhead (seed 001 T15).
constexpr double kFusionCut = 0.5;
// CUDA graphs replay a step's launches without the host (seed 001 T15 reduce-overhead mode).
constexpr double kGraphsCut = 0.9;
// A fused (single-kernel) optimizer step replaces per-parameter kernels: half the optimizer time.
constexpr double kFusedOptimizerCut = 0.5;
// DDP bucketing overlaps all-reduce with backward (seed 001 T23); most exposed sync can hide.
constexpr double kOverlapHides = 0.8;
// Accumulating over 4 micro-batches all-reduces once instead of 4 times (no_sync).
constexpr double kAccumulationSteps = 4.0;
// FSDP backward/forward prefetch hides the next layer's all-gather under compute (seed 001 T23).
constexpr double kPrefetchHides = 0.5;
// A pipeline's bubble is (stages - 1) / micro-batches of the step (seed 002): twice the
// micro-batches, each half the size, halve the time stages wait for each other.
constexpr double kBubbleCut = 0.5;
// Activation checkpointing costs ~20-30% extra compute (seed 001 T17); the lower end.
constexpr double kRecomputeShare = 0.2;

double cat(const JobStep& j, Category c) { return j.category[static_cast<std::size_t>(c)]; }

// What removing the per-step syncs can save: the host stops waiting while the GPU works, so the
// step shrinks by that wait, but never below the GPU's own busy time nor below the host's own
// work (the time after a sync until the next launch is host time, still spent). The sync call's
// own cost while the GPU idles is not counted: a sync every N steps still pays it. Example: a
// 10 ms step, GPU busy 6 ms, host waiting 7 ms of them in .item() -> min(7, 10 - 6) = 4 ms.
double sync_removable(const AnalysisResult& r, double step, double gpu_busy) {
  const double wait = rank_mean(r, [](const RankPartition& p) { return p.sync_wait_ns; });
  return std::max(0.0, std::min(wait, step - gpu_busy));
}

// More syncs than this per step leave no region a CUDA graph could capture whole.
constexpr double kSyncsNoGraph = 4;

double syncs_per_step(const AnalysisResult& r) {
  return rank_mean(r, [](const RankPartition& p) {
    return static_cast<double>(p.sync_calls) / static_cast<double>(p.steady_steps);
  });
}

// The profiler's own host cost per step where it is large enough to warn about, else 0.
double profiler_overhead(const AnalysisResult& r) {
  if (!r.job.trust.has(TrustCode::ProfilerOverhead)) return 0;
  return rank_mean(r, [](const RankPartition& p) { return p.profiler_overhead_ns; });
}

double model_syncs_per_step(const AnalysisResult& r) {
  return rank_mean(r, [](const RankPartition& p) {
    return static_cast<double>(p.model_syncs) / static_cast<double>(p.steady_steps);
  });
}

double compute(const JobStep& j) {
  return cat(j, Category::ComputeForward) + cat(j, Category::ComputeBackward) +
         cat(j, Category::ComputeOptimizer) + cat(j, Category::ComputeOther);
}

// A lever that gains less than this share of the step does not apply: within noise, not worth a
// change.
constexpr double kMinApplyShare = 0.01;

// Prefetching applies where parameters are sharded: all-gather or reduce-scatter kernels (FSDP,
// ZeRO) on some drilled rank.
bool sharded_job(const AnalysisResult& r) {
  for (const auto& [rank, d] : each_drilldown(r))
    for (const KernelRow& k : d.kernels.rows) {
      const Collective c = kernel_name_fact(k.name).collective;
      if (c == Collective::AllGather || c == Collective::ReduceScatter) return true;
    }
  return false;
}

// Overlap hides communication only under compute that runs beside it: an all-reduce overlapped
// with backward saves at most the backward's time (a prefetched all-gather, forward and
// backward's; an overlapped all-to-all, all compute's), however long the exposed wait (a wait for a
// straggler, or a backward far shorter than the all-reduce).
// Example: 43 ms exposed, 0.4 ms of backward compute -> at most 0.4 ms, not 80% of 43 ms.
void cap_at_overlap(Lever& l, double under, double step, const char* what) {
  if (l.removable_ns <= under) return;
  l.removable_ns = std::max(0.0, under);
  l.speedup = step > 0 ? step / (step - l.removable_ns) : 1;
  l.applies = l.removable_ns >= kMinApplyShare * step && l.removable_ns > 0;
  l.basis += fmt::format(", at most the {} it can hide under ({})", what, ms(under));
}

struct Mix {
  double total = 0, gemm_tc = 0, conv = 0, eltwise_norm = 0, attention = 0, softmax = 0;
  double fp32_gemm_simt = 0, fp32_conv = 0;  // fp32 GEMMs (not GEMVs) / convolutions on SIMT units
  double compiled = 0, compiled_eltwise_norm = 0;  // launched from torch.compile'd regions
  bool recompute = false, fused_optimizer = false;
  double share(double v) const { return total > 0 ? v / total : 0; }
};

// What the job's GPUs can do, from the facts' device models: the weakest rank decides.
struct Devices {
  Capability bf16 = Capability::Yes, tf32 = Capability::Yes, tensor_cores = Capability::Yes;
  bool any = false;
  bool pytorch = false;  // PyTorch ops in the trace: its knobs exist
  std::string name;      // the first device, for the texts
};

Capability weakest(Capability a, Capability b) {
  if (a == Capability::No || b == Capability::No) return Capability::No;
  if (a == Capability::Unknown || b == Capability::Unknown) return Capability::Unknown;
  return Capability::Yes;
}

Devices job_devices(const AnalysisResult& r) {
  Devices d;
  for (const auto& f : each_rank(r, &RankAnalysis::facts)) {
    d.pytorch = d.pytorch || f.pytorch;
    if (!f.gpu_records) continue;
    if (!d.any) d.name = f.device.describe();
    d.any = true;
    d.bf16 = weakest(d.bf16, f.device.bf16());
    d.tf32 = weakest(d.tf32, f.device.tf32());
    d.tensor_cores = weakest(d.tensor_cores, f.device.tensor_cores());
  }
  if (!d.any) d.bf16 = d.tf32 = d.tensor_cores = Capability::Unknown;
  return d;
}

Mix job_mix(const AnalysisResult& r) {
  Mix m;
  for (const auto& p : each_rank(r, &RankAnalysis::partition)) {
    auto at = [&](KernelClass c) { return static_cast<double>(p.mix.class_ns[static_cast<std::size_t>(c)]); };
    m.total += static_cast<double>(p.mix.kernel_ns());
    m.gemm_tc += at(KernelClass::GemmTensorCore);
    m.conv += at(KernelClass::Convolution);
    m.fp32_gemm_simt += static_cast<double>(p.mix.fp32_simt_gemm_ns);
    m.fp32_conv += static_cast<double>(p.mix.fp32_simt_conv_ns);
    m.eltwise_norm += at(KernelClass::Elementwise) + at(KernelClass::ReductionNorm);
    m.compiled += static_cast<double>(p.mix.compiled_ns);
    m.compiled_eltwise_norm += static_cast<double>(p.mix.compiled_eltwise_norm_ns);
    m.attention += at(KernelClass::Attention);
    m.softmax += static_cast<double>(p.mix.softmax_ns);
    m.recompute = m.recompute || p.mix.recompute_seen;
    m.fused_optimizer = m.fused_optimizer || p.mix.fused_optimizer_seen;
  }
  return m;
}

// The mean over ranks with steady steps of a per-step cost, counted on the ranks whose period is
// of `kind` (0 on the others).
template <class Cost>
double mean_over_ranks(const AnalysisResult& r, PeriodKind kind, Cost cost) {
  double total = 0;
  std::size_t n = 0;
  for (const RankAnalysis& ra : r.ranks) {
    if (!ra.stability.steps) continue;
    ++n;
    if (ra.stability.period.kind == kind) total += cost(ra);
  }
  return n ? total / static_cast<double>(n) : 0;
}

// Mean per-step excess of periodic spikes of a given kind (over all steady steps).
double periodic_excess(const AnalysisResult& r, PeriodKind kind) {
  return mean_over_ranks(r, kind, [](const RankAnalysis& ra) {
    const Stability& s = ra.stability;
    return static_cast<double>(s.period.mean_excess) * static_cast<double>(s.period.occurrences) /
           static_cast<double>(s.steps);
  });
}

// The same with the slower steps in the spikes' wake: every steady step's excess over the quiet
// step (excess_over_quiet).
double periodic_wake(const AnalysisResult& r, PeriodKind kind) {
  return mean_over_ranks(r, kind, [](const RankAnalysis& ra) { return excess_over_quiet(ra.partition, ra.stability); });
}

struct Entry {
  LeverId id;
  const char* title;
  const char* knob;
  const char* risk;
  const char* numerics;
  const char* comparability;
};

constexpr const char* kNumericsLink =
    "can change numerics: compare loss curves / eval metrics against the unchanged run before trusting it";

// The bound whose time a lever shrinks: the headline's bound and the first lever must agree, or
// the report says why another comes first.
// The registry holds the time each lever acts on (lever_info(id).acts_on).
Bound lever_bound(LeverId id) {
  switch (lever_info(id).acts_on) {
    case LeverTime::BatchWait: return Bound::InputPipeline;
    case LeverTime::Copies: return Bound::Copy;
    case LeverTime::SyncStalls: return Bound::SyncStall;
    case LeverTime::HostLaunch: return Bound::HostLaunch;
    case LeverTime::GpuCompute: return Bound::GpuCompute;
    case LeverTime::Communication: return Bound::Communication;
    case LeverTime::SideWork: return Bound::SideWork;
    case LeverTime::Straggler: return Bound::Straggler;
  }
  return Bound::GpuCompute;
}

// Certainty of a lever's gain: a change that can alter the numbers must be validated and may be
// rolled back; one that changes the experiment may not compare.
constexpr double kNumericsCertainty = 0.75;
constexpr double kComparabilityCertainty = 0.85;

Lever make(const Entry& e, const std::string& targets, double target_ns, double fraction,
           const std::string& basis, double step) {
  Lever l;
  l.acts_on = lever_bound(e.id);
  l.certainty = (*e.numerics ? kNumericsCertainty : 1.0) * (*e.comparability ? kComparabilityCertainty : 1.0);
  l.id = e.id;
  l.title = e.title;
  l.knob = e.knob;
  l.risk = e.risk;
  l.numerics = e.numerics;
  l.comparability = e.comparability;
  l.targets = targets;
  l.target_ns = target_ns;
  l.step_ns = step;
  l.removable_ns = std::clamp(target_ns * fraction, 0.0, step * 0.999);
  l.speedup = step > 0 ? step / (step - l.removable_ns) : 1;
  l.basis = basis;
  l.applies = l.removable_ns >= kMinApplyShare * step && l.removable_ns > 0;
  return l;
}

// A lever the device cannot take does not apply, and says why; on an unknown device it says what
// it requires.
void require(Lever& l, Capability c, const std::string& needs, const Devices& d) {
  if (c == Capability::Yes) return;
  if (c == Capability::No) {
    l.applies = false;
    l.basis = fmt::format("{} has no {}", d.name, needs);
    return;
  }
  l.risk = fmt::format("requires {} (the device is unknown); {}", needs, l.risk);
}

// A program without PyTorch (an Nsight capture of a CUDA application) has the same stall and
// its own API for the fix: these levers keep applying with the CUDA knob; every other lever's
// knob is PyTorch's and does not exist for it.
struct CudaKnob {
  LeverId id;
  std::string_view knob;
};
constexpr CudaKnob kCudaKnobs[] = {
    {LeverId::RemoveItem, "no cudaDeviceSynchronize or blocking cudaMemcpy inside the loop: cudaMemcpyAsync on a stream, "
                    "synchronise once per iteration or less"},
    {LeverId::SyncOncePerStep, "one cudaStreamSynchronize per iteration, not one after every kernel"},
    {LeverId::PinMemory, "page-locked host buffers (cudaMallocHost or cudaHostRegister) and cudaMemcpyAsync on a stream"},
    {LeverId::CudaGraphs, "capture the iteration once (cudaStreamBeginCapture) and replay it with cudaGraphLaunch"},
    {LeverId::FixStraggler, ""},
};

// The CUDA knob of a lever for a program without PyTorch; nullopt when it has none.
std::optional<std::string_view> cuda_knob(LeverId id) {
  for (const auto& k : kCudaKnobs)
    if (id == k.id) return k.knob;
  return std::nullopt;
}

void fit_to_program(Lever& l, bool pytorch) {
  if (pytorch) return;
  if (auto knob = cuda_knob(l.id)) {
    if (!knob->empty()) l.knob = std::string(*knob);
    return;
  }
  if (!l.applies) return;
  l.applies = false;
  l.basis = "the trace holds no PyTorch ops: this PyTorch knob does not exist for the program; " + l.basis;
}

bool one_of(LeverId id, std::initializer_list<LeverId> ids) {
  for (auto i : ids)
    if (id == i) return true;
  return false;
}

// Why a lever does not exist for this kind of run, or "" when it does. Training levers (gradient
// accumulation, optimizer, DDP/FSDP, checkpoints) need a training loop; a single pass cannot
// repay a compile or a graph capture; a timing harness's syncs and launches are what it measures.
std::string kind_excludes(LeverId id, RunKind kind, bool graphs, double syncs) {
  const bool training_only = one_of(id, {LeverId::MicroBatch, LeverId::FusedOptimizer, LeverId::DdpBuckets, LeverId::AccumulateAllreduce, LeverId::FsdpPrefetch, LeverId::NoActivationCheckpointing, LeverId::AsyncCheckpoint});
  if (id == LeverId::CudaGraphs && graphs) return "the run already replays CUDA graphs";
  // ep_overlap, tp_overlap and pipeline_schedule suit inference too (serving overlaps and pipelines as well).
  switch (kind) {
    case RunKind::Training: return "";
    case RunKind::Inference:
      if (training_only) return "a training lever: this run has no backward or optimizer";
      if (one_of(id, {LeverId::RemoveItem, LeverId::SyncOncePerStep}))
        return "an inference engine reads each iteration's output back: that sync is the result, not overhead";
      return "";
    case RunKind::OneShot:
      if (training_only) return "a training lever: this run has no backward or optimizer";
      if (one_of(id, {LeverId::CudaGraphs, LeverId::TorchCompile}))
        return "a single pass: capturing or compiling costs more than the one pass it would speed up";
      if (id == LeverId::RemoveItem && syncs <= 1)
        return "a single pass: its one sync waits for the pass's result, and there is no next step to run ahead into";
      return "";
    case RunKind::Benchmark:
      if (one_of(id, {LeverId::Tf32, LeverId::AmpBf16, LeverId::AmpFp16, LeverId::ChannelsLast, LeverId::Sdpa})) return "";
      return "a timing harness: its syncs, launches and batch are what it measures, not overhead to remove";
    case RunKind::Unknown: return "";
  }
  return "";
}

struct JobKind {
  RunKind kind = RunKind::Unknown;
  bool graphs = false;
  double syncs_per_step = 0;
};

JobKind job_kind(const AnalysisResult& r) {
  JobKind k;
  for (const auto& f : each_rank(r, &RankAnalysis::facts)) {
    if (k.kind == RunKind::Unknown) k.kind = f.run_kind;
    k.graphs = k.graphs || f.cuda_graphs;
  }
  k.syncs_per_step = syncs_per_step(r);
  return k;
}

// torch.compile acts on the pointwise chains it can fuse and the launches it saves. A run that
// already compiles its model has had that for the kernels its compiled regions launch: what is
// left is the elementwise/norm work outside them (the loss, the optimizer, graph breaks).
void add_compile_lever(std::vector<Lever>& out, const JobStep& j, const Mix& m, double cmp, bool gpu, double step) {
  constexpr const char* risk =
      "compile time on the first steps; varying shapes recompile and past the cache limit fall back to eager "
      "(pad/bucket shapes or dynamic=True)";
  if (m.compiled <= 0) {
    out.push_back(make({LeverId::TorchCompile, "torch.compile the model", "model = torch.compile(model)", risk, kNumericsLink,
                        "exclude compile warm-up steps when comparing"},
                       "elementwise/norm kernels + launch overhead",
                       gpu ? cmp * m.share(m.eltwise_norm) + cat(j, Category::LaunchOverhead) : 0, kFusionCut,
                       "fused pointwise chains and fewer launches", step));
    return;
  }
  out.push_back(make({LeverId::TorchCompile, "compile what runs outside the compiled regions",
                      "torch.compile the loss and the optimizer step too; find graph breaks with TORCH_LOGS=graph_breaks",
                      risk, kNumericsLink, "exclude compile warm-up steps when comparing"},
                     "elementwise/norm kernels outside the compiled regions",
                     gpu ? cmp * m.share(std::max(0.0, m.eltwise_norm - m.compiled_eltwise_norm)) : 0, kFusionCut,
                     fmt::format("the run already compiles: {} of compute-kernel time comes from its compiled regions",
                                 pct(m.share(m.compiled))),
                     step));
}

}  // namespace

namespace diagnose_detail {

std::array<double, kCommRoleCount> comm_role_shares(const AnalysisResult& r) {
  std::array<double, kCommRoleCount> ns{};
  double all = 0;
  for (const auto& p : each_rank(r, &RankAnalysis::partition))
    for (std::size_t k = 0; k < ns.size(); ++k) {
      ns[k] += static_cast<double>(p.mix.comm_ns_by_role[k]);
      all += static_cast<double>(p.mix.comm_ns_by_role[k]);
    }
  if (all <= 0) {
    ns = {};
    ns[static_cast<std::size_t>(CommRole::GradientSync)] = 1;
    return ns;
  }
  for (double& v : ns) v /= all;
  return ns;
}

std::vector<Lever> build_levers(const AnalysisResult& r, const JobStep& j, const Verdict& v) {
  const double step = j.step_ns;
  const double wait = cat(j, Category::BatchWait);
  const double host = cat(j, Category::LaunchOverhead) + cat(j, Category::HostCompute);
  const double comm = cat(j, Category::GradSyncExposed);
  const double side = cat(j, Category::SideWork) + (v.bound == Bound::SideWork ? cat(j, Category::Idle) : 0);
  const double cmp = compute(j);
  // Every instant the GPU works is one of these categories: the partition ranks GPU work first.
  const double gpu_busy = cmp + comm + cat(j, Category::H2DCopy) + cat(j, Category::D2HCopy) + cat(j, Category::Memset);
  const Mix m = job_mix(r);
  const Devices dev = job_devices(r);
  const bool gpu = j.gpu;
  std::vector<Lever> out;
  auto add = [&](const Entry& e, const std::string& targets, double ns, double f, const std::string& basis) {
    out.push_back(make(e, targets, ns, f, basis, step));
  };

  // Workers respawned at each epoch stall its first fetch however many there are: that part of
  // the batch wait is the persistent_workers lever's alone.
  const double epoch_stall = periodic_excess(r, PeriodKind::EpochBoundary);
  const double fetch_wait = std::max(0.0, wait - epoch_stall);
  const char* fetch_targets = epoch_stall > 0 ? "batch wait outside epoch starts" : "batch wait";
  add({LeverId::NumWorkers, "raise DataLoader num_workers", "DataLoader(num_workers=N)",
       "each worker holds a copy of the dataset object: too many exhaust host RAM or oversubscribe cores", "", ""},
      fetch_targets, fetch_wait, kHideAll, "background workers can hide all of the batch wait");
  add({LeverId::PreprocessCache, "pre-process or cache the data once", "offline tokenisation/decoding, a cached dataset (WebDataset, Arrow)",
       "disk space and a pipeline to keep in sync with the raw data; a cached augmentation is no longer random", "",
       "changes what each epoch sees when augmentations are cached"},
      fetch_targets, fetch_wait, kHideAll, "work moved out of the loop no longer stalls it");
  add({LeverId::PersistentWorkers, "keep loader workers alive across epochs", "DataLoader(persistent_workers=True)",
       "workers keep their memory between epochs", "", ""},
      "epoch-start batch wait", epoch_stall, kHideAll,
      "the respawn stall at each epoch start disappears");
  add({LeverId::PrefetchFactor, "deepen the loader's prefetch queue", "DataLoader(prefetch_factor=4)",
       "more batches resident in host memory; no help if workers are slower on average than the step", "", ""},
      "periodic batch wait", periodic_excess(r, PeriodKind::LoaderWorkers), kHideAll,
      "a deeper queue absorbs the recurring loader stall");
  add({LeverId::PinMemory, "pinned memory and non-blocking copies", "DataLoader(pin_memory=True) + .to(device, non_blocking=True)",
       "pinned pages cannot be swapped: large pinned pools pressure host RAM", "", ""},
      "H2D copy", gpu ? cat(j, Category::H2DCopy) : 0, kAsyncCopyHides, "the copy overlaps compute on a copy stream");
  add({LeverId::CopyStream, "copies on a side stream", "a torch.cuda.Stream for the copies, .to(device, non_blocking=True) "
       "inside `with torch.cuda.stream(s)`, and torch.cuda.current_stream().wait_stream(s) before the tensors are used",
       "the copied tensors must not be freed or reused before the compute stream has waited for them "
       "(tensor.record_stream)", "", ""},
      "H2D copy", gpu ? cat(j, Category::H2DCopy) : 0, kAsyncCopyHides,
      "input copies run beside the kernels instead of between them");
  // Device-to-host copies are the job reading results back (metrics, predictions, a tensor's
  // .cpu()): pinning the loader does nothing for them.
  add({LeverId::D2hReadback, "read less back from the device, and not in the step's way",
       "reduce on the device before reading back (metrics, argmax, a sample) and read every N steps; what must "
       "come back: .to('cpu', non_blocking=True) into a pinned buffer, synchronised once",
       "coarser logging; pinned buffers pressure host RAM", "", ""},
      "D2H copy", gpu ? cat(j, Category::D2HCopy) : 0, kAsyncCopyHides,
      "the copy leaves the step or overlaps compute on a copy stream");
  add({LeverId::RemoveItem, "remove per-step host syncs (.item(), print, .cpu(), synchronize)",
       "log every N steps; keep metrics on the device; no blocking copy or synchronize inside the step",
       "less frequent loss logging", "", ""},
      "the host's wait in device syncs", gpu ? sync_removable(r, step, gpu_busy) : 0, kHideAll,
      "without the sync the host runs ahead: its own work overlaps the GPU's, down to the longer of the two");
  add({LeverId::MicroBatch, "larger micro-batch (keep the global batch with gradient accumulation)", "batch_size, accumulation steps",
       "more activation memory; optimisation behaviour changes with the batch", "",
       "a different batch size is a different experiment: pin it across compared runs"},
      "launch overhead + host compute", gpu ? host : 0, kMicroBatchAmortize,
      "per-step host and launch costs are paid once for ever more samples");
  const double fp32_math = gpu ? cmp * m.share(m.fp32_gemm_simt + m.fp32_conv) : 0;
  add({LeverId::AmpBf16, "mixed precision (bf16 autocast)", "torch.autocast('cuda', dtype=torch.bfloat16)",
       "numerical edge cases in reductions and losses", kNumericsLink, ""},
      "fp32 SIMT GEMM + convolution kernels", dev.bf16 == Capability::No ? 0 : fp32_math, kLowPrecisionCut,
      "16-bit tensor-core math replaces fp32 kernels");
  require(out.back(), dev.bf16, "bf16 tensor cores (compute capability 8.0 or newer, or AMD CDNA)", dev);
  // Before Ampere the tensor cores take fp16 only: autocast to fp16, with a GradScaler against
  // gradient underflow.
  add({LeverId::AmpFp16, "mixed precision (fp16 autocast with a GradScaler)",
       "torch.autocast('cuda', dtype=torch.float16) + torch.cuda.amp.GradScaler()",
       "fp16's narrow range: gradients underflow without the scaler; overflow in large activations", kNumericsLink, ""},
      "fp32 SIMT GEMM + convolution kernels",
      dev.bf16 == Capability::No && dev.tensor_cores == Capability::Yes ? fp32_math : 0, kLowPrecisionCut,
      "fp16 tensor-core math replaces fp32 kernels");
  // cuDNN has its own switch: set_float32_matmul_precision does not reach convolutions.
  add({LeverId::Tf32, "allow TF32 matmuls",
       "torch.set_float32_matmul_precision('high'); torch.backends.cudnn.allow_tf32 = True for convolutions",
       "10-bit mantissa products in fp32 matmuls", kNumericsLink, ""},
      "fp32 SIMT GEMM kernels", gpu && dev.tf32 != Capability::No ? cmp * m.share(m.fp32_gemm_simt) : 0, kTf32Cut,
      "fp32 GEMMs move to tensor cores");
  require(out.back(), dev.tf32, "TF32 tensor cores (compute capability 8.0 or newer)", dev);
  add({LeverId::ChannelsLast, "channels_last memory format (conv nets)", "model.to(memory_format=torch.channels_last)",
       "no benefit for transformers; some custom ops expect NCHW", "", ""},
      "convolution kernels", gpu ? cmp * m.share(m.conv) : 0, kChannelsLastCut, "no layout transposes around tensor-core convolutions");
  add_compile_lever(out, j, m, cmp, gpu, step);
  add({LeverId::CudaGraphs, "CUDA graphs", "torch.compile(mode='reduce-overhead') or torch.cuda.graphs",
       "static shapes and addresses required; extra memory for graph pools; predicted for the step captured by "
       "hand (torch.cuda.graph): reduce-overhead adds host work per compiled call that an eager trace cannot show",
       "", ""},
      "launch overhead + host compute", gpu ? host : 0, kGraphsCut, "the step's launches replay without the host");
  if (const double in_model = model_syncs_per_step(r), all = syncs_per_step(r);
      (in_model >= 1 || all >= kSyncsNoGraph) && out.back().applies) {
    out.back().applies = false;
    out.back().basis = fmt::format("{:.1f} host syncs or readbacks per step ({:.1f} inside forward/backward): a CUDA "
                                   "graph cannot capture them (remove them first); {}",
                                   all, in_model, out.back().basis);
  }
  // Held back only where the profiler's own cost could be half of what the lever acts on: a
  // host 580 us over its kernels with 210 us of profiler cost is launch-bound either way.
  if (const double overhead = profiler_overhead(r); overhead > 0)
    for (auto& l : out)
      if (l.applies && one_of(l.id, {LeverId::CudaGraphs, LeverId::MicroBatch}) && 2 * overhead >= l.target_ns) {

        l.applies = false;
        l.basis = fmt::format("host time is inflated by the profiler itself (about {} per step): re-record with "
                              "fewer profiler options before acting on it; {}",
                              ms(overhead), l.basis);
      }
  add({LeverId::FusedOptimizer, "fused optimizer step", "torch.optim.AdamW(..., fused=True)",
       "only for supported optimizers and dtypes", "rounding of the update can differ slightly", ""},
      "optimizer compute", gpu && !m.fused_optimizer ? cat(j, Category::ComputeOptimizer) : 0, kFusedOptimizerCut,
      "one kernel per step instead of several per parameter");
  add({LeverId::Sdpa, "fused attention (SDPA / FlashAttention)", "F.scaled_dot_product_attention with bf16/fp16 inputs",
       "silently falls back to the math kernel when constraints are not met: force the backend to verify",
       kNumericsLink, ""},
      "softmax kernels of unfused attention", gpu && m.attention == 0 ? cmp * m.share(m.softmax) : 0, kHideAll,
      "the seq x seq score matrix is never materialised");
  // Exposed communication splits by what it is for, in proportion to its kernel time: only the
  // gradients' share is DDP's or FSDP's to hide or skip; all-to-all exchange, pipeline transfers
  // and tensor-parallel collectives recur every micro-batch whatever those knobs say.
  const auto role = comm_role_shares(r);
  auto comm_for = [&](CommRole c) { return comm * role[static_cast<std::size_t>(c)]; };
  const double grad_comm = comm_for(CommRole::GradientSync);
  add({LeverId::EpOverlap, "overlap the all-to-all exchange with compute",
       "MoE: two-micro-batch overlap or the EP library's async dispatch/combine (DeepEP: return a recv hook; "
       "Megatron: --overlap-moe-expert-parallel-comm); sharded embeddings: TorchRec's TrainPipelineSparseDist, which "
       "runs the next batch's input all-to-all under this batch's compute",
       "more memory for the second batch in flight; needs a library or pipeline that supports it", "", ""},
      "exposed all-to-all exchange", comm_for(CommRole::Exchange), kOverlapHides,
      "the exchange runs under the other batch's compute");
  cap_at_overlap(out.back(), cmp, step, "compute");
  add({LeverId::PipelineSchedule, "shrink the pipeline bubble: more micro-batches, interleaved stages",
       "more micro-batches per global batch (Megatron --global-batch-size / --micro-batch-size), an interleaved 1F1B "
       "schedule (--num-layers-per-virtual-pipeline-stage; torch.distributed.pipelining ScheduleInterleaved1F1B), "
       "and stages of equal compute",
       "smaller micro-batches use the GPU less well; interleaving sends more point-to-point traffic", "", ""},
      "exposed pipeline send/recv", comm_for(CommRole::PointToPoint), kBubbleCut,
      "the bubble, (stages - 1) / micro-batches of the step, halves with twice the micro-batches");
  add({LeverId::TpOverlap, "overlap tensor-parallel collectives with compute",
       "Megatron-Core / Transformer Engine: --tp-comm-overlap with --sequence-parallel; keep the tensor-parallel group "
       "inside one NVLink domain",
       "needs Transformer Engine's communication buffers (more memory); cross-node tensor parallelism stays slow", "",
       ""},
      "exposed tensor/model-parallel collectives", comm_for(CommRole::Activation), kOverlapHides,
      "the layer's collective runs under the neighbouring GEMM");
  cap_at_overlap(out.back(), cmp, step, "compute");
  add({LeverId::DdpBuckets, "DDP bucket size and overlap", "DistributedDataParallel(bucket_cap_mb=..., gradient_as_bucket_view=True)",
       "cluster-specific tuning; too small buckets add launch overhead", "", ""},
      "exposed gradient sync", grad_comm, kOverlapHides, "all-reduce overlapped with backward");
  cap_at_overlap(out.back(), cat(j, Category::ComputeBackward), step, "backward compute");
  const bool sharded = sharded_job(r);
  if (sharded && out.back().applies) {
    out.back().applies = false;
    out.back().basis = "the parameters are sharded (all-gather or reduce-scatter kernels: FSDP or ZeRO), whose "
                       "gradient reduction DDP's buckets do not drive: FSDP prefetch acts on this time; " +
                       out.back().basis;
  }
  add({LeverId::AccumulateAllreduce, "gradient accumulation to cut all-reduces", "model.no_sync() on all but the last micro-batch",
       "longer optimiser feedback loop", "",
       "the effective batch grows: learning-rate schedules tuned per step no longer compare"},
      "exposed gradient sync", grad_comm, 1.0 - 1.0 / kAccumulationSteps, "one all-reduce every 4 micro-batches");
  add({LeverId::FsdpPrefetch, "FSDP forward/backward prefetch", "FSDP(backward_prefetch=BACKWARD_PRE, forward_prefetch=True)",
       "more memory in flight (limit_all_gathers)", "", ""},
      "exposed gradient sync and parameter all-gather", grad_comm + comm_for(CommRole::ParamGather), kPrefetchHides,
      "the next layer's all-gather runs under current compute");
  cap_at_overlap(out.back(), cat(j, Category::ComputeForward) + cat(j, Category::ComputeBackward), step, "compute");
  if (!sharded && out.back().applies) {
    out.back().applies = false;
    out.back().basis = "no all-gather or reduce-scatter kernel on any rank: the parameters are not sharded (no FSDP "
                       "or ZeRO), so there is nothing to prefetch; " + out.back().basis;
  }
  // A save every k steps slows the steps after it too (the serialisation evicts the loop's memory
  // from the caches): measured on a CPU loop saving a 51 MB model every 3rd step, the step after
  // a save ran 4.7 ms over the quiet 1.8 ms. Saving less often removes that with the save.
  const double save_wake = periodic_wake(r, PeriodKind::Checkpoint);
  add({LeverId::AsyncCheckpoint, "asynchronous or less frequent checkpointing", "torch.distributed.checkpoint.async_save, or save every more steps",
       "more work lost on a crash between saves; async saves hold a copy in memory", "", ""},
      save_wake > side ? "side work and the slower steps after it" : "side work", std::max(side, save_wake), kHideAll,
      "the save leaves the training loop");
  add({LeverId::FixStraggler, "fix the straggler (data skew, slow hardware, placement)",
       "balance samples per rank; check the slow rank's GPU clocks, thermals and PCIe/NVLink",
       "needs access to the node; may mean replacing hardware", "", ""},
      "straggler wait", r.job.rank_comparison.straggler ? r.job.rank_comparison.balanced_saving_ns : 0, 1.0,
      "every rank finishes with the median compute");
  add({LeverId::NoActivationCheckpointing, "disable activation checkpointing when memory allows",
       "drop torch.utils.checkpoint / gradient_checkpointing_enable()", "more activation memory: may OOM", "", ""},
      "recomputed forward", m.recompute ? cmp : 0, kRecomputeShare, "recompute costs about a fifth of compute");

  gate_levers_by_kind(out, r);
  for (auto& l : out) {
    l.basis = fmt::format("{}; acts on {} of {} per step, removes up to {}", l.basis, l.targets, ms(l.target_ns),
                          ms(l.removable_ns));
  }
  return out;
}

void gate_levers_by_kind(std::vector<Lever>& levers, const AnalysisResult& r) {
  const JobKind kind = job_kind(r);
  const bool pytorch = job_devices(r).pytorch;
  for (auto& l : levers) fit_to_program(l, pytorch);
  for (auto& l : levers)
    if (const std::string why = kind_excludes(l.id, kind.kind, kind.graphs, kind.syncs_per_step); !why.empty() && l.applies) {
      l.applies = false;
      l.basis = why + "; " + l.basis;
    }
}

constexpr double kBoundOnlyWeight = 0.5;

// Applicable levers first, by predicted saving (else removable time) weighted by certainty. A
// lever on the verdict's own bound comes first when it is worth at least kOnBoundShare of the
// best: the headline names the bound, and the first lever should act on it unless another is
// clearly larger.
constexpr double kOnBoundShare = 0.6;

void order_levers(std::vector<Lever>& levers, Bound bound) {
  // The replay's predicted saving, discounted by half its own uncertainty; a lever no graph change
  // models has only its bound, which the recorded before/after pairs found 2-6x over what the
  // change gave: it counts half.
  auto score = [](const Lever& l) {
    if (l.predicted_step_ns > 0 && l.predicted_replayed)
      return (l.step_ns - l.predicted_step_ns) * l.certainty * (1 - l.predicted_uncertainty / 2);
    return l.removable_ns * l.certainty * kBoundOnlyWeight;
  };
  std::stable_sort(levers.begin(), levers.end(), [&](const Lever& a, const Lever& b) {
    if (a.applies != b.applies) return a.applies;
    return score(a) > score(b);
  });
  if (levers.empty() || !levers.front().applies || levers.front().acts_on == bound) return;
  auto on_bound = std::find_if(levers.begin(), levers.end(),
                               [&](const Lever& l) { return l.applies && l.acts_on == bound; });
  if (on_bound != levers.end() && score(*on_bound) >= kOnBoundShare * score(levers.front()))
    std::rotate(levers.begin(), on_bound, on_bound + 1);
}

namespace {

// Levers only a footgun finding brings (the catalogue has no time to act on without it).
struct FootgunLever {
  LeverId id;
  const char* title;
  const char* knob;
  const char* risk;
  std::optional<LeverId> supersedes;  // a catalogue lever acting on the same time, named less precisely
  // Catalogue levers whose time includes the finding's: they act on what is left once it is fixed.
  std::array<std::optional<LeverId>, 2> narrows{};
};
constexpr FootgunLever kFootgunLevers[] = {
    {LeverId::FixedShapes, "keep input shapes fixed (pad or bucket them)",
     "pad/bucket batches; torch.compile(dynamic=True) or mark_dynamic; cudnn.benchmark=False if shapes must vary",
     "padding wastes some compute on the padded positions", std::nullopt, {LeverId::CudaGraphs, LeverId::MicroBatch}},
    {LeverId::NoDebugApis, "turn off debugging APIs in training runs",
     "torch.autograd.set_detect_anomaly(False); no gradcheck or detect_anomaly() in the loop",
     "NaNs are no longer traced back to the op that made them", std::nullopt, {}},
    {LeverId::ZeroGradSetToNone, "zero_grad(set_to_none=True)", "optimizer.zero_grad(set_to_none=True)",
     "code that reads .grad before backward must handle None", std::nullopt, {}},
    {LeverId::SyncOncePerStep, "synchronise once per step, not after every kernel",
     "drop the synchronise call after each launch; sync (or record a CUDA event) only where results are read",
     "errors surface at the next sync instead of at their kernel; timing code must use CUDA events",
     LeverId::RemoveItem},
    {LeverId::KeepAllocatorCache, "let the caching allocator keep its memory",
     "no torch.cuda.empty_cache() inside the loop and PYTORCH_NO_CUDA_MEMORY_CACHING unset; if the cache was "
     "emptied against fragmentation, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
     "the process keeps its peak reservation: other processes on the GPU see less free memory",
     std::nullopt, {LeverId::CudaGraphs, LeverId::MicroBatch}},
};

const FootgunLever* footgun_lever_row(LeverId id) {
  for (const FootgunLever& e : kFootgunLevers)
    if (e.id == id) return &e;
  return nullptr;
}

// A lever only a finding brings: its row's words, else the registry's (no knob or risk named).
Lever footgun_lever(LeverId id, const FootgunLever* e) {
  Lever l;
  l.id = id;
  l.acts_on = lever_bound(id);
  l.title = e ? e->title : std::string(lever_info(id).what);
  if (e) {
    l.knob = e->knob;
    l.risk = e->risk;
  }
  return l;
}

// Later findings that point at a retired lever leave it retired: its time is already counted.
void retire_superseded(std::vector<Lever>& levers, const FootgunLever& e, const Finding& f,
                       std::set<LeverId>& retired) {
  if (!e.supersedes) return;
  retired.insert(*e.supersedes);
  auto old = std::find_if(levers.begin(), levers.end(), [&](const Lever& l) { return l.id == *e.supersedes; });
  if (old == levers.end()) return;
  old->applies = false;
  old->basis = fmt::format("the {} finding's lever acts on the same time", finding_id(f));
}

// A catalogue lever whose time holds the finding's acts only on the rest once the finding's own
// fix is in: a one-line fix comes before a restructuring that would also have removed its time.
// Example: CUDA graphs on 3.2 ms of host time with 2.3 ms of it allocator calls -> 0.9 ms.
void narrow(std::vector<Lever>& levers, const FootgunLever& e, const Finding& f) {
  for (const std::optional<LeverId>& id : e.narrows) {
    if (!id) continue;
    auto it = std::find_if(levers.begin(), levers.end(), [&](const Lever& l) { return l.id == *id; });
    if (it == levers.end() || !it->applies || it->target_ns <= 0) continue;
    const double fraction = it->removable_ns / it->target_ns;
    it->target_ns = std::max(0.0, it->target_ns - f.gain_ns);
    it->removable_ns = it->target_ns * fraction;
    it->speedup = it->step_ns > 0 ? it->step_ns / (it->step_ns - it->removable_ns) : 1;
    it->applies = it->removable_ns >= kMinApplyShare * it->step_ns && it->removable_ns > 0;
    it->basis = fmt::format("{}; of that, {} per step is the {} finding's, which its own lever removes: up to {} "
                            "is left to this one",
                            it->basis, ms(f.gain_ns), finding_id(f), ms(it->removable_ns));
  }
}

}  // namespace

// A precision lever the catalogue already bounds by the whole fp32 math time keeps that bound; the
// finding that names it is said. Example: fp32 GEMMs of 232 ms a step on an H200, the fp32_no_tf32
// finding's 116 ms would hold TF32 to 1.94x where the replay predicts 6.24x.
bool keeps_its_bound(Lever& l, const Finding& f) {
  if (!physics_bounded(l.id) || !l.applies || l.removable_ns < f.gain_ns) return false;
  l.basis = fmt::format("{}; the {} finding names it", l.basis, finding_id(f));
  return true;
}

void apply_footgun_levers(std::vector<Lever>& levers, const std::vector<Finding>& findings) {
  std::set<LeverId> retired;
  for (const auto& f : findings) {
    if (!f.footgun || !f.lever || retired.count(*f.lever)) continue;
    auto it = std::find_if(levers.begin(), levers.end(), [&](const Lever& l) { return l.id == *f.lever; });
    if (it == levers.end()) {
      const FootgunLever* e = footgun_lever_row(*f.lever);
      if (e) {
        retire_superseded(levers, *e, f, retired);
        narrow(levers, *e, f);
      }
      levers.push_back(footgun_lever(*f.lever, e));
      it = levers.end() - 1;
    }
    if (keeps_its_bound(*it, f)) continue;
    // Two findings may point at one lever (recompiles and re-tuning both call for fixed shapes).
    const double removable = (it->applies && it->basis.rfind("measured", 0) == 0 ? it->removable_ns : 0) + f.gain_ns;
    it->target_ns = removable;
    it->step_ns = f.step_ns;
    it->removable_ns = std::clamp(removable, 0.0, f.step_ns * 0.999);
    it->speedup = f.step_ns > 0 ? f.step_ns / (f.step_ns - it->removable_ns) : 1;
    it->targets = fmt::format("footgun: {}", finding_id(f));
    it->basis = fmt::format("measured from the trace by the {} finding; removes up to {} per step", finding_id(f),
                            ms(it->removable_ns));
    it->applies = it->removable_ns > 0;
  }
}

}  // namespace diagnose_detail
}  // namespace stepscope

namespace stepscope {
namespace {

// The kinds of critical-path time a lever's bound shrinks. The loader, side work and launch
// calls all run on the host, and HTA's path (no data_load_events given) calls them host time.
std::vector<CpKind> path_kinds(Bound b) {
  switch (b) {
    case Bound::GpuCompute: return {CpKind::Compute};
    case Bound::InputPipeline: return {CpKind::Input, CpKind::Host};
    case Bound::Copy: return {CpKind::Copy};
    case Bound::HostLaunch: return {CpKind::Host, CpKind::Launch};
    case Bound::SyncStall: return {CpKind::Sync};
    case Bound::Communication:
    case Bound::Straggler: return {CpKind::Communication};
    case Bound::SideWork: return {CpKind::Host};
    case Bound::Unattributed:
    case Bound::Inconclusive: break;
  }
  return {};
}

double path_share(const CriticalPath& cp, const std::vector<CpKind>& kinds) {
  ns_t t = 0;
  for (CpKind k : kinds) t += cp.by_kind[static_cast<std::size_t>(k)].duration;
  return static_cast<double>(t) / static_cast<double>(cp.length);
}

// HTA's path weighs only what ops record: a loader's Python between ops, or a sleep, is a gap no
// edge weighs. A path summing to under half its step window leaves most of the step out, and a
// share of it would credit a lever with time it never saw.
// Example: a 58 ms step whose path sums to 3.6 ms (the batch wait unrecorded) -> no share.
constexpr double kMinPathCover = 0.5;

bool path_covers_window(const CriticalPath& cp) {
  if (!cp.success || cp.length <= 0) return false;
  if (cp.window_open_end || cp.window_end <= cp.window_start) return true;
  return static_cast<double>(cp.length) >= kMinPathCover * static_cast<double>(cp.window_end - cp.window_start);
}

}  // namespace

void diagnose_detail::add_critical_path_shares(const AnalysisResult& r, std::vector<Lever>& levers) {
  for (Lever& l : levers) {
    const std::vector<CpKind> kinds = path_kinds(l.acts_on);
    double sum = 0;
    int ranks = 0;
    for (const auto& [rank, d] : each_drilldown(r))
      if (path_covers_window(d.critical_path) && !kinds.empty()) sum += path_share(d.critical_path, kinds), ++ranks;
    l.critical_path_share = ranks > 0 ? sum / ranks : -1;
  }
}

}  // namespace stepscope
