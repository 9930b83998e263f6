#include "analysis/call_tree.hpp"

#include <algorithm>

namespace stepscope {
namespace {

void walk_track(const RankTrace& rank, std::uint32_t t, CallTree& tree) {
  walk_calls(
      rank, t,
      [&](std::uint32_t, std::uint32_t i, const std::vector<OpenCall>& open) {
        tree.parent[i] = open.empty() ? kNoParent : open.back().event;
        tree.depth[i] = static_cast<std::int16_t>(std::min<std::size_t>(open.size(), CallTree::kMaxDepth));
        tree.host_track[rank.events.track[i]] = t;
        if (!open.empty()) tree.has_children[open.back().event] = true;
      },
      [&](std::uint32_t pos, const OpenCall& call) { tree.subtree_end[call.event] = pos; });
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
