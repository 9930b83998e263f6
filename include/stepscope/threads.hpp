// What a `jobs` option (-j) means, said once for every module that starts threads.
#pragma once

#include <thread>

namespace stepscope {

// The threads `jobs` asks for: itself when positive, else one per core (at least one).
//   threads_for(3) -> 3    threads_for(0) -> std::thread::hardware_concurrency(), or 1 if unknown
inline int threads_for(int jobs) {
  if (jobs > 0) return jobs;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

}  // namespace stepscope
