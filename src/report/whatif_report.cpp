// The `stepscope whatif` report.
#include <nlohmann/json.hpp>
#include <fmt/core.h>

#include <cmath>

#include "report/diagnosis_render.hpp"
#include "stepscope/whatif_report.hpp"

namespace stepscope {
namespace {

std::string whatif_ms(double ns) { return fmt::format("{:.2f} ms", ns / 1e6); }

double mean_ns(const std::vector<whatif::StepReplay>& steps, bool replayed) {
  double sum = 0;
  for (const auto& s : steps) sum += static_cast<double>(replayed ? s.replayed_ns : s.measured_ns);
  return steps.empty() ? 0 : sum / static_cast<double>(steps.size());
}

// A change's interval: its own uncertainty on the gain, widened by the replay's error (as the
// levers' are, docs/whatif.md).
std::pair<double, double> interval(const whatif::Prediction& p, double error) {
  const double gain = p.speedup - 1;
  return {(1 + gain * (1 - p.uncertainty)) / (1 + error), (1 + gain * (1 + p.uncertainty)) * (1 + error)};
}

struct RankLine {
  int rank = 0;
  double step_ns = 0;  // the partition's steady mean
  double recorded_ns = 0, replayed_ns = 0;
  const whatif::RankWhatIf* w = nullptr;
};

std::vector<RankLine> rank_lines(const AnalysisResult& r) {
  std::vector<RankLine> out;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const auto& w = r.ranks[i].whatif;
    if (!w.present) continue;
    out.push_back({r.ranks[i].rank(), r.ranks[i].partition.steady_mean_ns, mean_ns(w.steps, false), mean_ns(w.steps, true), &w});
  }
  return out;
}

// "plan: raise DataLoader num_workers 2.20x, + ... 3.10x; 10000 steps on 1 GPU(s): 0.11 -> 0.05 GPU-hours"
void plan_text(const LeverPlan& p, std::string& out) {
  if (p.entries.empty()) return;
  out += "plan (levers applied together in one replay):";
  for (std::size_t k = 0; k < p.entries.size(); ++k)
    out += fmt::format("{} {}{} {:.2f}x", k ? "," : "", k ? "+ " : "", p.entries[k].title, p.entries[k].speedup);
  out += "\n";
  if (p.run_steps <= 0) return;
  out += fmt::format("  {} steps on {} GPU(s): {:.3f} -> {:.3f} GPU-hours", p.run_steps, p.gpus, p.gpu_hours_before,
                     p.gpu_hours_after);
  if (p.gpu_hour_cost > 0)
    out += fmt::format(", ${:.2f} -> ${:.2f}", p.gpu_hours_before * p.gpu_hour_cost, p.gpu_hours_after * p.gpu_hour_cost);
  out += "\n";
}

}  // namespace

std::string render_whatif_text(const DiagnosedResult& r) {
  const std::vector<RankLine> lines = rank_lines(r);
  if (lines.empty()) return "whatif: no steps to replay in the trace\n";
  std::string out;
  for (const RankLine& l : lines) {
    const auto& w = *l.w;
    out += fmt::format("rank {}: recorded step {}, replayed {} (replay error {:.1f}%, {:.1f}% at worst; graph of {} nodes, "
                       "{} edges)\n",
                       l.rank, whatif_ms(l.recorded_ns), whatif_ms(l.replayed_ns), 100 * w.replay_error_mean, 100 * w.replay_error_max,
                       w.nodes, w.edges);
    for (const auto& d : w.disagreements)
      out += fmt::format("  disagrees: {} ({} times, {})\n", d.edge, d.count, whatif_ms(static_cast<double>(d.total_ns)));
    if (!w.custom) continue;
    const auto [lo, hi] = interval(*w.custom, w.replay_error_mean);
    out += fmt::format("  with {}: step {} -> {}, {:.2f}x ({:.2f}x to {:.2f}x)\n", w.custom->basis, whatif_ms(l.step_ns),
                       whatif_ms(l.step_ns / w.custom->speedup), w.custom->speedup, lo, hi);
  }
  if (const std::string job = report_detail::job_whatif_sentence(r.job.whatif); !job.empty()) out += job + "\n";
  plan_text(r.diagnosis.plan, out);
  return out;
}

nlohmann::json whatif_to_json(const DiagnosedResult& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankLine& l : rank_lines(r)) {
    const auto& w = *l.w;
    nlohmann::json j = {{"rank", l.rank},
                        {"step_ns", l.step_ns},
                        {"recorded_step_ns", l.recorded_ns},
                        {"replayed_step_ns", l.replayed_ns},
                        {"replay_error", {{"mean", w.replay_error_mean}, {"max", w.replay_error_max}}}};
    if (w.custom) {
      const auto [lo, hi] = interval(*w.custom, w.replay_error_mean);
      j["changes"] = w.custom->basis;
      j["predicted_step_ns"] = l.step_ns / w.custom->speedup;
      j["predicted_speedup"] = w.custom->speedup;
      j["predicted_speedup_interval"] = {lo, hi};
    }
    ranks.push_back(std::move(j));
  }
  return {{"schema", kWhatIfSchemaVersion},
          {"ranks", ranks},
          {"job", report_detail::job_whatif_json(r.job.whatif)},
          {"plan", report_detail::plan_json(r.diagnosis.plan)}};
}

}  // namespace stepscope
