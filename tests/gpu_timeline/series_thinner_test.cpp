// The thinning of long series for the report, fed a row at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "analysis/drilldown_internal.hpp"

namespace stepscope {
namespace {

struct Point {
  int at = 0;
  int value = 0;
  bool operator==(const Point&) const = default;
};

// The thinning as defined: `max_points` runs of equal length, of each the first row with the
// largest value, then the first and last rows put in place of the first and last runs' picks.
std::vector<Point> thinned_by_definition(const std::vector<Point>& points, std::size_t max_points) {
  if (max_points == 0 || points.size() <= max_points) return points;
  std::vector<Point> out;
  const double stride = static_cast<double>(points.size()) / static_cast<double>(max_points);
  for (std::size_t k = 0; k < max_points; ++k) {
    const auto first = static_cast<std::size_t>(static_cast<double>(k) * stride);
    const auto last = std::min(points.size(), static_cast<std::size_t>(static_cast<double>(k + 1) * stride));
    out.push_back(*std::max_element(points.begin() + static_cast<std::ptrdiff_t>(first),
                                    points.begin() + static_cast<std::ptrdiff_t>(std::max(last, first + 1)),
                                    [](const Point& a, const Point& b) { return a.value < b.value; }));
  }
  out.front() = points.front();
  out.back() = points.back();
  return out;
}

// Row counts around the point count and far past it, values with many ties.
TEST(SeriesThinner, KeepsTheRowsOfTheDefinition) {
  std::mt19937 rng(3);
  for (std::size_t rows : {0u, 1u, 5u, 6u, 7u, 100u, 1001u, 4099u}) {
    for (std::size_t max_points : {0u, 1u, 2u, 6u, 97u, 2000u}) {
      std::vector<Point> points;
      for (std::size_t k = 0; k < rows; ++k) points.push_back({static_cast<int>(k), static_cast<int>(rng() % 9)});
      const auto value = [](const Point& p) { return p.value; };
      SeriesThinner<Point, decltype(value)> thin(rows, max_points, value);
      for (const Point& p : points) thin.add(p);
      EXPECT_EQ(thin.take(), thinned_by_definition(points, max_points)) << rows << " rows, " << max_points << " points";
    }
  }
}

}  // namespace
}  // namespace stepscope
