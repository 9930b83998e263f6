// `stepscope plan <calculator>`: adds each calculator's options from its table
// (stepscope/plan/commands.hpp), hands the texts given to the calculator, prints the result as
// text or JSON.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "stepscope/output_file.hpp"
#include "stepscope/plan/commands.hpp"
#include "stepscope/report.hpp"

namespace stepscope::cli {

namespace {

namespace sp = stepscope::plan;

// `--json [FILE]`, as every command takes it: FILE, or standard output when no FILE (or "-")
// is given, which then holds the JSON alone.
struct JsonOut {
  std::string path;
  CLI::Option* option = nullptr;
  bool given() const { return option && option->count() > 0; }
  bool to_stdout() const { return given() && (path.empty() || path == "-"); }
};

struct CalculatorArgs {
  std::map<std::string, std::vector<std::string>> texts;  // by option name
  std::vector<CLI::Option*> options;
  JsonOut json;

  sp::GivenOptions given() const {
    sp::GivenOptions out;
    for (const CLI::Option* o : options)
      if (o->count() > 0) {
        const auto& t = texts.at(o->get_single_name());
        out[o->get_single_name()] = t.empty() ? std::vector<std::string>{"true"} : t;  // a flag: no text
      }
    return out;
  }
};

std::function<int()> setup_calculator(CLI::App& plan, const sp::Calculator& c) {
  auto args = std::make_shared<CalculatorArgs>();
  auto* app = plan.add_subcommand(std::string(c.name), std::string(c.about));
  for (const OptionSpec& o : c.options) args->options.push_back(add_option(*app, o, args->texts[std::string(o.name)]));
  args->json.option = app->add_option("--json", args->json.path,
                                      "Write the result as JSON to FILE ('-' or no FILE: standard output, instead of text)")
                          ->expected(0, 1)
                          ->type_name("[FILE]");
  app->footer(std::string(c.footer));
  return [args, app, &c]() {
    if (!app->parsed()) return -1;
    check_outputs({}, {{"--json", args->json.path}});
    const sp::CalculatorResult r = sp::run_calculator(c, args->given());
    if (args->json.given()) write_json(args->json.to_stdout() ? "-" : args->json.path, r.json);
    if (!args->json.to_stdout()) write_stdout(fit_to_width(r.text, report_columns()));
    return kExitOk;
  };
}

std::function<int()> setup_plan(CLI::App& app) {
  auto* plan = app.add_subcommand(
      "plan", "capacity and cost calculators: memory, roofline, comm, scaling, pipeline, kv, "
              "serve, specdec, stack, gpus, models");
  plan->require_subcommand(1);
  // Each runner returns -1 when its subcommand was not the one parsed.
  std::vector<std::function<int()>> runners;
  for (const sp::Calculator& c : sp::calculators()) runners.push_back(setup_calculator(*plan, c));
  // After the calculators: CLI11 gives a new subcommand its parent's footer, and these examples
  // are not theirs.
  plan->footer("Examples:\n  stepscope plan memory --model llama-3-8b --gpus 8 --zero 3 --batch 4 --seq 4096\n"
               "  stepscope plan comm --params 7B --gpus 8 --bandwidth 50\n"
               "  stepscope plan kv --model llama-3-70b --seq 8K,32K");
  return [runners]() {
    for (const auto& run : runners) {
      const int rc = run();
      if (rc >= 0) return rc;
    }
    return kExitBadInput;
  };
}

const RegisterCommand kPlanCommand{Command{"plan", setup_plan}};

}  // namespace

}  // namespace stepscope::cli
