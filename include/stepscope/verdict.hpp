// The diagnosis: one bound with its evidence and runner-up, findings, and ranked levers.
// Types only; `diagnose` (stepscope/diagnose.hpp) fills them from an AnalysisResult.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepscope/footgun_ids.hpp"
#include "stepscope/lever_ids.hpp"

namespace stepscope {

enum class Bound : std::uint8_t {
  GpuCompute,
  InputPipeline,
  Copy,           // H2D / D2H copies and memsets
  HostLaunch,     // host compute and kernel launch overhead
  SyncStall,
  Communication,
  SideWork,
  Straggler,
  Unattributed,   // time no profiled op explains (resolved before it reaches a verdict)
  Inconclusive,   // the trace cannot tell (a blocking trust warning: lost GPU records, ...)
};
inline constexpr int kBoundCount = 10;
// The ids the trace generator's ground truth uses: "gpu-bound", "input-bound", ...; a CPU-only
// trace's compute is "cpu-bound", so that the id and the label always say the same thing.
const char* bound_id(Bound b, bool gpu = true);
// Words for reports: "GPU compute", "input pipeline", ...; CPU-only traces say "compute (host CPU)".
const char* bound_label(Bound b, bool gpu = true);

struct Verdict {
  Bound bound = Bound::GpuCompute;
  bool gpu = true;              // false for CPU-only traces: "compute" is the host's
  double share = 0;             // of the mean steady-state step held by the bound's categories
  std::string scope;            // "every step", or "4 of 11 steps (every 4 steps)"
  Bound runner_up = Bound::GpuCompute;
  double runner_up_share = 0;
  bool has_runner_up = false;
  std::string compute_kind;     // when compute dominates: what kind of compute
  bool unrecorded = false;      // the bound was read from time no profiled op explains
  std::vector<std::string> evidence;  // the numbers that decided it
  std::string headline;         // one line: the bound, its share, the best lever's gain
  std::string inconclusive_because;  // Inconclusive: the trust warnings that block a verdict
};

struct Lever {
  LeverId id = LeverId::NumWorkers;
  std::string title;           // what it changes
  std::string knob;            // the PyTorch knob
  std::string targets;         // the categories it shrinks
  double target_ns = 0;        // time per step it acts on
  double removable_ns = 0;     // what it can remove at most per step
  double step_ns = 0;          // the mean step it applies to
  double speedup = 1;          // Amdahl bound: step / (step - removable)
  std::string basis;           // how `removable_ns` was derived
  std::string risk;
  std::string numerics;        // warning where it can change numerics ("" when it cannot)
  std::string comparability;   // warning where it breaks comparability between runs
  bool applies = false;        // the trace shows the time this lever acts on
  Bound acts_on = Bound::GpuCompute;  // the bound whose time it shrinks
  // How sure the gain is: 1 for a fix with no numerics or comparability risk; lower for levers
  // that can change results. Ranking uses removable_ns x certainty.
  double certainty = 1;
  // Share of the analysed step's critical path (HTA's definition, DrillDown::critical_path) spent
  // in the kinds of time this lever acts on, averaged over the ranks that have a path; -1 when no
  // rank has one. Time off the path does not shorten that step: a lever at 0 gains nothing there.
  double critical_path_share = -1;
  // What the what-if replay predicts for the mean steady step with this lever (docs/whatif.md):
  // the step, the speedup and its interval (from the replay error and the lever's own
  // uncertainty), and per setting where the lever has one ("4" workers -> 2.1x). Levers no graph
  // change models carry their Amdahl bound here, with `predicted_replayed` false.
  double predicted_step_ns = 0;
  double predicted_speedup = 1;
  double predicted_speedup_lo = 1, predicted_speedup_hi = 1;
  std::vector<std::pair<std::string, double>> predicted_by_setting;
  bool predicted_replayed = false;
  double predicted_uncertainty = 0;  // the lever's own relative uncertainty on its gain
  std::string prediction_basis;  // the physics of the prediction, in words
};

// Whether a lever's steps are compared per sample: a larger micro-batch's step processes more of
// them, so its predicted_step_ns is the time the recorded batch's samples take, not a step's.
inline bool priced_per_sample(const Lever& l) { return l.id == LeverId::MicroBatch; }

// The plan: compatible levers applied together in one replay, the one that pays most first.
struct LeverPlanEntry {
  LeverId id = LeverId::NumWorkers;
  std::string title;
  double step_ns = 0;  // the predicted mean step with this lever and those before it
  double speedup = 1;  // over the recorded step
};

struct LeverPlan {
  std::vector<LeverPlanEntry> entries;
  double step_ns = 0;        // the recorded mean steady step
  int gpus = 0;              // ranks of the job (one GPU each)
  // The run priced when a length is given (analyze --steps N, --gpu-hour-cost USD).
  std::int64_t run_steps = 0;
  double gpu_hour_cost = 0;  // USD per GPU-hour; 0 when unknown
  double gpu_hours_before = 0, gpu_hours_after = 0;
};

// What a general finding is about; footgun findings name their footgun (stepscope/footgun_ids.hpp).
// X(id, stable string: the finding's `id` in JSON)
#define STEPSCOPE_FINDING_KINDS(X)                                                                      \
  X(HostSync, "host_sync")   /* synchronising calls per step, none of them .item() */               \
  X(Steps, "steps")          /* how the steps were found */                                         \
  X(Recompute, "recompute")  /* activation checkpointing seen */                                    \
  X(Periodic, "periodic")    /* a stall every N steps */                                            \
  X(Straggler, "straggler")  /* the rank the others wait for */                                     \
  X(Arrival, "arrival")      /* the rank that reaches collectives last on aligned clocks */         \
  X(Footgun, "footgun")      /* a footgun detector's finding: its id is the footgun's */

enum class FindingKind : std::uint8_t {
#define STEPSCOPE_FINDING_KIND_ID(id, name) id,
  STEPSCOPE_FINDING_KINDS(STEPSCOPE_FINDING_KIND_ID)
#undef STEPSCOPE_FINDING_KIND_ID
};
std::string_view finding_kind_name(FindingKind k);

struct Finding {
  Finding() = default;
  Finding(FindingKind kind_, std::string text_, std::optional<int> rank_ = std::nullopt)
      : kind(kind_), rank(rank_), text(std::move(text_)) {}
  FindingKind kind = FindingKind::Steps;
  std::optional<FootgunId> footgun;   // footgun findings (kind Footgun): which one
  std::optional<int> rank;            // the rank the finding is about, where it is about one
  std::string text;                   // the sentence; finding_text() puts the rank before it
  // Footgun findings (stepscope/footguns.hpp, docs/footguns.md) also say where to look and what
  // fixing it can gain; other findings leave these empty.
  std::vector<std::string> evidence;  // event names, counts and times a user can find in the trace
  std::optional<LeverId> lever;       // the lever that fixes it
  double gain_ns = 0;                 // removable per mean steady-state step, at most
  double step_ns = 0;                 // the step the gain applies to
  double speedup = 1;                 // Amdahl bound: step / (step - gain)
  bool is_footgun() const { return footgun.has_value(); }
};

// The finding's stable id: its footgun's name, else its kind's ("straggler").
std::string_view finding_id(const Finding& f);
// The finding as one sentence: "rank 3: ..." where it is about a rank ("rank 3 reaches ..." for
// an arrival).
std::string finding_text(const Finding& f);
// A footgun finding of `id`, with the lever the registry gives it.
Finding footgun_finding(FootgunId id, std::string text, std::optional<int> rank = std::nullopt);

struct Diagnosis {
  bool present = false;
  Verdict verdict;
  std::vector<Finding> findings;
  std::vector<Lever> levers;   // the whole catalogue, applicable ones first by predicted step time
  LeverPlan plan;
};

// Prices a plan for a run of `steps` steps at `gpu_hour_cost` USD per GPU-hour (0: hours only).
// Example: 10,000 steps of 120 ms on 8 GPUs -> 2.67 GPU-hours.
void price_plan(LeverPlan& plan, std::int64_t steps, double gpu_hour_cost);

}  // namespace stepscope
