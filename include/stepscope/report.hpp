// Reports render the analysis result; they compute nothing new.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "stepscope/analysis.hpp"
#include "stepscope/diff.hpp"

namespace stepscope {

struct TextOptions {
  bool color = false;
  bool verbose = false;  // every category and thread, not just the largest
  bool wide = false;     // whole op and kernel names instead of names shortened in the middle
  std::size_t top = 10;  // rows of the operator and kernel tables
  std::size_t width = 0; // terminal columns the tables fit (0: not a terminal, 100 assumed)
};

std::string render_text(const AnalysisResult& r, const TextOptions& opts = {});
nlohmann::json to_json(const AnalysisResult& r);

// The drill-down's tables as CSV (`analyze --csv DIR`): operators by name, by name and shape and
// by module, kernels, kernel sequences, queue length, memory bandwidth, the critical path and
// memory over time; every rank's rows, with a `rank` column. Header only when a table is empty.
struct CsvTable {
  std::string file;  // "kernels.csv", ...
  std::string text;
};
std::vector<CsvTable> drilldown_csv_tables(const AnalysisResult& r);

// Before/after reports of `stepscope diff`.
std::string render_diff_text(const DiffResult& d, const TextOptions& opts = {});
nlohmann::json diff_to_json(const DiffResult& d);

// Trace text (kernel and op names) is untrusted: control characters could drive the terminal.
std::string terminal_safe(std::string_view s);

}  // namespace stepscope
