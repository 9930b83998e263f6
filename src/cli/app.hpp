// The whole command line, defined in one place. The binary parses with it, and the man pages and
// shell completions are generated from it at build time (tools/clidoc), so they cannot drift
// from what the binary accepts.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

namespace stepscope::cli {

// A command's subcommand and the function that runs it once that subcommand is parsed.
using Runner = std::pair<CLI::App*, std::function<int()>>;

// Names and describes `app`, adds its global options and every registered command.
std::vector<Runner> define_app(CLI::App& app);

}  // namespace stepscope::cli
