// The analysis result: one struct that every report (text, JSON, HTML) renders.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ranges>
#include <string>
#include <vector>

#include "stepscope/cuda_summary.hpp"
#include "stepscope/drilldown.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/footgun_detector.hpp"
#include "stepscope/partition.hpp"
#include "stepscope/ranks.hpp"
#include "stepscope/stability.hpp"
#include "stepscope/gpu_timeline.hpp"
#include "stepscope/memory/analysis.hpp"
#include "stepscope/trace.hpp"
#include "stepscope/whatif.hpp"
#include "stepscope/whatif_job.hpp"

namespace stepscope {

// Version of the JSON report's layout; bump on any incompatible change.
inline constexpr const char* kJsonSchemaVersion = "stepscope.analysis/0.10";

struct StreamSummary {
  std::int64_t device = 0;
  std::int64_t stream = 0;
  std::uint64_t events = 0;
  ns_t busy_ns = 0;  // sum of event durations on the stream (not a union)
  std::optional<StreamInfo> info;  // creation flag and priority, when the trace records them
};

struct ThreadSummary {
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::string name;
  std::uint64_t events = 0;
};

// IngestSummary::rank_source of a rank numbered by its place among the files read.
inline constexpr const char* kRankSourceFileOrder = "file order";

// What was read from one rank's trace, before any interpretation.
struct IngestSummary {
  int rank = 0;
  std::string rank_source;  // distributedInfo | file name | kRankSourceFileOrder
  std::string path;
  std::string layout;  // kineto | legacy array
  std::optional<int> world_size;
  std::string backend;
  std::uint64_t events = 0;
  std::map<std::string, std::uint64_t> events_by_category;  // raw `cat` ("(none)" if absent)
  std::map<std::string, std::uint64_t> events_by_kind;      // stepscope's kind names
  ns_t first_ts = 0, last_end = 0;
  std::uint64_t counters = 0;
  std::vector<ThreadSummary> threads;
  std::vector<StreamSummary> streams;
  std::vector<std::string> gpus;  // device names from deviceProperties
  std::vector<DeviceProperties> devices;  // the same devices' properties (memory for the footguns)
  std::vector<std::int64_t> profiler_steps;  // N of every ProfilerStep#N found on the host
  std::uint64_t bytes_read = 0;
  bool truncated = false;
  std::uint64_t bytes_lost = 0;
  std::vector<IngestWarning> warnings;
};

// Everything the analysis of one rank produced, before the ranks are put side by side: what the
// cross-rank analyses, the diagnosis and every report read of that rank, and nothing that needs
// its events. A rank's summary file (stepscope/rank_summary.hpp) holds exactly this. The rank's
// number is ingest.rank, held nowhere else: a report that names a rank reads it there.
struct RankAnalysis {
  IngestSummary ingest;
  // Name facts, device model, sync counts. The JSON report writes their per-rank summary
  // (device, record counts), not the name tables.
  RankFacts facts;
  RankPartition partition;
  Stability stability;
  GpuTimeline gpu_timeline;  // HTA-compatible figures and ours
  CudaSummary cuda_summary;  // nsys stats / analyze figures
  // Operator and kernel views, queue length, memory bandwidth, kernel sequences and memory over
  // time. Absent when AnalyzeOptions::with_drilldown is false, and in a combined result on every
  // rank unless every rank has one.
  std::optional<DrillDown> drilldown;
  footgun::RankFootguns footgun_scan;  // each footgun detector's evidence of the rank's events
  // What the clock alignment across ranks reads of this rank: combine_ranks reads it, then empties
  // it (no report reads it; a job of many ranks would hold every collective twice).
  CollectiveMarks collectives;
  whatif::RankWhatIf whatif;  // the step graph's replay: the replay error and the levers' predictions
  int rank() const { return ingest.rank; }
};

// What is about the set of ranks rather than any one of them.
struct JobAnalysis {
  std::vector<IngestWarning> warnings;  // about the set of ranks (Trace::warnings)
  // Every trust warning, trace-level (facts) then step-level (partition), rank by rank, then the
  // job's own (partial job, separate runs): what limits the conclusions. Reports show it before
  // the verdict. Job-level because its order and grouping are the job's; each warning names its rank.
  Trust trust;
  RankComparison rank_comparison;  // the ranks side by side: straggler, spread, clock alignment
  // The ranks joined at their collectives and replayed: the straggler's and the communication
  // levers' predictions for the job (present for two or more ranks sharing collectives).
  whatif::JobWhatIf whatif;
  // CUDA memory snapshots among the inputs (pickles, told by their first bytes), one per file:
  // they belong to no rank's trace. Reports show a memory section only when this is not empty.
  std::vector<memory::SnapshotAnalysis> memory_snapshots;
};

// The analysis result: every rank's analyses whole, in rank order, and the job's.
struct AnalysisResult {
  std::string schema = kJsonSchemaVersion;
  std::vector<RankAnalysis> ranks;
  JobAnalysis job;
};

// One field of every rank, in rank order, for a reader that needs only that field:
// `for (const Stability& s : each_rank(r, &RankAnalysis::stability))`.
template <class Field>
auto each_rank(const AnalysisResult& r, Field RankAnalysis::*field) {
  return std::views::transform(r.ranks, field);
}

// Whether the result holds drill-downs: combine_ranks keeps every rank's or none.
inline bool has_drilldowns(const AnalysisResult& r) { return !r.ranks.empty() && r.ranks.front().drilldown.has_value(); }

// The drill-down of every rank that has one with the rank's number, in rank order:
// `for (const auto& [rank, d] : each_drilldown(r))`.
inline auto each_drilldown(const AnalysisResult& r) {
  return r.ranks | std::views::filter([](const RankAnalysis& a) { return a.drilldown.has_value(); }) |
         std::views::transform([](const RankAnalysis& a) { return std::pair<int, const DrillDown&>(a.rank(), *a.drilldown); });
}

struct AnalyzeOptions {
  PartitionOptions partition;  // --stage NAME=REGEX rules
  int jobs = 0;                // ranks analysed at once; 0 = number of cores
  // Threads one rank's analyses share (0 = number of cores): the critical path, the GPU timeline
  // with the drill-down, and the step partition with what reads it run side by side. analyze_ranks
  // shares `jobs` among its ranks (rank_threads_for): a lone rank gets every job.
  int rank_threads = 1;
  bool with_drilldown = true;  // false leaves RankAnalysis::drilldown absent (cost comparisons)
  DrillDownOptions drilldown;
  whatif::WhatIfOptions whatif;  // the step graph's replay, and the user's changes to replay
  // False frees the per-event facts (RankFacts::event_role, event_parent, event_steps' steps,
  // event_stage) as soon as their last reader in the analysis has run, for a caller that drops
  // the trace once the rank is analysed: without the trace nothing reads them, and they were
  // held through the analysis's peaks (3.8 MB, 10 bytes an event, on the 107 MB benchmark trace).
  bool keep_event_facts = true;
};

IngestSummary summarize_ingest(const RankTrace& t);
// IngestSummary::rank_source's words for a RankSource: "distributedInfo", "file name", "file order".
const char* rank_source_name(RankTrace::RankSource s);

// The analyses of one rank: they read that rank's trace alone.
RankAnalysis analyze_rank(const RankTrace& rank, const AnalyzeOptions& opts = {});

// The ranks side by side: the rank comparison, the run kind and trust checks that need a rank's
// steps, and the job's trust list. `ranks` must be in rank order; `warnings` are about the set
// of ranks (Trace::warnings). Every rank's slot moves into the result.
AnalysisResult combine_ranks(std::vector<RankAnalysis>&& ranks, std::vector<IngestWarning> warnings);

// The step partition's invariants (each step's categories sum to it, no negative time, the mean
// step likewise), checked on a combined result: each violation becomes an `invariant_violated` trust
// warning of its rank. combine_ranks runs it.
void check_invariants(AnalysisResult& r);

// analyze_rank on every rank of `trace`, up to opts.jobs at once, in the trace's (rank) order.
std::vector<RankAnalysis> analyze_ranks(const Trace& trace, const AnalyzeOptions& opts = {});

// analyze_ranks, then combine_ranks.
AnalysisResult analyze(const Trace& trace, const AnalyzeOptions& opts = {});

}  // namespace stepscope
