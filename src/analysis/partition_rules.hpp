// The user's stage rules (--stage NAME=REGEX): names matching a rule play its role or mark its
// stage, over what the facts layer decided.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string_view>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/partition.hpp"

namespace stepscope::partition_detail {

struct CompiledRule {
  HostRole role = HostRole::Op;         // Loader / Sync / Side, or Op for a stage rule
  StageHint stage = StageHint::None;    // set for forward/backward/optimizer rules
  std::shared_ptr<const re2::RE2> re;  // RE2: matching time is linear in the name, never recursive

  bool matches(std::string_view name) const { return re2::RE2::PartialMatch(name, *re); }
};

// Throws InputError on an unknown stage name or a bad regular expression.
std::vector<CompiledRule> compile_rules(const std::vector<StageRule>& rules);

}  // namespace stepscope::partition_detail
