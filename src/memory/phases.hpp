// The phase of an allocation's stack (model building, forward, backward, optimizer, zero_grad).
#pragma once

#include <cstdint>
#include <vector>

#include "stepscope/memory/analysis.hpp"

namespace stepscope::memory {

Phase phase_of_stack(const std::vector<Frame>& frames, const std::vector<std::uint32_t>& stack);

}  // namespace stepscope::memory
