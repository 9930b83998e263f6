// Reports render the analysis result; they compute nothing new.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "stepscope/analysis.hpp"
#include "stepscope/diff.hpp"

namespace stepscope {

// Past this many ranks a report lists a sample of them (listed_ranks), not every one.
inline constexpr std::size_t kListedRanks = 16;

// The ranks a report lists one by one, as indices into the result's per-rank vectors in rank
// order: every rank when there are at most `limit` (or `limit` is 0); else the straggler and the
// ranks at evenly spaced quantiles of the steady-state step, fastest and slowest included,
// `limit` in all. Ranks without a steady step count as slowest.
std::vector<std::size_t> listed_ranks(const AnalysisResult& r, std::size_t limit);

// Where a rank's steady step stands among all ranks': 0 the fastest, 1 the slowest.
double step_quantile(const AnalysisResult& r, std::size_t index);

struct TextOptions {
  bool color = false;
  bool verbose = false;  // every category and thread, not just the largest
  bool wide = false;     // whole op and kernel names instead of names shortened in the middle
  std::size_t top = 10;  // rows of the operator and kernel tables
  // Columns every line fits (the CLI: COLUMNS, the terminal's, or 100 in a pipe); 0 leaves lines
  // whole and sizes the tables for 100. --wide leaves lines whole too, names and all.
  std::size_t width = 0;
  std::size_t ranks = kListedRanks;  // ranks listed one by one (0: every rank), see listed_ranks
};

std::string render_text(const DiagnosedResult& r, const TextOptions& opts = {});

// Every line of `text` in at most `width` columns (0: unchanged): a longer line breaks between
// words, its continuation four columns under its own indent; a word longer than the room left is
// shortened in the middle with "…". Every text report goes through it on its way out.
std::string fit_to_width(std::string_view text, std::size_t width);
// The reading warnings (files skipped, events lost, ranks numbered by file order), one line each,
// for standard error: the report on standard output stays the analysis alone.
std::string render_warnings(const AnalysisResult& r);

struct JsonOptions {
  // Ranks whose drill-down (operator and kernel tables, critical path, time series) the document
  // holds: the listed_ranks of this many (0: every rank). Every other per-rank figure is there
  // for every rank; the drill-down is most of a rank's bytes (60 kB for a small one, megabytes
  // for a large one), which at thousands of ranks no reader wants in one document. The CSV
  // tables hold every rank's.
  std::size_t drilldown_ranks = kListedRanks;
};
nlohmann::json to_json(const DiagnosedResult& r, const JsonOptions& opts = {});
// The same document as to_json(r, opts).dump(2) and a newline (invalid UTF-8 replaced), handed
// to `out` in pieces: each rank's object built, written and let go in turn, so that thousands of
// ranks never stand in memory as one document (for 4,096 small ranks, 0.2 GB of text instead of
// a 0.7 GB tree).
void write_json_report(const DiagnosedResult& r, const JsonOptions& opts, const std::function<void(std::string_view)>& out);

// The drill-down's tables as CSV (`analyze --csv DIR`): operators by name, by name and shape and
// by module, kernels, kernel sequences, queue length, memory bandwidth, the critical path and
// memory over time; every rank's rows, with a `rank` column. Header only when a table is empty.
struct CsvTable {
  std::string file;  // "kernels.csv", ...
  std::string text;
};
std::vector<CsvTable> drilldown_csv_tables(const AnalysisResult& r);
// The file names drilldown_csv_tables makes, whatever the result.
std::vector<std::string> drilldown_csv_names();

// Before/after reports of `stepscope diff`.
std::string render_diff_text(const DiffResult& d, const TextOptions& opts = {});
nlohmann::json diff_to_json(const DiffResult& d);

// Trace text (kernel and op names, file names) is untrusted: C0 and C1 controls, DEL and the
// bidirectional overrides and isolates become \\xNN or \\uNNNN escapes, and so do bytes that are not
// UTF-8, so nothing in it can drive or reorder the terminal. The one function for that sink.
std::string terminal_safe(std::string_view s);

}  // namespace stepscope
