// `stepscope diff BASE TEST`: analyse two runs and report what changed.
#include <fmt/core.h>

#include "cli/command.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "stepscope/diff.hpp"
#include "stepscope/error.hpp"
#include "stepscope/html.hpp"
#include "stepscope/memory/analysis.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope::cli {
namespace {

struct DiffArgs {
  std::string base_run, test_run;  // the BASE and TEST positionals
  std::vector<std::string> base, test;
  std::string json_out, html_out;
  // --jobs, --stage, --step-range on both sides, the bootstrap, its seed and the kernel threshold
  // (stepscope/command_options.hpp)
  AnalysisSettings settings;
  bool verbose = false;
  bool quiet = false;
  bool wide = false;
  std::size_t top = 10;
  double fail_if_slower_pct = -1;
};

// Either two positionals (a file or a directory each) or --base/--test lists (several files each).
std::pair<std::vector<std::string>, std::vector<std::string>> sides_of(const DiffArgs& a) {
  const bool lists = !a.base.empty() || !a.test.empty();
  const bool positional = !a.base_run.empty() || !a.test_run.empty();
  if (lists && positional) throw InputError("diff: give BASE TEST, or --base ... --test ..., not both");
  if (lists) {
    if (a.base.empty() || a.test.empty()) throw InputError("diff: --base and --test are both needed");
    return {a.base, a.test};
  }
  if (a.base_run.empty() || a.test_run.empty())
    throw InputError("diff: expected two runs, BASE and TEST (each a trace file or a directory of rank traces)");
  return {{a.base_run}, {a.test_run}};
}

std::string label_of(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : " ") + p;
  return out;
}

Analysis read_side(const std::vector<std::string>& paths, const char* label, const DiffArgs& a) {
  PipelineOptions po = pipeline_options("diff", a.settings);
  ProgressBar bar(fmt::format("reading {}", label), !a.quiet);
  po.ingest.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
  Analysis run = analyze_paths(paths, po);
  bar.finish();
  return run;
}

bool regressed(const DiffResult& d, double threshold_pct) {
  if (threshold_pct < 0 || !d.step.significant || d.step.speedup <= 0) return false;
  return (1 / d.step.speedup - 1) * 100 > threshold_pct;
}

// Two memory snapshots (told by their bytes): the peak by class before and after.
bool snapshot_pair(const std::vector<std::string>& base, const std::vector<std::string>& test) {
  return base.size() == 1 && test.size() == 1 && memory::is_snapshot_file(base[0]) && memory::is_snapshot_file(test[0]);
}

int run_memory_diff(const std::string& base, const std::string& test, const DiffArgs& a) {
  if (!a.html_out.empty()) throw InputError("diff --html: not available for memory snapshots; use --json or the text report");
  const auto d = memory::diff_snapshots(memory::analyze_snapshot_file(base), memory::analyze_snapshot_file(test));
  if (!a.json_out.empty()) write_json(a.json_out, memory::diff_to_json(d));
  if (a.json_out != "-") write_stdout(fit_to_width(memory::render_diff_text(d), report_columns()));
  return kExitOk;
}

int run_diff(const DiffArgs& a) {
  const auto [base_paths, test_paths] = sides_of(a);
  std::vector<std::string> inputs = base_paths;
  inputs.insert(inputs.end(), test_paths.begin(), test_paths.end());
  check_outputs(inputs, {{"--json", a.json_out}, {"--html", a.html_out}});
  if (snapshot_pair(base_paths, test_paths)) return run_memory_diff(base_paths[0], test_paths[0], a);
  Analysis base = read_side(base_paths, "base", a);
  Analysis test = read_side(test_paths, "test", a);
  DiffResult d = diff_runs(std::move(base), std::move(test), diff_options(a.settings));
  d.base_label = label_of(base_paths);
  d.test_label = label_of(test_paths);
  if (!a.json_out.empty()) write_json(a.json_out, diff_to_json(d));
  if (!a.html_out.empty()) write_text(a.html_out, render_diff_html(d), "HTML report");
  if (!goes_to_stdout(a.json_out) && !goes_to_stdout(a.html_out)) {
    TextOptions t;
    t.verbose = a.verbose;
    t.wide = a.wide;
    t.top = a.top;
    t.width = report_columns();
    write_stdout(render_diff_text(d, t));
  }
  return regressed(d, a.fail_if_slower_pct) ? kExitRegression : kExitOk;
}

const RegisterCommand kDiffCommand{{"diff", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<DiffArgs>();
  auto* cmd = app.add_subcommand("diff", "Compare two runs: speedup beyond noise, partition, kernels, bottleneck");
  cmd->footer("\nExamples:\n  stepscope diff before/ after/\n  stepscope diff base.json.gz test.json.gz --html diff.html\n  stepscope diff before/ after/ --json - > diff.json");
  cmd->add_option("BASE", args->base_run, "The base run: a trace file or a directory of per-rank traces")->type_name("PATH");
  cmd->add_option("TEST", args->test_run, "The test run, compared with BASE: a trace file or a directory")->type_name("PATH");
  cmd->add_option("--base", args->base, "Trace files of the base run (instead of BASE)")->expected(1, -1)->type_name("FILE");
  cmd->add_option("--test", args->test, "Trace files of the test run (instead of TEST)")->expected(1, -1)->type_name("FILE");
  cmd->add_option("--json", args->json_out, "Also write the JSON report to FILE ('-' for stdout)")->type_name("FILE");
  cmd->add_option("--html", args->html_out, "Also write a self-contained HTML report, both runs side by side, to FILE")
      ->type_name("FILE");
  add_analysis_options(*cmd, "diff", args->settings);
  cmd->add_option("--fail-if-slower", args->fail_if_slower_pct,
                  "Exit with status 3 when the test step is slower beyond noise by more than PCT percent")
      ->type_name("PCT")
      ->check(kNonNegative);
  cmd->add_flag("-v,--verbose", args->verbose, "Every category and every changed kernel");
  cmd->add_option("--top", args->top, "Rows of the table of kernels that changed (default: 10)")->check(CLI::Range(1, 100000));
  cmd->add_flag("--wide", args->wide, "Show whole kernel names instead of shortening them in the middle");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress bar");
  return [args] { return run_diff(*args); };
}}};

}  // namespace
}  // namespace stepscope::cli
