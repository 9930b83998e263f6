// `stepscope whatif TRACE --set CHANGE ...`: replay the trace's steps with the changes applied.
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "stepscope/error.hpp"
#include "stepscope/output_file.hpp"
#include "stepscope/report.hpp"
#include "stepscope/whatif_run.hpp"
#include "stepscope/whatif_report.hpp"

namespace stepscope::cli {
namespace {

struct WhatIfArgs {
  std::vector<std::string> paths;
  std::string json_out;
  std::string annotate_out;
  AnalysisSettings settings;  // --jobs, --set, --steps, --gpu-hour-cost (stepscope/command_options.hpp)
};

int run_whatif(const WhatIfArgs& a) {
  if (a.annotate_out == "-")
    throw InputError("--annotate -: the predicted trace is a file, not standard output");
  check_outputs(a.paths, {{"--json", a.json_out}, {"--annotate", a.annotate_out}});
  const PipelineOptions po = pipeline_options("whatif", a.settings);
  WhatIfRunOptions w = whatif_options(a.settings);
  w.timeline_events = !a.annotate_out.empty();
  const DiagnosedResult r = whatif_paths(a.paths, w, po);
  if (!a.json_out.empty()) write_json(a.json_out, whatif_to_json(r));
  if (!a.annotate_out.empty()) write_output(a.annotate_out, predicted_trace_json(r), "predicted trace");
  if (!goes_to_stdout(a.json_out)) write_stdout(fit_to_width(render_whatif_text(r), report_columns()));
  return kExitOk;
}

const RegisterCommand kWhatifCommand{{"whatif", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<WhatIfArgs>();
  auto* cmd = app.add_subcommand("whatif", "Replay the trace's steps with changes applied: what the step becomes");
  cmd->footer(
      "\nChanges (--set, repeatable, applied together):\n"
      "  kernels:CLASS=FACTORx   kernels of CLASS (gemm, conv, attention, elementwise, norm, comm, copy, all) take FACTOR of their time\n"
      "  comm=overlap            collectives start with the backward and run under it\n"
      "  batch_wait=FACTOR       the data loader's waits take FACTOR of their time (0: none)\n"
      "  launch=graph            launches between syncs captured as CUDA graphs\n"
      "  syncs=none              the host no longer waits in synchronising calls\n"
      "  workers=N               N data loader workers\n"
      "  copies=pinned | copies=side-stream\n"
      "\nExamples:\n  stepscope whatif trace.json.gz\n"
      "  stepscope whatif tb_logs --set 'kernels:gemm=0.5x' --set comm=overlap\n"
      "  stepscope whatif trace.json.gz --set batch_wait=0 --steps 10000 --gpu-hour-cost 2.5 --json -\n"
      "  stepscope whatif trace.json.gz --annotate predicted.json   # open in ui.perfetto.dev");
  cmd->add_option("TRACE", args->paths, "Trace files or directories of per-rank traces")->required()->type_name("PATH");
  cmd->add_option("--json", args->json_out, "Also write the JSON report to FILE ('-' for stdout)")->type_name("FILE");
  cmd->add_option("--annotate", args->annotate_out,
                  "Also write the plan's predicted steps as a trace for Perfetto: each rank's replayed events as "
                  "recorded and, beside them, as the plan predicts them; FILE.gz is written gzipped")
      ->type_name("FILE");
  add_analysis_options(*cmd, "whatif", args->settings);
  return [args] { return run_whatif(*args); };
}}};

}  // namespace
}  // namespace stepscope::cli
