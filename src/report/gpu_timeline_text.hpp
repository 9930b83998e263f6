// Compact terminal section for the GPU timeline analysis. Returns text; the caller prints.
#pragma once

#include <string>

#include "stepscope/gpu_timeline.hpp"

namespace stepscope {

std::string gpu_timeline_text(const GpuTimeline& t);

}  // namespace stepscope
