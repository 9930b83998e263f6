// What a `jobs` option (-j) means, said once for every module that starts threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>

namespace stepscope {

// The threads `jobs` asks for: itself when positive, else one per core (at least one).
//   threads_for(3) -> 3    threads_for(0) -> std::thread::hardware_concurrency(), or 1 if unknown
inline int threads_for(int jobs) {
  if (jobs > 0) return jobs;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

// The threads each of `ranks` ranks analysed side by side gets, when `jobs` are shared among
// them: a lone rank gets them all, more ranks than threads get one each.
//   rank_threads_for(4, 1) -> 4    rank_threads_for(4, 2) -> 2    rank_threads_for(4, 3) -> 1
//   rank_threads_for(2, 64) -> 1   rank_threads_for(4, 0) -> 4 (no ranks yet: as one)
inline int rank_threads_for(int jobs, std::size_t ranks) {
  const int threads = threads_for(jobs);
  const int sharing = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), std::max<std::size_t>(1, ranks)));
  return std::max(1, threads / sharing);
}

}  // namespace stepscope
