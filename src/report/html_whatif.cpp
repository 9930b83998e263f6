// The what-if section of the HTML page: each rank's replay against its recording (the model's own
// trust figure), the job's joined replay, and the plan's predicted step beside the recorded one.
#include <fmt/core.h>

#include <algorithm>
#include <iterator>

#include "report/diagnosis_render.hpp"
#include "report/html_common.hpp"
#include "report/html_sections.hpp"

namespace stepscope::html {
namespace {

// Width of the step bars' drawing, in SVG units.
constexpr double kBarWidth = 600;

void replay_table(const DiagnosedResult& r, std::string& out) {
  out += "<table><tr><th class=\"num\">rank</th><th class=\"num\">steps replayed</th><th class=\"num\">replay error "
         "(mean)</th><th class=\"num\">at worst</th><th class=\"num\">graph nodes</th></tr>\n";
  for (std::size_t i = 0; i < r.whatif.size() && i < r.ranks.size(); ++i) {
    const whatif::RankWhatIf& w = r.whatif[i];
    if (!w.present) continue;
    fmt::format_to(std::back_inserter(out),
                   "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1f}%</td>"
                   "<td class=\"num\">{:.1f}%</td><td class=\"num\">{}</td></tr>\n",
                   r.ranks[i].rank, w.steps.size(), 100 * w.replay_error_mean, 100 * w.replay_error_max, w.nodes);
  }
  out += "</table>\n";
}

// The recorded mean step and, below it, the step after each of the plan's levers in turn, on one
// scale. Example: 39.14 ms recorded, then 17.78 ms with two loader workers.
void plan_bars(const LeverPlan& p, std::string& out) {
  if (p.entries.empty() || p.step_ns <= 0) return;
  constexpr int kRow = 22;
  const auto rows = static_cast<int>(p.entries.size()) + 1;
  fmt::format_to(std::back_inserter(out),
                 "<svg class=\"plan\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"recorded and predicted step\">\n",
                 kBarWidth + 260, rows * kRow);
  auto bar = [&](int row, double ns, std::string_view label, std::string_view fill) {
    fmt::format_to(std::back_inserter(out),
                   "<rect x=\"0\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>"
                   "<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\">{}</text>\n",
                   row * kRow + 2, kBarWidth * ns / p.step_ns, kRow - 6, fill, esc(label), kBarWidth * ns / p.step_ns + 6,
                   row * kRow + 14, esc(label));
  };
  bar(0, p.step_ns, "recorded " + ms(p.step_ns), "#999");
  for (std::size_t k = 0; k < p.entries.size(); ++k)
    bar(static_cast<int>(k) + 1, p.entries[k].step_ns,
        fmt::format("{}{} {} ({:.2f}x)", k ? "+ " : "", p.entries[k].title, ms(p.entries[k].step_ns), p.entries[k].speedup),
        "#4a90d9");
  out += "</svg>\n";
}

}  // namespace

void whatif_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  const bool any = std::any_of(r.whatif.begin(), r.whatif.end(), [](const whatif::RankWhatIf& w) { return w.present; });
  if (!any || o.compact) return;
  fmt::format_to(std::back_inserter(out), "<h{0} id=\"{1}whatif\">What-if replay</h{0}>\n", std::min(6, o.heading),
                 esc(o.id_prefix));
  out += "<p class=\"muted\">Each rank's steps replayed as a dependency graph with the recorded durations; the replay "
         "error is how far the replay is from the recording, and bounds how far to trust the levers' predictions.</p>\n";
  replay_table(r, out);
  if (const std::string job = report_detail::job_whatif_sentence(r.job_whatif); !job.empty())
    fmt::format_to(std::back_inserter(out), "<p>{}</p>\n", esc(job));
  plan_bars(r.diagnosis.plan, out);
}

}  // namespace stepscope::html
