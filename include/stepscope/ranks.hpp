// Ranks side by side: rank-local vs global slowdown, the straggler, collective skew.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepscope/clock_alignment.hpp"
#include "stepscope/step_partition.hpp"

namespace stepscope {

struct RankRow {
  int rank = 0;
  double step_ns = 0;        // steady-state mean step
  double compute_ns = 0;     // steady-state mean compute
  double grad_sync_ns = 0;   // steady-state mean exposed grad sync
};

struct StepSkew {
  std::int64_t step = 0;
  ns_t skew_ns = 0;  // longest minus shortest exposed grad sync across ranks in this step
};

// What makes a straggler late: its GPU compute, or its time outside compute and collectives (a
// slower input path, host work the profiler may not even record).
enum class StragglerCause : std::uint8_t { None, Compute, HostSide };
const char* straggler_cause_name(StragglerCause c);  // "", "compute", "host_side"
// What the straggler's excess measures, for reports: "compute" or "time outside collectives".
const char* straggler_excess_of(StragglerCause c);

struct RankComparison {
  std::vector<RankRow> rows;
  bool local = false;            // the slowdown is rank-local (one rank differs), else global
  std::optional<int> straggler;  // the rank the others wait for inside collectives
  StragglerCause straggler_cause = StragglerCause::None;
  // Its compute over the other ranks' median compute (fraction); for a host-side straggler, its
  // time outside collectives (step minus exposed grad sync) over theirs.
  double straggler_excess = 0;
  double median_wait_ns = 0;     // the other ranks' median exposed grad sync per step
  double balanced_saving_ns = 0; // step time a balanced rank set would save per step
  std::vector<StepSkew> skew;
  double mean_skew_ns = 0;
  // The ranks' clocks fitted to their matched collectives, and the arrival skew measured on them.
  ClockAlignment clocks;
  // The job's size as its traces declare it (distributedInfo's world_size), 0 when unknown; and,
  // when too few of its ranks are in view to name a straggler or a rank-local slowdown, why not.
  int world_size = 0;
  std::string withheld;
};

// One rank's step partition as the comparison reads it, beside the rank's number.
struct RankPartitionOf {
  int rank = 0;
  const RankPartition* partition = nullptr;
};

// The ranks side by side, in rank order.
RankComparison compare_ranks(const std::vector<RankPartitionOf>& ranks);

}  // namespace stepscope
