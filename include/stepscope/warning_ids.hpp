// The registry of warnings: every warning a report prints beside its figures (a diff's
// comparability, a memory snapshot's limits, watch's and triage's notes, the reading's warnings),
// once, with its stable string (docs/warnings.md), its severity and what raises it. A channel
// holds Warning values: the id, which code compares, and the line in words, which the reports
// print as they always did; the reading's channels hold records whose line is rendered at the
// reports (stepscope/ingest_warning.hpp). A new warning is one line here and a row in
// docs/warnings.md's table (a test holds the two to each other).
// Trust warnings, which limit a claim, are a registry of their own (stepscope/trust_codes.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepscope/registry.hpp"

namespace stepscope {

// Info: what was done or left out, nothing to act on. Limits: a figure beside it is less sure,
// or two figures compare less well.
enum class WarningSeverity : std::uint8_t { Info, Limits };
constexpr std::string_view warning_severity_name(WarningSeverity s) { return s == WarningSeverity::Info ? "info" : "limits"; }

// X(id, stable string, severity, when it is raised)
#define STEPSCOPE_WARNINGS(X)                                                                                          \
  /* stepscope diff: what differs between the two runs beside the change under test */                                \
  X(GpuModelsDiffer, "gpu_models_differ", Limits, "the two runs ran on different GPU models")                          \
  X(GpuActivityOneSide, "gpu_activity_one_side", Limits, "GPU activity recorded in one run only")                     \
  X(WorldSizeDiffers, "world_size_differs", Limits, "the runs' world sizes differ")                                   \
  X(RankCountDiffers, "rank_count_differs", Limits, "traces of different numbers of ranks")                           \
  X(InputShapesDiffer, "input_shapes_differ", Limits, "the first ops' input shapes differ (batch or sequence length)") \
  X(TooFewStepsToCompare, "too_few_steps_to_compare", Limits, "a run with too few steady steps to separate a change from noise") \
  X(StepCountsDiffer, "step_counts_differ", Info, "the runs' steady step counts differ")                              \
  X(StepSourcesDiffer, "step_sources_differ", Limits, "the runs' steps are delimited differently")                    \
  X(ProfilerSettingDiffers, "profiler_setting_differs", Limits, "record_shapes, with_stack or profile_memory in one run only") \
  X(SchemaVersionsDiffer, "schema_versions_differ", Info, "the traces' schema versions differ")                        \
  /* stepscope memory: what a CUDA memory snapshot does not hold */                                                    \
  X(SnapshotEmpty, "snapshot_empty", Limits, "the snapshot holds no segment and no trace entry")                      \
  X(SnapshotNoHistory, "snapshot_no_history", Limits, "no allocation history: the dump's blocks only")                \
  X(SnapshotNoBackward, "snapshot_no_backward", Limits, "no backward in a device's recording: steps are not visible") \
  /* stepscope watch and triage: what the sampling or the logs could not see */                                      \
  X(NoGpuObserved, "no_gpu_observed", Limits, "no GPU observed (NVML unavailable, or no GPU log given): host side only") \
  X(TargetExited, "target_exited", Info, "the watched process exited before the window ended")                       \
  X(NoGpuContext, "no_gpu_context", Limits, "no watched process holds a GPU context: the GPUs seen are not judged")    \
  X(UnknownLog, "unknown_log", Info, "a log in no format triage reads, ignored")                                      \
  X(MalformedLogLines, "malformed_log_lines", Limits, "malformed lines of a log skipped")                              \
  X(NoMatchingProcess, "no_matching_process", Limits, "no process in the host logs matches the job")                  \
  X(NoCoreCount, "no_core_count", Limits, "the logs do not say how many cores the job had")                          \
  /* the step partition: how its windows were drawn where that is not plain (step_partition.hpp) */                  \
  X(GpuDrainsPastStep, "gpu_drains_past_step", Info, "GPU work runs past the host's step end: each window runs to the end of the work it launched") \
  X(WholeTraceWindow, "whole_trace_window", Limits, "nothing to split steps on: the trace (or its longest host call) is one window") \
  X(CpuOpsAsCompute, "cpu_ops_as_compute", Limits, "a CPU-only trace without stage markers: host ops outside the loader, syncs and side work count as compute") \
  /* reading the traces: what was skipped, cut or left out, how ranks were told apart (ingest_warning.hpp) */     \
  X(UnreadableEntry, "unreadable_entry", Limits, "a directory's trace file that cannot be read, skipped")            \
  X(NotTracesSkipped, "not_traces_skipped", Info, "a directory's JSON files that hold no trace, skipped")            \
  X(FileCutOff, "file_cut_off", Limits, "a trace file cut off: its complete events kept, the bytes after them lost")  \
  X(EventsWithoutTs, "events_without_ts", Limits, "events without a ts, skipped")                                    \
  X(TimeOutOfRange, "time_out_of_range", Limits, "events with a ts or dur beyond 146 years, skipped")                \
  X(UnpairedBeginEnd, "unpaired_begin_end", Limits, "begin/end events without a partner, kept with zero duration")    \
  X(CutBeforeFirstEvent, "cut_before_first_event", Limits, "a rank file cut off before its first event, left out of the ranks") \
  X(EventlessFile, "eventless_file", Limits, "a directory's complete trace that holds no event, left out of the ranks") \
  X(RanksSplit, "ranks_split", Info, "a file of several ranks, its processes named after them, read as one trace per rank") \
  X(RanksNotSplit, "ranks_not_split", Limits, "a file of several ranks, some processes named after none, read whole") \
  X(RanksInFileOrder, "ranks_in_file_order", Info, "traces that name no rank, numbered in file order")               \
  X(ExportRanksInFileOrder, "export_ranks_in_file_order", Info, "an Nsight export of several processes with CUDA work, numbered in file and pid order") \
  X(ExportReadAsOneRank, "export_read_as_one_rank", Limits, "an Nsight export's processes that its GPU rows do not tell apart, read as one rank") \
  X(ExportRowsSkipped, "export_rows_skipped", Limits, "an Nsight export table's rows with a missing or out-of-range start/end, skipped") \
  X(ExportRowsLeftOut, "export_rows_left_out", Info, "an Nsight export's rows of processes without CUDA work, or of no known process, left out")

STEPSCOPE_REGISTRY_ENUM(WarningId, STEPSCOPE_WARNINGS);

struct WarningInfo {
  WarningId id;
  std::string_view name;      // stable: docs spell the warning so
  WarningSeverity severity;
  std::string_view when;      // one line
};

inline constexpr WarningInfo kWarnings[] = {
#define STEPSCOPE_WARNING_ROW(id, name, severity, when) {WarningId::id, name, WarningSeverity::severity, when},
    STEPSCOPE_WARNINGS(STEPSCOPE_WARNING_ROW)
#undef STEPSCOPE_WARNING_ROW
};

constexpr const WarningInfo& warning_info(WarningId w) { return registry_row(kWarnings, w); }
constexpr std::string_view warning_name(WarningId w) { return warning_info(w).name; }
// The warning a stable string names: "gpu_models_differ" -> GpuModelsDiffer; else nullopt.
constexpr std::optional<WarningId> find_warning(std::string_view name) { return registry_find<&WarningInfo::id>(kWarnings, name); }

// One warning of a channel: what it is, and the line the reports print.
//   {GpuModelsDiffer, "GPU models differ: base NVIDIA A100, test NVIDIA H100"}
struct Warning {
  WarningId id;
  std::string text;
  bool operator==(const Warning&) const = default;
};

// A channel's lines, as the reports print them (JSON writes these strings): each warning's line
// as `text` gives it, its own words for a Warning, the rendered line for a record
// (ingest_warning_texts).
template <class W, class Text>
std::vector<std::string> warning_texts(const std::vector<W>& ws, Text text) {
  std::vector<std::string> out;
  out.reserve(ws.size());
  for (const W& w : ws) out.push_back(std::invoke(text, w));
  return out;
}
inline std::vector<std::string> warning_texts(const std::vector<Warning>& ws) { return warning_texts(ws, &Warning::text); }

// Any channel's: Warning values, or records with an id (IngestWarning).
template <class W>
bool has_warning(const std::vector<W>& ws, WarningId id) {
  return std::any_of(ws.begin(), ws.end(), [id](const W& w) { return w.id == id; });
}

}  // namespace stepscope
