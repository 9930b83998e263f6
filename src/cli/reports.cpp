#include "cli/reports.hpp"

#include <cstdio>
#include <filesystem>
#include <map>

#include "cli/output.hpp"
#include "stepscope/html.hpp"
#include "stepscope/report.hpp"

namespace stepscope::cli {
namespace {

// The drill-down tables, one file each, in `dir` (made when missing).
void write_csv_tables(const AnalysisResult& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError(fmt::format("--csv {}: cannot make the directory: {}", dir, ec ? ec.message() : "a file of that name exists"));
  for (const CsvTable& t : drilldown_csv_tables(r)) write_text((std::filesystem::path(dir) / t.file).string(), t.text, "CSV table");
}

void write_text_report(const DiagnosedResult& r, const ReportArgs& a) {
  TextOptions t;
  t.verbose = a.verbose;
  t.wide = a.wide;
  t.color = color_wanted();
  t.width = report_columns();
  t.top = a.top;
  t.ranks = a.ranks;
  write_stdout(render_text(r, t));
}

}  // namespace

void add_report_options(CLI::App& cmd, ReportArgs& a) {
  cmd.add_option("--json", a.json_out, "Also write the JSON report to FILE ('-' for stdout)")->type_name("FILE");
  cmd.add_option("--html", a.html_out, "Also write a self-contained HTML report to FILE")->type_name("FILE");
  cmd.add_option("--csv", a.csv_dir,
                 "Also write every drill-down table (operators, kernels, kernel sequences, queue length, memory "
                 "bandwidth, critical path, memory) as CSV files in DIR")
      ->type_name("DIR");
  cmd.add_option("--top", a.top, "Rows of the operator and kernel tables in the text report (default: 10)")
      ->check(CLI::Range(1, 100000));
  cmd.add_option("--ranks", a.ranks,
                 fmt::format("Ranks the text report lists one by one and whose drill-down the JSON holds; past N, the "
                             "straggler, the fastest, the slowest and quantiles between ('all': every rank; default: {})",
                             kListedRanks))
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"all", "0"}}))
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30))
      ->type_name("N|all");
  cmd.add_flag("--wide", a.wide, "Show whole op and kernel names instead of shortening them in the middle");
  cmd.add_flag("-v,--verbose", a.verbose, "Show every category, step and thread, and the ingest summary");
  cmd.add_flag("-q,--quiet", a.quiet, "No progress bar");
}

void check_report_outputs(const std::vector<std::string>& inputs, const ReportArgs& a,
                          std::vector<NamedOutput> extra) {
  if (a.csv_dir == "-") throw InputError("--csv -: the tables are several files: give a directory");
  extra.insert(extra.begin(), {NamedOutput{"--json", a.json_out}, NamedOutput{"--html", a.html_out},
                               NamedOutput{"--csv", a.csv_dir, drilldown_csv_names()}});
  check_outputs(inputs, extra);
}

int write_reports(const DiagnosedResult& r, const ReportArgs& a) {
  // Warnings go to standard error, beside the progress bar and errors: the report on standard
  // output is the analysis alone, whatever else went wrong in reading.
  if (const std::string warnings = render_warnings(r); !warnings.empty()) std::fputs(warnings.c_str(), stderr);
  if (!a.json_out.empty())
    write_output_pieces(a.json_out, "JSON report", [&](const std::function<void(std::string_view)>& out) {
      write_json_report(r, {.drilldown_ranks = a.ranks}, out);
    });
  if (!a.html_out.empty()) write_text(a.html_out, render_html(r), "HTML report");
  if (!a.csv_dir.empty()) write_csv_tables(r, a.csv_dir);
  if (!a.stdout_taken && !goes_to_stdout(a.json_out) && !goes_to_stdout(a.html_out)) write_text_report(r, a);
  return r.diagnosis.present || !r.job.memory_snapshots.empty() ? kExitOk : kExitNothing;
}

}  // namespace stepscope::cli
