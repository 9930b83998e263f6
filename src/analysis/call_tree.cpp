#include "analysis/call_tree.hpp"

#include <algorithm>

namespace stepscope {

CallTree build_call_tree(const RankTrace& rank) {
  const std::size_t n = rank.events.size();
  CallTree tree;
  tree.parent.assign(n, kNoParent);
  tree.member.assign(n, false);
  for (std::uint32_t t = 0; t < rank.host_tracks.size(); ++t)
    walk_calls(
        rank, t,
        [&](std::uint32_t, std::uint32_t i, const std::vector<OpenCall>& open) {
          tree.parent[i] = open.empty() ? kNoParent : open.back().event;
          tree.member[i] = true;
        },
        [](std::uint32_t, const OpenCall&) {});
  return tree;
}

}  // namespace stepscope
