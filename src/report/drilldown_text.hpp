// Terminal form of the drill-down: the top operators and kernels, the critical path's split, the
// fusion candidates and the memory peak of one rank.
#pragma once

#include <string>

#include "stepscope/drilldown.hpp"
#include "stepscope/report.hpp"

namespace stepscope {

std::string drilldown_text(const DrillDown& d, const TextOptions& opts);

// `name` in at most `width` columns: the middle gives way, two thirds kept at the head and one
// third at the tail, so a templated kernel keeps its name and first template arguments and its
// parameter list. Example (width 30): "void at::native::elementwise_kernel<128, 4, Lambda>(int, Lambda)"
// -> "void at::native::el…t, Lambda)". Width 0 keeps the whole name.
std::string shorten_middle(std::string_view name, std::size_t width);

}  // namespace stepscope
