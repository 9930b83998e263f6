#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>

#include "cli/command.hpp"
#include "stepscope/error.hpp"

namespace stepscope::cli {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace stepscope::cli

namespace {

// With stderr gone too (a full device, a closed pipe) there is no one to tell: this must not
// throw, or the error becomes an abort.
void report_error(const char* kind, const char* what) { std::fprintf(stderr, "stepscope: %s: %s\n", kind, what); }

}  // namespace

int main(int argc, char** argv) {
  using namespace stepscope::cli;
  CLI::App app{"stepscope: names the stage that stalls a deep-learning training step"};
  app.set_version_flag("--version", std::string("stepscope ") + STEPSCOPE_VERSION);
  app.require_subcommand(1);

  auto& commands = command_registry();
  std::sort(commands.begin(), commands.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (auto& c : commands) {
    auto run = c.setup(app);
    runners.emplace_back(app.get_subcommand(c.name), std::move(run));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  try {
    for (auto& [sub, run] : runners) {
      if (sub && sub->parsed()) return run();
    }
  } catch (const stepscope::InputError& e) {
    report_error("error", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    report_error("internal error", e.what());
    return kExitBadInput;
  }
  return kExitBadInput;
}
