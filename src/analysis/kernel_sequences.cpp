// HTA's frequent CUDA kernel sequences (cuda_kernel_analysis.py get_frequent_cuda_kernel_sequences):
// the GPU records each instance of an op launched, as one sequence per instance; instances with
// the same sequence are counted together. A sequence that recurs often is a fusion candidate.
//
// HTA's definition, kept literal:
//  - roots: host rows (no stream) whose name CONTAINS the operator name, kept only at the
//    smallest call-stack depth found among them (so a match nested in another is not counted
//    twice);
//  - a root's GPU records: those whose correlation is carried by a leaf call of the root's
//    subtree, in ts order; a root with fewer than min_pattern_len of them is skipped;
//  - pattern = the root's name, then the records' names; count, Σ record durations ("GPU kernel
//    duration") and Σ root durations ("CPU op duration") per pattern, sorted by count desc, then
//    by the "|"-joined pattern asc.
// Times are HTA's: rounded to µs when the trace has sub-µs times, last ProfilerStep dropped.
#include <algorithm>
#include <map>
#include <string_view>

#include "analysis/call_tree.hpp"
#include "analysis/drilldown_internal.hpp"
#include "analysis/hta_view.hpp"
#include "stepscope/drilldown.hpp"

namespace stepscope {
namespace {

struct SequenceInput {
  const RankTrace& rank;
  const CallTree& tree;
  const hta::View& view;
};

// A host call HTA may keep: in the call tree (complete), not the profiler's span, not a GPU row.
bool is_candidate_call(const SequenceInput& in, std::size_t i) {
  const EventTable& ev = in.rank.events;
  const bool runtime = ev.kind[i] == Kind::Runtime || ev.kind[i] == Kind::Driver;
  // A host row with a numeric stream (Triton's launching cpu_op) is a GPU row for HTA.
  return in.tree.in_tree(i) && ev.kind[i] != Kind::TraceSpan && (ev.stream[i] < 0 || runtime);
}

// Whether HTA keeps host call i: a candidate that starts before the dropped last step (its start
// rounded as HTA rounds it; the searches below ask this of every op, so only the start).
bool kept_host_call(const SequenceInput& in, std::size_t i) {
  if (!is_candidate_call(in, i)) return false;
  if (!in.view.load.last_step_dropped) return true;
  return in.view.clock.ts_of(i) < in.view.load.cutoff_ts;
}

// The GPU rows launched by the leaf calls of `root`'s subtree, in ts order.
std::vector<const hta::Row*> launched_records(const SequenceInput& in, std::uint32_t root) {
  const auto& track = in.tree.track_events(in.rank, root);
  std::vector<const hta::Row*> out;
  for (std::uint32_t pos = in.tree.position(in.rank, root); pos < in.tree.subtree_end[root]; ++pos) {
    const std::uint32_t i = track[pos];
    if (!in.tree.in_tree(i) || in.tree.has_children[i]) continue;
    const std::int64_t corr = in.rank.events.correlation[i];
    if (corr < 0) continue;
    for (std::uint32_t k : in.view.gpu_by_correlation.find(corr)) out.push_back(&in.view.rows[k]);
  }
  const hta::RowClock& clock = in.view.clock;
  std::stable_sort(out.begin(), out.end(), [&](const hta::Row* a, const hta::Row* b) { return clock.ts(*a) < clock.ts(*b); });
  return out;
}

// Whether `root`, at `root_pos` of `track`, has leaf calls that launched at least `n` GPU rows:
// launched_records' count, without collecting or sorting them, and stopping at n (pick_op asks
// it of every candidate instance, walking the tracks, so it knows where each one is).
bool launches_at_least(const SequenceInput& in, const std::vector<std::uint32_t>& track, std::uint32_t root_pos, int n) {
  if (n <= 0) return true;
  const std::uint32_t root = track[root_pos];
  std::size_t count = 0;
  for (std::uint32_t pos = root_pos; pos < in.tree.subtree_end[root]; ++pos) {
    const std::uint32_t i = track[pos];
    if (!in.tree.in_tree(i) || in.tree.has_children[i]) continue;
    const std::int64_t corr = in.rank.events.correlation[i];
    if (corr < 0) continue;
    count += in.view.gpu_by_correlation.find(corr).size();
    if (count >= static_cast<std::size_t>(n)) return true;
  }
  return false;
}

// The roots for `matches(name)`: kept host calls at the smallest depth among the matching ones.
template <class Match>
std::vector<std::uint32_t> roots_of(const SequenceInput& in, Match matches) {
  std::vector<std::uint32_t> found;
  std::int32_t min_depth = -1;
  for (std::uint32_t i = 0; i < in.rank.events.size(); ++i) {
    if (!matches(in.rank.events.name[i]) || !kept_host_call(in, i)) continue;
    const std::int32_t d = in.tree.depth[i];
    if (min_depth < 0 || d < min_depth) found.clear(), min_depth = d;
    if (d == min_depth) found.push_back(i);
  }
  return found;
}

KernelSequences count_sequences(const SequenceInput& in, const std::string& op, int min_len) {
  KernelSequences out;
  out.op = op;
  out.min_pattern_len = min_len;
  std::vector<char> name_matches(in.rank.strings.size(), 0);
  for (StrId s = 0; s < in.rank.strings.size(); ++s) name_matches[s] = !op.empty() && in.rank.str(s).find(op) != std::string_view::npos;
  std::map<std::vector<StrId>, KernelSequence> by_pattern;
  for (std::uint32_t root : roots_of(in, [&](StrId s) { return name_matches[s] != 0; })) {
    const auto records = launched_records(in, root);
    if (static_cast<int>(records.size()) < min_len) continue;
    std::vector<StrId> key{in.rank.events.name[root]};
    ns_t gpu = 0;
    for (const hta::Row* r : records) key.push_back(r->name(in.rank.events)), gpu += in.view.clock.dur(*r);
    KernelSequence& s = by_pattern[key];
    ++s.count;
    s.gpu_time += gpu;
    s.cpu_time += in.view.clock.dur(hta::Row{root});
  }
  for (auto& [key, s] : by_pattern) {
    for (StrId id : key) s.pattern.emplace_back(in.rank.str(id));
    out.sequences.push_back(std::move(s));
  }
  auto joined = [](const KernelSequence& s) {
    std::string j;
    for (const auto& p : s.pattern) j += (j.empty() ? "" : "|") + p;
    return j;
  };
  std::sort(out.sequences.begin(), out.sequences.end(), [&](const KernelSequence& a, const KernelSequence& b) {
    return a.count != b.count ? a.count > b.count : joined(a) < joined(b);
  });
  if (out.sequences.empty()) out.note = "no instance of '" + op + "' launches " + std::to_string(min_len) + " or more GPU records";
  return out;
}

// HTA's call-stack sort fails on a row of negative duration (sub-µs rows rounded) and on string
// thread ids: say so, as our own answer is still computed.
bool hta_would_fail(const RankTrace& rank, const hta::View& view) {
  constexpr ns_t kOneUs = 1000;
  for (const Track& t : rank.host_tracks)
    if (is_string_track_id(t.tid) || is_string_track_id(t.pid)) return true;
  if (!view.load.rounded_to_us) return false;
  for (std::size_t i = 0; i < rank.events.size(); ++i) {
    // From 1 µs up the rounded end cannot fall before the rounded start (µs times are far below
    // 2^53, so ts + dur rounds to at least ts + 1).
    if (rank.events.phase[i] != Phase::Complete || rank.events.dur[i] >= kOneUs) continue;
    ns_t ts, end;
    hta::round_like_hta(rank.events.ts[i], rank.events.dur[i], ts, end);
    if (end < ts) return true;
  }
  return false;
}

// The op to search when none is given: the aten:: op (else any cpu_op) name with the most
// instances that launch min_len records at the shallowest depth of that name; ties go to the
// shallower depth, then the name.
std::string pick_op(const SequenceInput& in, int min_len) {
  struct Score {
    std::int64_t roots = 0;
    std::int32_t depth = 0;
  };
  std::map<std::string_view, Score> scores;
  constexpr std::int32_t kUnseen = -1;
  std::vector<std::int32_t> min_depth(in.rank.strings.size(), kUnseen);  // per name id
  const EventTable& ev = in.rank.events;
  for (std::uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != Kind::CpuOp || !kept_host_call(in, i)) continue;
    std::int32_t& d = min_depth[ev.name[i]];
    d = d == kUnseen ? in.tree.depth[i] : std::min<std::int32_t>(d, in.tree.depth[i]);
  }
  for (const Track& track : in.rank.host_tracks)
    for (std::uint32_t pos = 0; pos < track.events.size(); ++pos) {
      const std::uint32_t i = track.events[pos];
      const std::int32_t d = min_depth[ev.name[i]];
      if (d == kUnseen || in.tree.depth[i] != d || ev.kind[i] != Kind::CpuOp || !kept_host_call(in, i)) continue;
      if (!launches_at_least(in, track.events, pos, min_len)) continue;
      Score& s = scores[in.rank.str(ev.name[i])];
      ++s.roots;
      s.depth = d;
    }
  std::string best;
  Score top;
  bool best_aten = false;
  for (const auto& [name, s] : scores) {
    const bool aten = name.starts_with("aten::");
    const bool better = best.empty() || (aten && !best_aten) ||
                        (aten == best_aten && (s.roots > top.roots || (s.roots == top.roots && s.depth < top.depth)));
    if (better) best = std::string(name), top = s, best_aten = aten;
  }
  return best;
}

}  // namespace

KernelSequences hta_kernel_sequences_with(const RankTrace& rank, const CallTree& tree, const hta::View& view,
                                          const std::string& op, int min_len) {
  SequenceInput in{rank, tree, view};
  const bool chosen = op.empty();
  const std::string name = chosen ? pick_op(in, min_len) : op;
  KernelSequences out;
  if (name.empty()) {
    out.min_pattern_len = min_len;
    out.chosen = true;
    out.note = "no op launches " + std::to_string(min_len) + " or more GPU records";
    return out;
  }
  out = count_sequences(in, name, min_len);
  out.chosen = chosen;
  if (hta_would_fail(rank, view))
    out.note = "HTA fails on this trace (a sub-µs event rounds to a negative duration, or a thread id is text); these sequences are ours";
  return out;
}

KernelSequences hta_kernel_sequences(const RankTrace& rank, const std::string& op, int min_pattern_len) {
  return hta_kernel_sequences_with(rank, build_call_tree(rank), hta::build_view(rank, GpuTimelineOptions{}), op, min_pattern_len);
}

}  // namespace stepscope
