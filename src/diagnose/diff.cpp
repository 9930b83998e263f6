// Before/after comparison of two analysed runs (see include/stepscope/diff.hpp).
#include "stepscope/diff.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "diagnose/diagnose_internal.hpp"
#include "diagnose/diff_internal.hpp"
#include "stepscope/diagnose.hpp"

namespace stepscope {

const char* change_kind_name(ChangeKind k) {
  switch (k) {
    case ChangeKind::Added: return "added";
    case ChangeKind::Removed: return "removed";
    case ChangeKind::Faster: return "faster";
    case ChangeKind::Slower: return "slower";
    case ChangeKind::Unchanged: return "unchanged";
  }
  return "unchanged";
}

namespace diff_detail {

std::vector<double> job_step_samples(const AnalysisResult& r) {
  // Steps are matched across ranks by number; a job step lasts the mean of its ranks' windows,
  // the same averaging job_step() uses for the means.
  std::map<std::int64_t, std::pair<double, int>> by_number;
  for (const auto& p : each_rank(r, &RankAnalysis::partition))
    for (const auto& s : steady_windows(p)) {
      auto& [sum, n] = by_number[s->number];
      sum += static_cast<double>(s->duration());
      ++n;
    }
  std::vector<double> out;
  out.reserve(by_number.size());
  for (const auto& [number, acc] : by_number) out.push_back(acc.first / acc.second);
  return out;
}

std::vector<const StepPartition*> steady_windows(const RankPartition& p) {
  std::vector<const StepPartition*> out;
  for (const auto& s : p.steps)
    if (!s.warmup) out.push_back(&s);
  // A trace whose every step is warm-up is still measured, as the steady-state means are.
  if (out.empty())
    for (const auto& s : p.steps) out.push_back(&s);
  return out;
}

namespace {

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double cv_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return m > 0 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) / m : 0;
}

// splitmix64: a small, fully deterministic generator, so the same inputs give the same interval.
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

double resampled_mean(const std::vector<double>& v, SplitMix& rng) {
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += v[rng.below(v.size())];
  return s / static_cast<double>(v.size());
}

double quantile_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

std::pair<double, double> bootstrap_speedup(const std::vector<double>& base, const std::vector<double>& test,
                                            int samples, std::uint64_t seed) {
  SplitMix rng{seed};
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(std::max(samples, 1)));
  for (int i = 0; i < samples; ++i) {
    const double t = resampled_mean(test, rng);
    if (t > 0) ratios.push_back(resampled_mean(base, rng) / t);
  }
  if (ratios.empty()) return {1, 1};
  std::sort(ratios.begin(), ratios.end());
  return {quantile_sorted(ratios, 0.025), quantile_sorted(ratios, 0.975)};
}

StepChange step_change(const AnalysisResult& base, const AnalysisResult& test, const DiffOptions& opts) {
  StepChange s;
  const auto b = job_step_samples(base), t = job_step_samples(test);
  s.base_ns = job_step(base).step_ns;
  s.test_ns = job_step(test).step_ns;
  s.base_steps = b.size();
  s.test_steps = t.size();
  s.base_cv = cv_of(b);
  s.test_cv = cv_of(t);
  s.speedup = s.test_ns > 0 ? s.base_ns / s.test_ns : 1;
  s.speedup_lo = s.speedup_hi = s.speedup;
  if (b.size() < kMinStepsForInterval || t.size() < kMinStepsForInterval) return s;
  std::tie(s.speedup_lo, s.speedup_hi) = bootstrap_speedup(b, t, opts.bootstrap_samples, opts.seed);
  const bool excludes_one = s.speedup_lo > 1 || s.speedup_hi < 1;
  s.significant = excludes_one && std::abs(s.speedup - 1) >= kMinEffect;
  return s;
}

std::vector<CategoryChange> category_changes(const AnalysisResult& base, const AnalysisResult& test) {
  const JobStep b = job_step(base), t = job_step(test);
  std::vector<CategoryChange> out;
  for (int c = 0; c < kCategoryCount; ++c) {
    const auto i = static_cast<std::size_t>(c);
    CategoryChange ch;
    ch.category = static_cast<Category>(c);
    ch.base_ns = b.category[i];
    ch.test_ns = t.category[i];
    ch.delta_ns = ch.test_ns - ch.base_ns;
    ch.delta_pct_of_base_step = b.step_ns > 0 ? 100 * ch.delta_ns / b.step_ns : 0;
    out.push_back(ch);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return std::abs(x.delta_ns) > std::abs(y.delta_ns); });
  return out;
}

}  // namespace diff_detail

namespace {

using namespace diff_detail;
using diagnose_detail::ms;

std::string times(double x) { return fmt::format("{:.2f}x", x); }

std::string speed_phrase(const StepChange& s) {
  const bool faster = s.speedup >= 1;
  const double factor = faster ? s.speedup : (s.speedup > 0 ? 1 / s.speedup : 0);
  std::string out = fmt::format("test step {} {} than base ({} -> {})", times(factor), faster ? "faster" : "slower",
                                ms(s.base_ns), ms(s.test_ns));
  if (s.base_steps < kMinStepsForInterval || s.test_steps < kMinStepsForInterval)
    return out + fmt::format("; too few steps to tell it from noise (need {} per side)", kMinStepsForInterval);
  out += fmt::format(", 95% interval of the speedup {:.2f}-{:.2f}x", s.speedup_lo, s.speedup_hi);
  return out + (s.significant ? ": beyond step-to-step noise" : ": within step-to-step noise");
}

std::string bound_phrase(const DiffResult& d) {
  if (!d.both_diagnosed) return "";
  const bool gpu = d.base.diagnosis.verdict.gpu;
  if (d.bottleneck_moved)
    return fmt::format("; the bottleneck moved from {} to {}", bound_label(d.base_bound, gpu),
                       bound_label(d.test_bound, d.test.diagnosis.verdict.gpu));
  return fmt::format("; the bottleneck is still {}", bound_label(d.base_bound, gpu));
}

void set_bounds(DiffResult& d) {
  d.both_diagnosed = d.base.diagnosis.present && d.test.diagnosis.present;
  if (!d.both_diagnosed) return;
  d.base_bound = d.base.diagnosis.verdict.bound;
  d.test_bound = d.test.diagnosis.verdict.bound;
  d.bottleneck_moved = d.base_bound != d.test_bound;
}

}  // namespace

DiffResult diff_runs(DiagnosedRun base, DiagnosedRun test, const DiffOptions& opts) {
  DiffResult d;
  d.step = step_change(base.result, test.result, opts);
  d.categories = category_changes(base.result, test.result);
  const KernelTable bk = kernel_table(base), tk = kernel_table(test);
  d.kernels = kernel_changes(bk, tk, opts.kernel_threshold);
  d.kernel_classes = class_changes(bk, tk, opts.kernel_threshold);
  d.counts = count_changes(bk, tk);
  d.comparability = comparability_warnings(base, test);
  d.base = std::move(base.result);
  d.test = std::move(test.result);
  set_bounds(d);
  d.headline = speed_phrase(d.step) + bound_phrase(d);
  return d;
}

}  // namespace stepscope
