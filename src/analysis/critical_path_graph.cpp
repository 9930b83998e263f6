// The critical-path DiGraph with networkx 2.8.8's iteration orders, and dag_longest_path. The
// orders matter: the longest path is not unique (many 0-weight edges), and networkx breaks ties
// by its topological order and by predecessor insertion order.
#include <algorithm>

#include "analysis/critical_path_internal.hpp"

namespace stepscope::cp {

void Graph::touch(std::uint32_t n) {
  if (in_graph_[n]) return;
  in_graph_[n] = 1;
  order_.push_back(n);
}

std::int64_t Graph::find(std::uint32_t u, std::uint32_t v) const {
  auto it = index_.find((static_cast<std::uint64_t>(u) << 32) | v);
  return it == index_.end() ? -1 : static_cast<std::int64_t>(it->second);
}

// DiGraph.add_edge: nodes enter the graph in order of first appearance (u before v); adding an
// existing edge updates its attributes (weight, object) where it stands.
std::uint32_t Graph::add_edge(std::uint32_t u, std::uint32_t v, ns_t weight, CpEdgeType type) {
  touch(u);
  touch(v);
  const std::uint64_t key = (static_cast<std::uint64_t>(u) << 32) | v;
  auto [it, fresh] = index_.try_emplace(key, static_cast<std::uint32_t>(edges_.size()));
  if (fresh) {
    edges_.push_back({});
    succ_[u].push_back(it->second);
    pred_[v].push_back(it->second);
  }
  Edge& e = edges_[it->second];
  e.u = u;
  e.v = v;
  e.weight = weight;
  e.graph_weight = weight;
  e.type = type;
  return it->second;
}

// networkx 2.8.8 dag_longest_path over topological_sort, which yields topological_generations:
// the zero-in-degree nodes in node order, then each generation's children in the order their
// in-degree drops to zero (successors visited in insertion order). For each node the best
// predecessor is the first maximum in predecessor order; a negative best distance restarts at 0.
// The path ends at the first node (topological order) of maximal distance.
std::vector<std::uint32_t> dag_longest_path(const Graph& g, bool& cycle) {
  cycle = false;
  const auto& nodes = g.node_order();
  if (nodes.empty()) return {};
  const std::size_t n_ids = *std::max_element(nodes.begin(), nodes.end()) + 1;
  std::vector<std::uint32_t> indeg(n_ids, 0);
  for (const Edge& e : g.edges()) ++indeg[e.v];

  std::vector<std::uint32_t> topo;
  topo.reserve(nodes.size());
  std::vector<std::uint32_t> generation;
  for (std::uint32_t n : nodes)
    if (indeg[n] == 0) generation.push_back(n);
  while (!generation.empty()) {
    std::vector<std::uint32_t> next;
    for (std::uint32_t n : generation) {
      topo.push_back(n);
      for (std::uint32_t ei : g.succ(n)) {
        std::uint32_t c = g.edges()[ei].v;
        if (--indeg[c] == 0) next.push_back(c);
      }
    }
    generation.swap(next);
  }
  if (topo.size() != nodes.size()) {
    cycle = true;
    return {};
  }

  std::vector<ns_t> dist(n_ids, 0);
  std::vector<std::uint32_t> from(n_ids, 0);
  for (std::uint32_t v : topo) {
    bool any = false;
    ns_t best = 0;
    std::uint32_t best_u = v;
    for (std::uint32_t ei : g.pred(v)) {
      const Edge& e = g.edges()[ei];
      ns_t d = dist[e.u] + e.graph_weight;
      if (!any || d > best) {
        best = d;
        best_u = e.u;
        any = true;
      }
    }
    if (!any || best < 0) {
      dist[v] = 0;
      from[v] = v;
    } else {
      dist[v] = best;
      from[v] = best_u;
    }
  }
  std::uint32_t v = topo.front();
  for (std::uint32_t n : topo)
    if (dist[n] > dist[v]) v = n;
  std::vector<std::uint32_t> path;
  std::int64_t u = -1;
  while (u != static_cast<std::int64_t>(v)) {
    path.push_back(v);
    u = v;
    v = from[v];
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace stepscope::cp
