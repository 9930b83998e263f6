// JSON form of the GPU timeline analysis: every field of GpuTimeline.
//
// HTA-compatible figures sit under "hta" with HTA's column names and units (µs, percentages
// rounded as HTA rounds them), each with its exact value beside it; our own figures use µs
// floats too so one report reads in one unit. Undefined values (NaN) are null.
#pragma once

#include <nlohmann/json.hpp>

#include "stepscope/gpu_timeline.hpp"

namespace stepscope {

nlohmann::json to_json(const GpuTimeline& t);
// The kernel-type table summed over ranks, as HTA reports it.
nlohmann::json kernel_types_to_json(const std::vector<HtaKernelTypeTime>& types);

}  // namespace stepscope
