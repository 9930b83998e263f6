// Offline triage: the watch classification applied to recorded logs — `nvidia-smi dmon`,
// `nvidia-smi --query-gpu=... --format=csv`, and optionally `top -b` or `pidstat` from the host.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stepscope/watch.hpp"

namespace stepscope::watch {

enum class LogKind { Dmon, QueryGpu, Top, Pidstat, Unknown };
const char* to_string(LogKind kind);

// Guesses the format from the first lines of a log.
LogKind detect_log_kind(const std::string& text);

// How one log went: what was read, and what was skipped and why.
struct LogReport {
  std::string file;
  LogKind kind = LogKind::Unknown;
  int records = 0;    // data rows turned into readings
  int malformed = 0;  // data lines that did not parse (wrong field count, not a number, ...)
  std::vector<std::string> problems;  // the first few malformed lines, "line N: why"
};

struct TriageOptions {
  // The --query-gpu field list, for CSV logs written with `noheader`.
  std::vector<std::string> columns;
  // Host logs: the process to judge. Without it, processes whose command contains one of
  // `match` are taken (the usual names of a PyTorch job and its loader workers).
  int pid = 0;
  std::vector<std::string> match = {"python", "pt_main_thread", "pt_data_worker", "torchrun"};
  // Seconds between readings, for logs without timestamps.
  double interval_s = 1.0;
  // Cores the job could use, when the logs do not say.
  std::optional<double> cpus;
};

struct TriageResult {
  Series series;
  std::vector<LogReport> logs;
  Classification classification;
};

// Parses each (name, text) log and classifies the readings together. Throws InputError when no
// log yields a single reading.
TriageResult triage_logs(const std::vector<std::pair<std::string, std::string>>& logs,
                         const TriageOptions& options);

// Reads the files (InputError if one cannot be read), then triage_logs.
TriageResult triage_files(const std::vector<std::string>& paths, const TriageOptions& options);

// The individual readers; each appends one Sample per reading to `out`.
LogReport parse_dmon(const std::string& text, std::vector<Sample>& out, const TriageOptions& o);
LogReport parse_query_gpu(const std::string& text, std::vector<Sample>& out,
                          const TriageOptions& o);
LogReport parse_top(const std::string& text, std::vector<Sample>& out, const TriageOptions& o,
                    std::optional<int>* cpus_seen = nullptr);
LogReport parse_pidstat(const std::string& text, std::vector<Sample>& out, const TriageOptions& o,
                        std::optional<int>* cpus_seen = nullptr);

}  // namespace stepscope::watch
