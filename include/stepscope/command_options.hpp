// The analysis options of each command, defined once: name, type, unit, default, check and help.
// The command line adds its options from these tables (src/cli/analysis_options.cpp), the Python
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

#include "stepscope/pipeline.hpp"

namespace stepscope {

// The values of the analysis options, as either front end gathers them.
struct AnalysisSettings {
  int jobs = 0;                     // threads for reading and analysing; 0: one per core
  std::vector<std::string> stages;  // NAME=REGEX stage rules
  std::string step_range;           // the annotation that is one step; "" for none
  std::string model;                // the model preset planned beside memory snapshots; "" for none
};

enum class OptionType : std::uint8_t { Count, Text, TextList };
enum class OptionCheck : std::uint8_t { None, NonNegative };

using SettingsField = std::variant<int AnalysisSettings::*, std::string AnalysisSettings::*,
                                   std::vector<std::string> AnalysisSettings::*>;

struct OptionSpec {
  std::string_view name;          // the command line's: --name
  std::string_view python;        // the keyword argument (a list's is plural: "stages")
  std::string_view flag;          // a short flag ("-j"), or ""
  OptionType type = OptionType::Text;
  std::string_view unit;          // what a number counts ("threads"), or ""
  std::string_view value_name;    // the value as --help shows it ("NAME=REGEX"), or "" for the type's
  std::string_view default_text;  // the default as the help says it, "" when the value is unset
  OptionCheck check = OptionCheck::None;
  std::string_view help;
  SettingsField field;            // where the value goes
};

// The analysis options of "analyze", "diff" or "whatif", in the order --help lists them; none
// for another command.
std::span<const OptionSpec> analysis_options(std::string_view command);

// "count", "text", "text list"; "", "non-negative".
const char* option_type_name(OptionType t);
const char* option_check_name(OptionCheck c);

// Refuses a value outside its option's check, as the Python module words it:
//   jobs = -1  ->  InputError "--jobs must be non-negative (got -1)"
void check_settings(const AnalysisSettings& s, std::span<const OptionSpec> options);

// The pipeline's options for the settings; a stage rule that does not parse is an InputError.
PipelineOptions pipeline_options(const AnalysisSettings& s);

}  // namespace stepscope
