// Kineto writes times as decimal microseconds ("1711964646123.456"); newer traces are relative
// to baseTimeNanoseconds, older ones absolute epoch µs whose ns fraction a double cannot hold.
// So the text is converted straight to int64 nanoseconds, never through a double.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace stepscope::ingest {

// Parses a JSON number of microseconds into nanoseconds. Digits past the nanosecond are rounded
// half up. Exponent forms fall back to long double. Returns false if `s` is not a number.
inline constexpr std::int64_t kMaxWholeUs = 9'223'372'036'854'774;

inline bool parse_us_to_ns(std::string_view s, std::int64_t& out) {
  std::size_t i = 0, n = s.size();
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t')) --n;
  bool neg = false;
  if (i < n && s[i] == '-') {
    neg = true;
    ++i;
  }
  if (i >= n || s[i] < '0' || s[i] > '9') return false;
  std::int64_t whole = 0;
  int int_digits = 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (++int_digits > 16) return false;
    whole = whole * 10 + (s[i] - '0');
  }
  if (whole > kMaxWholeUs) return false;  // would overflow int64 nanoseconds
  std::int64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < n && s[i] == '.') {
    ++i;
    if (i >= n || s[i] < '0' || s[i] > '9') return false;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; ++i, ++frac_digits) {
      if (frac_digits < 3) frac = frac * 10 + (s[i] - '0');
      else if (frac_digits == 3) round_up = s[i] >= '5';
    }
    for (int k = frac_digits; k < 3; ++k) frac *= 10;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    char buf[64];
    if (n >= sizeof buf) return false;
    for (std::size_t k = 0; k < n; ++k) buf[k] = s[k];
    buf[n] = 0;
    char* endp = nullptr;
    long double v = std::strtold(buf, &endp);
    if (endp != buf + n || !std::isfinite(v) || std::fabs(v) > 9.0e15L) return false;
    out = static_cast<std::int64_t>(std::llroundl(v * 1000.0L));
    return true;
  }
  if (i != n) return false;
  std::int64_t ns = whole * 1000 + frac + (round_up ? 1 : 0);
  out = neg ? -ns : ns;
  return true;
}

}  // namespace stepscope::ingest
