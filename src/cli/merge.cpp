// `stepscope merge SUMMARY...`: the ranks that separate runs of `analyze --summary` analysed, put
// side by side as one run over all their files would have: the same verdict and reports.
#include <fmt/core.h>

#include "cli/command.hpp"
#include "cli/output.hpp"
#include "cli/reports.hpp"
#include "stepscope/error.hpp"
#include "stepscope/pipeline.hpp"

namespace stepscope::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> paths;
  ReportArgs reports;
};

int run_merge(const MergeArgs& a) {
  check_report_outputs(a.paths, a.reports);
  return write_reports(merge_summary_files(a.paths), a.reports);
}

const RegisterCommand kMergeCommand{{"merge", [](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand("merge", "Put the rank summaries of separate `analyze --summary` runs side by side");
  cmd->footer(
      "\nExamples:\n"
      "  stepscope analyze r0.json --summary r0.summary > /dev/null && stepscope analyze r1.json --summary r1.summary > /dev/null "
      "&& stepscope merge r0.summary r1.summary --json job.json   # each rank apart (e.g. one job of an array each), then one report");
  cmd->add_option("SUMMARY", args->paths, "Summary files written by `stepscope analyze --summary`")
      ->required()
      ->type_name("FILE");
  add_report_options(*cmd, args->reports);
  return [args] { return run_merge(*args); };
}}};

}  // namespace
}  // namespace stepscope::cli
