// The host call tree of a rank: which op encloses which, per thread, by interval nesting.
#pragma once

#include <cstdint>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {

// Per event of the rank's table (entries of events outside the tree stay at their defaults).
// Built from RankTrace::host_tracks (start ascending, longer first on ties), complete events
// only: a call is the child of the innermost earlier call on its thread that is still open at
// its start and ends no earlier than it ends. Example, one thread:
//   ProfilerStep#1 [0, 100)   aten::linear [10, 50)   aten::addmm [12, 48)   cudaLaunchKernel [20, 25)
// gives each the parent of the next. Only the parents are stored (4 bytes an event); what else a
// search needs of the nesting (depths, subtrees), it gathers while walking the tracks again
// (walk_calls), which costs less than holding 10 bytes an event beside HTA's view.
struct CallTree {
  std::vector<std::uint32_t> parent;  // event index of the enclosing call, kNoParent at the top
  std::vector<bool> member;           // whether the event is a call of the tree
  bool in_tree(std::size_t i) const { return member[i]; }
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
// aten::addmm with open = {ProfilerStep#1, aten::linear}, and the launch with a depth of 3.
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
