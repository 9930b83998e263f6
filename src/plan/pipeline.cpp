#include "stepscope/plan/pipeline.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"
#include "stepscope/plan/units.hpp"

namespace stepscope::plan {

namespace {

// Smallest m with (p-1)/(v m + p - 1) <= target, i.e. v m >= (p-1)(1-target)/target.
int micro_batches_for(double target, int p, int v) {
  if (p == 1) return 1;
  const double need = (p - 1) * (1 - target) / (target * v);
  return std::max(1, static_cast<int>(std::ceil(need - 1e-9)));
}

PipelineSchedule schedule(std::string name, const PipelineInput& in, int v,
                          std::optional<int> in_flight) {
  const double p = in.stages, m = in.micro_batches;
  PipelineSchedule s;
  s.name = std::move(name);
  s.bubble_fraction = (p - 1) / (v * m + p - 1);
  s.bubble_overhead = (p - 1) / (v * m);
  s.efficiency = 1 - s.bubble_fraction;
  s.micro_batches_in_flight = in_flight;
  if (in.micro_batch_s) {
    // m useful slots plus (p-1)/v idle slots of one micro-batch's stage time.
    s.step_s = *in.micro_batch_s * (m + (p - 1) / v);
  }
  s.micro_batches_for_target = micro_batches_for(in.target_bubble, in.stages, v);
  return s;
}

}  // namespace

PipelineResult plan_pipeline(const PipelineInput& in) {
  if (in.stages < 1) throw InputError(fmt::format("--stages must be positive (got {})", in.stages));
  if (in.micro_batches < 1)
    throw InputError(fmt::format("--micro-batches must be positive (got {})", in.micro_batches));
  if (in.interleave < 1)
    throw InputError(fmt::format("--interleave must be positive (got {})", in.interleave));
  if (in.micro_batch_s) require_positive(*in.micro_batch_s, "--micro-batch-ms");
  if (!(in.target_bubble > 0 && in.target_bubble < 1))
    throw InputError(fmt::format("--target-bubble must be between 0 and 1 (got {})", in.target_bubble));
  if (in.interleave > 1 && in.micro_batches % in.stages != 0)
    throw InputError(fmt::format("interleaved 1F1B needs the micro-batch count ({}) to be a "
                                 "multiple of the stage count ({})", in.micro_batches, in.stages));
  PipelineResult r;
  r.input = in;
  // Same bubble for GPipe and 1F1B; 1F1B caps the activations the first stage keeps at p sets.
  r.schedules.push_back(schedule("GPipe", in, 1, in.micro_batches));
  r.schedules.push_back(schedule("1F1B", in, 1, std::min(in.micro_batches, in.stages)));
  if (in.interleave > 1)
    r.schedules.push_back(
        schedule(fmt::format("interleaved 1F1B (v={})", in.interleave), in, in.interleave,
                 std::nullopt));
  return r;
}

StackItem parse_stack_item(std::string_view text) {
  StackItem item;
  std::string factor(text);
  const auto eq = text.rfind('=');
  if (eq != std::string_view::npos) {
    item.name = std::string(text.substr(0, eq));
    factor = std::string(text.substr(eq + 1));
  }
  if (!factor.empty() && (factor.back() == 'x' || factor.back() == 'X')) factor.pop_back();
  const auto speedup = parse_double(factor);
  if (!speedup)
    throw InputError(fmt::format("--speedup '{}': expected NAME=FACTOR or FACTOR, e.g. 'BF16 AMP=1.7'",
                                 text));
  item.speedup = *speedup;
  require_positive(item.speedup, fmt::format("--speedup '{}'", text));
  return item;
}

StackResult plan_stack(const StackInput& in) {
  require_positive(in.step_s, "--step-ms");
  if (in.items.empty()) throw InputError("give at least one --speedup NAME=FACTOR");
  if (in.run_cost) require_non_negative(*in.run_cost, "--cost");
  if (in.run_hours) require_positive(*in.run_hours, "--hours");
  StackResult r;
  r.input = in;
  StackRow row{"baseline", 1, 1, in.step_s, in.run_cost, in.run_hours};
  r.rows.push_back(row);
  int index = 0;
  for (const auto& item : in.items) {
    ++index;
    row.name = item.name.empty() ? fmt::format("speedup {}", index) : item.name;
    row.speedup = item.speedup;
    row.cumulative *= item.speedup;
    // Throughput multipliers compound; step time, run time and cost divide by the product.
    row.step_s = in.step_s / row.cumulative;
    if (in.run_cost) row.cost = *in.run_cost / row.cumulative;
    if (in.run_hours) row.hours = *in.run_hours / row.cumulative;
    r.rows.push_back(row);
  }
  return r;
}

}  // namespace stepscope::plan
