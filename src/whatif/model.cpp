// One rank's what-if: the graph, its replay against the recording, the levers and the plan.
#include <fmt/core.h>

#include <cmath>

#include "stepscope/whatif.hpp"
#include "whatif/transforms.hpp"

namespace stepscope::whatif {
namespace {

// Replayed with the recorded durations, each step against its recorded window.
void measure_replay(const Graph& g, const Replayed& base, RankWhatIf& w) {
  const std::vector<ns_t> recorded = recorded_windows(g);
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t k = 0; k < g.steps.size(); ++k) {
    w.steps.push_back({g.steps[k].number, recorded[k], base.step_ns[k]});
    if (recorded[k] <= 0) continue;
    const double e = std::abs(static_cast<double>(base.step_ns[k] - recorded[k])) / static_cast<double>(recorded[k]);
    sum += e;
    w.replay_error_max = std::max(w.replay_error_max, e);
    ++n;
  }
  w.replay_error_mean = n ? sum / static_cast<double>(n) : 0;
}

}  // namespace

RankWhatIf model_rank(const RankTrace& rank, const RankFacts& facts, const RankPartition& partition,
                      const WhatIfOptions& opts) {
  RankWhatIf w;
  if (!opts.enabled || partition.steps.empty()) return w;
  const Graph g = build_graph(rank, facts, partition);
  if (g.steps.empty()) return w;
  w.present = true;
  w.nodes = static_cast<std::int64_t>(g.atoms.size() + g.ops.size());
  w.edges = g.edges;
  w.disagreements = g.disagreements;
  Scenario recorded = base_scenario(g);
  const Replayed base = replay(g, recorded);
  measure_replay(g, base, w);
  const Context c{g, facts, rank, partition, base.span, w.replay_error_mean, std::move(recorded)};
  if (base.span <= 0) return w;
  w.levers = lever_predictions(c);
  const Plan plan = make_plan(c, w.levers);
  w.plan = plan.steps;
  w.timeline = plan_timeline(g, rank, plan, opts.timeline_events);
  if (!opts.changes.empty()) w.custom = custom_prediction(c, opts.changes);
  return w;
}

namespace {

// The share of the replayed steps' time that kernels waited beyond anything the graph holds (the
// replay keeps those waits at their recorded length, so its error does not show them).
// Example: 132 memsets a total 379 ms behind the all-reduces they queued after, in 1.2 s of steps -> 0.31.
double unexplained_share(const RankWhatIf& w) {
  double steps = 0, unexplained = 0;
  for (const StepReplay& s : w.steps) steps += static_cast<double>(s.measured_ns);
  for (const Disagreement& d : w.disagreements) unexplained += static_cast<double>(d.total_ns);
  return steps > 0 ? unexplained / steps : 0;
}

}  // namespace

std::optional<TrustWarning> replay_trust(const RankWhatIf& w, int rank) {
  const double unexplained = w.present ? unexplained_share(w) : 0;
  if (!w.present || (w.replay_error_mean <= kReplayErrorWarn && w.replay_error_max <= kReplayErrorWarn &&
                     unexplained <= kReplayErrorWarn))
    return std::nullopt;
  std::string edges;
  for (const Disagreement& d : w.disagreements)
    edges += fmt::format("{}{} ({} times, {:.2f} ms)", edges.empty() ? "" : "; ", d.edge, d.count,
                         static_cast<double>(d.total_ns) / 1e6);
  TrustWarning t;
  t.code = TrustCode::ReplayError;
  t.severity = TrustSeverity::Limits;
  t.rank = rank;
  t.text = fmt::format("the step graph replays rank {}'s steps {:.1f}% off on average ({:.1f}% at worst), and "
                       "{:.0f}% of their time is waits it does not explain (kept as recorded): its predictions are "
                       "no closer than that{}{}",
                       rank, 100 * w.replay_error_mean, 100 * w.replay_error_max, 100 * unexplained,
                       edges.empty() ? "" : "; edges that disagree: ", edges);
  t.advice = "record with the profiler's CUDA activities and the runtime calls on every thread (the default "
             "torch.profiler activities) so that each kernel's launch and waits are in the trace";
  t.figures = {{"replay_error_mean", w.replay_error_mean},
               {"replay_error_max", w.replay_error_max},
               {"unexplained_wait_share", unexplained}};

  return t;
}

}  // namespace stepscope::whatif
