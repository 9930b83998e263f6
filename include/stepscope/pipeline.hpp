// The whole analysis of a set of files in one call: read, analyse, diagnose. Errors: InputError
// for unreadable or malformed input, and for jobs outside 0..kMaxJobs. The CLI's commands
// and the Python module call this, so they give the same result for the same input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/analysis.hpp"
#include "stepscope/diagnose.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/rank_summary.hpp"

namespace stepscope {

// More threads than this are refused: beyond it they only cost memory and start-up, and the
// system may refuse to create them.
inline constexpr int kMaxJobs = 256;

// Where a run is: reading a trace into its model, or analysing a rank already read.
enum class RunPhase : std::uint8_t { Reading, Analysing };

// Told, on the thread that moves it, as a run turns from reading a file to analysing its ranks and
// back (with several files read at once, the phases of different files interleave). The binary
// tunes its allocator by it, as the library links no allocator of its own; the result does not
// depend on it. One listener for the process, none until set.
void set_run_phase_listener(void (*listener)(RunPhase));

struct PipelineOptions {
  IngestOptions ingest;
  AnalyzeOptions analyze;
  bool keep_summary = false;  // also fill Analysis::summary (for `analyze --summary`)
  // A model preset (`stepscope plan models`) whose planned model states are set beside each
  // memory snapshot's peak; "" for none.
  std::string memory_model;
  // Fill Analysis::trace with every rank's events (the annotated trace and diff read them). When
  // false, each rank is analysed as soon as its file is read and its events let go: at most
  // ingest.jobs traces are held at once, however many ranks the job has. The result is the same.
  bool keep_trace = true;
};

// What one run produced (DiagnosedRun): the trace model (for outputs that need the events, such as
// the annotated trace) and the result every report renders, its diagnosis beside it.
struct Analysis : DiagnosedRun {
  SummaryFile summary;  // the ranks' analyses before they were combined; empty unless keep_summary
};

// Throws InputError on bad input, exactly as the readers do.
Analysis analyze_paths(const std::vector<std::string>& paths, const PipelineOptions& opts = {});

// The cross-rank half: the ranks of several summaries side by side, then the diagnosis; equal to
// analyze_paths over the files the summaries were made from. Ranks numbered in file order (their
// trace named no rank) are numbered again over all parts: in the order of their files in
// `file_order` when given (the listing the parts were shared from), else in the order the parts
// are given. Two ranks of the same number are refused (InputError naming both files); so is a set
// of parts without a rank. Set warnings repeated by several parts are kept once.
DiagnosedResult merge_summaries(std::vector<SummaryFile>&& parts, const std::vector<std::string>& file_order = {});

// Reads summary files (gzip-compressed ones too, by their magic bytes), merges them in the order
// given and diagnoses: what `stepscope merge` reports. Errors: InputError for a file that cannot
// be read or holds no summary, and merge_summaries' errors.
DiagnosedResult merge_summary_files(const std::vector<std::string>& paths);

}  // namespace stepscope
