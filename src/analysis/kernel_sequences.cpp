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
#include <optional>
#include <span>
#include <string_view>

#include "analysis/call_tree.hpp"
#include "analysis/drilldown_internal.hpp"
#include "analysis/hta_view.hpp"
#include "stepscope/drilldown.hpp"

namespace stepscope {
namespace {

struct SequenceInput {
  const RankTrace& rank;
  const hta::View& view;
};

// A host call HTA may keep: a call of the call tree (complete; the walks below visit no other),
// not the profiler's span, not a GPU row.
bool is_candidate_call(const SequenceInput& in, std::size_t i) {
  const EventTable& ev = in.rank.events;
  const bool runtime = ev.kind[i] == Kind::Runtime || ev.kind[i] == Kind::Driver;
  // A host row with a numeric stream (Triton's launching cpu_op) is a GPU row for HTA.
  return ev.kind[i] != Kind::TraceSpan && (ev.stream[i] < 0 || runtime);
}

// Whether HTA keeps host call i: a candidate that starts before the dropped last step (its start
// rounded as HTA rounds it; the searches below ask this of every op, so only the start).
bool kept_host_call(const SequenceInput& in, std::size_t i) {
  if (!is_candidate_call(in, i)) return false;
  if (!in.view.load.last_step_dropped) return true;
  return in.view.clock.ts_of(i) < in.view.load.cutoff_ts;
}

// The GPU rows call i launched (through its correlation id), in row order.
std::span<const std::uint32_t> launched_rows(const SequenceInput& in, std::uint32_t i) {
  const std::int64_t corr = in.rank.events.correlation[i];
  if (corr < 0) return {};
  return in.view.gpu_by_correlation.find(corr);
}

// A call open during a walk of the host tracks, and what is known of its subtree so far.
struct Frame {
  std::uint32_t event;
  std::int32_t depth;         // 0 at the top of its thread
  bool has_children = false;  // a leaf call has none
  std::size_t launched = 0;   // GPU rows launched by the leaf calls of its subtree, once closed
};

// Walks every host track as the call tree is built (walk_calls): `open(frame)` when a call is
// reached, `close(frame)` when its subtree has ended. Leaf calls close in track order, before
// any call around them. A subtree is what the call tree's
// depth, child and subtree-end columns described, gathered on the way instead of stored (10
// bytes an event, at the drill-down's peak).
//   linear [0, 10) { addmm [1, 9) { launch [2, 3) } }: open linear, open addmm, open launch,
//   close launch (leaf), close addmm, close linear
template <class Open, class Close>
void walk_subtrees(const SequenceInput& in, Open&& open, Close&& close) {
  std::vector<Frame> frames;  // mirrors the walk's open calls
  for (std::uint32_t t = 0; t < in.rank.host_tracks.size(); ++t)
    walk_calls(
        in.rank, t,
        [&](std::uint32_t, std::uint32_t i, const std::vector<OpenCall>& around) {
          if (!frames.empty()) frames.back().has_children = true;
          frames.push_back({i, static_cast<std::int32_t>(around.size())});
          open(frames.back());
        },
        [&](std::uint32_t, const OpenCall&) {
          Frame f = frames.back();
          frames.pop_back();
          if (!f.has_children) f.launched = launched_rows(in, f.event).size();
          close(f);
          if (!frames.empty()) frames.back().launched += f.launched;
        });
}

// The roots, in one walk: kept host calls `matches(i)` picks at the smallest depth among them.
// `root(i, rows)` is called as each call closes that is at the smallest depth seen so far, with
// the GPU rows launched by the leaf calls of its subtree, in ts order; `restart()` when a
// shallower match shows the calls reported before were not roots. Roots never nest: a call
// nested in another is deeper.
//   matches at depths 2, 2, 1, 2: root, root, restart, root, root
template <class Match, class Root, class Restart>
void for_each_root(const SequenceInput& in, Match matches, Root&& root, Restart&& restart) {
  std::int32_t depth = -1;
  std::optional<std::uint32_t> open_root;
  std::vector<const hta::Row*> rows;
  walk_subtrees(
      in,
      [&](const Frame& f) {
        if (!matches(f.event) || !kept_host_call(in, f.event)) return;
        if (depth >= 0 && f.depth > depth) return;
        if (depth >= 0 && f.depth < depth) restart();
        depth = f.depth;
        open_root = f.event;
        rows.clear();
      },
      [&](const Frame& f) {
        if (!open_root) return;
        if (!f.has_children)
          for (std::uint32_t k : launched_rows(in, f.event)) rows.push_back(&in.view.rows[k]);
        if (f.event != *open_root) return;
        const hta::RowClock& clock = in.view.clock;
        std::stable_sort(rows.begin(), rows.end(), [&](const hta::Row* a, const hta::Row* b) { return clock.ts(*a) < clock.ts(*b); });
        root(f.event, rows);
        open_root.reset();
      });
}

KernelSequences count_sequences(const SequenceInput& in, const std::string& op, int min_len) {
  KernelSequences out;
  out.op = op;
  out.min_pattern_len = min_len;
  std::vector<char> name_matches(in.rank.strings.size(), 0);
  for (StrId s = 0; s < in.rank.strings.size(); ++s) name_matches[s] = !op.empty() && in.rank.str(s).find(op) != std::string_view::npos;
  std::map<std::vector<StrId>, KernelSequence> by_pattern;
  auto matches = [&](std::uint32_t i) { return name_matches[in.rank.events.name[i]] != 0; };
  for_each_root(
      in, matches,
      [&](std::uint32_t root, const std::vector<const hta::Row*>& records) {
        if (static_cast<int>(records.size()) < min_len) return;
        std::vector<StrId> key{in.rank.events.name[root]};
        ns_t gpu = 0;
        for (const hta::Row* r : records) key.push_back(r->name(in.rank.events)), gpu += in.view.clock.dur(*r);
        KernelSequence& s = by_pattern[key];
        ++s.count;
        s.gpu_time += gpu;
        s.cpu_time += in.view.clock.dur(hta::Row{root});
      },
      [&] { by_pattern.clear(); });
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
  constexpr std::int32_t kUnseen = -1;
  const EventTable& ev = in.rank.events;
  auto kept_op = [&](std::uint32_t i) { return ev.kind[i] == Kind::CpuOp && kept_host_call(in, i); };
  // One walk: a name's roots so far are dropped when a shallower call of it shows they are not
  // at its smallest depth (for_each_root's restart, per name).
  std::vector<std::int32_t> min_depth(in.rank.strings.size(), kUnseen);  // per name id, so far
  std::map<std::string_view, Score> scores;
  walk_subtrees(
      in,
      [&](const Frame& f) {
        if (!kept_op(f.event)) return;
        std::int32_t& d = min_depth[ev.name[f.event]];
        if (d != kUnseen && f.depth >= d) return;
        if (d != kUnseen) scores.erase(in.rank.str(ev.name[f.event]));
        d = f.depth;
      },
      [&](const Frame& f) {
        if (f.depth != min_depth[ev.name[f.event]] || !kept_op(f.event)) return;
        if (min_len > 0 && f.launched < static_cast<std::size_t>(min_len)) return;
        Score& s = scores[in.rank.str(ev.name[f.event])];
        ++s.roots;
        s.depth = f.depth;
      });
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

KernelSequences hta_kernel_sequences_with(const RankTrace& rank, const hta::View& view, const std::string& op,
                                          int min_len) {
  SequenceInput in{rank, view};
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
  return hta_kernel_sequences_with(rank, hta::build_view(rank, GpuTimelineOptions{}), op, min_pattern_len);
}

}  // namespace stepscope
