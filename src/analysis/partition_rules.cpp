#include "analysis/partition_rules.hpp"

#include <array>

#include "stepscope/error.hpp"
#include "stepscope/steps.hpp"

namespace stepscope {
namespace partition_detail {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// Calls after which the host waits for the device: PyTorch's scalar reads and the runtime's
// blocking calls, CUDA and HIP spellings.
constexpr std::array<std::string_view, 11> kSyncNames = {
    "aten::item",          "aten::_local_scalar_dense", "cudaStreamSynchronize",
    "cudaDeviceSynchronize", "cudaEventSynchronize",    "hipStreamSynchronize",
    "hipDeviceSynchronize",  "hipEventSynchronize",     "cudaMemcpy",
    "hipMemcpy",             "hipMemcpyWithStream"};

}  // namespace

int role_by_name(std::string_view n) {
  if (profiler_step_number(n) >= 0) return kMarker;
  if (starts_with(n, "enumerate(DataLoader)") || contains(n, "DataLoaderIter.__next__") ||
      n == "## data_load ##" || n == "data_load")
    return kLoader;
  for (auto s : kSyncNames)
    if (n == s) return kSync;
  if (n == "checkpoint" || n == "torch.save" || n == "save_checkpoint" || n == "## checkpoint ##")
    return kSide;
  return kOp;
}

int stage_by_name(std::string_view n) {
  if (n == "## forward ##" || n == "DistributedDataParallel.forward" ||
      n == "FullyShardedDataParallel.forward" || n == "forward")
    return kForward;
  if (starts_with(n, "autograd::engine::evaluate_function:") || n == "## backward ##" ||
      n == "backward")
    return kBackward;
  if (starts_with(n, "Optimizer.step#") || n == "## optimizer ##" || n == "optimizer")
    return kOptimizer;
  return kNoStage;
}

bool is_compilation(std::string_view n) {
  return contains(n, "convert_frame") || contains(n, "compile_fx") ||
         contains(n, "torch/_inductor/compile");
}

bool is_recompute(std::string_view n) {
  return contains(n, "CheckpointFunction") || contains(n, "torch/utils/checkpoint.py") ||
         contains(n, "checkpoint.py(") || n == "recompute";
}

std::vector<CompiledRule> compile_rules(const std::vector<StageRule>& rules) {
  std::vector<CompiledRule> out;
  for (const auto& r : rules) {
    CompiledRule c;
    if (r.stage == "forward") c.stage = kForward;
    else if (r.stage == "backward") c.stage = kBackward;
    else if (r.stage == "optimizer") c.stage = kOptimizer;
    else if (r.stage == "data") c.role = kLoader;
    else if (r.stage == "sync") c.role = kSync;
    else if (r.stage == "side") c.role = kSide;
    else throw InputError("--stage: unknown stage '" + r.stage +
                          "' (forward, backward, optimizer, data, sync, side)");
    try {
      c.re = std::regex(r.regex, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw InputError("--stage " + r.stage + ": bad regular expression '" + r.regex + "': " + e.what());
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace partition_detail

StageRule parse_stage_rule(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("--stage expects NAME=REGEX, got '" + text + "'");
  StageRule r{text.substr(0, eq), text.substr(eq + 1)};
  partition_detail::compile_rules({r});  // validates
  return r;
}

}  // namespace stepscope
