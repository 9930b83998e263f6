// JSON form of the drill-down: every row of every table, times in µs (`_us` keys), shares 0..1.
#pragma once

#include <nlohmann/json.hpp>

#include "stepscope/drilldown.hpp"

namespace stepscope {

nlohmann::json to_json(const DrillDown& d);

}  // namespace stepscope
