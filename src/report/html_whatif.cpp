// The what-if section of the HTML page: each rank's replay against its recording (the model's own
// trust figure), the job's joined replay, and the plan's predicted step beside the recorded one.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>

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
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const whatif::RankWhatIf& w = r.ranks[i].whatif;
    if (!w.present) continue;
    fmt::format_to(std::back_inserter(out),
                   "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1f}%</td>"
                   "<td class=\"num\">{:.1f}%</td><td class=\"num\">{}</td></tr>\n",
                   r.ranks[i].rank(), w.steps.size(), 100 * w.replay_error_mean, 100 * w.replay_error_max, w.nodes);
  }
  out += "</table>\n";
}

// The recorded mean step and, below it, the step after each of the plan's levers in turn, on one
// scale. Example: 39.14 ms recorded, then 17.78 ms with two loader workers.
void plan_bars(const LeverPlan& p, std::string& out) {
  if (p.entries.empty() || p.step_ns <= 0) return;
  constexpr int kWhatifRow = 22;
  const auto rows = static_cast<int>(p.entries.size()) + 1;
  fmt::format_to(std::back_inserter(out),
                 "<svg class=\"plan\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"recorded and predicted step\">\n",
                 kBarWidth + 260, rows * kWhatifRow);
  auto bar = [&](int row, double ns, std::string_view label, std::string_view fill) {
    fmt::format_to(std::back_inserter(out),
                   "<rect x=\"0\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>"
                   "<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\">{}</text>\n",
                   row * kWhatifRow + 2, kBarWidth * ns / p.step_ns, kWhatifRow - 6, fill, esc(label), kBarWidth * ns / p.step_ns + 6,
                   row * kWhatifRow + 14, esc(label));
  };
  bar(0, p.step_ns, "recorded " + ms(p.step_ns), "#999");
  for (std::size_t k = 0; k < p.entries.size(); ++k)
    bar(static_cast<int>(k) + 1, p.entries[k].step_ns,
        fmt::format("{}{} {} ({:.2f}x)", k ? "+ " : "", p.entries[k].title, ms(p.entries[k].step_ns), p.entries[k].speedup),
        "#4a90d9");
  out += "</svg>\n";
}

// The rank whose plan the page shows: the straggler's where there is one, else the first with a
// plan (as the diagnosis picks it); only where that plan is the page's whole plan.
const whatif::RankWhatIf* timeline_rank(const DiagnosedResult& r) {
  const auto straggler = r.job.rank_comparison.straggler;
  const whatif::RankWhatIf* pick = nullptr;
  for (const RankAnalysis& a : r.ranks) {
    const whatif::RankWhatIf& w = a.whatif;
    if (!w.present || w.plan.empty()) continue;
    if (straggler && a.rank() == *straggler) {
      pick = &w;
      break;
    }
    if (!pick) pick = &w;
  }
  if (!pick || !pick->timeline.present || pick->plan.size() != r.diagnosis.plan.entries.size()) return nullptr;
  return pick;
}

struct TimeScale {
  ns_t origin = 0;
  double per_ns = 0;
  double x(ns_t t) const { return kLabelWidth + per_ns * static_cast<double>(t - origin); }
  static constexpr double kLabelWidth = 150;
};

TimeScale scale_of(const whatif::PlanTimeline& t) {
  ns_t lo = std::numeric_limits<ns_t>::max(), hi = std::numeric_limits<ns_t>::min();
  for (const auto* v : {&t.recorded, &t.predicted})
    for (const whatif::TimeSpan& s : v->steps) lo = std::min(lo, s.start), hi = std::max(hi, s.end);
  return {lo, hi > lo ? kBarWidth / static_cast<double>(hi - lo) : 0};
}

// One side of the timeline: its steps as blocks (two shades, so that neighbours part), then the
// host's waits (loader, syncs) and the GPU's busy time as one path each.
void timeline_rows(const whatif::TimelineView& v, const std::vector<whatif::StepReplay>& numbers, const TimeScale& sc,
                   int row, std::string_view side, std::array<std::string_view, 2> fills, std::string& out) {
  constexpr int kWhatifRow = 16;
  auto label = [&](int r, std::string_view text) {
    fmt::format_to(std::back_inserter(out), "<text x=\"0\" y=\"{}\" font-size=\"11\">{}</text>", r * kWhatifRow + 12, esc(text));
  };
  label(row, side);
  for (std::size_t k = 0; k < v.steps.size(); ++k) {
    const whatif::TimeSpan& s = v.steps[k];
    fmt::format_to(std::back_inserter(out),
                   "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"12\" fill=\"{}\"><title>step {}: {}</title></rect>",
                   sc.x(s.start), row * kWhatifRow + 2, std::max(0.5, sc.x(s.end) - sc.x(s.start)), fills[k % 2],
                   k < numbers.size() ? numbers[k].number : static_cast<std::int64_t>(k), ms(static_cast<double>(s.end - s.start)));
  }
  out += "\n";
  auto lane = [&](int r, const std::vector<whatif::TimeSpan>& busy, std::string_view name) {
    if (busy.empty()) return;
    label(r, name);
    out += "<path fill=\"#555\" d=\"";
    for (const whatif::TimeSpan& s : busy)
      fmt::format_to(std::back_inserter(out), "M{:.1f} {}h{:.1f}v8h-{:.1f}z", sc.x(s.start), r * kWhatifRow + 4,
                     std::max(0.5, sc.x(s.end) - sc.x(s.start)), std::max(0.5, sc.x(s.end) - sc.x(s.start)));
    out += "\"/>\n";
  };
  lane(row + 1, v.host_waits, "  host waits");
  lane(row + 2, v.gpu, "  GPU");
}

// The replayed steps as recorded and as the plan predicts them, on one time axis: where the
// plan's time comes from (the loader's waits gone from the host row, the GPU rows closing up).
void plan_timeline(const DiagnosedResult& r, std::string& out) {
  const whatif::RankWhatIf* w = timeline_rank(r);
  if (!w) return;
  const whatif::PlanTimeline& t = w->timeline;
  const TimeScale sc = scale_of(t);
  if (sc.per_ns <= 0) return;
  out += "<p class=\"muted\">The replayed steps as recorded and with the plan's levers applied, on one time axis.</p>\n";
  fmt::format_to(std::back_inserter(out),
                 "<svg class=\"chart\" id=\"whatif-timeline\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"recorded "
                 "and predicted timeline\">\n",
                 TimeScale::kLabelWidth + kBarWidth + 10, 6 * 16 + 4);
  timeline_rows(t.recorded, w->steps, sc, 0, "recorded steps", {"#999", "#bbb"}, out);
  timeline_rows(t.predicted, w->steps, sc, 3, "predicted steps", {"#4a90d9", "#8cb8e8"}, out);
  out += "</svg>\n";
}

}  // namespace

void whatif_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  const bool any = std::ranges::any_of(each_rank(r, &RankAnalysis::whatif), [](const whatif::RankWhatIf& w) { return w.present; });
  if (!any || o.compact) return;
  fmt::format_to(std::back_inserter(out), "<h{0} id=\"{1}whatif\">What-if replay</h{0}>\n", std::min(6, o.heading),
                 esc(o.id_prefix));
  out += "<p class=\"muted\">Each rank's steps replayed as a dependency graph with the recorded durations; the replay "
         "error is how far the replay is from the recording, and bounds how far to trust the levers' predictions.</p>\n";
  replay_table(r, out);
  if (const std::string job = report_detail::job_whatif_sentence(r.job.whatif); !job.empty())
    fmt::format_to(std::back_inserter(out), "<p>{}</p>\n", esc(job));
  plan_bars(r.diagnosis.plan, out);
  plan_timeline(r, out);
}

}  // namespace stepscope::html
