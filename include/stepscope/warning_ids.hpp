// The registry of warnings: every warning a report prints beside its figures (a diff's
// comparability, a memory snapshot's limits, watch's and triage's notes), once, with its stable string (docs/warnings.md),
// its severity and what raises it. A channel holds Warning values: the id, which code compares,
// and the line in words, which the reports print as they always did. A new warning is one line
// here and a row in docs/warnings.md's table (a test holds the two to each other).
// Trust warnings, which limit a claim, are a registry of their own (stepscope/trust_codes.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
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
  X(NoCoreCount, "no_core_count", Limits, "the logs do not say how many cores the job had")

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

// The channel's lines, as the reports print them (JSON writes these strings).
inline std::vector<std::string> warning_texts(const std::vector<Warning>& ws) {
  std::vector<std::string> out;
  out.reserve(ws.size());
  for (const Warning& w : ws) out.push_back(w.text);
  return out;
}

inline bool has_warning(const std::vector<Warning>& ws, WarningId id) {
  return std::any_of(ws.begin(), ws.end(), [id](const Warning& w) { return w.id == id; });
}

}  // namespace stepscope
