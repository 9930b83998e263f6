// JSON report of `stepscope diff`: the changes, then both sides in full (each as `analyze --json`
// would write it), so a dashboard needs no second run.
#include <nlohmann/json.hpp>
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

nlohmann::json step_json(const StepChange& s) {
  return {{"base_ns", s.base_ns},       {"test_ns", s.test_ns},         {"speedup", s.speedup},
          {"speedup_lo", s.speedup_lo}, {"speedup_hi", s.speedup_hi},   {"base_cv", s.base_cv},
          {"test_cv", s.test_cv},       {"base_steps", s.base_steps},   {"test_steps", s.test_steps},
          {"significant", s.significant}};
}

nlohmann::json category_changes_json(const std::vector<CategoryChange>& v) {
  auto out = nlohmann::json::array();
  for (const auto& c : v)
    out.push_back({{"category", category_name(c.category)},
                   {"base_ns", c.base_ns},
                   {"test_ns", c.test_ns},
                   {"delta_ns", c.delta_ns},
                   {"delta_share_of_base_step", c.delta_pct_of_base_step / 100.0}});
  return out;
}

nlohmann::json kernels_json(const std::vector<KernelChange>& v) {
  auto out = nlohmann::json::array();
  for (const auto& k : v)
    out.push_back({{"name", k.name},
                   {"class", k.kernel_class},
                   {"change", change_kind_name(k.kind)},
                   {"base_ns", k.base_ns},
                   {"test_ns", k.test_ns},
                   {"base_count", k.base_count},
                   {"test_count", k.test_count}});
  return out;
}

nlohmann::json counts_json(const std::vector<CountChange>& v) {
  auto out = nlohmann::json::array();
  for (const auto& c : v) out.push_back({{"what", c.what}, {"base", c.base}, {"test", c.test}});
  return out;
}

nlohmann::json bound_json(const DiffResult& d, Bound b) {
  return d.both_diagnosed ? nlohmann::json(bound_id(b)) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json diff_to_json(const DiffResult& d) {
  nlohmann::json j;
  j["schema"] = d.schema;
  j["base_label"] = d.base_label;
  j["test_label"] = d.test_label;
  j["headline"] = d.headline;
  j["step"] = step_json(d.step);
  j["categories"] = category_changes_json(d.categories);
  j["base_bound"] = bound_json(d, d.base_bound);
  j["test_bound"] = bound_json(d, d.test_bound);
  j["bottleneck_moved"] = d.bottleneck_moved;
  j["kernel_classes"] = kernels_json(d.kernel_classes);
  j["kernels"] = kernels_json(d.kernels);
  j["counts_per_step"] = counts_json(d.counts);
  j["comparability"] = warning_texts(d.comparability);
  j["base"] = to_json(d.base);
  j["test"] = to_json(d.test);
  return j;
}

}  // namespace stepscope
