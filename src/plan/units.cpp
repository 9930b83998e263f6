#include "stepscope/plan/units.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::plan {

namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Splits "1.5GiB" into 1.5 and "gib"; the number part must parse completely.
bool split_number(std::string_view text, double& number, std::string& suffix) {
  const std::string t = trim(text);
  const auto read = parse_double_prefix(t);
  if (!read) return false;
  number = read->value;
  suffix = ascii_lower(trim(std::string_view(t).substr(read->used)));
  return true;
}

}  // namespace

Dtype parse_dtype(std::string_view text) {
  const std::string t = ascii_lower(trim(text));
  if (t == "fp32" || t == "float32" || t == "float") return Dtype::fp32;
  if (t == "tf32") return Dtype::tf32;
  if (t == "bf16" || t == "bfloat16") return Dtype::bf16;
  if (t == "fp16" || t == "float16" || t == "half") return Dtype::fp16;
  if (t == "fp8" || t == "e4m3" || t == "e5m2") return Dtype::fp8;
  if (t == "int8") return Dtype::int8;
  if (t == "int4") return Dtype::int4;
  throw InputError(fmt::format(
      "unknown data type '{}' (expected fp32, tf32, bf16, fp16, fp8, int8 or int4)", text));
}

std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
    case Dtype::int8: return "int8";
    case Dtype::int4: return "int4";
  }
  return "?";
}

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32:
    case Dtype::tf32: return 4.0;  // TF32 is an fp32 storage format; only the math is narrower
    case Dtype::bf16:
    case Dtype::fp16: return 2.0;
    case Dtype::fp8:
    case Dtype::int8: return 1.0;
    case Dtype::int4: return 0.5;
  }
  return 0.0;
}

double parse_count(std::string_view text, std::string_view what) {
  double n = 0;
  std::string suffix;
  if (!split_number(text, n, suffix))
    throw InputError(fmt::format("{}: '{}' is not a number (examples: 7B, 350M, 7e9)", what, text));
  double scale = 1;
  if (suffix.empty()) scale = 1;
  else if (suffix == "k") scale = 1e3;
  else if (suffix == "m") scale = 1e6;
  else if (suffix == "b" || suffix == "g") scale = 1e9;
  else if (suffix == "t") scale = 1e12;
  else
    throw InputError(fmt::format("{}: unknown suffix in '{}' (use K, M, B or T)", what, text));
  require_positive(n * scale, what);
  return n * scale;
}

double parse_bytes(std::string_view text, std::string_view what) {
  double n = 0;
  std::string suffix;
  if (!split_number(text, n, suffix))
    throw InputError(fmt::format("{}: '{}' is not a size (examples: 14GB, 512MiB, 1e9)", what, text));
  double scale = 0;
  if (suffix.empty() || suffix == "b") scale = 1;
  else if (suffix == "kb" || suffix == "k") scale = 1e3;
  else if (suffix == "mb" || suffix == "m") scale = 1e6;
  else if (suffix == "gb" || suffix == "g") scale = 1e9;
  else if (suffix == "tb" || suffix == "t") scale = 1e12;
  else if (suffix == "kib") scale = 1024.0;
  else if (suffix == "mib") scale = 1024.0 * 1024;
  else if (suffix == "gib") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else
    throw InputError(fmt::format("{}: unknown unit in '{}' (use B, KB, MB, GB, TB or KiB..TiB)",
                                 what, text));
  require_positive(n * scale, what);
  return n * scale;
}

void require_positive(double value, std::string_view what) {
  if (!(value > 0) || !std::isfinite(value))
    throw InputError(fmt::format("{} must be positive (got {})", what, value));
}

void require_non_negative(double value, std::string_view what) {
  if (!(value >= 0) || !std::isfinite(value))
    throw InputError(fmt::format("{} must not be negative (got {})", what, value));
}

void require_fraction(double value, std::string_view what) {
  if (!(value >= 0 && value <= 1))
    throw InputError(fmt::format("{} must be between 0 and 1 (got {})", what, value));
}

std::vector<std::int64_t> parse_dims(std::string_view text, std::size_t count, std::string_view what) {
  std::vector<std::int64_t> dims;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    const auto dim = parse_int(cur);
    if (!dim) throw InputError(fmt::format("{} '{}': '{}' is not an integer", what, text, cur));
    dims.push_back(*dim);
    cur.clear();
  };
  for (char c : text) {
    if (c == ',' || c == 'x' || c == 'X' || c == ' ') flush();
    else cur.push_back(c);
  }
  flush();
  if (dims.size() != count) throw InputError(fmt::format("{} '{}': expected {} sizes", what, text, count));
  return dims;
}

namespace {
// "what: " before a message, or nothing when the caller (CLI11) names the option itself.
std::string named(std::string_view what) { return what.empty() ? std::string() : fmt::format("{}: ", what); }
}  // namespace

std::int64_t parse_size(std::string_view text, std::string_view what) {
  double n = 0;
  std::string suffix;
  if (!split_number(text, n, suffix) || !std::isfinite(n))
    throw InputError(fmt::format("{}expected a whole number like 4096, 8K or 1.5M, got '{}'", named(what), text));
  double scale = 1;
  if (suffix == "k") scale = 1024.0;
  else if (suffix == "m") scale = 1024.0 * 1024;
  else if (suffix == "g") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty())
    throw InputError(fmt::format("{}unknown suffix in '{}' (use K, M, G or T: powers of 1024)", named(what), text));
  const double v = n * scale;
  if (v != std::floor(v) || std::fabs(v) > 9.0e18)
    throw InputError(fmt::format("{}'{}' is not a whole number ({})", named(what), text, v));
  return static_cast<std::int64_t>(v);
}

double parse_duration_s(std::string_view text, double bare_unit_s, std::string_view what) {
  double n = 0;
  std::string suffix;
  if (!split_number(text, n, suffix) || !std::isfinite(n))
    throw InputError(fmt::format("{}expected a duration like 500ms, 2s or 1.5, got '{}'", named(what), text));
  double unit = 0;
  if (suffix.empty()) unit = bare_unit_s;
  else if (suffix == "ns") unit = 1e-9;
  else if (suffix == "us" || suffix == "\xc2\xb5s") unit = 1e-6;
  else if (suffix == "ms") unit = 1e-3;
  else if (suffix == "s") unit = 1;
  else if (suffix == "m" || suffix == "min") unit = 60;
  else if (suffix == "h") unit = 3600;
  else
    throw InputError(fmt::format("{}unknown unit in '{}' (use ns, us, ms, s, min or h)", named(what), text));
  return n * unit;
}

std::vector<std::int64_t> parse_seq_list(const std::vector<std::string>& items) {
  std::vector<std::int64_t> out;
  for (const auto& item : items) {
    std::string cur;
    auto flush = [&] {
      if (cur.empty()) return;
      out.push_back(parse_size(cur, "--seq"));
      cur.clear();
    };
    for (char c : item) {
      if (c == ',') flush();
      else cur.push_back(c);
    }
    flush();
  }
  return out;
}

}  // namespace stepscope::plan
