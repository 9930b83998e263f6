// Shared between the verdict and the lever catalogue.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "stepscope/diagnose.hpp"

namespace stepscope::diagnose_detail {

using Groups = std::array<double, kBoundCount>;
// Time of each bound's categories in a step (Straggler stays 0: it is not a category).
Groups group_times(const std::array<double, kCategoryCount>& category);

// Mean over ranks with steady steps of a per-rank, per-step figure.
template <class F>
double rank_mean(const AnalysisResult& r, F per_step) {
  double total = 0;
  std::size_t n = 0;
  for (const auto& p : each_rank(r, &RankAnalysis::partition))
    if (p.steady_steps) total += per_step(p), ++n;
  return n ? total / static_cast<double>(n) : 0;
}

// "12.34 ms", "12.3%": the detectors' spelling, which the verdict and levers share.
using footgun::ms;
using footgun::pct;

// Shares of the ranks' communication kernel time by what it is for (CommRole order); all
// GradientSync where no communication kernel ran (gloo and MPI move the data on the host).
std::array<double, kCommRoleCount> comm_role_shares(const AnalysisResult& r);

std::vector<Lever> build_levers(const AnalysisResult& r, const JobStep& job, const Verdict& v);
// Fills Lever::critical_path_share from the ranks' critical paths.
void add_critical_path_shares(const AnalysisResult& r, std::vector<Lever>& levers);
// Footgun findings measured their own gains: their levers take those numbers (and levers the
// catalogue lacks join it); diagnose orders the levers once, at the end.
void apply_footgun_levers(std::vector<Lever>& levers, const std::vector<Finding>& findings);
// Precision levers move kernels to the device's roofline, which bounds them: their bound is the
// whole fp32 math time gone, and a finding's guess of their gain (half the SIMT GEMM time) neither
// narrows it nor holds the replay's prediction.
bool physics_bounded(LeverId id);
// Fills each lever's prediction from the ranks' what-if replays (the Amdahl bound where no graph
// change models it); a lever already in place stops applying, and a bound below the replay's
// prediction rises to it.
void add_predictions(const AnalysisResult& r, std::vector<Lever>& levers);
// Levers the replay predicts to gain under 1% of the step stop applying, and say why.
void withhold_without_gain(std::vector<Lever>& levers);
// The ranks' plan, as far as its levers apply.
void add_plan(const AnalysisResult& r, Diagnosis& d);
// Applicable levers first, by predicted step time saved x certainty; a lever on `bound` first
// when it is close to the best.
void order_levers(std::vector<Lever>& levers, Bound bound);
// Levers that do not exist for the run's kind (training levers on inference, graphs on one pass,
// anything but precision on a timing harness) stop applying and say why.
void gate_levers_by_kind(std::vector<Lever>& levers, const AnalysisResult& r);

}  // namespace stepscope::diagnose_detail
