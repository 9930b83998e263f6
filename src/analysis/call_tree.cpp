#include "analysis/call_tree.hpp"

#include <algorithm>

namespace stepscope {
namespace {

struct Open {
  std::uint32_t event;
  ns_t end;
};

// A call starting at another's end (a zero-length one included) is a sibling, not a child.
bool encloses(const Open& open, ns_t ts, ns_t end) { return ts < open.end && end <= open.end; }

void walk_track(const RankTrace& rank, std::uint32_t t, CallTree& tree) {
  const EventTable& ev = rank.events;
  const std::vector<std::uint32_t>& events = rank.host_tracks[t].events;
  std::vector<Open> stack;
  auto close = [&](std::uint32_t pos) {
    tree.subtree_end[stack.back().event] = pos;
    stack.pop_back();
  };
  for (std::uint32_t pos = 0; pos < events.size(); ++pos) {
    const std::uint32_t i = events[pos];
    if (ev.phase[i] != Phase::Complete) continue;
    const ns_t ts = ev.ts[i], end = ev.end(i);
    while (!stack.empty() && !encloses(stack.back(), ts, end)) close(pos);
    tree.parent[i] = stack.empty() ? kNoParent : stack.back().event;
    tree.depth[i] = static_cast<std::int16_t>(std::min<std::size_t>(stack.size(), CallTree::kMaxDepth));
    tree.host_track[ev.track[i]] = t;
    if (!stack.empty()) tree.has_children[stack.back().event] = true;
    stack.push_back({i, end});
  }
  while (!stack.empty()) close(static_cast<std::uint32_t>(events.size()));
}

}  // namespace

CallTree build_call_tree(const RankTrace& rank) {
  const std::size_t n = rank.events.size();
  CallTree tree;
  tree.parent.assign(n, kNoParent);
  tree.depth.assign(n, -1);
  tree.host_track.assign(rank.events.keys.size(), 0);
  tree.subtree_end.assign(n, 0);
  tree.has_children.assign(n, false);
  for (std::uint32_t t = 0; t < rank.host_tracks.size(); ++t) walk_track(rank, t, tree);
  return tree;
}

const std::vector<std::uint32_t>& CallTree::track_events(const RankTrace& rank, std::uint32_t i) const {
  return rank.host_tracks[host_track[rank.events.track[i]]].events;
}

// The track is in start order, so the search lands on the first call starting with i; i is
// among those that start at the same time.
std::uint32_t CallTree::position(const RankTrace& rank, std::uint32_t i) const {
  const std::vector<std::uint32_t>& events = track_events(rank, i);
  const ns_t ts = rank.events.ts[i];
  auto it = std::lower_bound(events.begin(), events.end(), ts,
                             [&](std::uint32_t e, ns_t v) { return rank.events.ts[e] < v; });
  while (*it != i) ++it;
  return static_cast<std::uint32_t>(it - events.begin());
}

}  // namespace stepscope
