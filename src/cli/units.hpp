// The command line's one language for numbers: every integer option takes sizes ("8K", "1.5M"),
// every time option takes a duration with a unit ("500ms", "2s").
//
// Example: `plan memory --seq 8K` reads 8192; `watch --interval 500ms` reads half a second, and
// `--interval 2` two seconds; `plan comm --backward-ms 0.12s` reads 120 (its name says ms).
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <set>
#include <string>

#include "stepscope/error.hpp"
#include "stepscope/plan/units.hpp"

namespace stepscope::cli {

// Options whose texts the command reads itself, sizes and durations included (the calculators',
// by their tables in stepscope/plan/commands.hpp): their texts stay as given, and a bad one is the
// command's one-line error, in the words the Python module gives.
inline std::set<const CLI::Option*>& text_options() {
  static std::set<const CLI::Option*> options;
  return options;
}

// Integer options are those CLI11 types INT or UINT (the prefix of the type name it shows).
inline bool is_integer_option(const CLI::Option& o) {
  const std::string t = o.get_type_name();
  return (t.starts_with("INT") || t.starts_with("UINT")) && !text_options().contains(&o);
}

// An InputError of a transform as the parse error CLI11 reports with its usage hint (CLI11 puts
// the option's name before the message, so the parsers are called without one).
template <class F>
std::string as_parse_error(F&& f) {
  try {
    return f();
  } catch (const InputError& e) {
    throw CLI::ValidationError(e.what());
  }
}

// Every integer option of `app` and of its subcommands, at any depth, takes plan::parse_size's
// sizes: the text becomes the whole number before CLI11 converts and range-checks it.
inline void accept_sizes(CLI::App& app) {
  for (CLI::Option* o : app.get_options([](const CLI::Option* opt) { return is_integer_option(*opt); })) {
    o->transform([](std::string text) {
      return as_parse_error([&] { return std::to_string(plan::parse_size(text, "")); });
    });
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) accept_sizes(*sub);
}

// The option takes a duration with any unit; a bare number counts `unit_s` seconds (the unit the
// option's name or help states). The text becomes that number of units before CLI11 converts it.
inline CLI::Option* as_duration(CLI::Option* o, double unit_s) {
  o->type_name("DURATION");
  return o->transform([unit_s](std::string text) {
    return as_parse_error([&] { return fmt::format("{}", plan::parse_duration_s(text, unit_s, "") / unit_s); });
  });
}

}  // namespace stepscope::cli
