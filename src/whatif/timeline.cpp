// The plan's predicted timeline beside the recorded one (stepscope/whatif.hpp: PlanTimeline).
#include <algorithm>
#include <limits>

#include "whatif/transforms.hpp"

namespace stepscope::whatif {
namespace {

// A gap shorter than this share of the steps' span is closed when the busy time is drawn.
constexpr double kMergeShare = 1.0 / 150;

// Busy (or waiting) stretches merged: gaps under `min_gap` closed, and where that leaves more than
// kTimelineSpans stretches, the gap doubled until it does not. Example: [0,10) [11,20) [60,70)
// with min_gap 2 -> [0,20) [60,70).
std::vector<TimeSpan> merge_busy(std::vector<TimeSpan> spans, ns_t min_gap) {
  std::sort(spans.begin(), spans.end(), [](const TimeSpan& a, const TimeSpan& b) { return a.start < b.start; });
  for (ns_t gap = std::max<ns_t>(min_gap, 1);; gap *= 2) {
    std::vector<TimeSpan> out;
    for (const TimeSpan& s : spans) {
      if (s.end <= s.start) continue;
      if (!out.empty() && s.start - out.back().end < gap)
        out.back().end = std::max(out.back().end, s.end);
      else
        out.push_back(s);
    }
    if (out.size() <= kTimelineSpans) return out;
  }
}

constexpr ns_t kUnreplayed = std::numeric_limits<ns_t>::min();

struct Sides {
  std::vector<TimeSpan> recorded_host, recorded_gpu, predicted_host, predicted_gpu;
};

Sides busy_spans(const Graph& g, const Replayed& r) {
  Sides s;
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    // What the levers take away shows as waits: the host's own work between ops is not drawn.
    if (a.kind != AtomKind::Loader && !(a.kind == AtomKind::Sync && a.waited)) continue;
    s.recorded_host.push_back({a.ts, a.ts + a.dur});
    if (r.atom_start[i] != kUnreplayed) s.predicted_host.push_back({r.atom_start[i], r.atom_end[i]});
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    s.recorded_gpu.push_back({g.ops[i].ts, g.ops[i].ts + g.ops[i].dur});
    if (r.op_start[i] != kUnreplayed) s.predicted_gpu.push_back({r.op_start[i], r.op_end[i]});
  }
  return s;
}

ns_t span_of(const std::vector<TimeSpan>& steps) {
  if (steps.empty()) return 0;
  ns_t lo = steps.front().start, hi = steps.front().end;
  for (const TimeSpan& s : steps) lo = std::min(lo, s.start), hi = std::max(hi, s.end);
  return hi - lo;
}

void add_events(const Graph& g, const RankTrace& t, const Replayed& r, std::vector<TimelineEvent>& out) {
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    if (a.kind == AtomKind::Marker || r.atom_start[i] == kUnreplayed) continue;
    out.push_back({std::string(t.name_of(a.event)), t.events.tid(a.event), false, a.ts, a.dur, r.atom_start[i],
                   r.atom_end[i] - r.atom_start[i]});
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& o = g.ops[i];
    if (r.op_start[i] == kUnreplayed) continue;
    out.push_back({std::string(t.name_of(o.event)), t.events.stream[o.event], true, o.ts, o.dur, r.op_start[i],
                   r.op_end[i] - r.op_start[i]});
  }
}

}  // namespace

PlanTimeline plan_timeline(const Graph& g, const RankTrace& t, const Plan& plan, bool with_events) {
  PlanTimeline out;
  if (plan.steps.empty()) return out;
  out.present = true;
  for (const PlanStep& s : plan.steps) out.levers.emplace_back(lever_name(s.id));
  out.recorded.steps = recorded_step_windows(g);
  for (std::size_t k = 0; k < plan.replayed.step_ns.size(); ++k)
    out.predicted.steps.push_back({plan.replayed.step_start[k], plan.replayed.step_start[k] + plan.replayed.step_ns[k]});
  Sides s = busy_spans(g, plan.replayed);
  const auto gap = static_cast<ns_t>(kMergeShare * static_cast<double>(span_of(out.recorded.steps)));
  out.recorded.host_waits = merge_busy(std::move(s.recorded_host), gap);
  out.recorded.gpu = merge_busy(std::move(s.recorded_gpu), gap);
  out.predicted.host_waits = merge_busy(std::move(s.predicted_host), gap);
  out.predicted.gpu = merge_busy(std::move(s.predicted_gpu), gap);
  if (with_events) add_events(g, t, plan.replayed, out.events);
  return out;
}

}  // namespace stepscope::whatif
