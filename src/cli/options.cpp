#include "cli/options.hpp"

#include <string>
#include <variant>

#include "cli/command.hpp"

namespace stepscope::cli {

void add_analysis_options(CLI::App& cmd, std::string_view command, AnalysisSettings& settings) {
  for (const OptionSpec& o : analysis_options(command)) {
    const std::string names = (o.flag.empty() ? "" : std::string(o.flag) + ",") + "--" + std::string(o.name);
    CLI::Option* opt = std::visit(
        [&](auto field) { return cmd.add_option(names, settings.*field, std::string(o.help)); }, o.field);
    if (!o.value_name.empty()) opt->type_name(std::string(o.value_name));
    if (o.check == OptionCheck::NonNegative) opt->check(kNonNegative);
  }
}

}  // namespace stepscope::cli
