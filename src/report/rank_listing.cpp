// Which ranks a report lists one by one: at thousands of ranks, the extremes, the quantiles
// between them and the straggler say what a list of every rank would, in a screenful.
#include <algorithm>
#include <numeric>

#include "stepscope/report.hpp"

namespace stepscope {
namespace {

// Rank indices from the fastest steady step to the slowest; ranks without one last.
std::vector<std::size_t> by_step(const AnalysisResult& r) {
  std::vector<std::size_t> order(r.ranks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto key = [&](std::size_t i) {
    const RankPartition& p = r.ranks[i].partition;
    return std::make_pair(p.steady_steps == 0, p.steady_mean_ns);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  return order;
}

}  // namespace

std::vector<std::size_t> listed_ranks(const AnalysisResult& r, std::size_t limit) {
  const std::size_t n = r.ranks.size();
  std::vector<std::size_t> out;
  if (limit == 0 || n <= limit) {
    out.resize(n);
    std::iota(out.begin(), out.end(), std::size_t{0});
    return out;
  }
  const std::optional<int> straggler = r.job.rank_comparison.straggler;
  for (std::size_t i = 0; straggler && i < n; ++i)
    if (r.ranks[i].rank() == *straggler) out.push_back(i);
  const std::vector<std::size_t> order = by_step(r);
  const std::size_t points = limit - out.size();
  for (std::size_t k = 0; k < points; ++k) {
    const std::size_t at = points == 1 ? 0 : (k * (n - 1) + (points - 1) / 2) / (points - 1);
    out.push_back(order[at]);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double step_quantile(const AnalysisResult& r, std::size_t index) {
  const std::vector<std::size_t> order = by_step(r);
  if (order.size() < 2) return 0;
  const auto at = static_cast<std::size_t>(std::find(order.begin(), order.end(), index) - order.begin());
  return static_cast<double>(at) / static_cast<double>(order.size() - 1);
}

}  // namespace stepscope
