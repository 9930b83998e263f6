// The phase of an allocation from its stack. This is the only place that reads frame names: the
// PyTorch files and functions that mark model building, forward, backward and the optimizer.
#include "memory/phases.hpp"

namespace stepscope::memory {

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool python_file(const Frame& f) { return ends_with(f.filename, ".py"); }

// torch/optim/*.py, or an optimizer of the user's own (a file named like one) in its step.
bool optimizer_frame(const Frame& f) {
  if (f.name == "zero_grad") return false;
  if (contains(f.filename, "torch/optim/")) return true;
  if (f.name == "_init_group" || contains(f.name, "_single_tensor_adam") || contains(f.name, "_multi_tensor_adam") ||
      contains(f.name, "_fused_adam"))
    return true;
  return python_file(f) && contains(f.filename, "optim") && (f.name == "step" || f.name == "__init__");
}

bool backward_frame(const Frame& f) {
  if (contains(f.name, "torch::autograd::Engine::evaluate_function") || contains(f.name, "torch::autograd::Engine::thread_main") ||
      contains(f.name, "torch::autograd::AccumulateGrad"))
    return true;
  if (!python_file(f)) return false;
  return (f.name == "backward" && (contains(f.filename, "torch/autograd/") || ends_with(f.filename, "torch/_tensor.py"))) ||
         f.name == "_make_grads" || f.name == "run_backward";
}

bool forward_frame(const Frame& f) {
  if (!python_file(f)) return false;
  // torch.nn.functional outside a module (a loss computed in the training loop) is forward too.
  if (contains(f.filename, "torch/nn/functional.py")) return true;
  return f.name == "forward" || ((f.name == "_call_impl" || f.name == "_wrapped_call_impl") && contains(f.filename, "torch/nn/modules/module.py"));
}

// Building the model: a module's __init__ (parameters made), or moving it (.to(), .cuda(),
// _apply), loading or initialising its weights.
bool setup_frame(const Frame& f) {
  if (!python_file(f)) return false;
  if (contains(f.filename, "torch/nn/modules/module.py"))
    return f.name == "_apply" || f.name == "to" || f.name == "cuda" || f.name == "load_state_dict" || f.name == "_load_from_state_dict";
  return f.name == "__init__" || f.name == "reset_parameters" || contains(f.filename, "torch/nn/init.py");
}

}  // namespace

Phase phase_of_stack(const std::vector<Frame>& frames, const std::vector<std::uint32_t>& stack) {
  bool zero_grad = false, optimizer = false, forward = false, backward = false, setup = false;
  for (std::uint32_t i : stack) {
    const Frame& f = frames[i];
    zero_grad |= f.name == "zero_grad";
    optimizer |= optimizer_frame(f);
    backward |= backward_frame(f);
    forward |= forward_frame(f);
    setup |= setup_frame(f);
  }
  if (zero_grad) return Phase::zero_grad;
  if (optimizer) return Phase::optimizer;
  // Recomputation under activation checkpointing runs forward inside backward: backward wins.
  if (backward) return Phase::backward;
  if (forward) return Phase::forward;
  if (setup) return Phase::model_setup;
  return Phase::none;
}

}  // namespace stepscope::memory
