#include "cli/options.hpp"

#include <fmt/core.h>

#include <string>
#include <variant>

#include "cli/command.hpp"
#include "cli/units.hpp"

namespace stepscope::cli {

namespace {

std::string names_of(const OptionSpec& o) {
  return (o.flag.empty() ? "" : std::string(o.flag) + ",") + "--" + std::string(o.name);
}

std::string type_name_of(const OptionSpec& o) {
  if (!o.value_name.empty()) return std::string(o.value_name);
  switch (o.type) {
    case OptionType::Count: return "INT";
    case OptionType::Real: return "FLOAT";
    case OptionType::Duration: return "DURATION";
    default: return "TEXT";
  }
}

// What --help says of the check, as CLI11's own validators word it.
std::string check_text(const OptionSpec& o) {
  switch (o.check) {
    case OptionCheck::NonNegative: return "NUMBER >= 0";
    case OptionCheck::Positive: return "NUMBER > 0";
    case OptionCheck::Fraction: return "NUMBER in [0 - 1]";
    case OptionCheck::Range: return fmt::format("INT in [{} - {}]", o.low, o.high);
    default: return "";
  }
}

// `typed`: the option writes a typed value, whose type CLI11 names itself ("UINT") unless the
// spec names the value.
CLI::Option* describe_option(CLI::Option* opt, const OptionSpec& o, bool typed) {
  if (o.type == OptionType::Flag) return opt;
  if (!typed || !o.value_name.empty()) opt->type_name(type_name_of(o));
  if (o.check != OptionCheck::None) opt->check(CLI::Validator(check_text(o)));
  if (!o.default_text.empty()) opt->default_str(std::string(o.default_text));
  if (o.required) opt->required();
  return opt;
}

}  // namespace

void add_analysis_options(CLI::App& cmd, std::string_view command, AnalysisSettings& settings) {
  for (const AnalysisOption& o : analysis_options(command)) {
    std::visit([&](auto field) { describe_option(cmd.add_option(names_of(o.spec), settings.*field, std::string(o.spec.help)), o.spec, true); },
               o.field);
  }
}

CLI::Option* add_option(CLI::App& cmd, const OptionSpec& o, std::vector<std::string>& texts) {
  const std::string names = names_of(o);
  const std::string help(o.help);
  if (o.type == OptionType::Flag) return cmd.add_flag(names, help);
  CLI::Option* opt = cmd.add_option(names, texts, help);
  if (o.type != OptionType::TextList) opt->expected(1);
  text_options().insert(opt);
  return describe_option(opt, o, false);
}

}  // namespace stepscope::cli
