#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>

#include "cli/command.hpp"
#include "stepscope/error.hpp"

namespace stepscope::cli {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace stepscope::cli

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
    fmt::print(stderr, "stepscope: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepscope: internal error: {}\n", e.what());
    return kExitBadInput;
  }
  return kExitBadInput;
}
