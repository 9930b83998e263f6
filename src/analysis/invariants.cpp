// Our figures' own invariants, checked once every analysis is done: the step partition sums to
// each step and holds no negative time, and so does the mean step. A violation is a misread input
// (several ranks in one file, a clock that went back) or a bug; either way its figure must not be
// believed, so it becomes a blocking trust warning that names the figure, never a negative number
// in a report. HTA's figures are left to HTA's definitions, which allow what ours do not (its idle
// gaps count overlapping rows as negative time, and HTA prints them so).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "stepscope/analysis.hpp"

namespace stepscope {

namespace {

struct Violations {
  int rank = 0;
  std::vector<std::string> found;
  void add(std::string what) {
    if (found.size() < 5) found.push_back(std::move(what));
  }
};

void check_steps(const RankPartition& p, Violations& v) {
  for (const auto& s : p.steps) {
    ns_t sum = 0;
    for (std::size_t c = 0; c < s.ns.size(); ++c) {
      sum += s.ns[c];
      if (s.ns[c] < 0)
        v.add(fmt::format("step {}'s {} is {} ns", s.number, category_label(static_cast<Category>(c)), s.ns[c]));
    }
    if (sum != s.duration())
      v.add(fmt::format("step {}'s categories sum to {} ns, its window is {} ns", s.number, sum, s.duration()));
  }
  const double sum = std::accumulate(p.steady_mean_category.begin(), p.steady_mean_category.end(), 0.0);
  for (std::size_t c = 0; c < p.steady_mean_category.size(); ++c)
    if (p.steady_mean_category[c] < 0)
      v.add(fmt::format("the mean step's {} is negative", category_label(static_cast<Category>(c))));
  if (p.steady_steps && std::abs(sum - p.steady_mean_ns) > 1e-6 * std::max(1.0, p.steady_mean_ns) + 1)
    v.add(fmt::format("the mean step's categories sum to {:.0f} ns, the mean step is {:.0f} ns", sum, p.steady_mean_ns));
}

}  // namespace

void check_invariants(AnalysisResult& r) {
  for (const RankAnalysis& a : r.ranks) {
    Violations v{a.rank(), {}};
    check_steps(a.partition, v);
    if (v.found.empty()) continue;
    std::string what;
    for (const auto& f : v.found) what += (what.empty() ? "" : "; ") + f;
    r.job.trust.warnings.push_back({TrustCode::InvariantViolated, TrustSeverity::Blocks, v.rank,
                                "figures that cannot be so: " + what +
                                    "; the input was misread or the analysis is wrong, so no bound is drawn from them",
                                "report the input to the stepscope developers", {{"violations", static_cast<double>(v.found.size())}}});
  }
}

}  // namespace stepscope
