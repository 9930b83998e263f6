// The whole command line, defined in one place. The binary parses with it, and the man pages and
// shell completions are generated from it at build time (tools/clidoc), so they cannot drift
// from what the binary accepts.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

#include "stepscope/pipeline.hpp"

namespace stepscope::cli {

// A command's subcommand and the function that runs it once that subcommand is parsed.
using Runner = std::pair<CLI::App*, std::function<int()>>;

// Names and describes `app`, adds its global options and every registered command.
std::vector<Runner> define_app(CLI::App& app);

// What the binary does as a run moves between reading and analysing: main() registers its
// allocator's tuning here (the library links no allocator of its own); the commands that run the
// pipeline pass it on as PipelineOptions::on_phase. Empty until registered.
void set_phase_hook(std::function<void(RunPhase)> hook);
const std::function<void(RunPhase)>& phase_hook();

}  // namespace stepscope::cli
