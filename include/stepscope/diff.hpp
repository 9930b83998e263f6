// Before/after: what changed between two runs of the same job, and whether it is beyond noise.
//
// Both sides are reduced to the job-level steady-state step (the mean over ranks of each rank's
// steady-state means, as the verdict uses), so the per-category changes sum to the step change.
// The speedup's interval is a percentile bootstrap over the per-step samples of each side.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/diagnose.hpp"
#include "stepscope/warning_ids.hpp"

namespace stepscope {

inline constexpr const char* kDiffSchemaVersion = "stepscope.diff/0.2";

struct CategoryChange {
  Category category = Category::Idle;
  double base_ns = 0, test_ns = 0;  // mean per steady-state step
  double delta_ns = 0;              // test - base
  double delta_pct_of_base_step = 0;  // delta / base step, in %
};

struct StepChange {
  double base_ns = 0, test_ns = 0;   // mean steady-state step
  double speedup = 1;                // base / test (> 1: the test run is faster)
  double speedup_lo = 1, speedup_hi = 1;  // 95% bootstrap interval of the speedup
  double base_cv = 0, test_cv = 0;   // step-to-step noise of each side
  std::size_t base_steps = 0, test_steps = 0;
  bool significant = false;          // the interval excludes 1 and the change exceeds the noise
};

enum class ChangeKind : std::uint8_t { Added, Removed, Faster, Slower, Unchanged };
const char* change_kind_name(ChangeKind k);

// A kernel (by name) or a kernel class, per steady-state step on the job (summed over ranks,
// divided by the number of ranks).
struct KernelChange {
  std::string name;
  std::string kernel_class;
  double base_ns = 0, test_ns = 0;       // GPU time per step
  double base_count = 0, test_count = 0; // launches per step
  ChangeKind kind = ChangeKind::Unchanged;
};

// Counted activity per step: kernel launches, copies, copy bytes, sync points.
struct CountChange {
  std::string what;    // "kernel launches", "H2D copies", "H2D bytes", "sync calls", ...
  double base = 0, test = 0;
};

struct DiffResult {
  std::string schema = kDiffSchemaVersion;
  DiagnosedResult base, test;          // both sides in full, for side-by-side reports
  std::string base_label, test_label;  // the paths the user gave
  StepChange step;
  std::vector<CategoryChange> categories;  // all 14, descending |delta|
  bool both_diagnosed = false;
  Bound base_bound = Bound::GpuCompute, test_bound = Bound::GpuCompute;
  bool bottleneck_moved = false;
  std::string headline;                // one line: the speedup, its interval, the bound's move
  std::vector<KernelChange> kernel_classes;  // descending |delta time|
  std::vector<KernelChange> kernels;         // descending |delta time|, Unchanged left out
  std::vector<CountChange> counts;
  std::vector<Warning> comparability;  // GPU, world size, shapes, steps, profiler (stepscope/warning_ids.hpp)
};

struct DiffOptions {
  int bootstrap_samples = 2000;
  std::uint64_t seed = 1;        // the bootstrap is deterministic for a given seed
  double kernel_threshold = 0.05;  // a kernel is faster/slower beyond this relative change
};

// The sides are consumed (moved into the result). A pipeline's Analysis is a DiagnosedRun.
DiffResult diff_runs(DiagnosedRun base, DiagnosedRun test, const DiffOptions& opts = {});

}  // namespace stepscope
