// The reports of one analysis result, as `analyze` and `merge` write them: the same options,
// the same files, the same text on standard output.
#pragma once

#include <string>
#include <vector>

#include "cli/command.hpp"
#include "stepscope/analysis.hpp"
#include "stepscope/output_file.hpp"
#include "stepscope/report.hpp"

namespace stepscope::cli {

struct ReportArgs {
  std::string json_out, html_out;
  std::string csv_dir;  // one CSV file per drill-down table
  std::size_t top = 10;
  std::size_t ranks = kListedRanks;  // 0: every rank
  bool wide = false;
  bool verbose = false;
  bool quiet = false;
  bool stdout_taken = false;  // another output of the command went to standard output: no text report
};

// --json, --html, --csv, --top, --ranks, --wide, -v and -q on `cmd`.
void add_report_options(CLI::App& cmd, ReportArgs& a);

// Refuses an output that is an input or another output (stepscope/output_file.hpp), and the
// outputs that cannot go to standard output. `extra` are the command's own outputs.
void check_report_outputs(const std::vector<std::string>& inputs, const ReportArgs& a,
                          std::vector<NamedOutput> extra = {});

// Writes the files asked for, then the text report (unless an output went to standard output).
// Returns the command's exit code: 0 with a diagnosis, 1 when there was nothing to analyse.
int write_reports(const DiagnosedResult& r, const ReportArgs& a);

}  // namespace stepscope::cli
