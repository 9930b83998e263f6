#include "stepscope/command_options.hpp"

#include <array>

#include "stepscope/error.hpp"

namespace stepscope {

namespace {

using S = AnalysisSettings;

constexpr AnalysisOption jobs_option() {
  return {count("jobs", "Threads for reading and for analysing ranks (default: number of cores)")
              .short_flag("-j").in_units("threads").checked(OptionCheck::Range, 0, kMaxJobs),
          &S::jobs};
}

constexpr AnalysisOption stage_option(std::string_view help) {
  return {text_list("stage", help).python_name("stages").shown_as("NAME=REGEX"), &S::stages};
}

constexpr AnalysisOption step_range_option(std::string_view help) {
  return {text("step-range", help), &S::step_range};
}

const std::array kAnalyze{
    jobs_option(),
    stage_option("Count host ops matching REGEX (RE2 syntax) as stage NAME (forward, backward, optimizer, "
                 "data, sync, side, comm); repeatable"),
    step_range_option("Each range (NVTX or annotation) of this name is one step, e.g. train_step"),
    AnalysisOption{text("model", "Memory snapshots: set the model states `plan memory` predicts for this model preset "
                                 "(`stepscope plan models`) beside the observed peak, and say where they differ")
                       .shown_as("NAME"),
                   &S::model},
};

const std::array kDiff{
    jobs_option(),
    stage_option("Count host ops matching REGEX as stage NAME, on both sides; repeatable"),
    step_range_option("Each range (NVTX or annotation) of this name is one step, on both sides, e.g. train_step"),
    AnalysisOption{count("bootstrap", "Bootstrap resamples for the speedup interval")
                       .in_units("resamples").default_is("2000").checked(OptionCheck::Range, 100, 1000000),
                   &S::bootstrap},
    AnalysisOption{count("seed", "Seed of the bootstrap (same seed, same interval)").default_is("1"), &S::seed},
    AnalysisOption{real("kernel-threshold",
                        "A kernel counts as faster or slower beyond this relative change of its time (default 0.05)")
                       .default_is("0.05").checked(OptionCheck::NonNegative),
                   &S::kernel_threshold},
};

const std::array kWhatIf{
    jobs_option(),
    AnalysisOption{text_list("set", "A change to replay (see below); repeatable").python_name("changes").shown_as("CHANGE"),
                   &S::changes},
    AnalysisOption{count("steps", "Price the plan for a run of N steps (GPU-hours before and after)")
                       .shown_as("N").in_units("steps").checked(OptionCheck::NonNegative),
                   &S::steps},
    AnalysisOption{real("gpu-hour-cost", "With --steps: USD per GPU-hour, for the run's cost")
                       .shown_as("USD").in_units("USD").checked(OptionCheck::NonNegative),
                   &S::gpu_hour_cost},
};

// The runs a history analyses.
const std::array kHistory{jobs_option()};

}  // namespace

std::span<const AnalysisOption> analysis_options(std::string_view command) {
  if (command == "analyze") return kAnalyze;
  if (command == "diff") return kDiff;
  if (command == "whatif") return kWhatIf;
  if (command == "history") return kHistory;
  return {};
}

void check_settings(const AnalysisSettings& s, std::span<const AnalysisOption> options) {
  for (const AnalysisOption& o : options) {
    std::visit(
        [&](auto field) {
          if constexpr (std::is_arithmetic_v<std::decay_t<decltype(s.*field)>>)
            check_option_value(o.spec, static_cast<double>(s.*field));
        },
        o.field);
  }
}

PipelineOptions pipeline_options(std::string_view command, const AnalysisSettings& s) {
  check_settings(s, analysis_options(command));
  PipelineOptions po;
  po.ingest.jobs = s.jobs;
  po.analyze.jobs = s.jobs;
  for (const auto& rule : s.stages) po.analyze.partition.stage_rules.push_back(parse_stage_rule(rule));
  po.analyze.partition.step_range = s.step_range;
  po.memory_model = s.model;
  return po;
}

DiffOptions diff_options(const AnalysisSettings& s) {
  return {.bootstrap_samples = s.bootstrap, .seed = s.seed, .kernel_threshold = s.kernel_threshold};
}

WhatIfRunOptions whatif_options(const AnalysisSettings& s) {
  WhatIfRunOptions w;
  w.changes = s.changes;
  w.steps = s.steps;
  w.gpu_hour_cost = s.gpu_hour_cost;
  return w;
}

}  // namespace stepscope
