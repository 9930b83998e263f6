// One option of a command, described once: the command line adds it from this description
// (src/cli/options.cpp), the Python module takes the keyword argument of the same name, default
// and check, and `stepscope._stepscope.options(command)` hands the description to the parity
// test. The analysis commands' tables are in command_options.hpp, the calculators' in
// plan/commands.hpp.
//   count("gpus", "total GPUs").short_flag("-g").default_is("1")
//     -> `-g,--gpus INT=1` on the command line, `gpus=1` in Python
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "stepscope/error.hpp"

namespace stepscope {

// Count: a whole number, also as a size ("8K"); Real: any number; Duration: a number of the
// option's unit, or a text with its own unit ("1.2s"); TextList: repeatable; Flag: no value.
enum class OptionType : std::uint8_t { Count, Real, Duration, Text, TextList, Flag };
// Range: between the spec's low and high, both included.
enum class OptionCheck : std::uint8_t { None, NonNegative, Positive, Fraction, Range };

struct OptionSpec {
  std::string_view name;          // the command line's: --name
  std::string_view python;        // the keyword argument, "" when it is the name with '_' for '-'
  std::string_view flag;          // a short flag ("-j"), or ""
  OptionType type = OptionType::Text;
  std::string_view unit;          // what a number counts ("threads", "ms"), or ""
  std::string_view value_name;    // the value as --help shows it ("NAME=REGEX"), or "" for the type's
  std::string_view default_text;  // the default as the help says it, "" when the value is unset
  OptionCheck check = OptionCheck::None;
  std::string_view help;
  bool required = false;
  double low = 0, high = 0;       // Range's bounds

  constexpr OptionSpec short_flag(std::string_view f) const { return with(&OptionSpec::flag, f); }
  constexpr OptionSpec python_name(std::string_view p) const { return with(&OptionSpec::python, p); }
  constexpr OptionSpec default_is(std::string_view d) const { return with(&OptionSpec::default_text, d); }
  constexpr OptionSpec shown_as(std::string_view v) const { return with(&OptionSpec::value_name, v); }
  constexpr OptionSpec in_units(std::string_view u) const { return with(&OptionSpec::unit, u); }
  constexpr OptionSpec checked(OptionCheck c, double lo = 0, double hi = 0) const {
    OptionSpec o = *this;
    o.check = c;
    o.low = lo;
    o.high = hi;
    return o;
  }
  constexpr OptionSpec needed() const {
    OptionSpec o = *this;
    o.required = true;
    return o;
  }

 private:
  constexpr OptionSpec with(std::string_view OptionSpec::*field, std::string_view v) const {
    OptionSpec o = *this;
    o.*field = v;
    return o;
  }
};

constexpr OptionSpec option(OptionType type, std::string_view name, std::string_view help) {
  OptionSpec o;
  o.name = name;
  o.type = type;
  o.help = help;
  return o;
}
constexpr OptionSpec count(std::string_view name, std::string_view help) { return option(OptionType::Count, name, help); }
constexpr OptionSpec real(std::string_view name, std::string_view help) { return option(OptionType::Real, name, help); }
constexpr OptionSpec text(std::string_view name, std::string_view help) { return option(OptionType::Text, name, help); }
constexpr OptionSpec flag(std::string_view name, std::string_view help) { return option(OptionType::Flag, name, help); }
constexpr OptionSpec text_list(std::string_view name, std::string_view help) {
  return option(OptionType::TextList, name, help);
}
// A duration whose bare number counts `unit` ("ms", "us", "h").
constexpr OptionSpec duration(std::string_view name, std::string_view unit, std::string_view help) {
  return option(OptionType::Duration, name, help).in_units(unit);
}

// The keyword argument's name: the spec's python, else its name with '_' for '-'.
inline std::string python_name(const OptionSpec& o) {
  std::string out(o.python.empty() ? o.name : o.python);
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

inline const char* option_type_name(OptionType t) {
  constexpr const char* kNames[] = {"count", "number", "duration", "text", "text list", "flag"};
  return kNames[static_cast<int>(t)];
}

inline const char* option_check_name(OptionCheck c) {
  constexpr const char* kNames[] = {"", "non-negative", "positive", "0-1", "range"};
  return kNames[static_cast<int>(c)];
}

// Refuses a value outside the option's check, in the words both front ends print:
//   kernel-threshold -1  ->  InputError "--kernel-threshold must be non-negative (got -1)"
//   jobs 300             ->  InputError "--jobs 300: must be between 0 and 256"
inline void check_option_value(const OptionSpec& o, double v) {
  const bool ok = o.check == OptionCheck::NonNegative ? v >= 0
                  : o.check == OptionCheck::Positive  ? v > 0
                  : o.check == OptionCheck::Fraction  ? v >= 0 && v <= 1
                  : o.check == OptionCheck::Range     ? v >= o.low && v <= o.high
                                                      : true;
  if (ok) return;
  if (o.check == OptionCheck::Fraction) throw InputError(fmt::format("--{} must be between 0 and 1 (got {})", o.name, v));
  if (o.check == OptionCheck::Range)
    throw InputError(fmt::format("--{} {}: must be between {} and {}", o.name, v, o.low, o.high));
  throw InputError(fmt::format("--{} must be {} (got {})", o.name, option_check_name(o.check), v));
}

}  // namespace stepscope
