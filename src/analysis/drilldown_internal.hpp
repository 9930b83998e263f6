// The drill-down's parts that share the rank's call tree, built once per rank.
#pragma once

#include <string>
#include <vector>

#include "analysis/call_tree.hpp"
#include "analysis/hta_view.hpp"
#include "stepscope/drilldown.hpp"

namespace stepscope {

// A time series thinned evenly to at most `max_points` rows for the report, its last row kept;
// summaries are computed on the whole series first. 0 keeps every row.
template <class Point>
inline std::vector<Point> thinned(std::vector<Point> points, std::size_t max_points) {
  if (max_points == 0 || points.size() <= max_points) return points;
  std::vector<Point> out;
  out.reserve(max_points);
  const double stride = static_cast<double>(points.size()) / static_cast<double>(max_points);
  for (std::size_t k = 0; k < max_points; ++k) out.push_back(points[static_cast<std::size_t>(static_cast<double>(k) * stride)]);
  out.back() = points.back();
  return out;
}


// On HTA's view of the rank, built once for the three of them.
KernelSequences hta_kernel_sequences_with(const RankTrace& rank, const CallTree& tree, const hta::View& view,
                                          const std::string& op, int min_len);
QueueLength hta_queue_length_with(const RankTrace& rank, const hta::View& view, std::size_t max_points);
MemoryBandwidth hta_memory_bandwidth_with(const RankTrace& rank, const hta::View& view, std::size_t max_points);
std::vector<OperatorRow> operator_rows_with(const RankTrace& rank, const RankFacts& facts, const CallTree& tree,
                                            OperatorGrouping grouping);

}  // namespace stepscope
