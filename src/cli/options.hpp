// The command line's analysis options, added from their one definition (stepscope/command_options.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <string_view>

#include "stepscope/command_options.hpp"

namespace stepscope::cli {

// Adds `command`'s analysis options to `cmd`, each writing its value into `settings`.
void add_analysis_options(CLI::App& cmd, std::string_view command, AnalysisSettings& settings);

}  // namespace stepscope::cli
