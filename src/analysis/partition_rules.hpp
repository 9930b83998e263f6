// Name rules of the step partition: what a host op is doing and which stage it marks.
#pragma once

#include <regex>
#include <string_view>
#include <vector>

#include "stepscope/partition.hpp"

namespace stepscope::partition_detail {

// What a host op is doing, in the priority order used to blame an idle GPU.
enum Role : int { kLoader = 0, kSync, kSide, kLaunch, kOp, kRoleCount, kMarker = -1 };
// Stages a host op can mark; ops inherit the innermost marking ancestor's stage.
enum Stage : int { kForward = 0, kBackward, kOptimizer, kStageCount, kNoStage = -1 };

struct CompiledRule {
  int role = kOp;         // kLoader / kSync / kSide, or kOp for a stage rule
  int stage = kNoStage;   // set for forward/backward/optimizer rules
  std::regex re;
};

std::vector<CompiledRule> compile_rules(const std::vector<StageRule>& rules);

// Role of a host op by its name alone (kLaunch is decided from the launch correlation).
int role_by_name(std::string_view name);
// Stage a host op marks by its name, or kNoStage.
int stage_by_name(std::string_view name);
// Ops whose presence marks a step as compiling (torch.compile's first calls).
bool is_compilation(std::string_view name);
// Activation checkpointing recomputes the forward inside backward.
bool is_recompute(std::string_view name);

}  // namespace stepscope::partition_detail
