// Pipeline-parallel bubble and the compounding of stacked speedups.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace stepscope::plan {

struct PipelineInput {
  int stages = 4;           // p
  int micro_batches = 8;    // m
  int interleave = 1;       // v: virtual stages per GPU (Megatron interleaved 1F1B)
  std::optional<double> micro_batch_s;  // forward+backward time of one micro-batch on one stage
  double target_bubble = 0.10;          // for the "micro-batches needed" answer
};

struct PipelineSchedule {
  std::string name;
  double bubble_fraction = 0;  // idle share of the step: (p-1) / (v m + p - 1)
  double bubble_overhead = 0;  // idle time relative to useful time: (p-1) / (v m)
  double efficiency = 0;       // 1 - bubble_fraction
  std::optional<int> micro_batches_in_flight;  // activation sets the first stage holds
  std::optional<double> step_s;
  int micro_batches_for_target = 0;  // smallest m reaching target_bubble
};

struct PipelineResult {
  PipelineInput input;
  std::vector<PipelineSchedule> schedules;  // GPipe, 1F1B, and interleaved when v > 1
};

PipelineResult plan_pipeline(const PipelineInput& in);

struct StackItem {
  std::string name;
  double speedup = 1;    // multiplier on throughput (step time divides by it)
  std::string category;  // the part of the step it shortens ("" = its own part)
};

// "BF16 AMP=1.7", "1.7" or "loader workers@data wait=1.4" -> item; throws InputError if the
// factor is not positive.
StackItem parse_stack_item(std::string_view text);

// "data wait=0.3" -> {"data wait", 0.3}: the share of the baseline step a category takes.
std::pair<std::string, double> parse_stack_share(std::string_view text);

struct StackInput {
  double step_s = 0;
  std::vector<StackItem> items;
  std::optional<double> run_cost;   // cost of the baseline run (any currency)
  std::optional<double> run_hours;  // duration of the baseline run
  // Share of the baseline step per category; a category without one is taken to be as large
  // as the largest saving any one of its levers claims.
  std::vector<std::pair<std::string, double>> shares;
};

struct StackRow {
  std::string name;
  double speedup = 1;     // the factor given
  double cumulative = 1;
  double step_s = 0;
  std::optional<double> cost, hours;
  double effective = 1;   // what the lever adds to the levers above it
  std::string category;
};

struct StackResult {
  StackInput input;
  std::vector<StackRow> rows;  // first row is the baseline
  std::vector<std::string> notes;
};

StackResult plan_stack(const StackInput& in);

}  // namespace stepscope::plan
