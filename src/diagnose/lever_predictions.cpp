// Levers' predictions from the ranks' what-if replays (stepscope/whatif.hpp), and the plan.
//
// Each rank's replay predicts its steady span with the lever; the job's predicted step is the
// mean of the ranks' predicted steps. Levers no graph change models keep their Amdahl bound as
// the prediction, flagged as such, with the interval from no gain to the bound.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "diagnose/diagnose_internal.hpp"
#include "stepscope/whatif.hpp"

namespace stepscope {
namespace {

struct JobPrediction {
  bool any = false;    // some rank models the lever
  bool held = true;    // every rank that models it already has it
  double step = 0, predicted = 0;
  double slowest = 0;  // the ranks' longest predicted step: a synchronous job's step after the change
  double uncertainty = 0;
  std::string basis;
  std::vector<std::pair<std::string, double>> by_setting;  // the ranks' mean speedup per setting
};

const whatif::Prediction* find_prediction(const whatif::RankWhatIf& w, LeverId id) {
  for (const auto& p : w.levers)
    if (p.id == id) return &p;
  return nullptr;
}

JobPrediction job_prediction(const AnalysisResult& r, LeverId id) {
  JobPrediction j;
  std::size_t ranks = 0;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const double step = r.ranks[i].partition.steady_mean_ns;
    const whatif::Prediction* p = find_prediction(r.ranks[i].whatif, id);
    j.step += step;
    if (!p) {
      j.predicted += step;
      j.slowest = std::max(j.slowest, step);
      continue;
    }
    j.any = true;
    j.held = j.held && p->held;
    j.predicted += step / std::max(p->speedup, 1e-9);
    j.slowest = std::max(j.slowest, step / std::max(p->speedup, 1e-9));
    j.uncertainty = std::max(j.uncertainty, p->uncertainty);
    if (j.basis.empty()) j.basis = p->basis;
    if (j.by_setting.empty()) j.by_setting.assign(p->by_setting.size(), {"", 0});
    for (std::size_t k = 0; k < p->by_setting.size() && k < j.by_setting.size(); ++k) {
      j.by_setting[k].first = p->by_setting[k].first;
      j.by_setting[k].second += p->by_setting[k].second;
    }
    ++ranks;
  }
  for (auto& [value, s] : j.by_setting) s /= static_cast<double>(std::max<std::size_t>(ranks, 1));
  return j;
}

double mean_replay_error(const AnalysisResult& r) {
  double sum = 0;
  std::size_t n = 0;
  for (const auto& w : each_rank(r, &RankAnalysis::whatif))
    if (w.present) sum += w.replay_error_mean, ++n;
  return n ? sum / static_cast<double>(n) : 0;
}

// The interval: the lever's own uncertainty on its gain, widened by the replay's error.
// Example: 2.0x with 20% uncertainty and a 3% replay error -> 1.8 / 1.03 = 1.75x to 2.2 x 1.03 = 2.27x.
void set_interval(Lever& l, double uncertainty, double error) {
  const double gain = l.predicted_speedup - 1;
  l.predicted_speedup_lo = std::max(0.0, (1 + gain * (1 - uncertainty)) / (1 + error));
  l.predicted_speedup_hi = (1 + gain * (1 + uncertainty)) * (1 + error);
}

// The Amdahl bound of the lever's whole target: its time gone.
double amdahl_limit(const Lever& l) {
  return l.target_ns > 0 && l.step_ns > l.target_ns ? l.step_ns / (l.step_ns - l.target_ns) : l.speedup;
}


// A predicted gain under this share of the step is none.
constexpr double kMinPredictedGain = 0.01;

// The job replay's prediction of a lever (the straggler re-timed, fewer all-reduces), where it
// has one: a rank alone cannot see the others it waits for. Example: 4 ranks, rank 2 computes 30%
// longer: the ranks' replays keep their waits; the job's re-times rank 2 and predicts 1.26x.
void predict_from_job(const AnalysisResult& r, Lever& l, const whatif::JobLever& jl, double error) {
  l.predicted_replayed = true;
  l.prediction_basis = jl.basis;
  l.predicted_speedup = std::min(std::max(jl.speedup, 1.0), std::max(amdahl_limit(l), l.speedup));
  l.predicted_step_ns = l.step_ns / l.predicted_speedup;
  l.predicted_uncertainty = jl.uncertainty;
  set_interval(l, jl.uncertainty, std::max(error, r.job.whatif.replay_error));
}

// Collectives moved under the backward (DDP buckets, FSDP prefetch) change each rank's graph; in
// a job joined at its collectives the step after the change is the slowest rank's: a rank that
// waited for another counts its wait as communication to hide, which the job does not get back.
bool job_gated(const AnalysisResult& r, const Lever& l) {
  return r.job.whatif.present && (l.id == LeverId::DdpBuckets || l.id == LeverId::FsdpPrefetch);
}

// A lever the graph does not model predicts its Amdahl bound; a precision lever, whose bound is all
// of its fp32 math gone, the matmuls at the replay's rule for a device without peaks.
// Example: 5.81 s of fp32 GEMMs in a 13.3 s step: bound 1.77x, predicted 13.3 / (13.3 - 5.81 x 0.64) = 1.39x.
double unreplayed_prediction(const Lever& l) {
  if (!diagnose_detail::physics_bounded(l.id) || l.step_ns <= 0) return l.speedup;
  const double cut = 1 - 1 / whatif::kUnknownDeviceMatmulCut - whatif::kUnknownDeviceCastShare;
  return l.step_ns / (l.step_ns - l.removable_ns * cut);
}

void predict(const AnalysisResult& r, Lever& l, double error) {
  if (const whatif::JobLever* jl = r.job.whatif.present ? whatif::find_job_lever(r.job.whatif, l.id) : nullptr)
    return predict_from_job(r, l, *jl, error);
  JobPrediction j = job_prediction(r, l.id);
  if (job_gated(r, l) && j.slowest > 0) j.predicted = j.slowest * static_cast<double>(r.ranks.size());
  if (!j.any || j.step <= 0) {
    l.predicted_replayed = false;
    l.predicted_speedup = unreplayed_prediction(l);
    l.predicted_step_ns = l.step_ns / std::max(l.speedup, 1e-9);
    l.predicted_speedup_lo = 1;
    l.predicted_speedup_hi = l.speedup;
    l.prediction_basis = diagnose_detail::physics_bounded(l.id) && l.removable_ns > 0
                             ? fmt::format("no replay of this device's kernels: its fp32 matmuls held to {:.0f}x",
                                           whatif::kUnknownDeviceMatmulCut)
                             : "no change of the step graph models this lever: the prediction is its Amdahl bound";
    return;
  }
  l.predicted_replayed = true;
  l.prediction_basis = j.basis;
  if (j.held) {
    l.predicted_speedup = 1;
    l.predicted_step_ns = l.step_ns;
    l.predicted_speedup_lo = l.predicted_speedup_hi = 1;
    if (l.applies) l.basis = "already in place in the trace (" + j.basis + "); " + l.basis;
    l.applies = false;
    return;
  }
  // Held to the Amdahl bound of the lever's whole target, which a finding may have narrowed (CUDA
  // graphs act on the host time left once the allocator churn is fixed); where the replay predicts
  // more, the basis says so. Example: respawned workers (3.56x replayed) are held to the respawn
  // finding's 3.45x, the stalls and the slower steps in their wake.
  const double bound = diagnose_detail::physics_bounded(l.id) ? std::numeric_limits<double>::infinity() : std::max(amdahl_limit(l), l.speedup);
  if (j.step / j.predicted > bound * (1 + kMinPredictedGain))
    l.prediction_basis += fmt::format("; the replay predicts {:.2f}x, held to the {:.2f}x bound of what the lever "
                                      "acts on",
                                      j.step / j.predicted, bound);
  l.predicted_speedup = std::min(j.step / j.predicted, bound);
  l.predicted_step_ns = l.step_ns / l.predicted_speedup;

  l.predicted_by_setting = j.by_setting;
  for (auto& [value, speedup] : l.predicted_by_setting) speedup = std::min(speedup, bound);  // the same hold
  l.predicted_uncertainty = j.uncertainty;
  set_interval(l, j.uncertainty, error);
  // A lever already withheld (by the replay, as in place, or for this program's kind) applies no
  // more; the one way back is a finding's lever, written anew, which is judged again.
  if (!l.applies) return;
  // A change the replay predicts to slow the step is no lever (one that gains nothing is held
  // back last, by withhold_without_gain).
  if (l.predicted_speedup < 1 - kMinPredictedGain) {
    l.applies = false;
    l.basis = fmt::format("the replay predicts {:.2f}x: slower, so not offered; {}", l.predicted_speedup, l.basis);
  }
}

}  // namespace

// Example: a V100 pair whose GEMMs gain 8x measured 5.0x, where the finding's half would hold the
// lever to 1.85x.
bool diagnose_detail::physics_bounded(LeverId id) {
  return id == LeverId::AmpBf16 || id == LeverId::AmpFp16 || id == LeverId::Tf32;
}

namespace {

// A bound is never below the replay's prediction: one fact, one number. The catalogue's bound takes
// a fixed share of the lever's target (half the pointwise time for fusion, 90% of the host time for
// CUDA graphs), and a replayed graph change can remove more (every launch of a captured step, the
// convolutions that TF32 reaches through cuDNN). Example: CUDA graphs on 48 tiny layers, 90% of the
// host time gives 5.89x, the replay 6.01x: the lever reads "up to 6.01x", its basis says why.
void raise_bound_to_prediction(Lever& l) {
  if (!l.predicted_replayed || l.predicted_speedup <= l.speedup || l.step_ns <= 0) return;
  l.basis += fmt::format("; the replay removes {} ({:.2f}x), more than the catalogue's {:.2f}x: the bound is the replay's",
                         diagnose_detail::ms(l.step_ns - l.predicted_step_ns), l.predicted_speedup, l.speedup);
  l.speedup = l.predicted_speedup;
  l.removable_ns = l.step_ns - l.predicted_step_ns;
}

}  // namespace

void diagnose_detail::add_predictions(const AnalysisResult& r, std::vector<Lever>& levers) {
  const double error = mean_replay_error(r);
  for (Lever& l : levers) {
    predict(r, l, error);
    raise_bound_to_prediction(l);
  }
}

// A lever the replay predicts to gain under kMinPredictedGain of the step is no lever: the rule a
// bound under kMinApplyShare already follows, held to the replay's figure. Its signature is in the
// trace, but the time it acts on does not hold the step up: a save already asynchronous (its
// staging copies are all that is left), all-reduces already under the backward, workers slower
// than any queue is deep. Done once the findings have set every lever's bound, which they read
// from levers that apply.
void diagnose_detail::withhold_without_gain(std::vector<Lever>& levers) {
  for (Lever& l : levers) {
    if (!l.applies || !l.predicted_replayed || l.predicted_speedup >= 1 + kMinPredictedGain) continue;
    l.applies = false;
    l.basis = fmt::format("the replay predicts {:.2f}x: the time it acts on does not hold the step up, so not "
                          "offered; {}",
                          l.predicted_speedup, l.basis);
  }
}

void diagnose_detail::add_plan(const AnalysisResult& r, Diagnosis& d) {
  LeverPlan& p = d.plan;
  p.gpus = static_cast<int>(r.ranks.size());
  double step = 0, n = 0;
  for (const auto& part : each_rank(r, &RankAnalysis::partition)) step += part.steady_mean_ns, ++n;
  p.step_ns = n > 0 ? step / n : 0;
  // The first rank with a replay plans for the job: ranks of one job run the same program. With a
  // straggler, the straggler's: the others' plans would hide waits the job does not get back.
  std::vector<std::size_t> order(r.ranks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (const auto s = r.job.rank_comparison.straggler)
    std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return i < r.ranks.size() && r.ranks[i].rank() == *s; });
  for (std::size_t i : order) {
    const auto& w = r.ranks[i].whatif;
    if (!w.present || w.plan.empty()) continue;
    for (const auto& e : w.plan) {
      auto l = std::find_if(d.levers.begin(), d.levers.end(), [&](const Lever& x) { return x.id == e.id; });
      if (l == d.levers.end() || !l->applies) break;  // the plan's later steps build on this one
      p.entries.push_back({e.id, l->title, p.step_ns / e.speedup, e.speedup});
    }
    break;
  }
}

void price_plan(LeverPlan& plan, std::int64_t steps, double gpu_hour_cost) {
  plan.run_steps = steps;
  plan.gpu_hour_cost = gpu_hour_cost;
  const double after = plan.entries.empty() ? plan.step_ns : plan.entries.back().step_ns;
  constexpr double kNsPerHour = 3.6e12;
  plan.gpu_hours_before = static_cast<double>(steps) * plan.step_ns * plan.gpus / kNsPerHour;
  plan.gpu_hours_after = static_cast<double>(steps) * after * plan.gpus / kNsPerHour;
}

}  // namespace stepscope
