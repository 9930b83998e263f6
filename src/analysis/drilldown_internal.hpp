// The drill-down's parts that share the rank's call tree, built once per rank.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/call_tree.hpp"
#include "analysis/hta_view.hpp"
#include "stepscope/drilldown.hpp"

namespace stepscope {

// A time series thinned to at most `max_points` rows for the report: the rows split into that many
// runs of equal length, and of each run the row with the largest value(row), so that no peak is
// lost to the thinning; the first and last rows kept. Summaries are computed on the whole series
// first. 0 keeps every row.
//   values 1 5 2 2 9 1 3 0, max_points 3 -> runs [1 5 2] [2 9 1] [3 0] -> 1 (first), 9, 0 (last)
template <class Point, class Value>
inline std::vector<Point> thinned(std::vector<Point> points, std::size_t max_points, Value value) {
  if (max_points == 0 || points.size() <= max_points) return points;
  std::vector<Point> out;
  out.reserve(max_points);
  const double stride = static_cast<double>(points.size()) / static_cast<double>(max_points);
  for (std::size_t k = 0; k < max_points; ++k) {
    const auto first = static_cast<std::size_t>(static_cast<double>(k) * stride);
    const auto last = std::min(points.size(), static_cast<std::size_t>(static_cast<double>(k + 1) * stride));
    out.push_back(*std::max_element(points.begin() + static_cast<std::ptrdiff_t>(first),
                                    points.begin() + static_cast<std::ptrdiff_t>(std::max(last, first + 1)),
                                    [&](const Point& a, const Point& b) { return value(a) < value(b); }));
  }
  out.front() = points.front();
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
