// Pieces of the diff, exposed for its tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stepscope/diff.hpp"

namespace stepscope::diff_detail {

// Fewer steady steps than this on a side: no interval, and no claim about noise.
inline constexpr std::size_t kMinStepsForInterval = 3;
// A speedup closer to 1 than this is not called a change even when the interval excludes 1:
// with thousands of steps a 0.1% shift is "significant" and still not worth a user's attention.
inline constexpr double kMinEffect = 0.01;

// The steps the steady-state means cover: non-warm-up steps, or all when every step is warm-up.
std::vector<const StepPartition*> steady_windows(const RankPartition& p);
// One duration per job step (mean over the ranks that have that step number).
std::vector<double> job_step_samples(const AnalysisResult& r);
// Percentile bootstrap (95%) of mean(base) / mean(test).
std::pair<double, double> bootstrap_speedup(const std::vector<double>& base, const std::vector<double>& test,
                                            int samples, std::uint64_t seed);
StepChange step_change(const AnalysisResult& base, const AnalysisResult& test, const DiffOptions& opts);
std::vector<CategoryChange> category_changes(const AnalysisResult& base, const AnalysisResult& test);

struct Tally {
  double ns = 0;
  double count = 0;
};

// GPU activity and host calls per steady-state step, averaged over ranks.
struct KernelTable {
  std::map<std::string, Tally> kernels;  // by kernel name
  std::map<std::string, KernelClass> classes;  // by kernel name: the facts layer's class
  std::map<std::string, double> counts;  // "kernel launches", "H2D copies", ...
};
KernelTable kernel_table(const DiagnosedRun& a);
std::vector<KernelChange> kernel_changes(const KernelTable& base, const KernelTable& test, double threshold);
std::vector<KernelChange> class_changes(const KernelTable& base, const KernelTable& test, double threshold);
std::vector<CountChange> count_changes(const KernelTable& base, const KernelTable& test);

std::vector<Warning> comparability_warnings(const DiagnosedRun& base, const DiagnosedRun& test);

}  // namespace stepscope::diff_detail
