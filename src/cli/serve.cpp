// `stepscope serve LOGDIR`: the runs of a log directory in the browser, every run kept in the
// run history.
#include "cli/command.hpp"
#include "stepscope/error.hpp"
#include "stepscope/serve.hpp"

namespace stepscope::cli {
namespace {

const RegisterCommand kServeCommand{{"serve", [](CLI::App& app) -> std::function<int()> {
  auto opts = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand("serve", "Serve a log directory's runs, one run, two runs compared and each job's history in the browser");
  cmd->footer(
      "\nExamples:\n"
      "  stepscope serve ./tb_logs/                          # then open http://127.0.0.1:6006/\n"
      "  stepscope serve ./tb_logs/ --port 8080 --store ~/runs.sqlite\n"
      "  stepscope serve /lustre/job/traces/ --host 0.0.0.0   # reachable from other machines: read the warning");
  cmd->add_option("LOGDIR", opts->logdir, "The log directory: each folder of rank traces, or trace file, is a run")
      ->required()
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--port", opts->port, "TCP port to listen on (0: any free port, printed at start)")
      ->default_val(6006)
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--host", opts->host,
                  "Address to listen on; the default, 127.0.0.1, lets only this machine in (0.0.0.0: every interface, with a warning)")
      ->default_val("127.0.0.1");
  cmd->add_option("--store", opts->store_path, "The run history's SQLite file (default: LOGDIR/.stepscope/runs.sqlite)")
      ->type_name("PATH");
  cmd->add_option("--poll", opts->poll_seconds, "Seconds between scans of LOGDIR for new runs")
      ->default_val(2)
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("-j,--jobs", opts->jobs, "Threads for analysing a run in the background (default: number of cores)")
      ->check(kNonNegative);
  return [opts] { return serve(*opts); };
}}};

}  // namespace
}  // namespace stepscope::cli
