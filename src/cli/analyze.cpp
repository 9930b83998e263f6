// `stepscope analyze PATH...`: read the traces, analyse, print the report. Under mpirun or srun
// the files are shared between the processes and process 0 writes the reports.
#include <fmt/core.h>

#include "cli/command.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/progress.hpp"
#include "cli/reports.hpp"
#include "stepscope/annotate.hpp"
#include "stepscope/distributed.hpp"
#include "stepscope/error.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/rank_summary.hpp"

namespace stepscope::cli {
namespace {

struct AnalyzeArgs {
  std::vector<std::string> paths;
  ReportArgs reports;
  std::string annotate_out;
  std::string summary_out;  // the ranks' summaries, for `stepscope merge`
  AnalysisSettings settings;  // --jobs, --stage, --step-range, --model (stepscope/command_options.hpp)
};

PipelineOptions analyze_pipeline_options(const AnalyzeArgs& a) {
  PipelineOptions po = stepscope::pipeline_options("analyze", a.settings);
  po.keep_summary = !a.summary_out.empty();
  po.keep_trace = !a.annotate_out.empty();  // only the annotated trace reads the events after analysis
  return po;
}

void write_annotations(const Analysis& run, const AnalyzeArgs& a, const PartitionOptions& partition) {
  const auto files = write_annotated_traces(run, a.annotate_out, {partition});
  // Several ranks make FILE a directory: say so, since the user named a file.
  if (files.size() > 1 && !a.reports.quiet)
    std::fprintf(stderr, "stepscope: --annotate %s is a directory of %zu annotated traces, one per rank\n",
                 terminal_safe(a.annotate_out).c_str(),
                 files.size());
}

// The MPI job's share of the work that falls to this process; process 0 writes the reports.
int run_distributed(const AnalyzeArgs& a, PipelineOptions po) {
  if (!a.annotate_out.empty())
    throw InputError("--annotate: the annotated traces need each rank's events, which stay on the MPI process that read "
                     "them: run it without mpirun");
  if (!a.summary_out.empty())
    throw InputError("--summary: under mpirun the summaries already go to process 0: run without --summary, or "
                     "without mpirun");
  po.keep_summary = false;
  DistributedAnalysis d = analyze_paths_distributed(a.paths, po);
  if (!d.root) return kExitOk;
  return write_reports(d.result, a.reports);
}

int run_analyze(const AnalyzeArgs& a) {
  if (a.annotate_out == "-")
    throw InputError("--annotate -: the annotated trace is a file (or a directory for several ranks), not standard output");
  check_report_outputs(a.paths, a.reports, {{"--annotate", a.annotate_out}, {"--summary", a.summary_out}});
  PipelineOptions po = analyze_pipeline_options(a);
  if (launched_by_mpi()) return run_distributed(a, po);
  ProgressBar bar("reading", !a.reports.quiet);
  po.ingest.progress = [&bar](std::uint64_t done, std::uint64_t total) { bar.update(done, total); };
  const Analysis run = analyze_paths(a.paths, po);
  bar.phase("writing reports");
  if (goes_to_stdout(a.reports.json_out) || goes_to_stdout(a.summary_out)) bar.finish();  // a clean line for it
  if (!a.summary_out.empty()) write_output(a.summary_out, encode_summary(run.summary), "rank summary");
  if (!a.annotate_out.empty()) write_annotations(run, a, po.analyze.partition);
  bar.finish();
  ReportArgs reports = a.reports;
  reports.stdout_taken = goes_to_stdout(a.summary_out);  // the summary took it: the other files still follow
  return write_reports(run.result, reports);
}

const RegisterCommand kAnalyzeCommand{{"analyze", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand("analyze", "Analyse PyTorch profiler (Kineto) traces, Nsight Systems SQLite exports or CUDA memory snapshots");
  // Each example is a shell line, comments after '#': the tests run them as written.
  cmd->footer(
      "\nExamples:\n"
      "  stepscope analyze ./tb_logs/                      # every rank of a run\n"
      "  stepscope analyze trace.json.gz --html report.html --csv tables/\n"
      "  zcat trace.json.gz | stepscope analyze -           # a trace on standard input\n"
      "  mpirun -n 4 stepscope analyze ./tb_logs/ --json out.json   # the ranks shared by 4 processes");
  cmd->add_option("TRACE", args->paths,
                  "Trace files (.json, .json.gz, nsys .sqlite), CUDA memory snapshots (torch.cuda.memory._dump_snapshot pickles) "
                  "or directories of per-rank traces")
      ->required()
      ->type_name("PATH");
  add_report_options(*cmd, args->reports);
  cmd->add_option("--annotate", args->annotate_out,
                  "Also write the trace with stepscope's tracks added, for Perfetto; FILE.gz is written gzipped; with "
                  "several ranks FILE becomes a directory holding one annotated trace per rank")
      ->type_name("FILE");
  cmd->add_option("--summary", args->summary_out,
                  "Also write the ranks' analyses to FILE ('-' for stdout), for `stepscope merge` to put beside "
                  "other ranks' (docs/summary.md)")
      ->type_name("FILE");
  add_analysis_options(*cmd, "analyze", args->settings);
  return [args] { return run_analyze(*args); };
}}};

}  // namespace
}  // namespace stepscope::cli
