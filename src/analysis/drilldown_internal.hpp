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
// Thins a series handed over a row at a time, its row count known beforehand, so that the whole
// series is never held; the rows kept are thinned()'s. Runs never overlap once there are more
// rows than points: a run spans at least one row.
template <class Point, class Value>
class SeriesThinner {
 public:
  SeriesThinner(std::size_t rows, std::size_t max_points, Value value)
      : rows_(rows), max_points_(max_points), value_(value), keep_all_(max_points == 0 || rows <= max_points),
        stride_(keep_all_ ? 0 : static_cast<double>(rows) / static_cast<double>(max_points)) {
    out_.reserve(keep_all_ ? rows : max_points);
  }

  void add(const Point& p) {
    const std::size_t row = seen_++;
    if (row + 1 == rows_) last_ = p;
    if (keep_all_) {
      out_.push_back(p);
      return;
    }
    if (row == 0) first_ = p;
    while (run_ < max_points_ && row >= run_end(run_)) ++run_;
    if (run_ == max_points_) return;  // past the last run (its end rounds below the row count)
    if (out_.size() == run_) out_.push_back(p);  // the run's first row
    else if (value_(out_.back()) < value_(p)) out_.back() = p;
  }

  std::vector<Point> take() {
    if (!keep_all_ && !out_.empty()) {
      out_.front() = first_;
      out_.back() = last_;
    }
    return std::move(out_);
  }

 private:
  std::size_t run_end(std::size_t k) const {
    return std::min(rows_, static_cast<std::size_t>(static_cast<double>(k + 1) * stride_));
  }
  std::size_t rows_, max_points_;
  Value value_;
  bool keep_all_;
  double stride_;
  std::size_t seen_ = 0, run_ = 0;
  Point first_{}, last_{};
  std::vector<Point> out_;
};

template <class Point, class Value>
inline std::vector<Point> thinned(std::vector<Point> points, std::size_t max_points, Value value) {
  if (max_points == 0 || points.size() <= max_points) return points;
  SeriesThinner<Point, Value> thin(points.size(), max_points, value);
  for (const Point& p : points) thin.add(p);
  return thin.take();
}


// On HTA's view of the rank, built once for the three of them.
KernelSequences hta_kernel_sequences_with(const RankTrace& rank, const hta::View& view, const std::string& op,
                                          int min_len);
QueueLength hta_queue_length_with(const RankTrace& rank, const hta::View& view, std::size_t max_points);
MemoryBandwidth hta_memory_bandwidth_with(const RankTrace& rank, const hta::View& view, std::size_t max_points);
std::vector<OperatorRow> operator_rows_with(const RankTrace& rank, const RankFacts& facts, const CallTree& tree,
                                            OperatorGrouping grouping);

}  // namespace stepscope
