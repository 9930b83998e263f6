// Terminal form of the drill-down: the top operators and kernels, the critical path's split, the
// fusion candidates and the memory peak of one rank.
#pragma once

#include <string>

#include "stepscope/drilldown.hpp"
#include "stepscope/report.hpp"

namespace stepscope {

std::string drilldown_text(const DrillDown& d, int rank, const TextOptions& opts);

}  // namespace stepscope
