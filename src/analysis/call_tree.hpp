// The host call tree of a rank: which op encloses which, per thread, by interval nesting.
#pragma once

#include <cstdint>
#include <climits>
#include <vector>

#include "stepscope/trace.hpp"

namespace stepscope {

inline constexpr std::uint32_t kNoParent = 0xffffffffu;

// Per event of the rank's table (entries of events outside the tree stay at their defaults).
// Built from RankTrace::host_tracks (start ascending, longer first on ties), complete events
// only: a call is the child of the innermost earlier call on its thread that is still open at
// its start and ends no earlier than it ends. Example, one thread:
//   ProfilerStep#1 [0, 100)   aten::linear [10, 50)   aten::addmm [12, 48)   cudaLaunchKernel [20, 25)
// gives depth 0, 1, 2, 3, each the parent of the next; `last_descendant` of aten::linear is the
// launch's position in the thread's track, so its subtree is a contiguous run of the track.
// A call's track and its position there are looked up, not stored: few calls are asked for
// them (the roots of kernel sequences), and two more words per event of the table would be a
// fifth of the model's size.
// Depth is 16-bit (a call nested past 32,767 levels reads as that depth) and has_children a bit:
// the tree is built beside HTA's view and the step analyses, at the analysis' peak.
struct CallTree {
  static constexpr std::int32_t kMaxDepth = INT16_MAX;
  std::vector<std::uint32_t> parent;       // event index of the enclosing call, kNoParent at the top
  std::vector<std::int16_t> depth;         // 0 at the top, -1 outside the tree
  std::vector<std::uint32_t> subtree_end;  // track position one past the call's last descendant
  std::vector<bool> has_children;
  std::vector<std::uint32_t> host_track;   // per EventTable track key: its index in host_tracks
  bool in_tree(std::size_t i) const { return depth[i] >= 0; }
  // The events of call i's track, and its position among them (i in the tree).
  const std::vector<std::uint32_t>& track_events(const RankTrace& rank, std::uint32_t i) const;
  std::uint32_t position(const RankTrace& rank, std::uint32_t i) const;
};

CallTree build_call_tree(const RankTrace& rank);

// A call still open during the walk of its track, and its end.
struct OpenCall {
  std::uint32_t event;
  ns_t end;
};

// Walks host track `t` as build_call_tree does: `visit(pos, i, open)` for each complete call i at
// position pos of the track, `open` holding its ancestors, outermost first; `closed(pos, call)`
// when the call's last descendant lies before position pos. On the example above, visit sees
// aten::addmm with open = {ProfilerStep#1, aten::linear}.
template <class Visit, class Closed>
void walk_calls(const RankTrace& rank, std::uint32_t t, Visit&& visit, Closed&& closed) {
  const EventTable& ev = rank.events;
  const std::vector<std::uint32_t>& events = rank.host_tracks[t].events;
  // A call starting at another's end (a zero-length one included) is a sibling, not a child.
  auto encloses = [](const OpenCall& open, ns_t ts, ns_t end) { return ts < open.end && end <= open.end; };
  std::vector<OpenCall> open;
  for (std::uint32_t pos = 0; pos < events.size(); ++pos) {
    const std::uint32_t i = events[pos];
    if (ev.phase[i] != Phase::Complete) continue;
    const ns_t ts = ev.ts[i], end = ev.end(i);
    while (!open.empty() && !encloses(open.back(), ts, end)) {
      closed(pos, open.back());
      open.pop_back();
    }
    visit(pos, i, static_cast<const std::vector<OpenCall>&>(open));
    open.push_back({i, end});
  }
  for (; !open.empty(); open.pop_back()) closed(static_cast<std::uint32_t>(events.size()), open.back());
}

}  // namespace stepscope
