// The analysis options of each command, defined once: name, type, unit, default, check and help.
// The command line adds its options from these tables (src/cli/options.cpp), the Python
// module takes its keyword arguments by them (python/src/module.cpp), and both turn the values
// into the pipeline's options with pipeline_options(): the two cannot drift apart.
// python/tests/test_parity.py holds the CLI's --help and the Python signatures to the tables.
//   stepscope analyze t.json -j 4 --stage forward='^fwd'
//   stepscope.analyze("t.json", jobs=4, stages=["forward=^fwd"])    -> the same PipelineOptions
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "stepscope/diff.hpp"
#include "stepscope/option_spec.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/whatif_run.hpp"

namespace stepscope {

// The values of the analysis options, as either front end gathers them.
struct AnalysisSettings {
  int jobs = 0;                     // threads for reading and analysing; 0: one per core
  std::vector<std::string> stages;  // NAME=REGEX stage rules
  std::string step_range;           // the annotation that is one step; "" for none
  std::string model;                // the model preset planned beside memory snapshots; "" for none
  int bootstrap = 2000;             // diff: resamples of the speedup interval
  std::uint64_t seed = 1;           // diff: the bootstrap's seed
  double kernel_threshold = 0.05;   // diff: relative change beyond which a kernel is faster or slower
  std::vector<std::string> changes;  // whatif: the --set changes
  std::int64_t steps = 0;           // whatif: the run's length in steps, to price the plan (0: not priced)
  double gpu_hour_cost = 0;         // whatif: USD per GPU-hour (0: hours only)
};

using SettingsField =
    std::variant<int AnalysisSettings::*, std::int64_t AnalysisSettings::*, std::uint64_t AnalysisSettings::*,
                 double AnalysisSettings::*,
                 std::string AnalysisSettings::*, std::vector<std::string> AnalysisSettings::*>;

struct AnalysisOption {
  OptionSpec spec;
  SettingsField field;  // where the value goes
};

// The analysis options of "analyze", "diff", "whatif" or "history", in the order --help lists
// them; none for another command.
std::span<const AnalysisOption> analysis_options(std::string_view command);

// Refuses a value outside its option's check, in the words both front ends print:
//   jobs = -1  ->  InputError "--jobs must be non-negative (got -1)"
void check_settings(const AnalysisSettings& s, std::span<const AnalysisOption> options);

// The pipeline's options for `command`'s settings, checked first; a stage rule that does not
// parse is an InputError.
PipelineOptions pipeline_options(std::string_view command, const AnalysisSettings& s);

// diff's own options: the bootstrap, its seed and the kernel threshold.
DiffOptions diff_options(const AnalysisSettings& s);
// whatif's own: the changes and the run to price.
WhatIfRunOptions whatif_options(const AnalysisSettings& s);

}  // namespace stepscope
