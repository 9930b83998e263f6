// The step dependency graph of one rank (stepscope/whatif.hpp) and its replay.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/kernel_class.hpp"
#include "stepscope/step_partition.hpp"
#include "stepscope/trace.hpp"
#include "stepscope/whatif.hpp"

namespace stepscope::whatif {

enum class AtomKind : std::uint8_t {
  Marker,  // a step's host start or end (no time of its own)
  Launch,  // a runtime call that queues GPU work and returns
  Sync,    // a call that returns once GPU work is done (synchronize, blocking copy, .item()'s wait)
  Loader,  // the data loader's __next__ on the main thread
  Side,    // checkpoint / logging / torch.save
  Call,    // any other runtime call
};

// A host op of the replayed threads, outermost on its thread.
struct Atom {
  ns_t ts = 0, dur = 0;
  std::int32_t pred = -1;      // the atom that ended last before it on the replayed threads
  std::int32_t own_prev = -1;  // the previous atom of its own thread
  ns_t gap = 0;                // ts - end of pred: host work between them
  AtomKind kind = AtomKind::Call;
  std::int32_t step = -1;      // index into Graph::steps
  // Sync: the GPU activity it returned after, the delay from that activity's end to its
  // return, and its own cost when the GPU is done already.
  std::int32_t target = -1;
  ns_t wake = 0, own = 0;
  bool waited = false;          // the recorded call waited for the GPU
  bool queue_wait = false;      // a launch that waited for room in the GPU's queue (not a removable sync)
  bool thread_main = true;
  std::uint32_t event = 0;
};

enum class OpKind : std::uint8_t { Compute, Comm, Copy, Memset };

struct Op {
  ns_t ts = 0, dur = 0;
  std::int32_t stream = 0;    // dense stream number
  std::int32_t launch = -1;   // the atom that launched it (or, without one, the atom it follows)
  ns_t delay = 0;             // from the launch atom's start to the op's start, when the launch decided it
  std::int32_t prev = -1;     // the op before it on its stream (-1: none in the graph)
  ns_t prev_end = 0;          // prev's end, or the recorded end of the stream's last earlier work
  ns_t gap = 0;               // after prev's end
  std::int32_t after = -1;    // another stream's op it waited for
  ns_t after_gap = 0;
  std::int32_t step = -1;     // of its launch
  OpKind kind = OpKind::Compute;
  KernelClass cls = KernelClass::OtherCompute;
  DataType dtype = DataType::Unknown;
  Engine engine = Engine::Unknown;
  bool gemv = false;
  HostMem mem = HostMem::Unknown;
  CopyKind copy = CopyKind::None;
  std::int64_t bytes = -1;
  std::uint32_t event = 0;
};

struct GraphStep {
  std::int64_t number = 0;
  std::int32_t start_marker = -1, end_marker = -1;
  bool gpu_window = false;  // the window is measured on the GPU side (the host runs ahead)
};

// A node to time: a host op's start (0), a GPU activity (1), a sync's return (2).
struct Visit {
  std::uint8_t type = 0;
  std::int32_t index = 0;
};

struct Graph {
  std::vector<Atom> atoms;  // in order of start
  std::vector<Op> ops;      // in order of start
  std::vector<GraphStep> steps;
  std::int32_t streams = 0;
  std::int64_t edges = 0;
  std::vector<Disagreement> disagreements;
  bool multiprocess_loader = false;  // the loader already has worker processes
  ns_t launch_delay_p50 = 0;         // launch -> start while the stream was idle
  std::vector<Visit> order;          // the replay's evaluation order, the same for every scenario
};

// The median of durations (the upper one of an even count); 0 for none.
ns_t median_of(std::vector<ns_t> v);

// Fills Graph::order: nodes by their recorded start, a sync's return at its recorded end.

void order_visits(Graph& g);

Graph build_graph(const RankTrace& rank, const RankFacts& facts, const RankPartition& partition);

// What a lever changes, over the base graph's recorded values.
struct Scenario {
  std::vector<ns_t> atom_dur, atom_gap;
  std::vector<std::uint8_t> release;  // per atom: a sync that no longer waits
  std::vector<ns_t> op_dur, op_delay, op_gap;
  std::vector<std::int32_t> op_prev, op_launch, op_after;
  std::vector<ns_t> op_after_gap;
  // The loader: with workers > 0, each wait becomes max(ipc, load / workers - the consumer's
  // time since the previous batch), `load` being the atom's duration in atom_dur.
  double workers = 0;
  ns_t ipc = 0;
  // Per atom: a loader wait more workers do not shorten (an epoch's respawn: each fresh worker's
  // start-up and first batch take what they took).
  std::vector<std::uint8_t> undivided;
  // Samples a step processes, against the recording's (a larger micro-batch): speedups compare
  // the time per sample. Example: a step of twice the samples replayed in 1.1x the time -> 1.82x.
  double samples = 1;
};

Scenario base_scenario(const Graph& g);

struct Replayed {
  std::vector<ns_t> atom_start, atom_end, op_start, op_end;
  std::vector<ns_t> step_ns;  // each step's replayed window
  std::vector<ns_t> step_start;
  ns_t span = 0;              // first step's start to the last step's end
};

Replayed replay(const Graph& g, const Scenario& s);

// The steps' recorded windows, measured as the replay measures them: their lengths, and where
// they lie on the trace's clock.
std::vector<ns_t> recorded_windows(const Graph& g);
std::vector<TimeSpan> recorded_step_windows(const Graph& g);

}  // namespace stepscope::whatif
