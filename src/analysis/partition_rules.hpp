// The user's stage rules (--stage NAME=REGEX): names matching a rule play its role or mark its
// stage, over what the facts layer decided.
#pragma once

#include <regex>
#include <string_view>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/partition.hpp"

namespace stepscope::partition_detail {

struct CompiledRule {
  HostRole role = HostRole::Op;         // Loader / Sync / Side, or Op for a stage rule
  StageHint stage = StageHint::None;    // set for forward/backward/optimizer rules
  std::regex re;
};

// Throws InputError on an unknown stage name or a bad regular expression.
std::vector<CompiledRule> compile_rules(const std::vector<StageRule>& rules);

}  // namespace stepscope::partition_detail
