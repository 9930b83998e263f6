// Deterministic random numbers: one independent stream per (seed, rank, step, purpose), so a
// rank's trace does not depend on the order in which ranks or steps are generated.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace stepscope::tracegen {

inline std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  Rng(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0) {
    std::uint64_t x = seed;
    for (std::uint64_t v : {a, b, c}) {
      x ^= splitmix64(x) + v * 0x2545f4914f6cdd1dULL;
    }
    state_ = splitmix64(x);
  }
  std::uint64_t next() { return splitmix64(state_); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal, clamped to ±3 so a duration never goes negative at sane jitter.
  double normal() {
    const double u1 = std::max(uniform(), 1e-12), u2 = uniform();
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    return std::clamp(z, -3.0, 3.0);
  }
  // `base` scaled by (1 + rel * N(0,1)), at least 1.
  std::int64_t vary(double base, double rel) {
    const double v = base * (1.0 + rel * normal());
    return std::max<std::int64_t>(1, std::llround(v));
  }

 private:
  std::uint64_t state_;
};

inline std::int64_t us_to_ns(double us) { return std::llround(us * 1000.0); }

}  // namespace stepscope::tracegen
