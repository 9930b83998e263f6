// `stepscope triage`: the watch classification from recorded nvidia-smi / top / pidstat logs.
#include "stepscope/watch/triage.hpp"

#include <fmt/core.h>

#include <fstream>
#include <sstream>

#include "cli/command.hpp"
#include "cli/output.hpp"
#include "cli/units.hpp"
#include "stepscope/error.hpp"
#include "stepscope/output_file.hpp"
#include "stepscope/report.hpp"
#include "stepscope/watch/render.hpp"

namespace stepscope::cli {
namespace {

struct TriageArgs {
  std::vector<std::string> files;
  std::string columns;
  std::vector<std::string> match;
  int pid = 0;
  double interval_s = 1.0;
  double cpus = 0;
  std::string json_path;
};

std::vector<std::string> split_columns(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto a = item.find_first_not_of(' ');
    if (a == std::string::npos) continue;
    out.push_back(item.substr(a, item.find_last_not_of(' ') - a + 1));
  }
  return out;
}

std::string source_line(const watch::TriageResult& r) {
  std::string out = "triaged";
  for (const auto& log : r.logs)
    out += fmt::format("{} {} ({}: {} rows{})", out == "triaged" ? "" : ";", log.file,
                       watch::to_string(log.kind), log.records,
                       log.malformed ? fmt::format(", {} malformed", log.malformed) : "");
  return out;
}

int run_triage(const TriageArgs& args) {
  watch::TriageOptions o;
  o.columns = split_columns(args.columns);
  if (!args.match.empty()) o.match = args.match;
  if (args.pid < 0)
    throw InputError(fmt::format("--pid {}: a process id must be positive", args.pid));
  o.pid = args.pid;
  if (!(args.interval_s > 0))
    throw InputError(fmt::format("--interval {}: must be above 0 seconds", args.interval_s));
  o.interval_s = args.interval_s;
  if (args.cpus < 0) throw InputError(fmt::format("--cpus {}: must be positive", args.cpus));
  if (args.cpus > 0) o.cpus = args.cpus;

  check_outputs(args.files, {{"--json", args.json_path}});
  auto result = watch::triage_files(args.files, o);
  std::string json =
      args.json_path.empty()
          ? ""
          : watch::render_json(result.series, result.classification, "triage", &result.logs);
  if (goes_to_stdout(args.json_path)) {
    write_stdout(json);
    return kExitOk;
  }
  if (!args.json_path.empty()) write_output(args.json_path, json, "JSON report");
  write_stdout(fit_to_width(watch::render_summary(result.series, result.classification, source_line(result)), report_columns()));
  return kExitOk;
}

const RegisterCommand kTriageCommand{Command{
    "triage", [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<TriageArgs>();
      auto* sub = app.add_subcommand(
          "triage",
          "Classify a job offline from recorded logs: nvidia-smi dmon, nvidia-smi --query-gpu "
          "csv, and optionally top -b or pidstat from the host");
      sub->add_option("LOG", args->files, "Log files (format detected from the content)")
          ->required()
          ->type_name("FILE");
      sub->add_option("--columns", args->columns,
                      "The --query-gpu field list, for CSV logs recorded with noheader");
      sub->add_option("--pid", args->pid, "Host logs: the job's process id");
      sub->add_option("--match", args->match,
                      "Host logs: take processes whose command contains this (repeatable; "
                      "default python, pt_main_thread, pt_data_worker, torchrun)");
      as_duration(sub->add_option("--interval", args->interval_s,
                                  "Time between readings in logs without timestamps (500ms, 2s; a bare number is seconds)"),
                  1.0)
          ->default_val(1.0);
      sub->add_option("--cpus", args->cpus, "Cores the job could use, when the logs do not say");
      sub->add_option("--json", args->json_path,
                      "Also write the result as JSON to FILE ('-' for stdout, instead of text)")
          ->type_name("FILE");
      sub->footer(
          "\nRecord on the GPU host, e.g.:\n"
          "  nvidia-smi dmon -s pucvmet -o T -d 1 -c 30 > dmon.log & top -b -d 1 -n 30 > top.log\n"
          "Exit status: 0 judged, 2 no log could be read.\n"
          "\nExamples:\n  stepscope triage dmon.log top.log\n  stepscope triage gpu.csv top.log --pid 1234\n"
          "  stepscope triage dmon.log pidstat.log --match train.py --json triage.json");
      return [args] { return run_triage(*args); };
    }}};

}  // namespace
}  // namespace stepscope::cli
