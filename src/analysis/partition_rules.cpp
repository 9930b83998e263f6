#include "analysis/partition_rules.hpp"

#include "stepscope/error.hpp"

namespace stepscope {
namespace partition_detail {
std::vector<CompiledRule> compile_rules(const std::vector<StageRule>& rules) {
  std::vector<CompiledRule> out;
  for (const auto& r : rules) {
    CompiledRule c;
    if (r.stage == "forward") c.stage = StageHint::Forward;
    else if (r.stage == "backward") c.stage = StageHint::Backward;
    else if (r.stage == "optimizer") c.stage = StageHint::Optimizer;
    else if (r.stage == "data") c.role = HostRole::Loader;
    else if (r.stage == "sync") c.role = HostRole::Sync;
    else if (r.stage == "side") c.role = HostRole::Side;
    else if (r.stage == "comm") c.role = HostRole::Comm;
    else throw InputError("--stage: unknown stage '" + r.stage +
                          "' (forward, backward, optimizer, data, sync, side, comm)");
    re2::RE2::Options o;
    o.set_log_errors(false);
    auto re = std::make_shared<const re2::RE2>(r.regex, o);
    if (!re->ok())
      throw InputError("--stage " + r.stage + ": bad regular expression '" + r.regex + "': " + re->error() +
                       " (RE2 syntax: no lookaround or backreferences)");
    c.re = std::move(re);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace partition_detail

StageRule parse_stage_rule(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--stage expects NAME=REGEX, got '" + text + "'");
  StageRule r{text.substr(0, eq), text.substr(eq + 1)};
  partition_detail::compile_rules({r});  // validates
  return r;
}

}  // namespace stepscope
