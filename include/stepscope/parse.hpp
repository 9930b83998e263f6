// Numbers read from text, one way for the whole project: std::from_chars underneath, so no
// locale, no exceptions to swallow, no allocation, and the same answer on every platform.
//
// Every function but the *_prefix ones reads the whole view: the number must fill it exactly.
// Leading or trailing whitespace, a leading '+', a "0x" prefix, thousands separators or a trailing
// unit make the text no number. Callers that read "95 %" or "42\n" cut or trim it first: a parser
// that quietly stops at the first stray character is how "12abc" becomes 12. Where text after the
// number is expected ("1.5GiB", "250.00 W"), the *_prefix variants say where the number ended,
// so the caller decides what the rest may be.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace stepscope {

namespace parse_detail {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Whether from_chars consumed all of [first, last) without error.
inline bool whole(const char* last, std::from_chars_result r) {
  return r.ec == std::errc{} && r.ptr == last;
}

}  // namespace parse_detail

// ASCII letters lower-cased, every other byte kept: "H100-SXM" -> "h100-sxm".
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// An integer of type Int, in `base` (2 to 36; past 9 the digits are letters of either case).
// A '-' is read for signed types only. Out of Int's range, empty or anything else: nullopt.
//   parse_int("42") -> 42            parse_int("-7") -> -7          parse_int("ff", 16) -> 255
//   parse_int<int>("3000000000")     parse_int<unsigned>("-1")      parse_int(" 42")  -> nullopt
template <std::integral Int = std::int64_t>
std::optional<Int> parse_int(std::string_view s, int base = 10) {
  Int v{};
  const char* last = s.data() + s.size();
  if (!parse_detail::whole(last, std::from_chars(s.data(), last, v, base))) return std::nullopt;
  return v;
}

// A number read from the start of a text, and how many characters it took.
template <class T>
struct ParsedPrefix {
  T value{};
  std::size_t used = 0;
};

// The integer that starts `s`, in parse_int's grammar, and its length; what follows is the
// caller's to judge. No number at the start, or one out of Int's range: nullopt.
//   parse_int_prefix("12#3") -> {12, 2}    parse_int_prefix("-7") -> {-7, 2}
//   parse_int_prefix("#3")   -> nullopt    parse_int_prefix("99999999999999999999x") -> nullopt
template <std::integral Int = std::int64_t>
std::optional<ParsedPrefix<Int>> parse_int_prefix(std::string_view s, int base = 10) {
  ParsedPrefix<Int> p;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), p.value, base);
  if (r.ec != std::errc{}) return std::nullopt;
  p.used = static_cast<std::size_t>(r.ptr - s.data());
  return p;
}

// A finite decimal number, correctly rounded: "1.5", "-2", "1e-3", ".5" and "1." as strtod reads
// them. "inf", "nan", magnitudes beyond a double (1e400) or below its smallest subnormal
// (1e-400), hex floats and anything else: nullopt.
inline std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const char* last = s.data() + s.size();
  if (!parse_detail::whole(last, std::from_chars(s.data(), last, v, std::chars_format::general)) ||
      !std::isfinite(v))
    return std::nullopt;
  return v;
}

// The finite decimal number that starts `s`, in parse_double's grammar and with its failures
// ("inf", out of a double's range), and its length; what follows is the caller's to judge.
//   parse_double_prefix("1.5GiB") -> {1.5, 3}    parse_double_prefix("250.00 W") -> {250, 6}
//   parse_double_prefix("1e")     -> {1, 1}      parse_double_prefix("W") -> nullopt
inline std::optional<ParsedPrefix<double>> parse_double_prefix(std::string_view s) {
  ParsedPrefix<double> p;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), p.value, std::chars_format::general);
  if (r.ec != std::errc{} || !std::isfinite(p.value)) return std::nullopt;
  p.used = static_cast<std::size_t>(r.ptr - s.data());
  return p;
}

namespace parse_detail {

inline constexpr std::uint64_t kMaxWholeUs = 9'223'372'036'854'774;  // the last whose ns fit int64

// `s` has at most 16 digits before its '.', so out of long double's range can only be too small:
// that is 0 ns ("1e-5000"), as strtold reads it.
inline std::optional<std::int64_t> us_exponent_to_ns(std::string_view s) {
  long double v = 0;
  const char* last = s.data() + s.size();
  const auto r = std::from_chars(s.data(), last, v, std::chars_format::general);
  if (r.ptr != last) return std::nullopt;
  if (r.ec == std::errc::result_out_of_range) {
    const auto e = s.find_first_of("eE");
    return s[e + 1] == '-' ? std::optional<std::int64_t>(0) : std::nullopt;
  }
  if (r.ec != std::errc{} || !std::isfinite(v) || std::fabs(v) > 9.0e15L) return std::nullopt;
  return static_cast<std::int64_t>(std::llroundl(v * 1000.0L));
}

// The first three digits of a µs fraction are its nanoseconds; the fourth rounds them; the rest
// only have to be digits. `p` is just past the '.', and is left past the fraction. Unsigned, so
// that from_chars takes no sign.
inline std::optional<std::uint64_t> fraction_ns(const char*& p, const char* last) {
  const char* three = p + std::min<std::ptrdiff_t>(3, last - p);
  std::uint64_t ns = 0;
  const auto r = std::from_chars(p, three, ns);
  if (r.ec != std::errc{}) return std::nullopt;
  for (auto k = r.ptr - p; k < 3; ++k) ns *= 10;
  p = r.ptr;
  if (p == three && p != last && is_digit(*p)) ns += *p >= '5' ? 1 : 0;
  while (p != last && is_digit(*p)) ++p;
  return ns;
}

}  // namespace parse_detail

// Kineto's times are decimal microseconds ("1711964646123.456"): newer traces count from
// baseTimeNanoseconds, older ones write absolute epoch µs whose ns fraction a double cannot hold.
// So the text becomes int64 nanoseconds exactly, never through a double. The first digit past the
// nanosecond rounds it, half away from zero; exponent forms ("1.5e3", rare) go through long double.
// More than 16 integer digits, a bare '.' ("1." or ".5") or anything else: nullopt.
//   parse_us_to_ns("1.5") -> 1500    parse_us_to_ns("1708722576381804.123") -> 1708722576381804123
//   parse_us_to_ns("10.1235") -> 10124                     parse_us_to_ns("-2") -> -2000
inline std::optional<std::int64_t> parse_us_to_ns(std::string_view s) {
  const char* p = s.data();
  const char* const last = p + s.size();
  const bool negative = p != last && *p == '-';
  if (negative) ++p;
  std::uint64_t whole_us = 0;  // unsigned, so that a second sign is no number
  const auto r = std::from_chars(p, last, whole_us);
  if (r.ec != std::errc{} || r.ptr - p > 16 || whole_us > parse_detail::kMaxWholeUs) return std::nullopt;
  p = r.ptr;
  std::uint64_t fraction = 0;
  if (p != last && *p == '.') {
    auto f = parse_detail::fraction_ns(++p, last);
    if (!f) return std::nullopt;
    fraction = *f;
  }
  if (p != last && (*p == 'e' || *p == 'E')) return parse_detail::us_exponent_to_ns(s);
  if (p != last) return std::nullopt;
  const auto ns = static_cast<std::int64_t>(whole_us * 1000 + fraction);
  return negative ? -ns : ns;
}

}  // namespace stepscope
