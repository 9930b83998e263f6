// JSON form of the GPU timeline analysis: every field of GpuTimeline.
//
// HTA-compatible figures sit under "hta" with HTA's column names, in the report's one language:
// durations and timestamps in nanoseconds (keys end in `_ns`), shares as fractions 0..1 (keys
// end in `_share` or are `share`), unrounded (the Python frames apply HTA's rounding). Undefined
// values (NaN) are null.
#pragma once

#include <nlohmann/json.hpp>

#include "stepscope/gpu_timeline.hpp"

namespace stepscope {

nlohmann::json to_json(const GpuTimeline& t, int rank);

namespace report_json {
// Trace text made valid UTF-8 (invalid bytes become U+FFFD): nlohmann refuses to dump it otherwise.
std::string utf8_safe(std::string_view in);
// NaN and infinities become null (JSON has neither).
nlohmann::json num(double v);
// pandas-style statistics of the samples, in the samples' unit.
nlohmann::json stats_json(const SampleStats& s);
}  // namespace report_json
// The kernel-type table summed over ranks, as HTA reports it.
nlohmann::json kernel_types_to_json(const std::vector<HtaKernelTypeTime>& types);

}  // namespace stepscope
