// Each CLI command lives in its own file and registers itself here, so adding a command touches
// no other file. A command parses its options, calls the library, and hands the result to a
// report; it never analyses.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepscope::cli {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitNothing = 1;  // ran fine but found nothing to analyse
inline constexpr int kExitBadInput = 2;
// A run slower than its baseline beyond noise (diff --fail-if-slower, history --fail-if-regressed).
inline constexpr int kExitRegression = 3;

struct Command {
  std::string name;
  // Adds the subcommand and its options to `app`; returns the function to run once parsed.
  std::function<std::function<int()>(CLI::App& app)> setup;
};

std::vector<Command>& command_registry();

// CLI11's NonNegativeNumber prints the whole double range in its message; this says it plainly.
inline const CLI::Validator kNonNegative(
    [](std::string& v) -> std::string {
      double d = 0;
      std::size_t used = 0;
      try {
        d = std::stod(v, &used);
      } catch (const std::exception&) {
        return "'" + v + "' is not a number";
      }
      if (used != v.size()) return "'" + v + "' is not a number";
      return d >= 0 ? std::string() : "must be 0 or more (got " + v + ")";
    },
    "NUMBER >= 0");

struct RegisterCommand {
  explicit RegisterCommand(Command c) { command_registry().push_back(std::move(c)); }
};

}  // namespace stepscope::cli
