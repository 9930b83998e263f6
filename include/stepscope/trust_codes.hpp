// The registry of trust codes: every warning that limits what a trace supports, once, with its
// stable string (JSON, summaries, docs/facts.md), its usual severity and what raises it. A new
// code is one line here and a row in docs/facts.md's table (a test holds the two to each other);
// the analyses compare codes through TrustCode, never by spelling.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "stepscope/registry.hpp"

namespace stepscope {

enum class TrustSeverity : std::uint8_t { Info, Limits, Blocks };
const char* trust_severity_name(TrustSeverity s);  // "info", "limits", "blocks"

// X(id, stable string, usual severity, when it is raised)
#define STEPSCOPE_TRUST_CODES(X)                                                                                  \
  X(IncompleteGpuRecords, "incomplete_gpu_records", Blocks, "a GPU job with launches and no GPU records, or too few") \
  X(SeveralRanksInFile, "several_ranks_in_file", Blocks, "the file holds several ranks and could not be split")    \
  X(NoHostActivity, "no_host_activity", Blocks, "GPU records but no host op, annotation or runtime call")         \
  X(FilteredExport, "filtered_export", Blocks, "communication kernels and no compute kernel")                    \
  X(StartupOnly, "startup_only", Blocks, "no step and no compute kernel; start-up holds half the window")        \
  X(PartialJob, "partial_job", Limits, "fewer than half of the job's ranks in view")                            \
  X(InvariantViolated, "invariant_violated", Blocks, "a figure that cannot be so (categories not summing up)")   \
  X(SeparateRuns, "separate_runs", Blocks, "traces of no common job: no rank, no collective, no overlap")       \
  X(UntracedGpuWork, "untraced_gpu_work", Blocks, "long device syncs while the traced GPU idles")               \
  X(UntracedGraphReplays, "untraced_graph_replays", Blocks, "most CUDA graph replays have no GPU record")       \
  X(NoModelWork, "no_model_work", Blocks, "no PyTorch ops, launches or GPU records")                           \
  X(ColdStart, "cold_start", Limits, "one-time start-up calls, left out of the steady state")                  \
  X(OrphanGpuRecords, "orphan_gpu_records", Info, "GPU records whose correlation no host call carries")         \
  X(Truncated, "truncated", Limits, "the file is cut off")                                                      \
  X(NoStepMarkers, "no_step_markers", Info, "the trace is read as one window")                                  \
  X(OneStep, "one_step", Limits, "one steady-state step")                                                       \
  X(FewSteps, "few_steps", Limits, "fewer than three steady-state steps")                                        \
  X(HostRunsAhead, "host_runs_ahead", Info, "steps measured on the GPU side")                                   \
  X(ProfilerOverhead, "profiler_overhead", Limits, "the profiler's own host cost is 20%+ of the step")          \
  X(ReplayError, "replay_error", Limits, "the step graph's replay is off the measured steps")

STEPSCOPE_REGISTRY_ENUM(TrustCode, STEPSCOPE_TRUST_CODES);

struct TrustCodeInfo {
  TrustCode code;
  std::string_view name;      // stable: JSON, summaries and docs spell the code so
  TrustSeverity severity;     // the usual one; a code may be raised harder where it blocks a claim
  std::string_view when;      // one line
};

inline constexpr TrustCodeInfo kTrustCodes[] = {
#define STEPSCOPE_TRUST_ROW(id, name, severity, when) {TrustCode::id, name, TrustSeverity::severity, when},
    STEPSCOPE_TRUST_CODES(STEPSCOPE_TRUST_ROW)
#undef STEPSCOPE_TRUST_ROW
};

constexpr const TrustCodeInfo& trust_code_info(TrustCode c) { return registry_row(kTrustCodes, c); }
constexpr std::string_view trust_code_name(TrustCode c) { return trust_code_info(c).name; }
// The code a stable string names: "cold_start" -> ColdStart; an unregistered string -> nullopt.
constexpr std::optional<TrustCode> find_trust_code(std::string_view name) {
  return registry_find<&TrustCodeInfo::code>(kTrustCodes, name);
}

}  // namespace stepscope
