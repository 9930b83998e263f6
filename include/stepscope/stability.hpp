// Step stability: is step time stable or bursty, which steps spike, and do spikes recur.
#pragma once

#include <cstdint>
#include <vector>

#include "stepscope/partition.hpp"

namespace stepscope {

struct RankTrace;  // stepscope/trace.hpp
struct RankFacts;  // stepscope/facts.hpp

struct Spike {
  std::int64_t step = 0;      // step number
  ns_t duration = 0;
  ns_t excess = 0;            // over the typical quiet step
  Category grew = Category::Idle;  // the category that grew the most over its quiet-step mean
  ns_t grew_by = 0;
};

enum class PeriodKind : std::uint8_t {
  None,
  LoaderWorkers,   // batch wait every N steps: workers / prefetch depth cannot keep up
  EpochBoundary,   // a long batch wait recurring: worker respawn at each epoch
  Checkpoint,      // side work (or an op-free host gap) every K steps
  Other,
};
const char* period_kind_name(PeriodKind k);

struct Periodicity {
  PeriodKind kind = PeriodKind::None;
  int every = 0;               // spikes recur every `every` steps
  Category category = Category::Idle;
  ns_t mean_excess = 0;        // mean spike excess over the quiet step
  std::size_t occurrences = 0;
};

// The rank's number is its RankAnalysis's (ingest.rank), not held here.
struct Stability {
  std::size_t steps = 0;        // steady-state steps the figures cover
  double mean_ns = 0, p50_ns = 0, p90_ns = 0, max_ns = 0;
  double cv = 0;                // standard deviation / mean
  double quiet_ns = 0;          // the typical quiet step (lower quartile)
  std::vector<Spike> spikes;
  Periodicity period;
  bool bursty = false;
};

// The loop's batch fetches (the data loader's outermost __next__ calls on the loop's threads) in
// each of the partition's steps, by index; empty where the trace records no fetch at all.
std::vector<int> batch_fetches(const RankTrace& t, const RankFacts& f, const RankPartition& r);

// `fetches` (batch_fetches) tells an epoch's start from a loader falling behind: without them, a
// long recurring wait is taken for an epoch boundary by its length alone.
Stability compute_stability(const RankPartition& r, const std::vector<int>& fetches = {});

// What a recurring stall costs a step with the slower steps in its wake: every steady step's
// excess over the quiet step, spread over the steady steps. With a period every step is in some
// stall's wake, so the steps above the quiet one are the cause's whole cost, not only the spikes.
// Example: steps 15, 160, 21, 39, 126, 35, 17 ms, quiet 17 ms -> (143 + 4 + 22 + 109 + 18) / 7
// = 42 ms a step, where the spikes alone give 36 ms.
double excess_over_quiet(const RankPartition& r, const Stability& s);

}  // namespace stepscope
