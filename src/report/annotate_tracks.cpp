#include "report/annotate_tracks.hpp"

#include <nlohmann/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "stepscope/diagnose.hpp"

namespace stepscope::annotate_detail {
namespace {

double track_ms(double ns) { return std::round(ns / 1e3) / 1e3; }

const RankAnalysis* by_rank(const AnalysisResult& r, int rank) {
  for (const auto& a : r.ranks)
    if (a.rank() == rank) return &a;
  return nullptr;
}

const StepPartition* step_by_number(const RankPartition& p, std::int64_t number) {
  for (const auto& s : p.steps)
    if (s.number == number) return &s;
  return nullptr;
}

// The steady-state span: from the first non-warm-up step's start to the last step's end.
std::pair<ns_t, ns_t> steady_span(const RankPartition& p) {
  ns_t a = 0, b = 0;
  bool any = false;
  for (const auto& s : p.steps) {
    if (s.warmup) continue;
    a = any ? std::min(a, s.start) : s.start;
    b = any ? std::max(b, s.end) : s.end;
    any = true;
  }
  if (!any && !p.steps.empty()) return {p.steps.front().start, p.steps.back().end};
  return {a, b};
}

Track steps_track(const RankPartition& p) {
  Track t{"steps", {}};
  for (const auto& s : p.steps) {
    std::array<double, kCategoryCount> cat{};
    nlohmann::json ms_by_category = nlohmann::json::object();
    for (int c = 0; c < kCategoryCount; ++c) {
      cat[static_cast<std::size_t>(c)] = static_cast<double>(s.ns[static_cast<std::size_t>(c)]);
      if (s.ns[static_cast<std::size_t>(c)] > 0)
        ms_by_category[category_name(static_cast<Category>(c))] = track_ms(static_cast<double>(s.ns[static_cast<std::size_t>(c)]));
    }
    const double window = static_cast<double>(s.duration());
    const Bound b = step_bound(cat, window);
    nlohmann::json args = {{"step", s.number}, {"bound", bound_id(b)}, {"duration_ms", track_ms(window)}, {"ms_by_category", ms_by_category}};
    if (s.warmup) args["warmup"] = s.warmup_reason;
    std::string label = s.name.empty() ? fmt::format("step {}", s.number) : s.name;
    t.slices.push_back({s.start, s.end, fmt::format("{}: {}{}", label, bound_label(b, p.gpu), s.warmup ? " (warm-up)" : ""), args});
  }
  return t;
}

using Runs = std::vector<std::vector<CategoryRun>>;

Track partition_track(const RankPartition& p, const Runs& runs) {
  Track t{"step partition", {}};
  for (std::size_t k = 0; k < runs.size(); ++k)
    for (const auto& r : runs[k])
      t.slices.push_back({r.start, r.end, category_label(r.category),
                          {{"category", category_name(r.category)}, {"step", p.steps[k].number}},
                          static_cast<long>(k)});
  return t;
}

Track sync_track(const RankTrace& trace, const GpuTimeline& g) {
  Track t{"finding: GPU idle after sync", {}};
  for (const auto& s : g.syncs.worst) {
    const ns_t len = std::max(s.host_blocked, s.gpu_idle_after);
    const std::string call(trace.name_of(s.event));
    t.slices.push_back({s.ts, s.ts + len, fmt::format("GPU idle {:.2f} ms after {}", track_ms(static_cast<double>(s.gpu_idle_after)), call),
                        {{"call", call}, {"host_blocked_ms", track_ms(static_cast<double>(s.host_blocked))},
                         {"gpu_idle_after_ms", track_ms(static_cast<double>(s.gpu_idle_after))}, {"step", s.step}}});
  }
  return t;
}

Track spikes_track(const RankPartition& p, const Stability& st) {
  Track t{"finding: step-time spikes", {}};
  for (const auto& sp : st.spikes) {
    const StepPartition* s = step_by_number(p, sp.step);
    if (!s) continue;
    t.slices.push_back({s->start, s->end,
                        fmt::format("spike +{:.2f} ms: {} +{:.2f} ms", track_ms(static_cast<double>(sp.excess)), category_label(sp.grew),
                                    track_ms(static_cast<double>(sp.grew_by))),
                        {{"step", sp.step}, {"excess_ms", track_ms(static_cast<double>(sp.excess))}, {"grew", category_name(sp.grew)},
                         {"grew_by_ms", track_ms(static_cast<double>(sp.grew_by))}}});
  }
  return t;
}

// The straggler's steps carry its extra compute; the other ranks' exposed grad sync is the wait.
Track straggler_track(const RankPartition& p, int rank, const Runs& runs, const RankComparison& rc) {
  Track t{"finding: straggler", {}};
  if (!rc.straggler) return t;
  const int who = *rc.straggler;
  if (rank == who) {
    for (const auto& s : p.steps) {
      if (s.warmup) continue;
      t.slices.push_back({s.start, s.end, fmt::format("straggler: {} +{:.0f}% over the other ranks' median", straggler_excess_of(rc.straggler_cause), rc.straggler_excess * 100),
                          {{"step", s.number}, {"compute_ms", track_ms(static_cast<double>(compute_ns(s.ns)))},
                           {"balanced_saving_ms_per_step", track_ms(rc.balanced_saving_ns)}}});
    }
    return t;
  }
  for (std::size_t k = 0; k < runs.size(); ++k) {
    if (p.steps[k].warmup) continue;
    for (const auto& r : runs[k])
      if (r.category == Category::GradSyncExposed)
        t.slices.push_back({r.start, r.end, fmt::format("waiting for straggler rank {}", who), {{"step", p.steps[k].number}}});
  }
  return t;
}

Track copies_track(const GpuTimeline& g) {
  Track t{"finding: longest copies", {}};
  for (const auto& c : g.copies.longest) {
    std::string what = fmt::format("{} copy", copy_kind_name(c.direction));
    if (c.host == HostMem::Pageable) what += " from pageable memory";
    if (c.critical) what += ", no kernel overlaps it";
    nlohmann::json args = {{"direction", copy_kind_name(c.direction)}, {"critical", c.critical}, {"ms", track_ms(static_cast<double>(c.dur))}};
    if (c.bytes >= 0) args["bytes"] = c.bytes;
    if (std::isfinite(c.gbps)) args["gb_per_s"] = std::round(c.gbps * 100) / 100;
    t.slices.push_back({c.ts, c.ts + c.dur, what, args});
  }
  return t;
}

Track launch_track(const RankTrace& trace, const GpuTimeline& g) {
  // The worst delays overlap one another while the queue is backed up: three lanes show the worst
  // without burying the timeline in lanes.
  Track t{"finding: worst launch delays", {}, 3};
  for (const auto& l : g.hta_launches.worst_delays) {
    if (l.cpu_event >= trace.events.size() || l.gpu_event >= trace.events.size()) continue;
    const ns_t a = trace.events.ts[l.cpu_event], b = trace.events.ts[l.gpu_event];
    t.slices.push_back({a, b, fmt::format("launch delay {:.3f} ms", track_ms(static_cast<double>(b - a))),
                        {{"kernel", std::string(trace.name_of(l.gpu_event))}, {"correlation", l.correlation}}});
  }
  return t;
}

// Job-level conclusions have no single place on the timeline: they span the steady-state steps.
Track diagnosis_track(const Diagnosis& d, const RankPartition& p) {
  Track t{"finding: diagnosis", {}};
  if (!d.present) return t;
  const auto [a, b] = steady_span(p);
  t.slices.push_back({a, b, "verdict: " + std::string(bound_label(d.verdict.bound, d.verdict.gpu)),
                      {{"headline", d.verdict.headline}, {"evidence", d.verdict.evidence}}});
  for (const auto& f : d.findings) t.slices.push_back({a, b, std::string(finding_id(f)), {{"text", finding_text(f)}}});
  return t;
}

}  // namespace

std::vector<Track> build_tracks(const Analysis& a, std::size_t rank_index, const PartitionOptions& opts) {
  const RankTrace& trace = a.trace.ranks[rank_index];
  const DiagnosedResult& r = a.result;
  std::vector<Track> out;
  const RankAnalysis* a_rank = by_rank(r, trace.rank);
  if (!a_rank) return out;
  const RankPartition* p = &a_rank->partition;
  out.push_back(steps_track(*p));
  const Runs runs = partition_runs(trace, p->steps, opts);
  out.push_back(partition_track(*p, runs));
  out.push_back(diagnosis_track(r.diagnosis, *p));
  out.push_back(spikes_track(*p, a_rank->stability));
  out.push_back(straggler_track(*p, trace.rank, runs, r.job.rank_comparison));
  if (const GpuTimeline* g = &a_rank->gpu_timeline; g->has_gpu_activity) {
    out.push_back(sync_track(trace, *g));
    out.push_back(copies_track(*g));
    out.push_back(launch_track(trace, *g));
  }
  return out;
}

}  // namespace stepscope::annotate_detail
