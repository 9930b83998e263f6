// What-if replay: each rank's analysed steps as one dependency graph, re-timed with the recorded
// durations (the replay error is the model's own trust figure) and with each lever applied as a
// change of the graph (docs/whatif.md).
//
// The graph: the host ops of the training loop's threads (main and autograd) in program order,
// each after the op that ended last before it on either thread (a hand-off between the threads
// is such an edge); launch -> kernel/copy by correlation; stream order on each GPU stream; a
// kernel that waited for another stream's work after that work (the event it waited on); a
// synchronising call -> the GPU work it waited for; the data loader's wait. Host time between
// ops is host work and keeps its recorded length.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/lever_ids.hpp"
#include "stepscope/step_partition.hpp"
#include "stepscope/trace.hpp"

namespace stepscope::whatif {

// A device not in the GPU table has no peaks to scale by: its fp32 matmuls are held to this
// speedup, plus casts of a few percent of their old time. A precision lever the graph does not
// replay predicts by the same rule.
inline constexpr double kUnknownDeviceMatmulCut = 3;
inline constexpr double kUnknownDeviceCastShare = 0.03;

// A change a user asks the replay about (`stepscope whatif --set ...`).
enum class ChangeKind : std::uint8_t {
  KernelScale,    // kernels:CLASS=0.5x: kernels of a class take that factor of their time
  CommOverlap,    // comm=overlap: collectives run under the compute beside them
  BatchWait,      // batch_wait=F: the loader's wait takes F of its time (0: none)
  LaunchGraph,    // launch=graph: launches captured in CUDA graphs
  SyncsRemoved,   // syncs=none: the host no longer waits in synchronising calls
  LoaderWorkers,  // workers=N: N loader workers
  CopiesPinned,   // copies=pinned: pageable copies from pinned memory
  CopiesSideStream,  // copies=side-stream: copies on a stream of their own
};

struct Change {
  ChangeKind kind = ChangeKind::KernelScale;
  std::string text;          // as given
  std::string kernel_class;  // KernelScale: "gemm", "conv", "attention", "elementwise", "norm", "comm", "copy", "all"
  double value = 1;          // KernelScale: time factor; BatchWait: factor; LoaderWorkers: count
};

// Parses one --set value. Throws InputError (one line, naming the value and what is accepted).
// Examples: "kernels:gemm=0.5x" -> KernelScale gemm 0.5; "batch_wait=0" -> BatchWait 0;
// "workers=4" -> LoaderWorkers 4.
Change parse_change(std::string_view text);

struct StepReplay {
  std::int64_t number = 0;
  ns_t measured_ns = 0;  // the step's window in the recording
  ns_t replayed_ns = 0;  // the same window in the replay with recorded durations
};

// An edge kind whose recorded timing the graph does not explain, where it is worst.
struct Disagreement {
  std::string edge;      // "launch -> kernel 'volta_sgemm_128x64_nn' (stream 7)"
  std::int64_t count = 0;
  ns_t total_ns = 0;     // Σ |recorded start - start its edges explain|
};

// What one change does to the rank's steady steps.
struct Prediction {
  std::optional<LeverId> id;  // the lever; none for the user's changes (`whatif --set`)
  bool modelled = false;     // replayed through the graph (else no time of the rank is its to change)
  double speedup = 1;        // replayed steady span before / after the change
  double uncertainty = 0;    // the change's own relative uncertainty (a fraction of the gain)
  std::vector<std::pair<std::string, double>> by_setting;  // setting value -> speedup ("4" workers -> 2.1)
  bool held = false;         // its precondition already holds in the trace: not to be offered
  std::string basis;         // the physics, in words
};

// A plan: compatible levers applied together in one replay, best first; `speedup` of entry k is
// that of the first k+1 levers together.
struct PlanStep {
  LeverId id = LeverId::NumWorkers;
  double speedup = 1;
};

// A stretch of time, on the trace's clock.
struct TimeSpan {
  ns_t start = 0, end = 0;
};

// The replayed steps on one side of the comparison: their windows, when the host waited (the
// data loader's waits and the syncs that waited for the GPU) and when the GPU was busy, merged to a
// drawing's resolution (gaps under a 150th of the span closed, at most kTimelineSpans a lane).
struct TimelineView {
  std::vector<TimeSpan> steps, host_waits, gpu;
};

// A replayed event as recorded and as the plan predicts it (`stepscope whatif --annotate`).
struct TimelineEvent {
  std::string name;
  std::int64_t lane = 0;  // the host thread's tid, or the GPU stream
  bool gpu = false;
  ns_t recorded_ts = 0, recorded_dur = 0, predicted_ts = 0, predicted_dur = 0;
};

// The plan's predicted timeline beside the recorded one: the replayed graph with every lever of the
// plan applied (its final scenario). Not in the JSON: the HTML page and the annotated trace draw it.
struct PlanTimeline {
  bool present = false;
  std::vector<std::string> levers;  // the plan's levers, in order
  TimelineView recorded, predicted;
  std::vector<TimelineEvent> events;  // only with WhatIfOptions::timeline_events
};

inline constexpr std::size_t kTimelineSpans = 40;

struct RankWhatIf {
  bool present = false;          // the rank had steps to replay
  std::int64_t nodes = 0;        // host ops and GPU activities in the graph
  std::int64_t edges = 0;
  std::vector<StepReplay> steps;
  double replay_error_mean = 0;  // |replayed - measured| / measured, over the replayed steps
  double replay_error_max = 0;
  std::vector<Disagreement> disagreements;  // worst first, at most a few
  std::vector<Prediction> levers;
  std::optional<Prediction> custom;  // the user's changes, applied together
  std::vector<PlanStep> plan;
  PlanTimeline timeline;
};

// A rank whose replay departs from the recording by more than this (mean or any step) is not
// trusted for predictions: a trust warning names the edges that disagree.
inline constexpr double kReplayErrorWarn = 0.10;

struct WhatIfOptions {
  bool enabled = true;
  std::vector<Change> changes;  // the user's changes (`whatif --set`), applied together
  bool timeline_events = false;  // keep the plan's timeline event by event (the annotated trace)
};

// The graph of the rank's steady steps, its replay and every lever's prediction.
RankWhatIf model_rank(const RankTrace& rank, const RankFacts& facts, const RankPartition& partition,
                      const WhatIfOptions& opts = {});

// The trust warning of a rank whose replay error is over kReplayErrorWarn; nullopt otherwise.
std::optional<TrustWarning> replay_trust(const RankWhatIf& w, int rank);

}  // namespace stepscope::whatif
