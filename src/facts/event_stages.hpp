// How GPU work takes its stage, shared by the facts' two phases. Private to the facts layer.
#pragma once

#include <vector>

#include "stepscope/facts.hpp"

namespace stepscope::facts_detail {

// Each GPU record's stage is the stage of the host call that launched it (by correlation id);
// records no call launched keep theirs.
void gpu_stages(const RankTrace& t, std::vector<StageHint>& stage);

}  // namespace stepscope::facts_detail
