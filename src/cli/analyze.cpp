// `stepscope analyze PATH...`: read the traces, analyse, print the report.
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "cli/command.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "stepscope/analysis.hpp"
#include "stepscope/annotate.hpp"
#include "stepscope/diagnose.hpp"
#include "stepscope/error.hpp"
#include "stepscope/html.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope::cli {
namespace {

struct AnalyzeArgs {
  std::vector<std::string> paths;
  std::string json_out;
  std::string html_out, annotate_out;
  std::string csv_dir;  // one CSV file per drill-down table
  std::size_t top = 10;
  bool wide = false;
  int jobs = 0;
  bool verbose = false;
  bool quiet = false;
  std::vector<std::string> stages;  // NAME=REGEX
  std::string step_range;           // annotation (NVTX range) that is one step
};

// The drill-down tables, one file each, in `dir` (made when missing).
void write_csv_tables(const AnalysisResult& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError(fmt::format("--csv {}: cannot make the directory: {}", dir, ec ? ec.message() : "a file of that name exists"));
  for (const CsvTable& t : drilldown_csv_tables(r)) write_text((std::filesystem::path(dir) / t.file).string(), t.text, "CSV table");
}

int run_analyze(const AnalyzeArgs& a) {
  if (a.annotate_out == "-")
    throw InputError("--annotate -: the annotated trace is a file (or a directory for several ranks), not standard output");
  if (a.csv_dir == "-") throw InputError("--csv -: the tables are several files: give a directory");
  check_outputs(a.paths, {{"--json", a.json_out}, {"--html", a.html_out}, {"--annotate", a.annotate_out}, {"--csv", a.csv_dir}});
  PipelineOptions po;
  po.ingest.jobs = a.jobs;
  po.analyze.jobs = a.jobs;
  ProgressBar bar("reading", !a.quiet);
  po.ingest.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
  for (const auto& s : a.stages) po.analyze.partition.stage_rules.push_back(parse_stage_rule(s));
  po.analyze.partition.step_range = a.step_range;
  Analysis run = analyze_paths(a.paths, po);
  const AnalysisResult& result = run.result;
  bar.phase("writing reports");
  if (a.json_out == "-") bar.finish();  // the JSON on the terminal starts on a clean line
  if (!a.json_out.empty()) write_json(a.json_out, to_json(result));
  if (!a.html_out.empty()) write_text(a.html_out, render_html(result), "HTML report");
  if (!a.annotate_out.empty()) {
    const auto files = write_annotated_traces(run, a.annotate_out, {po.analyze.partition});
    // Several ranks make FILE a directory: say so, since the user named a file.
    if (files.size() > 1 && !a.quiet)
      std::fprintf(stderr, "stepscope: --annotate %s is a directory of %zu annotated traces, one per rank\n", a.annotate_out.c_str(),
                   files.size());
  }
  if (!a.csv_dir.empty()) write_csv_tables(result, a.csv_dir);
  bar.finish();
  if (a.json_out != "-") {
    TextOptions t;
    t.verbose = a.verbose;
    t.wide = a.wide;
    t.color = color_wanted();
    t.width = terminal_columns();
    t.top = a.top;
    write_stdout(render_text(result, t));
  }
  return result.diagnosis.present ? kExitOk : kExitNothing;
}

const RegisterCommand reg{{"analyze", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand("analyze", "Analyse PyTorch profiler (Kineto) traces or Nsight Systems SQLite exports");
  // Each example is a shell line, comments after '#': the tests run them as written.
  cmd->footer(
      "\nExamples:\n"
      "  stepscope analyze ./tb_logs/                      # every rank of a run\n"
      "  stepscope analyze trace.json.gz --html report.html --csv tables/\n"
      "  zcat trace.json.gz | stepscope analyze -           # a trace on standard input");
  cmd->add_option("TRACE", args->paths,
                  "Trace files (.json, .json.gz, nsys .sqlite) or directories of per-rank traces")
      ->required()
      ->type_name("PATH");
  cmd->add_option("--json", args->json_out, "Also write the JSON report to FILE ('-' for stdout)")->type_name("FILE");
  cmd->add_option("--html", args->html_out, "Also write a self-contained HTML report to FILE")->type_name("FILE");
  cmd->add_option("--annotate", args->annotate_out,
                  "Also write the trace with stepscope's tracks added, for Perfetto; FILE.gz is written gzipped; with "
                  "several ranks FILE becomes a directory holding one annotated trace per rank")
      ->type_name("FILE");
  cmd->add_option("--csv", args->csv_dir,
                  "Also write every drill-down table (operators, kernels, kernel sequences, queue length, memory "
                  "bandwidth, critical path, memory) as CSV files in DIR")
      ->type_name("DIR");
  cmd->add_option("--top", args->top, "Rows of the operator and kernel tables in the text report (default: 10)")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--wide", args->wide, "Show whole op and kernel names instead of shortening them in the middle");
  cmd->add_option("-j,--jobs", args->jobs, "Threads for reading and for analysing ranks (default: number of cores)")
      ->check(kNonNegative);
  cmd->add_option("--stage", args->stages,
                  "Count host ops matching REGEX (RE2 syntax) as stage NAME (forward, backward, optimizer, "
                  "data, sync, side, comm); repeatable")
      ->type_name("NAME=REGEX");
  cmd->add_option("--step-range", args->step_range,
                  "Each range (NVTX or annotation) of this name is one step, e.g. train_step");
  cmd->add_flag("-v,--verbose", args->verbose, "Show every category, step and thread, and the ingest summary");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress bar");
  return [args] { return run_analyze(*args); };
}}};

}  // namespace
}  // namespace stepscope::cli
