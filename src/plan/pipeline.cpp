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

namespace {

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

}  // namespace

StackItem parse_stack_item(std::string_view text) {
  StackItem item;
  std::string factor(text);
  const auto eq = text.rfind('=');
  if (eq != std::string_view::npos) {
    std::string_view name = text.substr(0, eq);
    const auto at = name.rfind('@');
    if (at != std::string_view::npos) {
      item.category = trimmed(name.substr(at + 1));
      if (item.category.empty())
        throw InputError(fmt::format("--speedup '{}': the category after '@' is empty", text));
      name = name.substr(0, at);
    }
    item.name = trimmed(name);
    factor = std::string(text.substr(eq + 1));
  }
  if (!factor.empty() && (factor.back() == 'x' || factor.back() == 'X')) factor.pop_back();
  const auto speedup = parse_double(factor);
  if (!speedup)
    throw InputError(fmt::format("--speedup '{}': expected NAME=FACTOR, NAME@CATEGORY=FACTOR or "
                                 "FACTOR, e.g. 'BF16 AMP=1.7'", text));
  item.speedup = *speedup;
  require_positive(item.speedup, fmt::format("--speedup '{}'", text));
  return item;
}

std::pair<std::string, double> parse_stack_share(std::string_view text) {
  const auto eq = text.rfind('=');
  const auto share = eq == std::string_view::npos ? std::nullopt
                                                  : parse_double(text.substr(eq + 1));
  if (!share || trimmed(text.substr(0, eq)).empty())
    throw InputError(fmt::format("--share '{}': expected CATEGORY=FRACTION of the step, e.g. "
                                 "'data wait=0.3'", text));
  require_fraction(*share, fmt::format("--share '{}'", text));
  return {trimmed(text.substr(0, eq)), *share};
}

namespace {

// Step time after the first `count` levers. A lever with a category is a speedup measured on
// its own: it saves step x (1 - 1/factor), all of it from its category. Levers of one category
// each save a part of what the category has left, so together they never save more than the
// category (two 2x levers on a 50% data wait make 2x, not 4x). Categories are disjoint slices
// of the step (Amdahl); a lever without a category stands alone and compounds with the rest,
// its factor taken on the step as the levers before it left it.
double stacked_step(const StackInput& in, const std::vector<std::pair<std::string, double>>& size,
                    std::size_t count) {
  const double t = in.step_s;
  double saved = 0, own = 1;
  for (const auto& [category, category_s] : size) {
    double left = 1;  // fraction of the category still there
    for (std::size_t i = 0; i < count; ++i) {
      const auto& item = in.items[i];
      if (item.category != category) continue;
      const double claim = t * (1 - 1 / item.speedup);
      left *= 1 - std::min(1.0, category_s > 0 ? claim / category_s : 0.0);
    }
    saved += category_s * (1 - left);
  }
  for (std::size_t i = 0; i < count; ++i)
    if (in.items[i].category.empty()) own *= in.items[i].speedup;
  return (t - saved) / own;
}

}  // namespace

StackResult plan_stack(const StackInput& in) {
  require_positive(in.step_s, "--step-ms");
  if (in.items.empty()) throw InputError("give at least one --speedup NAME=FACTOR");
  if (in.run_cost) require_non_negative(*in.run_cost, "--cost");
  if (in.run_hours) require_positive(*in.run_hours, "--hours");
  StackResult r;
  r.input = in;

  // The time each category takes in the baseline step.
  std::vector<std::pair<std::string, double>> size;
  double shares = 0;
  for (const auto& entry : in.shares) {
    // Named, not a structured binding: clang (the fuzz and sanitizer builds) cannot capture a
    // binding in the lambdas below.
    const std::string& category = entry.first;
    const double share = entry.second;
    require_fraction(share, fmt::format("--share '{}'", category));
    if (std::none_of(in.items.begin(), in.items.end(),
                     [&](const StackItem& i) { return i.category == category; }))
      throw InputError(fmt::format("--share '{}': no --speedup names that category (give it as "
                                   "'NAME@{}=FACTOR')", category, category));
    if (std::any_of(size.begin(), size.end(), [&](const auto& c) { return c.first == category; }))
      throw InputError(fmt::format("--share '{}' is given twice", category));
    size.emplace_back(category, share * in.step_s);
    shares += share;
  }
  for (const auto& item : in.items) {
    if (item.category.empty() ||
        std::any_of(size.begin(), size.end(), [&](const auto& c) { return c.first == item.category; }))
      continue;
    // Without a share, the category is at least as large as its biggest lever's saving; that
    // is all that can be claimed for it.
    double largest = 0;
    int levers = 0;
    for (const auto& other : in.items)
      if (other.category == item.category) {
        largest = std::max(largest, in.step_s * (1 - 1 / other.speedup));
        ++levers;
      }
    size.emplace_back(item.category, largest);
    shares += largest / in.step_s;
    if (levers > 1)
      r.notes.push_back(fmt::format("'{}' has no --share: taken as the {:.0f}% of the step its "
                                    "largest lever saves, so its other levers add nothing; give "
                                    "--share '{}=FRACTION'", item.category,
                                    100 * largest / in.step_s, item.category));
  }
  if (shares > 1 + 1e-9)
    throw InputError(fmt::format("the categories take {:.0f}% of the step: their shares (given, "
                                 "or implied by their levers) cannot add up to more than 100%",
                                 100 * shares));
  for (const auto& item : in.items) {
    if (item.category.empty()) continue;
    for (const auto& [category, category_s] : size)
      if (category == item.category && in.step_s * (1 - 1 / item.speedup) > category_s * (1 + 1e-9))
        r.notes.push_back(fmt::format("'{}' claims {:.0f}% of the step, more than the {:.0f}% "
                                      "'{}' takes: counted as removing all of it",
                                      item.name, 100 * (1 - 1 / item.speedup),
                                      100 * category_s / in.step_s, category));
  }

  StackRow row;
  row.name = "baseline";
  row.step_s = in.step_s;
  row.cost = in.run_cost;
  row.hours = in.run_hours;
  r.rows.push_back(row);
  for (std::size_t i = 0; i < in.items.size(); ++i) {
    const auto& item = in.items[i];
    const double before = row.step_s;
    row.name = item.name.empty() ? fmt::format("speedup {}", i + 1) : item.name;
    row.category = item.category;
    row.speedup = item.speedup;
    row.step_s = stacked_step(in, size, i + 1);
    if (!(row.step_s > 0))
      throw InputError("the levers remove the whole step: give each category's --share");
    row.effective = before / row.step_s;
    row.cumulative = in.step_s / row.step_s;
    // Run time and cost scale with the step time.
    if (in.run_cost) row.cost = *in.run_cost / row.cumulative;
    if (in.run_hours) row.hours = *in.run_hours / row.cumulative;
    r.rows.push_back(row);
  }
  return r;
}

}  // namespace stepscope::plan
