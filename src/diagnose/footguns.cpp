// The footgun findings: the detectors' judgements (stepscope/footgun_detector.hpp, one file each
// in src/analysis/footguns/) as findings, each with the gain of its fix and the lever the
// registry gives it (docs/footguns.md).
#include "stepscope/footguns.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "diagnose/diagnose_internal.hpp"

namespace stepscope {
namespace {

using namespace diagnose_detail;

Finding finding_of(footgun::FootgunJudgement&& j) {
  Finding f = footgun_finding(j.id, "");
  const double step = j.step_ns;
  f.step_ns = step;
  f.gain_ns = std::clamp(j.gain_ns, 0.0, step * 0.999);
  f.speedup = step > 0 ? step / (step - f.gain_ns) : 1;
  f.text = fmt::format("{}; fixing it gains up to {} per step ({:.2f}x)", j.text, ms(f.gain_ns), f.speedup);
  f.evidence = std::move(j.evidence);
  return f;
}

}  // namespace

std::vector<Finding> detect_footguns(const AnalysisResult& r, const JobStep& job) {
  const footgun::FootgunJob fj{job.step_ns, job.category, job.gpu,
                               comm_role_shares(r)[static_cast<std::size_t>(CommRole::GradientSync)]};
  std::vector<Finding> out;
  for (auto& j : footgun::judge_footguns(r, fj)) out.push_back(finding_of(std::move(j)));
  return out;
}

}  // namespace stepscope
