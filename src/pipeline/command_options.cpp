#include "stepscope/command_options.hpp"

#include <fmt/core.h>

#include <array>

#include "stepscope/error.hpp"

namespace stepscope {

namespace {

constexpr std::string_view kJobsHelp = "Threads for reading and for analysing ranks (default: number of cores)";

constexpr OptionSpec jobs_option() {
  return {"jobs", "jobs", "-j", OptionType::Count, "threads", "", "0", OptionCheck::NonNegative, kJobsHelp,
          &AnalysisSettings::jobs};
}

constexpr OptionSpec stage_option(std::string_view help) {
  return {"stage", "stages", "", OptionType::TextList, "", "NAME=REGEX", "", OptionCheck::None, help,
          &AnalysisSettings::stages};
}

constexpr OptionSpec step_range_option(std::string_view help) {
  return {"step-range", "step_range", "", OptionType::Text, "", "", "", OptionCheck::None, help,
          &AnalysisSettings::step_range};
}

const std::array kAnalyze{
    jobs_option(),
    stage_option("Count host ops matching REGEX (RE2 syntax) as stage NAME (forward, backward, optimizer, "
                 "data, sync, side, comm); repeatable"),
    step_range_option("Each range (NVTX or annotation) of this name is one step, e.g. train_step"),
    OptionSpec{"model", "model", "", OptionType::Text, "", "NAME", "", OptionCheck::None,
               "Memory snapshots: set the model states `plan memory` predicts for this model preset (`stepscope "
               "plan models`) beside the observed peak, and say where they differ",
               &AnalysisSettings::model},
};

const std::array kDiff{
    jobs_option(),
    stage_option("Count host ops matching REGEX as stage NAME, on both sides; repeatable"),
    step_range_option("Each range (NVTX or annotation) of this name is one step, on both sides, e.g. train_step"),
};

const std::array kWhatIf{jobs_option()};

}  // namespace

std::span<const OptionSpec> analysis_options(std::string_view command) {
  if (command == "analyze") return kAnalyze;
  if (command == "diff") return kDiff;
  if (command == "whatif") return kWhatIf;
  return {};
}

const char* option_type_name(OptionType t) {
  switch (t) {
    case OptionType::Count: return "count";
    case OptionType::Text: return "text";
    case OptionType::TextList: return "text list";
  }
  return "";
}

const char* option_check_name(OptionCheck c) { return c == OptionCheck::NonNegative ? "non-negative" : ""; }

void check_settings(const AnalysisSettings& s, std::span<const OptionSpec> options) {
  for (const OptionSpec& o : options) {
    const auto* count = std::get_if<int AnalysisSettings::*>(&o.field);
    if (o.check == OptionCheck::NonNegative && count && s.**count < 0)
      throw InputError(fmt::format("--{} must be {} (got {})", o.name, option_check_name(o.check), s.**count));
  }
}

PipelineOptions pipeline_options(const AnalysisSettings& s) {
  PipelineOptions po;
  po.ingest.jobs = s.jobs;
  po.analyze.jobs = s.jobs;
  for (const auto& rule : s.stages) po.analyze.partition.stage_rules.push_back(parse_stage_rule(rule));
  po.analyze.partition.step_range = s.step_range;
  po.memory_model = s.model;
  return po;
}

}  // namespace stepscope
