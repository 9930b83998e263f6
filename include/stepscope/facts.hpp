// The facts layer: what every name, event and rank of a trace is, decided once after ingest.
//
// Real traces differ from the textbook (fp8 and expert-parallel kernels, backward on the autograd
// thread, old category names, GPUs without bf16). Every rule that reads a name lives behind this
// header; analysis, diagnose and the reports read the facts and never match names themselves.
//
//   name facts   per distinct name: kernel class, engine and data type, communication kind,
//                host role (loader, sync, side work), stage hint, and flags the detectors ask for
//   event facts  per event: the stage it runs in (inherited from enclosing host ops, or through
//                the launch for GPU work); per host thread its role; which sync calls really wait
//   device       per rank: the GPU model with capability predicates every lever asks
//   trust        warnings with stable codes and the figures behind them (see Trust)
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepscope/kernel_class.hpp"
#include "stepscope/trace.hpp"
#include "stepscope/trust_codes.hpp"

namespace stepscope {

// ---------------------------------------------------------------------------------------------
// Name facts

// What executes a GEMM or convolution: tensor cores (HMMA/IMMA/GMMA, AMD MFMA) or plain SIMT
// FMA units. Unknown when the name does not say (Triton, generic names).
enum class Engine : std::uint8_t { Unknown, TensorCore, Simt };
const char* engine_name(Engine e);  // "unknown", "tensor_core", "simt"

// The math input type of a kernel, from its name tokens; the narrowest one the name carries
// (an fp8 GEMM writing bf16 is fp8).
enum class DataType : std::uint8_t { Unknown, Fp64, Fp32, Tf32, Fp16, Bf16, Fp8, Int8 };
inline constexpr int kDataTypeCount = 8;
const char* data_type_name(DataType d);  // "unknown", "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"
inline bool is_16bit_or_narrower(DataType d) {
  return d == DataType::Fp16 || d == DataType::Bf16 || d == DataType::Fp8 || d == DataType::Int8;
}

// Which communication library or scheme a kernel belongs to. Everything but None is
// communication in the partition, overlap figures and verdict (the HTA-compatible section keeps
// HTA's own rule, which knows only NCCL/RCCL/HCCL prefixes).
enum class CommKind : std::uint8_t {
  None,
  Collective,      // NCCL / RCCL / HCCL / MSCCL collectives and point-to-point
  ExpertParallel,  // MoE dispatch / combine (DeepEP-style ep:: kernels)
  Nvshmem,         // NVSHMEM one-sided transfers
  CustomAllReduce, // hand-written all-reduce / all-gather / all-to-all kernels (vLLM, TRT-LLM, MSCCL++)
};
const char* comm_kind_name(CommKind c);

// What a communication kernel is for: the collective its launching host call names
// ("nccl:all_to_all", "c10d::_reduce_scatter_base", "nccl:send"), else the kernel's own name, and
// the stage it was launched in. The kernel name alone can mislead: NCCL runs all-to-all, and in
// older releases reduce-scatter, as ncclKernel_SendRecv kernels.
//   SendRecv kernel under nccl:all_to_all                         -> Exchange
//   SendRecv kernel under nccl:send, or nccl:coalesced (batch_isend_irecv) -> PointToPoint
//   AllReduce kernel under nccl:all_reduce in backward            -> GradientSync
//   AllReduce kernel inside an explicitly marked forward          -> Activation
//   AllReduce kernel under _CopyToModelParallelRegionBackward     -> Activation (tensor parallel)
//   SendRecv kernel with no communication call above its launch   -> Other
enum class CommRole : std::uint8_t {
  GradientSync,  // all-reduce / reduce-scatter of gradients: DDP buckets, FSDP / ZeRO reduction
  ParamGather,   // all-gather: FSDP / ZeRO-3 gathering sharded parameters (or row-wise sharded tables)
  Exchange,      // all-to-all: MoE token dispatch/combine, sharded embeddings (TorchRec, DLRM)
  PointToPoint,  // send/recv the host calls by name: pipeline-parallel stage transfers
  Activation,    // all-reduce / reduce-scatter in a marked forward, or any collective in a tensor-parallel
                 // region (Megatron's mappings): tensor, sequence or model parallelism
  Other,         // broadcast, reduce, and SendRecv kernels no host call explains
};
inline constexpr int kCommRoleCount = 6;
// "gradient_sync", "param_gather", "exchange", "point_to_point", "activation", "other"
const char* comm_role_name(CommRole r);
// In words, for reports: "gradient sync", "all-to-all exchange", "pipeline send/recv", ...
const char* comm_role_label(CommRole r);

// The host role of a name, in the priority order used to blame an idle GPU.
// Comm: host-side communication (gloo collectives, MPI calls): the host moves the data itself.
enum class HostRole : std::int8_t { Loader = 0, Sync, Side, Launch, Op, Comm, Marker = -1 };
inline constexpr int kHostRoleCount = 6;  // Loader..Comm

// A stage a host op marks (its descendants inherit it).
enum class StageHint : std::int8_t { Forward = 0, Backward, Optimizer, None = -1 };
const char* stage_hint_name(StageHint s);  // "forward", "backward", "optimizer", "" for None
inline constexpr int kStageHintCount = 3;

// How a synchronising call waits. ScalarRead (aten::item, _local_scalar_dense) waits on the
// device only when a device wait runs inside it; on a CPU tensor it is a few microseconds of
// host work and no sync at all.
enum class SyncKind : std::uint8_t { None, DeviceWait, BlockingCopy, ScalarRead };

// Flags detectors ask of a name; one bit each.
enum NameFlag : std::uint64_t {
  kNameZeroGrad = std::uint64_t{1} << 0,        // optimizer.zero_grad
  kNameRecompute = std::uint64_t{1} << 1,       // activation checkpointing marker
  kNameConvOp = std::uint64_t{1} << 2,          // aten convolution op
  kNameSynchronize = std::uint64_t{1} << 3,     // a runtime call named ...Synchronize
  kNameAutotune = std::uint64_t{1} << 4,        // cudnnFind / miopenFind
  kNameCompiledRegion = std::uint64_t{1} << 5,  // a torch.compile'd region ran
  kNameCompile = std::uint64_t{1} << 6,         // dynamo / inductor compilation
  kNameOptimizerStep = std::uint64_t{1} << 7,   // Optimizer.step#...
  kNameFusedOptimizer = std::uint64_t{1} << 8,  // multi-tensor / foreach / fused optimizer op or kernel
  kNameAnomalyOp = std::uint64_t{1} << 9,       // ops anomaly mode runs per backward node
  kNameItem = std::uint64_t{1} << 10,           // aten::item
  kNameIsnan = std::uint64_t{1} << 11,          // aten::isnan
  kNameBmm = std::uint64_t{1} << 12,            // aten::bmm / baddbmm (attention scores)
  kNameSoftmax = std::uint64_t{1} << 13,        // a softmax kernel (not log-softmax)
  kNameLayout = std::uint64_t{1} << 14,         // NCHW <-> NHWC conversion kernel
  kNameFill = std::uint64_t{1} << 15,           // fill kernel
  kNameFusedKernel = std::uint64_t{1} << 16,    // a kernel named fused
  kNameNanCheck = std::uint64_t{1} << 17,       // isnan / or kernels of anomaly checks
  kNameGemv = std::uint64_t{1} << 18,           // matrix-vector: bandwidth-bound whatever the precision
  kNameBackwardOp = std::uint64_t{1} << 19,     // an autograd node (..Backward0, evaluate_function)
  kNameProfilerStep = std::uint64_t{1} << 20,   // ProfilerStep#N
  kNameLaunchCall = std::uint64_t{1} << 21,     // a runtime/driver call that launches a kernel
  kNameAsyncCopyCall = std::uint64_t{1} << 22,  // cudaMemcpyAsync / hipMemcpyAsync
  kNameForwardEntry = std::uint64_t{1} << 23,   // a module's forward (nn.Module: / Module._call_impl)
  kNameLossOrOutput = std::uint64_t{1} << 24,   // the final softmax/log-softmax/cross-entropy of a classifier
  kNameServing = std::uint64_t{1} << 25,        // a serving engine's iteration or request marker (vLLM, SGLang, TGI)
  kNameHarness = std::uint64_t{1} << 26,        // a benchmark harness's marker (warmup / measure ranges, PARAM, timeit)
  kNameEventTiming = std::uint64_t{1} << 27,    // cudaEventRecord / cudaEventElapsedTime / cudaEventSynchronize
  kNameGraphLaunch = std::uint64_t{1} << 28,    // cudaGraphLaunch / hipGraphLaunch: a CUDA graph replay
  kNameWarmupRange = std::uint64_t{1} << 31,    // a harness's or user's warm-up range
  kNameGradCollective = std::uint64_t{1} << 32,  // a host-side all-reduce of gradients (gloo/nccl:all_reduce)
  kNameBackwardKernel = std::uint64_t{1} << 33,  // a kernel computing gradients (..Backward.., dgrad, wgrad)
  kNameDeviceAlloc = std::uint64_t{1} << 34,     // cudaMalloc / cudaFree and their HIP and driver twins
  kNameForwardOnlyOp = std::uint64_t{1} << 35,   // a module's forward op (aten::linear, conv2d, layer_norm, gelu)
  kNameCoalescedComm = std::uint64_t{1} << 36,   // a group of communication calls launched together (nccl:coalesced)
  kNameTensorParallel = std::uint64_t{1} << 37,  // Megatron's tensor/sequence-parallel mappings (..ParallelRegion..)
  kNameDeviceApi = std::uint64_t{1} << 38,      // a name only a GPU job calls: CUDA/HIP runtime, cuDNN, cuBLAS, MIOpen, NCCL
  kNameOneTimeSetup = std::uint64_t{1} << 39,   // context creation, device queries, library handles, module loading
  kNameModuleRange = std::uint64_t{1} << 40,    // a module's range as with_modules records it (kModuleRangePrefix)
  kNameLaunchApi = std::uint64_t{1} << 29,      // a runtime/driver call with "Launch" in its name (kernels, graphs, host functions)
  kNameBlockingCall = std::uint64_t{1} << 30,   // *Synchronize calls and copies but *Async ones: the GPU timeline's sync points
};
// The prefix PyTorch's profiler gives a module's range ("nn.Module: Linear_0" under with_modules);
// what follows it is the module's name, as the drill-down's module grouping shows it.
inline constexpr std::string_view kModuleRangePrefix = "nn.Module: ";

struct NameFact {
  // GPU side (meaningful for kernels, copies, memsets).
  KernelClass cls = KernelClass::OtherCompute;
  Engine engine = Engine::Unknown;
  DataType dtype = DataType::Unknown;
  CommKind comm = CommKind::None;
  Collective collective = Collective::None;
  // Host side.
  HostRole role = HostRole::Op;
  StageHint stage = StageHint::None;
  SyncKind sync = SyncKind::None;
  std::uint64_t flags = 0;
  bool has(NameFlag f) const { return (flags & f) != 0; }
  bool is_comm() const { return comm != CommKind::None; }
};

// Facts of a kernel name alone. Worked examples:
//   "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4"
//     -> Gemm, Simt, Fp32        (FFMA: no tensor cores)
//   "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_..._tensor16x8x8_kernel"
//     -> GemmTensorCore, TensorCore, Tf32
//   "void deep_gemm::fp8_gemm_kernel<128u, ...>"  -> GemmTensorCore, TensorCore, Fp8
//   "void deep_ep::intranode::dispatch<8, 768, 8192>(...)"  -> Communication, ExpertParallel
//   "void cutlass::transpose_kernel<...>"  -> Elementwise (a GEMM library's helper, not a GEMM)
NameFact kernel_name_fact(std::string_view name);
// Facts of a host op / runtime call name alone (role, stage hint, sync kind, flags).
NameFact host_name_fact(std::string_view name);
// The GPU's busy time (the union of its kernels, copies and memsets of positive length, on all
// streams) within each interval [a, b), a <= b, in one pass over the rank's GPU records.
//   work [0,10) [5,20) [30,40); intervals [15,35) [40,50) -> {10, 0}
std::vector<ns_t> gpu_busy_within(const RankTrace& t, const std::vector<std::pair<ns_t, ns_t>>& intervals);
// N of a "ProfilerStep#N" name (N digits only, within int64), else -1. Names with this number are
// the ones flagged kNameProfilerStep.
//   "ProfilerStep#12" -> 12    "ProfilerStep#" -> -1    "ProfilerStep#-1" -> -1    "ProfilerStep#3a" -> -1
std::int64_t profiler_step_number(std::string_view name);

// ---------------------------------------------------------------------------------------------
// Device model

enum class GpuVendor : std::uint8_t { Unknown, Nvidia, Amd, Other };
enum class Capability : std::uint8_t { Unknown, No, Yes };
const char* capability_name(Capability c);  // "unknown", "no", "yes"

struct DeviceModel {
  bool present = false;           // anything known about the GPU
  std::string name;               // "NVIDIA A100-SXM4-80GB"
  GpuVendor vendor = GpuVendor::Unknown;
  int cc_major = -1, cc_minor = -1;  // CUDA compute capability; for AMD, HIP's major.minor
  std::string arch;               // "sm_80", "gfx942"; "" when unknown
  std::int64_t memory_bytes = -1;
  int sms = -1;
  std::string source;             // "deviceProperties", "GPU name", "kernel names (lower bound)", ...
  bool lower_bound = false;       // the arch is a lower bound (read from kernel names only)

  Capability tensor_cores() const;   // fp16 tensor cores / MFMA
  Capability bf16() const;           // bf16 tensor-core math (autocast bf16 pays off)
  Capability tf32() const;           // TF32 matmuls (allow_tf32 / matmul precision 'high')
  Capability fp8() const;            // fp8 tensor-core math (Transformer Engine, torchao)
  Capability flash_attention2() const;  // FlashAttention-2 kernels (SDPA's flash backend)
  std::string describe() const;      // "NVIDIA A100-SXM4-80GB (sm_80)"
};

// The device a rank ran on, from its device properties, else its GPU's name, else (a lower
// bound) the architecture prefixes of its kernels.
DeviceModel device_model(const RankTrace& t);

// ---------------------------------------------------------------------------------------------
// Trust: what limits the conclusions a trace supports.

// One warning. `code` is its registered TrustCode (stepscope/trust_codes.hpp: ColdStart,
// IncompleteGpuRecords, FewSteps, ...), which reports spell by its stable string. `figures` are the
// numbers behind it, by name.
struct TrustWarning {
  TrustCode code = TrustCode::NoStepMarkers;
  bool is(TrustCode c) const { return code == c; }
  TrustSeverity severity = TrustSeverity::Info;
  int rank = 0;
  std::string text;     // what was seen, in words
  std::string advice;   // how to record a trace that does not have this problem ("" if none)
  std::map<std::string, double> figures;
};

struct Trust {
  std::vector<TrustWarning> warnings;
  bool has(TrustCode code) const { return find(code) != nullptr; }
  const TrustWarning* find(TrustCode code) const;
  // By the stable string, for codes read from outside (a ground truth, the command line); an
  // unregistered string is found nowhere.
  bool has(std::string_view code) const { return find(code) != nullptr; }
  const TrustWarning* find(std::string_view code) const;
  bool blocks() const;  // any warning that leaves the verdict inconclusive
};

// A host call that took far longer than its peers once: lazy module loading, library handle
// creation, autotuning in the first call. Left out of the steady-state partition.
struct StartupOutlier {
  std::uint32_t event = 0;
  ns_t start = 0, end = 0;
  ns_t peer_median_ns = 0;  // median duration of the other calls of the same name
};

// ---------------------------------------------------------------------------------------------
// The kind of run: which steps and levers exist for it.

enum class RunKind : std::uint8_t {
  Training,   // backward or optimizer steps
  Inference,  // repeated forward passes or a serving engine's iterations, no backward
  Benchmark,  // a timing harness: warmup/measure ranges, event timing, a sync per repetition
  OneShot,    // a single pass (one forward, a script's one call): nothing repeats
  Unknown,    // nothing to tell by (no PyTorch ops, no GPU work)
};
const char* run_kind_name(RunKind k);  // "training", "inference", "benchmark", "one-shot", "unknown"

// ---------------------------------------------------------------------------------------------
// Input inventory: what one input file holds, taken before anything is claimed about it.
//
// A claim compares activities, so it needs them in the input: a communication-only export cannot
// say communication is exposed behind compute it does not hold, a capture of start-up cannot bound
// a step, a file of four ranks read as one unions four GPUs. Each claim states what it needs of
// the inventory in one table (kClaimPreconditions); an unmet row is a trust warning with the
// row's code, and the claim is withheld or inconclusive.

// The program that wrote the input.
enum class Recorder : std::uint8_t { TorchProfiler, AutogradProfiler, NsightSystems };
const char* recorder_name(Recorder r);   // "torch.profiler", "autograd_profiler", "nsys"
const char* recorder_label(Recorder r);  // "torch.profiler (Kineto)", "legacy autograd profiler", "Nsight Systems"

// The kinds of activity an input can hold, each counted in InputInventory::counts.
enum class Activity : std::uint8_t {
  HostOps,          // framework ops on the host (cpu_op; NVTX ranges under nsys)
  Annotations,      // record_function / ProfilerStep / user ranges
  PythonFrames,     // python_function events (with_stack)
  RuntimeCalls,     // CUDA/HIP runtime and driver calls
  ComputeKernels,   // GPU kernels that compute
  CommKernels,      // GPU communication kernels (NCCL, RCCL, expert-parallel, NVSHMEM)
  Copies,           // GPU memcpy records
  Memsets,          // GPU memset records
  HostCollectives,  // communication calls on the host (nccl:*, c10d::*, gloo, MPI)
  MemoryEvents,     // [memory] allocation events (profile_memory)
  Shapes,           // ops carrying their input shapes (record_shapes)
};
inline constexpr int kActivityCount = 11;
const char* activity_name(Activity a);  // "host_ops", "annotations", "python_frames", ...

struct InputInventory {
  Recorder recorder = Recorder::TorchProfiler;
  std::string format;                            // "Kineto JSON, schema 1", "JSON array", "SQLite export"
  std::array<std::uint64_t, kActivityCount> counts{};
  std::vector<std::string> options;              // recording options in force: with_stack, record_shapes, profile_memory
  int processes = 0, threads = 0, gpus = 0, streams = 0;
  // Ranks the file holds: 1, or more where trace-merging tools wrote a whole job into one file
  // (process names "RANK 2 - GPU 0", one launching process per GPU). Evidence in words.
  int ranks_in_file = 1;
  std::string ranks_evidence;
  ns_t window_ns = 0;                            // first event start to last event end
  // The input holds only a program's start-up (context creation, first allocations, module
  // loading, autotuning): no step, no compute kernel. Evidence in words.
  bool startup_only = false;
  std::string startup_evidence;
  // Why this is a GPU job ("device properties", "GPU records", "CUDA runtime calls", "CUDA op names
  // such as cudnn_convolution"); "" when nothing in view says a GPU was used: CPU only.
  std::string device_evidence;

  std::uint64_t count(Activity a) const { return counts[static_cast<std::size_t>(a)]; }
  bool has(Activity a) const { return count(a) > 0; }
  bool gpu_job() const { return !device_evidence.empty(); }
  bool host_side() const {
    return has(Activity::HostOps) || has(Activity::Annotations) || has(Activity::PythonFrames) ||
           has(Activity::RuntimeCalls);
  }
  bool gpu_side() const {
    return has(Activity::ComputeKernels) || has(Activity::CommKernels) || has(Activity::Copies) || has(Activity::Memsets);
  }
};

// The inventory in one line, for the reports:
//   "torch.profiler (Kineto): 1 process, 3 threads, 1 GPU (2 streams); host ops 1204, kernels 3310,
//    comm kernels 96, copies 12; with_stack; 1.82 s"
std::string describe_inventory(const InputInventory& inv);

// The recorder that writes inputs of a layout.
Recorder recorder_of(TraceLayout layout);

// How to record this input again so that it holds what a claim needs, in the recorder's own
// terms: `what` is one of "gpu" (GPU activity), "host" (host ops), "steps" (step markers),
// "more_steps" (three steady steps or more), "warm" (steady steps past start-up), "lean" (no
// stacks, shapes or memory), "ranks" (one file per rank).
//   advice(NsightSystems, "gpu") -> "nsys profile --trace=cuda,nvtx,osrt ..."
std::string recording_advice(Recorder r, std::string_view what);

// Claims and what each needs of the inventory. A row's code is the trust warning raised when
// the need is unmet; `blocks` rows leave the claim (and a verdict resting on it) inconclusive.
enum class Claim : std::uint8_t { Bound, CommunicationBound, HostLevers, RankComparison, Stability };
const char* claim_name(Claim c);  // "bound", "communication_bound", "host_levers", "rank_comparison", "stability"

struct ClaimPrecondition {
  Claim claim;
  const char* code;     // stable trust code when unmet
  const char* needs;    // the need, in words (docs/facts.md prints the table)
  bool blocks;          // true: the claim is withheld; false: it stands with the warning beside it
};
inline constexpr ClaimPrecondition kClaimPreconditions[] = {
    {Claim::Bound, "no_host_activity", "host activity (ops, annotations or runtime calls): a bound compares the "
                                       "host's and the GPU's time", true},
    {Claim::Bound, "incomplete_gpu_records", "GPU records, where anything shows a GPU was used", true},
    {Claim::Bound, "startup_only", "more than start-up: a step, an iteration or compute kernels", true},
    {Claim::Bound, "several_ranks_in_file", "one rank per file, or a file the reader split into its ranks", true},
    {Claim::CommunicationBound, "filtered_export", "compute kernels beside the communication kernels", true},
    {Claim::HostLevers, "profiler_overhead", "host time not inflated by with_stack, record_shapes or profile_memory",
     false},
    {Claim::RankComparison, "partial_job", "at least half of the job's ranks (world_size), and at least two", true},
    {Claim::RankComparison, "separate_runs", "traces of one job: a rank named, a collective, or windows that overlap",
     true},
    {Claim::Stability, "few_steps", "at least three steady steps", false},
};

// ---------------------------------------------------------------------------------------------
// The user's rules (--stage NAME=REGEX): host ops whose name matches REGEX (RE2 syntax) mark stage
// NAME (forward, backward, optimizer; their descendants inherit it) or play role NAME (data, sync,
// side, comm), over what the name facts decided.
struct StageRule {
  std::string stage;
  std::string regex;
  bool operator==(const StageRule&) const = default;
};

// "forward=^model\\." -> {forward, ^model\\.}; InputError on a missing '=', an unknown stage or a bad
// expression (RE2 has no lookaround or backreferences).
StageRule parse_stage_rule(const std::string& text);

// ---------------------------------------------------------------------------------------------
// The facts of one rank.

// ---------------------------------------------------------------------------------------------
// The event facts' step phase: which step each event belongs to, read from the steps the partition
// detects (step detection needs the name facts, so this phase runs after it).

// A step window as the step phase reads it: the partition's windows, in start order.
struct StepSpan {
  ns_t start = 0, end = 0;            // the window: host start .. end of its GPU work, or the GPU side
  ns_t host_start = 0, host_end = 0;  // the host's span of the step
  bool steady = false;                // not warm-up
};

inline constexpr std::int32_t kNoStep = -1;

// Per event: the step it belongs to, and whether that step is steady (4 bytes an event, a bit a
// step). An event belongs to the latest-starting window holding its start; where the host runs
// ahead of the GPU (windows measured on the GPU side), a host event belongs to the step whose host
// span holds its start, and GPU work to the step of the call that launched it.
//   windows [0,50) steady, [40,90) warm-up; an event at 45 -> step 1, not steady
//   host runs ahead: host spans [0,10) [10,20); a kernel at 35 launched at 12 -> step 1
struct EventSteps {
  std::vector<std::int32_t> step;  // per event: index into the partition's steps, or kNoStep
  std::vector<bool> step_steady;   // per step
  std::int32_t of(std::size_t i) const { return i < step.size() ? step[i] : kNoStep; }
  bool steady(std::size_t i) const {
    const std::int32_t s = of(i);
    return s != kNoStep && step_steady[static_cast<std::size_t>(s)];
  }
};

EventSteps event_steps(const RankTrace& t, const std::vector<StepSpan>& steps, bool host_runs_ahead);

enum class ThreadRole : std::uint8_t { Main, Autograd, Loader, Other };
const char* thread_role_name(ThreadRole r);

// The rank's number is its RankAnalysis's (ingest.rank), not held here.
struct RankFacts {
  std::vector<NameFact> names;          // indexed by StrId; facts of names events carry
  // Event facts. Per event: its stage (host: inherited from the enclosing ops; GPU: through its
  // launch), after the user's rules once apply_stage_rules ran; the drill-down's tables, the
  // partition and the sync counts all read this one.
  std::vector<StageHint> event_stage;
  // Per event: the HostRole of a timed host op (a call that launches GPU work is Launch, a scalar
  // read that never waits is Op), after the user's role rules; kNotHostOp for everything else.
  std::vector<std::int8_t> event_role;
  // Per timed host op: the innermost timed host op enclosing it on its thread, else kNoParent.
  //   thread: step [0,100) > forward [10,60) > aten::mm [20,30)  ->  parent(mm) = forward,
  //   parent(forward) = step, parent(step) = kNoParent
  std::vector<std::uint32_t> event_parent;
  std::vector<StageRule> stage_rules;   // the user's rules event_stage and event_role carry
  // Per event: its step and steady flag; empty until the partition detected the steps
  // (partition_rank_into), then read by everything that asks which step an event is in.
  EventSteps event_steps;
  std::vector<ThreadRole> track_role;   // per RankTrace::host_tracks entry
  int main_track = -1;                  // the training loop's (Python) thread
  // Per event: a synchronising call that really waited on the device and is not nested in
  // another one (the one count of host syncs every figure uses).
  std::vector<std::uint32_t> device_syncs;
  // Per event (sorted): scalar reads (.item()) with no device wait inside, on CPU tensors, and the
  // synchronising calls nested in them (_local_scalar_dense). Not syncs.
  std::vector<std::uint32_t> scalar_reads_without_wait;
  std::vector<StartupOutlier> startup;  // one-time start-up calls
  DeviceModel device;
  bool pytorch = false;                 // the trace holds PyTorch ops (else no PyTorch knobs)
  RunKind run_kind = RunKind::Unknown;
  std::string run_kind_evidence;        // what decided it, in words
  bool cuda_graphs = false;             // the run already replays CUDA graphs
  bool gpu_records = false;             // any kernel, copy or memset with a duration
  std::uint64_t launch_calls = 0;       // runtime/driver launches and async copies on the host
  std::uint64_t launches_without_gpu = 0;  // of those, correlation ids no GPU record carries
  std::uint64_t gpu_without_launch = 0;    // GPU records whose correlation no host call carries
  std::uint64_t graph_launches = 0, graph_launches_without_gpu = 0;  // CUDA graph replays, and untraced ones
  Trust trust;                          // trace-level warnings (analysis adds step-level ones)
  InputInventory inventory;             // what the input file holds
  // Every communication kernel (by event, ascending) and what it is for.
  std::vector<std::pair<std::uint32_t, CommRole>> comm_roles;
  // Per device_syncs entry: how much of the call the GPU spent busy (kernels, copies, memsets).
  // The union of the GPU's work they are read from is not kept: a trace has millions of records.
  //   GPU busy {[0,10), [20,30)}, a sync over [5, 25)  ->  10
  std::vector<ns_t> device_sync_busy;

  // The role of communication kernel `event`; GradientSync for an event comm_roles does not list.
  CommRole comm_role(std::uint32_t event) const;
  const NameFact& of(StrId id) const { return names[id]; }
  const NameFact& of_event(const RankTrace& t, std::size_t i) const { return names[t.events.name[i]]; }
};

// The inventory of `t`, whose name facts, launches, device and start-up calls `f` already holds.
InputInventory take_inventory(const RankTrace& t, const RankFacts& f);

// The device a rank's reports name: the model where known, else "GPU of unknown model" where the
// inventory holds evidence of a GPU, else "CPU only".
std::string device_line(const RankFacts& f);

inline constexpr std::int8_t kNotHostOp = -2;
inline constexpr std::uint32_t kNoParent = UINT32_MAX;  // no enclosing op (facts and the call tree)

// The facts of a rank, without user rules (apply_stage_rules adds them).
RankFacts compute_facts(const RankTrace& t);

// The second phase: the user's --stage rules over the event facts (stage and role), GPU work
// taking its launch's new stage. Communication roles keep the stages the names gave. Run once,
// right after compute_facts, before anything reads the event facts; InputError on a bad rule.
//   rule backward=^my_bwd$, thread: my_bwd [0,50) > aten::mm [10,20) launching kernel K
//     -> event_stage of my_bwd, aten::mm and K: Backward
void apply_stage_rules(const RankTrace& t, const std::vector<StageRule>& rules, RankFacts& f);

}  // namespace stepscope
