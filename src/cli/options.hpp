// The command line's options, added from their one definition (stepscope/option_spec.hpp): the
// analysis options of stepscope/command_options.hpp and the calculators' of
// stepscope/plan/commands.hpp.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

#include "stepscope/command_options.hpp"

namespace stepscope::cli {

// Adds `command`'s analysis options to `cmd`, each writing its value into `settings`.
void add_analysis_options(CLI::App& cmd, std::string_view command, AnalysisSettings& settings);

// Adds the option `o` writing its text(s) into `texts` (a flag: none), as --help shows it: names,
// value name, check, default and whether it is required. The check itself is the caller's, made
// with check_option_value(), so the command line and Python refuse a value in the same words.
CLI::Option* add_option(CLI::App& cmd, const OptionSpec& o, std::vector<std::string>& texts);

}  // namespace stepscope::cli
