// The step partition: every instant of every step window gets exactly one category.
//
// Priority at an instant (see docs/partition.md): a compute kernel runs -> compute of the stage of
// the host op that launched it; else a communication kernel -> exposed grad sync; else a copy or
// memset; else the GPU is idle and the time is blamed on what the host's main thread (then the
// autograd thread) is inside. CPU-only traces are partitioned on the host timeline alone.
#pragma once

#include <string>
#include <vector>

#include "stepscope/step_partition.hpp"

namespace stepscope {

// snake_case names, identical to the generator's ground truth ("compute_forward", ...).
const char* category_name(Category c);
// Short label for tables ("compute: forward", "batch wait", ...).
const char* category_label(Category c);
ns_t compute_ns(const CategoryTimes& t);
ns_t total_ns(const CategoryTimes& t);
const char* step_source_name(StepSource s);

// Where a rank's steps came from, for reports: "ProfilerStep", "repeated annotation 'forward'",
// "whole trace: its GPU work (...)". Holds trace text: escape it for the medium.
std::string step_source_text(const RankPartition& p);

struct PartitionOptions {
  std::vector<StageRule> stage_rules;  // the facts layer applies them (apply_stage_rules)
  std::string step_range;  // --step-range NAME: the annotation (NVTX range) that is one step
};

// `facts` carries opts.stage_rules where the caller applied them (analyze does, once, for every
// table); otherwise the partition computes the facts afresh with them.
RankPartition partition_rank(const RankTrace& t, const RankFacts& facts, const PartitionOptions& opts = {});
// The same, computing the rank's facts first.
RankPartition partition_rank(const RankTrace& t, const PartitionOptions& opts = {});
// partition_rank, and the facts' step phase from its windows (facts.event_steps): what analyze
// runs, once, before anything asks which step an event is in.
RankPartition partition_rank_into(const RankTrace& t, RankFacts& facts, const PartitionOptions& opts);

// The partition's windows as the facts' step phase reads them (event_steps).
std::vector<StepSpan> step_spans(const RankPartition& p);
// The facts' event steps where partition_rank_into filled them, else those of `p`'s windows,
// computed into `computed` (a caller holding a partition_rank result and facts without steps).
const EventSteps& event_steps_of(const RankTrace& t, const RankFacts& facts, const RankPartition& p,
                                 EventSteps& computed);

// The step whose host span [host_start, host_end) holds host time `ts`, or -1. When the host
// runs ahead, windows are measured on the GPU side and a step's host events lie before its
// window: they are placed by host span.
//   host spans [0, 10) [10, 20), GPU-side windows [25, 40) [40, 55): host_span_step(12) -> 1
std::int64_t host_span_step(const std::vector<StepPartition>& steps, ns_t ts);

// One run of a single category on the timeline.
struct CategoryRun {
  ns_t start = 0, end = 0;
  Category category = Category::Idle;
};

// The runs behind each step's `ns`: runs[k] tiles steps[k]'s window [start, end) in time order and
// sums per category to steps[k].ns. Re-runs the sweep (with the options the steps were made
// with); for outputs that draw the partition on the timeline, such as the annotated trace.
std::vector<std::vector<CategoryRun>> partition_runs(const RankTrace& t, const std::vector<StepPartition>& steps,
                                                     const PartitionOptions& opts = {});

}  // namespace stepscope
