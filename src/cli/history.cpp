// `stepscope history [LOGDIR] [--store PATH]`: the step time of each job's runs over time, from
// the run history; with a LOGDIR, its new runs are analysed into the history first.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "stepscope/error.hpp"
#include "stepscope/report.hpp"
#include "stepscope/store.hpp"

namespace stepscope::cli {
namespace {

struct HistoryArgs {
  std::string logdir;
  std::string store;
  std::string job;
  std::string json_out;
  bool fail_if_regressed = false;
  bool quiet = false;
  AnalysisSettings settings;  // --jobs (stepscope/command_options.hpp)
};

void index_logdir(Store& store, const HistoryArgs& a) {
  ProgressBar bar("indexing", !a.quiet);
  IndexOptions opts;
  opts.jobs = a.settings.jobs;
  opts.progress = [&bar](const IndexProgress& p) {
    bar.phase(fmt::format("analysing run {}/{}", p.done + (p.done < p.total ? 1 : 0), p.total));
    bar.update(p.bytes_done, p.bytes_total);
  };
  const IndexReport rep = index_runs(store, a.logdir, opts);
  bar.finish();
  if (!a.quiet && rep.failed > 0)
    std::fprintf(stderr, "stepscope: %zu of %zu runs could not be analysed (their errors are in the history)\n",
                 rep.failed, rep.found);
}

int run_history(const HistoryArgs& a) {
  if (a.logdir.empty() && a.store.empty()) throw InputError("history: give a LOGDIR, or --store PATH");
  check_settings(a.settings, analysis_options("history"));
  check_outputs({}, {{"--json", a.json_out}});
  Store store(a.store.empty() ? default_store_path(a.logdir) : a.store);
  if (!a.logdir.empty()) index_logdir(store, a);
  const auto jobs = job_histories(store, a.job);
  if (!a.job.empty() && jobs.empty()) throw InputError("history: no analysed run of job '" + a.job + "'");
  if (!a.json_out.empty()) write_json(a.json_out, history_to_json(jobs, store.path()));
  if (a.json_out != "-") write_stdout(fit_to_width(render_history_text(jobs), report_columns()));
  if (jobs.empty()) return kExitNothing;
  return a.fail_if_regressed && newest_regressed(jobs) ? kExitRegression : kExitOk;
}

const RegisterCommand kHistoryCommand{{"history", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<HistoryArgs>();
  auto* cmd = app.add_subcommand("history", "Step time of each job's runs over time, from the run history; regressions marked");
  cmd->footer(
      "\nExamples:\n"
      "  stepscope history ./tb_logs/                         # analyse new runs, then print the trend\n"
      "  stepscope history tb_logs/ --job tb_logs --json -    # one job's trend as JSON\n"
      "  stepscope history ./tb_logs/ --fail-if-regressed     # exit 3 when the newest run got slower (CI)");
  cmd->add_option("LOGDIR", args->logdir,
                  "Log directory whose runs are analysed into the history first (the history is LOGDIR/.stepscope/runs.sqlite)")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--store", args->store, "The run history's SQLite file (default: LOGDIR/.stepscope/runs.sqlite)")
      ->type_name("PATH");
  cmd->add_option("--job", args->job, "Only the runs of this job (a run's name without its trailing date or counter)")
      ->type_name("NAME");
  cmd->add_option("--json", args->json_out, "Also write the history as JSON to FILE ('-' for stdout)")->type_name("FILE");
  cmd->add_flag("--fail-if-regressed", args->fail_if_regressed,
                "Exit with status 3 when a job's newest run is slower than the run before it beyond noise");
  add_analysis_options(*cmd, "history", args->settings);
  cmd->add_flag("-q,--quiet", args->quiet, "No progress bar");
  return [args] { return run_history(*args); };
}}};

}  // namespace
}  // namespace stepscope::cli
