#include "report/units.hpp"

#include <fmt/core.h>

#include <cmath>

namespace stepscope::report_units {

std::string ms(double ns) {
  if (!std::isfinite(ns)) return "n/a";
  const double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.1f} us", ns / 1e3);
}

std::string pct(double share) {
  if (!std::isfinite(share)) return "n/a";
  return fmt::format("{:.1f}%", share * 100);
}

std::string signed_ms(double ns) {
  const char* sign = ns > 0 ? "+" : ns < 0 ? "-" : "";
  return fmt::format("{}{}", sign, ms(std::fabs(ns)));
}

}  // namespace stepscope::report_units
