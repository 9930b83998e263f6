// Lever transformations of the step graph (whatif/levers.cpp) and the user's changes
// (whatif/change.cpp): each edits a Scenario over the base graph.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "stepscope/facts.hpp"
#include "whatif/graph.hpp"

namespace stepscope::whatif {

// What a lever's physics reads besides the graph: the rank's device and facts.
struct Context {
  const Graph& g;
  const RankFacts& facts;
  const RankTrace& trace;
  const RankPartition& partition;
  ns_t base_span = 0;
  double replay_error = 0;
  Scenario base;  // the recorded graph's scenario, copied by each change
};

// Runs a scenario and returns its speedup over the base replay.
double speedup_of(const Context& c, const Scenario& s);

// Kernel time multipliers for the ops a predicate picks: duration x factor.
void scale_ops(const Graph& g, Scenario& s, const std::function<bool(const Op&)>& pick, double factor);

// A micro-batch `factor` times larger, the global batch kept: each step processes `factor` times
// the samples. The host's dispatch and launches are paid once a step; everything else is taken to
// grow with the samples: every GPU activity (linearly, which small kernels beat), the loader's
// batches, side work. That is conservative: the optimizer, the gradients' collectives and a save
// are per step too, and their share a sample shrinks as well, but the lever is credited only with
// the host's. Example: a launch-bound step of 10 ms host work over 2 ms of kernels, x2 -> the same
// 10 ms for twice the samples: 2.0x per sample.
void grow_micro_batch(const Graph& g, Scenario& s, double factor);
// The waits of an epoch's start: a loader call that follows another in the same step (the
// iterator ran out and a new one started its workers), with the host time between them.
std::vector<std::size_t> epoch_restarts(const Graph& g);

// Per atom: a wait of an epoch's start, the restart and the loader call before it (the iterator
// that ran out). No queue carries over an epoch: the next one's batches are asked for only once
// its iterator starts, so neither more workers nor a deeper queue shortens these waits.
std::vector<std::uint8_t> epoch_start_waits(const Graph& g);

// Loader waits divided among `workers` worker processes (a multiprocess loader: `workers` times
// as many as it has).
void loader_workers(const Graph& g, Scenario& s, double workers);

// A multiprocess loader's worker count, read from its bursts: workers started together finish
// together, so a loader slower than the step waits long once every `workers` batches. 0 when the
// waits show no such period. Example: waits 31, 0, 31, 0, 31, 0 ms -> 2.
int burst_workers(const Graph& g);

// Each step's host work (the time between its host ops) held to the lower quartile of the steps'
// host work: the loop as it runs without what disturbed it on the same cores (fresh workers
// starting up, a save's writes). Example: host work 8, 14, 51, 20, 38, 36, 34, 18 ms -> each step
// at most 14 ms.
void settle_host_work(const Graph& g, Scenario& s);

// Which sync of a step stays: none; its last; its last where it has several (the loss read once a
// step), a step's only sync being the one removed.
enum class KeepLast : std::uint8_t { None, Always, WhereSeveral };

// Every sync that waited, released (the host no longer waits), but the last of a step as `keep` says.
void release_syncs(const Graph& g, Scenario& s, KeepLast keep);

// The released syncs that read a scalar back (.item(): a copy of a few bytes to the host, then the
// wait) lose the read itself: the copy, its call and the sync's call.
void drop_reads(const Graph& g, Scenario& s);

// Launch runs between syncs captured as CUDA graphs: one graph launch replaces the run's launch
// calls and the host work between them; the GPU runs the kernels back to back.
void capture_graphs(const Graph& g, const RankFacts& f, const RankTrace& t, Scenario& s);

// Kernels fused into their neighbours: of the picked kernels' launches, every second one goes with
// the host work before it (the framework's dispatch of the op that launched it).
void fuse_launches(const Graph& g, Scenario& s, const std::function<bool(const Op&)>& pick);

// Copies moved to a stream of their own; a kernel after an input copy waits for it.
void copies_to_side_stream(const Graph& g, Scenario& s, const std::function<bool(const Op&)>& pick);

// Collectives started as early as the step's first backward kernel (overlapped with backward).
void overlap_comm(const Graph& g, const RankFacts& f, Scenario& s, const std::function<bool(const Op&)>& pick);

// Gradient collectives issued as their buckets become ready (DDP): a bucket's gradients are all
// computed once its share of the backward has run, so of a step's n collectives the j-th (from 0)
// follows the backward kernel (j+1)/n of the way through the step's backward kernels, on the host
// (its launch) and on the GPU (the communication stream waits for that kernel). The last bucket
// therefore still runs after the backward. A step with one collective (the buckets are not in the
// trace) starts it with the backward, as overlap_comm does. Example: 4 all-reduces, 40 backward
// kernels -> they follow kernels 10, 20, 30 and 40.
void overlap_comm_as_ready(const Graph& g, const RankFacts& f, Scenario& s, const std::function<bool(const Op&)>& pick);

// Host-device copies not known to be pinned at pinned bandwidth (never slower than recorded), and
// the calls that waited for them released.
void pin_copies(const Graph& g, Scenario& s, double pinned_gbs);

// The pinned host-to-device bandwidth of the rank: measured from its pinned copies, else by the
// device's PCIe generation. Example: an H100 (PCIe 5) -> 48 GB/s.
double pinned_bandwidth_gbs(const Graph& g, const RankFacts& f, const RankTrace& t);

bool fp32_matmul(const Op& o);
bool half_matmul(const Op& o);

// The rates an fp32 matmul moves to under a precision lever, from the GPU table.
struct MatmulTarget {
  double fp32_tflops = 0;     // the SIMT fp32 peak the recorded kernels ran at
  double tflops = 0;          // the new type's dense tensor-core peak
  double bandwidth_gbs = 0;   // device memory
  double element_bytes = 2;   // of the new type's operands
  bool casts = true;          // autocast casts the fp32 inputs first; TF32 reads them as they are
};

// A GEMM's work from its op's recorded "Input Dims" (aten::mm [[M, K], [K, N]], addmm, bmm,
// baddbmm): 2 x batch x M x K x N FLOPs, the operands' and the output's elements.
// Example: "[[8192, 8192], [8192, 8192]]" -> 1.1e12 FLOPs, 134M operand and 67M output elements.
struct MatmulWork {
  double flops = 0, operand_elements = 0, output_elements = 0;
};
std::optional<MatmulWork> gemm_work(std::string_view input_dims);

// The recorded shapes of the GEMM op that launched a kernel, where the trace has them.
std::optional<MatmulWork> recorded_gemm_work(const RankFacts& f, const RankTrace& t, const Op& o);

// fp32 GEMM/convolution kernels at the new type's rate, as a roofline: the longer of the work at
// the tensor cores' attained peak and the operands' and output's bytes at the memory's bandwidth,
// at least the shortest tensor-core GEMM kernel, plus autocast's input casts; never slower than
// recorded. The work is the recorded shapes' where the op has them; without, the kernel's time at
// the fp32 attained peak, its bytes those of the most compact GEMM doing that work (an n x n x n
// one: the least traffic, so the memory bound is never overstated).
// Example (H200, 8192^3): 21.4 ms fp32 -> 1.39 ms of work + 0.17 ms of casts.
void narrow_matmuls(const Graph& g, const RankFacts& f, const RankTrace& t, Scenario& s, const MatmulTarget& m);

std::vector<Prediction> lever_predictions(const Context& c);

// The plan: levers with a gain applied together, best first (each joins, by its own gain, if it
// still gains on top of those before it, one per group of alternatives).
// `applied` is the scenario with every lever of the plan, `replayed` its replay (the predicted
// timeline; empty when the plan is).
struct Plan {
  std::vector<PlanStep> steps;
  Scenario applied;
  Replayed replayed;
};
Plan make_plan(const Context& c, const std::vector<Prediction>& levers);

// The plan's final replay beside the recording: step windows and busy lanes, and with
// `with_events` each replayed event, named from the trace.
PlanTimeline plan_timeline(const Graph& g, const RankTrace& t, const Plan& plan, bool with_events);

// The user's changes applied together.
Prediction custom_prediction(const Context& c, const std::vector<Change>& changes);

}  // namespace stepscope::whatif
