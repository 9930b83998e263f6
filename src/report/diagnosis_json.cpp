#include <nlohmann/json.hpp>
#include "report/diagnosis_render.hpp"
#include "stepscope/diagnose.hpp"

namespace stepscope::report_detail {
namespace {

nlohmann::json categories_json(const CategoryTimes& t) {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kCategoryCount; ++c) j[category_name(static_cast<Category>(c))] = t[static_cast<std::size_t>(c)];
  return j;
}

nlohmann::json mean_categories_json(const std::array<double, kCategoryCount>& t) {
  nlohmann::json j = nlohmann::json::object();
  for (int c = 0; c < kCategoryCount; ++c) j[category_name(static_cast<Category>(c))] = t[static_cast<std::size_t>(c)];
  return j;
}

nlohmann::json verdict_json(const Verdict& v) {
  nlohmann::json j;
  j["bound"] = bound_id(v.bound, v.gpu);
  j["label"] = bound_label(v.bound, v.gpu);
  j["share"] = v.share;
  j["scope"] = v.scope;
  j["runner_up"] = v.has_runner_up ? nlohmann::json(bound_id(v.runner_up, v.gpu)) : nlohmann::json(nullptr);
  j["runner_up_share"] = v.runner_up_share;
  j["from_unrecorded_time"] = v.unrecorded;
  j["compute_kind"] = v.compute_kind;
  j["evidence"] = v.evidence;
  j["headline"] = v.headline;
  return j;
}

// {"2": 1.9, "4": 2.4}: a setting's value and its predicted speedup.
nlohmann::json by_setting_json(const std::vector<std::pair<std::string, double>>& v) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [value, speedup] : v) j[value] = speedup;
  return j;
}

nlohmann::json lever_json(const Lever& l) {
  return {{"id", lever_name(l.id)}, {"title", l.title}, {"knob", l.knob}, {"targets", l.targets},
          {"target_ns", l.target_ns}, {"removable_ns", l.removable_ns}, {"step_ns", l.step_ns},
          {"speedup_bound", l.speedup}, {"basis", l.basis}, {"risk", l.risk}, {"numerics_warning", l.numerics},
          {"comparability_warning", l.comparability}, {"applies", l.applies},
          {"critical_path_share", l.critical_path_share < 0 ? nlohmann::json(nullptr) : nlohmann::json(l.critical_path_share)},
          {"predicted_step_ns", l.predicted_step_ns}, {"predicted_speedup", l.predicted_speedup},
          {"predicted_speedup_interval", {l.predicted_speedup_lo, l.predicted_speedup_hi}},
          {"predicted_by_setting", by_setting_json(l.predicted_by_setting)},
          {"predicted_replayed", l.predicted_replayed}, {"prediction_basis", l.prediction_basis}};
}


nlohmann::json ranks_json(const RankComparison& rc) {
  nlohmann::json j;
  auto& rows = j["rows"] = nlohmann::json::array();
  for (const auto& r : rc.rows)
    rows.push_back({{"rank", r.rank}, {"step_ns", r.step_ns}, {"compute_ns", r.compute_ns},
                    {"grad_sync_exposed_ns", r.grad_sync_ns}});
  j["slowdown"] = !rc.withheld.empty() ? "not_judged" : rc.local ? "rank-local" : "global";
  j["ranks_compared"] = rc.rows.size();
  j["world_size"] = rc.world_size > 0 ? nlohmann::json(rc.world_size) : nlohmann::json(nullptr);
  j["withheld"] = rc.withheld;
  j["straggler"] = rc.straggler ? nlohmann::json(*rc.straggler) : nlohmann::json(nullptr);
  j["straggler_cause"] = rc.straggler ? nlohmann::json(straggler_cause_name(rc.straggler_cause)) : nlohmann::json(nullptr);
  j["straggler_compute_excess"] = rc.straggler_excess;
  j["median_wait_ns"] = rc.median_wait_ns;
  j["balanced_saving_ns"] = rc.balanced_saving_ns;
  j["mean_collective_skew_ns"] = rc.mean_skew_ns;
  auto& skew = j["collective_skew"] = nlohmann::json::array();
  for (const auto& s : rc.skew) skew.push_back({{"step", s.step}, {"skew_ns", s.skew_ns}});
  j["clock_alignment"] = clock_alignment_json(rc.clocks);
  return j;
}

}  // namespace

nlohmann::json plan_json(const LeverPlan& p) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : p.entries)
    entries.push_back({{"id", lever_name(e.id)}, {"title", e.title}, {"predicted_step_ns", e.step_ns}, {"predicted_speedup", e.speedup}});
  nlohmann::json j = {{"levers", entries}, {"step_ns", p.step_ns}, {"gpus", p.gpus}};
  if (p.run_steps > 0)
    j["run"] = {{"steps", p.run_steps},
                {"gpu_hours_before", p.gpu_hours_before},
                {"gpu_hours_after", p.gpu_hours_after},
                {"gpu_hour_cost", p.gpu_hour_cost > 0 ? nlohmann::json(p.gpu_hour_cost) : nlohmann::json(nullptr)},
                {"cost_before", p.gpu_hour_cost > 0 ? nlohmann::json(p.gpu_hours_before * p.gpu_hour_cost) : nlohmann::json(nullptr)},
                {"cost_after", p.gpu_hour_cost > 0 ? nlohmann::json(p.gpu_hours_after * p.gpu_hour_cost) : nlohmann::json(nullptr)}};
  return j;
}

nlohmann::json clock_alignment_json(const ClockAlignment& c) {
  nlohmann::json j;
  j["method"] = clock_method_name(c.method);
  j["keyed_by"] = c.keyed_by;
  j["collectives"] = c.collectives;
  j["mismatched"] = c.mismatched;
  j["unaligned_ranks"] = c.unaligned_ranks;
  j["residual_p50_ns"] = c.residual_p50_ns;
  j["residual_p99_ns"] = c.residual_p99_ns;
  j["arrival_skew_mean_ns"] = c.arrival_skew_mean_ns;
  j["arrival_skew_p50_ns"] = c.arrival_skew_p50_ns;
  j["arrival_skew_p90_ns"] = c.arrival_skew_p90_ns;
  j["last_rank"] = c.last_rank ? nlohmann::json(*c.last_rank) : nlohmann::json(nullptr);
  j["last_share"] = c.last_share;
  auto& ranks = j["ranks"] = nlohmann::json::array();
  for (const auto& r : c.ranks)
    ranks.push_back({{"rank", r.rank}, {"offset_ns", r.offset_ns}, {"aligned", r.aligned}, {"matched", r.matched},
                     {"residual_ns", r.residual_ns}, {"last_arrivals", r.last_arrivals},
                     {"arrival_wait_ns", r.arrival_wait_ns}});
  return j;
}

nlohmann::json partition_json(const RankPartition& p) {
  nlohmann::json j;
  j["gpu"] = p.gpu;
  j["step_source"] = step_source_name(p.source);
  j["step_source_detail"] = p.source_detail;
  j["main_thread"] = p.main_thread;
  j["steady_steps"] = p.steady_steps;
  j["steady_mean_step_ns"] = p.steady_mean_ns;
  j["steady_mean_categories_ns"] = mean_categories_json(p.steady_mean_category);
  j["sync_calls"] = p.sync_calls;
  j["notes"] = warning_texts(p.notes);
  auto& steps = j["steps"] = nlohmann::json::array();
  for (const auto& s : p.steps)
    steps.push_back({{"number", s.number}, {"name", s.name}, {"start_ns", s.start}, {"end_ns", s.end},
                     {"host_start_ns", s.host_start}, {"host_end_ns", s.host_end}, {"duration_ns", s.duration()}, {"warmup", s.warmup},
                     {"warmup_reason", s.warmup_reason}, {"categories_ns", categories_json(s.ns)}});
  nlohmann::json mix = nlohmann::json::object();
  for (int c = 0; c < kKernelClassCount; ++c)
    mix[kernel_class_name(static_cast<KernelClass>(c))] = p.mix.class_ns[static_cast<std::size_t>(c)];
  j["compute_kernel_ns_by_class"] = mix;
  j["compute_kernels"] = p.mix.kernels;
  nlohmann::json roles = nlohmann::json::object();
  for (int c = 0; c < kCommRoleCount; ++c)
    roles[comm_role_name(static_cast<CommRole>(c))] = p.mix.comm_ns_by_role[static_cast<std::size_t>(c)];
  j["comm_kernel_ns_by_role"] = roles;
  return j;
}

nlohmann::json stability_json(const Stability& s) {
  nlohmann::json j;
  j["steps"] = s.steps;
  j["mean_ns"] = s.mean_ns;
  j["p50_ns"] = s.p50_ns;
  j["p90_ns"] = s.p90_ns;
  j["max_ns"] = s.max_ns;
  j["cv"] = s.cv;
  j["quiet_step_ns"] = s.quiet_ns;
  j["bursty"] = s.bursty;
  auto& spikes = j["spikes"] = nlohmann::json::array();
  for (const auto& sp : s.spikes)
    spikes.push_back({{"step", sp.step}, {"duration_ns", sp.duration}, {"excess_ns", sp.excess},
                      {"grew", category_name(sp.grew)}, {"grew_by_ns", sp.grew_by}});
  if (s.period.kind == PeriodKind::None) {
    j["periodicity"] = nullptr;
  } else {
    j["periodicity"] = {{"every", s.period.every}, {"kind", period_kind_name(s.period.kind)},
                        {"category", category_name(s.period.category)}, {"mean_excess_ns", s.period.mean_excess},
                        {"occurrences", s.period.occurrences}};
  }
  return j;
}

void add_diagnosis_json(const DiagnosedResult& r, nlohmann::json& j) {
  const JobStep job = job_step(r);
  j["steady_state_step"] = {{"mean_step_ns", job.step_ns}, {"categories_ns", mean_categories_json(job.category)},
                            {"gpu", job.gpu}};
  j["rank_comparison"] = ranks_json(r.job.rank_comparison);
  if (!r.diagnosis.present) {
    j["verdict"] = nullptr;
    return;
  }
  j["verdict"] = verdict_json(r.diagnosis.verdict);
  auto& findings = j["findings"] = nlohmann::json::array();
  for (const auto& f : r.diagnosis.findings) {
    nlohmann::json fj = {{"id", finding_id(f)}, {"text", finding_text(f)}};
    if (f.footgun) {
      fj["footgun"] = true;
      fj["evidence"] = f.evidence;
      fj["lever"] = f.lever ? lever_name(*f.lever) : std::string_view();
      fj["gain_ns"] = f.gain_ns;
      fj["step_ns"] = f.step_ns;
      fj["speedup"] = f.speedup;
    }
    findings.push_back(std::move(fj));
  }
  auto& levers = j["levers"] = nlohmann::json::array();
  for (const auto& l : r.diagnosis.levers) levers.push_back(lever_json(l));
  j["plan"] = plan_json(r.diagnosis.plan);
}

nlohmann::json whatif_json(const whatif::RankWhatIf& w) {
  if (!w.present) return nullptr;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : w.steps) steps.push_back({{"step", s.number}, {"measured_ns", s.measured_ns}, {"replayed_ns", s.replayed_ns}});
  nlohmann::json edges = nlohmann::json::array();
  for (const auto& d : w.disagreements) edges.push_back({{"edge", d.edge}, {"count", d.count}, {"total_ns", d.total_ns}});
  nlohmann::json levers = nlohmann::json::array();
  auto prediction = [](const whatif::Prediction& p) {
    return nlohmann::json{{"id", p.id ? lever_name(*p.id) : std::string_view("whatif")},       {"speedup", p.speedup}, {"uncertainty", p.uncertainty},
                          {"held", p.held},   {"basis", p.basis},     {"by_setting", by_setting_json(p.by_setting)}};
  };
  for (const auto& p : w.levers) levers.push_back(prediction(p));
  nlohmann::json plan = nlohmann::json::array();
  for (const auto& e : w.plan) plan.push_back({{"id", lever_name(e.id)}, {"speedup", e.speedup}});
  return {{"replay_error", {{"mean", w.replay_error_mean}, {"max", w.replay_error_max}}},
          {"graph", {{"nodes", w.nodes}, {"edges", w.edges}}},
          {"steps", steps},
          {"disagreeing_edges", edges},
          {"levers", levers},
          {"plan", plan},
          {"whatif", w.custom ? prediction(*w.custom) : nlohmann::json(nullptr)}};
}

}  // namespace stepscope::report_detail
