#include "cli/app.hpp"

#include <algorithm>
#include <string>

#include "cli/command.hpp"
#include "cli/units.hpp"

namespace stepscope::cli {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

std::vector<Runner> define_app(CLI::App& app) {
  app.name("stepscope");
  app.description("stepscope: names the stage that stalls a deep-learning training step");
  app.set_version_flag("--version", std::string("stepscope ") + STEPSCOPE_VERSION);
  app.require_subcommand(1);
  // A project file keeps a team's options in one place: stepscope.toml in the working directory
  // (or the file --config names), one [command] section per command, e.g.
  //   [analyze]
  //   stage = ["forward=my_fwd_.*", "backward=my_bwd_.*"]
  //   top = 20
  // Options on the command line win over the file.
  app.set_config("--config", "stepscope.toml", "Read default options from this TOML file (default: ./stepscope.toml when present)")
      ->type_name("FILE");
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.fallthrough();  // --config after the command works too

  auto& commands = command_registry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  std::vector<Runner> runners;
  for (auto& c : commands) {
    auto run = c.setup(app);
    runners.emplace_back(app.get_subcommand(c.name), std::move(run));
  }
  accept_sizes(app);
  // After the commands: CLI11 gives a new subcommand its parent's footer.
  app.footer(
      "\nExamples:\n"
      "  stepscope analyze trace.json.gz                   # which stage stalls the step, and what to change\n"
      "  stepscope diff before/ after/                     # did a change make it faster, beyond noise\n"
      "  stepscope plan memory --model llama-3-8b --gpus 8 --zero 3\n"
      "\nEach command has its own help (stepscope COMMAND --help) and man page (man stepscope-COMMAND).");
  return runners;
}

}  // namespace stepscope::cli
