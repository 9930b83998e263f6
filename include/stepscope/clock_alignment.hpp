// Clock alignment across ranks, and the collective arrival skew it makes measurable.
//
// Ranks on different hosts read different clocks: their traces can disagree by milliseconds (NTP)
// or, when Kineto's base time differs, by months. Comparing when ranks reach a collective needs
// one clock. Two facts give it:
//   - Kineto writes times relative to baseTimeNanoseconds (older traces: absolute epoch µs), so
//     trace time + base puts every rank on its host's wall clock (the coarse step);
//   - a collective completes on every member within microseconds (the last data to arrive ends
//     it everywhere), so the ends of the same collective on two ranks mark the same instant.
// Each rank's offset is fitted to the ends of the collectives it shares with the others (a
// median polish: end = the collective's instant + the rank's offset + noise, robust to the odd
// mismatched pair); what the fit leaves unexplained is the residual alignment error. On the
// aligned clock, the spread of the collective's *starts* is its arrival skew: the first rank to
// arrive waits for the last.
//
// A collective is the same one on every rank when it has the same key: its process group and
// PyTorch's collective sequence number (args "Process Group Name" and "Seq", newer releases), or
// else its group, kind (all_reduce, ...), ProfilerStep number and place among the group's
// collectives of that kind in that step. Worked example, two ranks, one all_reduce each step:
//   rank 0 ends at 1,000,000 and 2,000,000 ns; rank 1 (its clock 5 ms ahead) at 6,000,010 and
//   7,000,000 -> rank 1's offset 5,000,005 ns, residual 2 ns (each end 2.5 ns from the pair's
//   midpoint, in whole ns); if rank 1 started them at
//   5,400,000 and 6,900,000 and rank 0 at 100,000 and 1,100,000, the aligned starts differ by
//   300,000 and 800,000 ns: mean arrival skew 550 µs, rank 1 last in both.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/step_partition.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {

// One collective as one rank ran it.
struct CollectiveMark {
  std::uint64_t key = 0;    // alike on every member of the collective (see above)
  ns_t start = 0, end = 0;  // its kernel, on the rank's wall clock (trace time + base time)
  bool point_to_point = false;  // a send/receive kernel (all_to_all runs on them too)
  CommRole role = CommRole::GradientSync;  // what it is for (the job replay's levers act on some roles)
  bool steady = true;  // issued in a steady-state step (or the rank has no ProfilerSteps)
};

// At most this many marks per rank are kept, chosen by key so that every rank keeps the same
// collectives: enough for a robust fit, small enough for a summary file at thousands of ranks.
inline constexpr std::size_t kMaxCollectiveMarks = 512;

struct CollectiveMarks {
  std::vector<CollectiveMark> marks;  // in time order
  std::int64_t kernels = 0;           // communication kernels that could be keyed, before thinning
  bool by_sequence = false;           // the keys come from sequence numbers (else from order)
};

// The communication kernels of one rank as marks, thinned to kMaxCollectiveMarks. When the rank
// has ProfilerSteps, kernels outside every step are left out unless keyed by sequence number
// (two ranks' windows need not start at the same collective). `base_time_ns` is the trace's
// baseTimeNanoseconds (0 when it has none: its times are absolute already).
CollectiveMarks collective_marks(const RankTrace& t, const RankFacts& facts, const RankPartition& partition,
                                 std::int64_t base_time_ns);

enum class ClockMethod : std::uint8_t {
  None,            // one rank: nothing to align
  BaseTime,        // trace time + base time only: no collective was recorded by two ranks
  CollectiveEnds,  // then fitted to the ends of matched collectives
};
const char* clock_method_name(ClockMethod m);  // "none", "base time", "collective ends"

struct RankClock {
  int rank = 0;
  // This rank's clock minus the job clock (the first aligned rank's), after the base time.
  ns_t offset_ns = 0;
  bool aligned = false;          // shares collectives with the first rank, directly or through others
  std::int64_t matched = 0;      // its collectives that another rank recorded too
  ns_t residual_ns = 0;          // median |its aligned end - the collective's fitted instant|
  std::int64_t last_arrivals = 0;  // matched collectives it reached last
  ns_t arrival_wait_ns = 0;      // summed time between its arrival and the last member's
};

struct ClockAlignment {
  ClockMethod method = ClockMethod::None;
  std::string keyed_by;          // "sequence number", "order within step", or both joined by " + "
  std::int64_t collectives = 0;  // keys that two or more ranks recorded, less the mismatched
  std::int64_t mismatched = 0;   // keys whose ends disagree beyond the tolerance: not one collective
  std::vector<RankClock> ranks;  // one per rank, in rank order (empty for None)
  std::int64_t unaligned_ranks = 0;  // ranks left on base time: no collective links them to the first
  // Residual alignment error over every matched end (|aligned end - fitted instant|).
  ns_t residual_p50_ns = 0, residual_p99_ns = 0;
  // Arrival skew of the matched collectives: latest minus earliest aligned start.
  double arrival_skew_mean_ns = 0;
  ns_t arrival_skew_p50_ns = 0, arrival_skew_p90_ns = 0;
  std::optional<int> last_rank;  // the rank that reached the most collectives last
  double last_share = 0;         // of the matched collectives, the share it reached last
};

// The marks of one rank, as align_clocks reads them.
struct RankMarks {
  int rank = 0;
  const CollectiveMarks* marks = nullptr;
};

// `ranks` in rank order. O(M log M) in the total marks M, times a few fitting rounds.
ClockAlignment align_clocks(std::span<const RankMarks> ranks);

}  // namespace stepscope
