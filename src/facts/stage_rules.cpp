// The user's stage rules (--stage NAME=REGEX) over the event facts: the one place they apply, so
// that the drill-down's tables, the partition and the sync counts give an op the same stage.
#include <re2/re2.h>

#include <memory>
#include <string_view>

#include "facts/event_stages.hpp"
#include "stepscope/error.hpp"
#include "stepscope/facts.hpp"

namespace stepscope {
namespace {

struct CompiledRule {
  HostRole role = HostRole::Op;         // Loader / Sync / Side / Comm, or Op for a stage rule
  StageHint stage = StageHint::None;    // set for forward/backward/optimizer rules
  std::shared_ptr<const re2::RE2> re;  // RE2: matching time is linear in the name, never recursive

  bool matches(std::string_view name) const { return re2::RE2::PartialMatch(name, *re); }
};

// Throws InputError on an unknown stage name or a bad regular expression.
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

// The first rule a name matches, cached per interned name; nullptr when none does.
class UserRules {
 public:
  UserRules(const RankTrace& t, const std::vector<CompiledRule>& rules) : t_(t), rules_(rules), match_(t.strings.size(), -2) {}
  const CompiledRule* match(StrId id) {
    if (match_[id] == -2) {
      match_[id] = -1;
      const std::string_view name = t_.str(id);
      for (std::size_t k = 0; k < rules_.size() && match_[id] < 0; ++k)
        if (rules_[k].matches(name)) match_[id] = static_cast<int>(k);
    }
    return match_[id] < 0 ? nullptr : &rules_[static_cast<std::size_t>(match_[id])];
  }

 private:
  const RankTrace& t_;
  const std::vector<CompiledRule>& rules_;
  std::vector<int> match_;
};

// On one host thread: a role rule sets the op's role; a stage rule sets the op's stage, and its
// descendants inherit it over the stage the names gave them.
void apply_to_track(const RankTrace& t, const Track& track, UserRules& rules, RankFacts& f) {
  std::vector<std::pair<ns_t, StageHint>> open;  // (end, rule stage)
  for (auto i : track.events) {
    if (f.event_role[i] == kNotHostOp) continue;
    while (!open.empty() && open.back().first <= t.events.ts[i]) open.pop_back();
    const CompiledRule* r = rules.match(t.events.name[i]);
    if (r && r->stage != StageHint::None) {
      f.event_stage[i] = r->stage;
      open.emplace_back(t.events.end(i), r->stage);
    } else if (!open.empty()) {
      f.event_stage[i] = open.back().second;
    }
    if (r && r->stage == StageHint::None) f.event_role[i] = static_cast<std::int8_t>(r->role);
  }
}

}  // namespace

StageRule parse_stage_rule(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--stage expects NAME=REGEX, got '" + text + "'");
  StageRule r{text.substr(0, eq), text.substr(eq + 1)};
  compile_rules({r});  // validates
  return r;
}

void apply_stage_rules(const RankTrace& t, const std::vector<StageRule>& rules, RankFacts& f) {
  if (rules.empty()) return;
  const std::vector<CompiledRule> compiled = compile_rules(rules);
  UserRules user(t, compiled);
  for (const auto& track : t.host_tracks) apply_to_track(t, track, user, f);
  facts_detail::gpu_stages(t, f.event_stage);
  f.stage_rules.insert(f.stage_rules.end(), rules.begin(), rules.end());
}

}  // namespace stepscope
