// The job's what-if: the ranks' collectives joined across ranks and replayed (docs/whatif.md).
//
// Each rank's replay (stepscope/whatif.hpp) keeps a collective's recorded duration, which holds
// its wait for the other ranks: alone, a rank cannot say what the job gains when the slowest rank
// speeds up. The job replay joins the ranks at their collectives (the keys the clock alignment
// matches: process group + sequence number, or order within the step): on the aligned clock, a
// rank reaches collective k after its own work since its previous collective, and every member
// leaves k when the last one has arrived plus the collective's own transfer time (the shortest
// member's kernel: the last to arrive waits for no one). Worked example, two ranks, one
// all-reduce per step, transfer 1 ms:
//   rank 0 works 10 ms between all-reduces, rank 1 13 ms -> each all-reduce ends 14 ms after the
//   previous one on both ranks; rank 1 re-timed to 10 ms -> 11 ms: the job's step 1.27x faster.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stepscope/lever_ids.hpp"

#include "stepscope/clock_alignment.hpp"
#include "stepscope/ranks.hpp"

namespace stepscope::whatif {

// Accumulating over this many micro-batches all-reduces once for them all: the rank's lever and
// the job's replay take the same count.
inline constexpr double kAccumulation = 4;

// A lever the job replay predicts: the replayed span of the steady collectives before over after.
struct JobLever {
  LeverId id = LeverId::FixStraggler;  // FixStraggler, AccumulateAllreduce
  double speedup = 1;
  double uncertainty = 0;   // the change's own relative uncertainty (a fraction of the gain)
  std::string basis;
};

struct JobWhatIf {
  bool present = false;           // two or more ranks share steady collectives on one clock
  int ranks = 0;                  // ranks joined
  std::int64_t collectives = 0;   // matched collectives replayed
  ns_t recorded_span_ns = 0;      // first arrival to last end of those collectives, as recorded
  ns_t replayed_span_ns = 0;      // the same span replayed with the recorded times
  double replay_error = 0;        // |replayed - recorded| / recorded
  std::vector<JobLever> levers;
};

// The joined replay of `ranks` (their marks, in rank order as align_clocks read them) on the
// clocks `rc.clocks` fitted, with the straggler `rc` names. Not present for one rank, for ranks
// that share no steady collective, or when the rank comparison is withheld.
JobWhatIf model_job(std::span<const RankMarks> ranks, const RankComparison& rc);

// The job lever of `id`, or nullptr.
const JobLever* find_job_lever(const JobWhatIf& j, LeverId id);

}  // namespace stepscope::whatif
