// The diff HTML report: what changed between two runs, then both runs side by side on shared
// scales so that their charts compare by eye.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "report/html_common.hpp"
#include "report/html_sections.hpp"
#include "stepscope/html.hpp"

namespace stepscope::html {
namespace {

std::string change_class(double delta) { return delta < 0 ? "better" : delta > 0 ? "worse" : ""; }

std::string count_text(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

void step_section(const DiffResult& d, std::string& out) {
  const StepChange& s = d.step;
  out += "<h2 id=\"step-change\">Step time</h2>\n";
  out += "<table class=\"step-change\"><tr><th></th><th class=\"num\">base</th><th class=\"num\">test</th></tr>";
  put(out, "<tr><td>mean steady-state step</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>", ms(s.base_ns), ms(s.test_ns));
  put(out, "<tr><td>steps</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>", s.base_steps, s.test_steps);
  put(out, "<tr><td>step-to-step noise (CV)</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>", pct(s.base_cv), pct(s.test_cv));
  if (d.both_diagnosed)
    put(out, "<tr><td>bound</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        esc(bound_label(d.base_bound, d.base.diagnosis.verdict.gpu)), esc(bound_label(d.test_bound, d.test.diagnosis.verdict.gpu)));
  out += "</table>\n";
  put(out, "<p>speedup <b class=\"{}\">{:.3f}x</b> (95% interval {:.3f}x to {:.3f}x): <b>{}</b>.</p>\n",
      s.speedup > 1 ? "better" : s.speedup < 1 ? "worse" : "", s.speedup, s.speedup_lo, s.speedup_hi,
      s.significant ? "beyond step-to-step noise" : "not beyond step-to-step noise");
  if (d.both_diagnosed) {
    if (d.bottleneck_moved)
      put(out, "<p id=\"bottleneck\">The bottleneck moved from <b>{}</b> to <b>{}</b>.</p>\n",
          esc(bound_label(d.base_bound, d.base.diagnosis.verdict.gpu)), esc(bound_label(d.test_bound, d.test.diagnosis.verdict.gpu)));
    else
      put(out, "<p id=\"bottleneck\">The bottleneck stayed <b>{}</b>.</p>\n", esc(bound_label(d.base_bound, d.base.diagnosis.verdict.gpu)));
  }
}

void categories_section(const DiffResult& d, std::string& out) {
  out += "<h2 id=\"categories\">Change of the step partition</h2>\n";
  // The two mean steps on one scale, stacked by category.
  double scale = std::max(d.step.base_ns, d.step.test_ns);
  BarRow base{"base", {}}, test{"test", {}};
  std::vector<bool> present(kCategoryCount, false);
  std::vector<CategoryChange> ordered = d.categories;
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.category < b.category; });
  for (const auto& c : ordered) {
    if (c.base_ns <= 0 && c.test_ns <= 0) continue;
    present[static_cast<std::size_t>(c.category)] = true;
    base.segments.push_back({c.base_ns, category_color(c.category), fmt::format("base {}: {}", category_label(c.category), ms(c.base_ns))});
    test.segments.push_back({c.test_ns, category_color(c.category), fmt::format("test {}: {}", category_label(c.category), ms(c.test_ns))});
  }
  out += hbar_svg({base, test}, "diff-mean-partition", scale) + "\n" + category_legend(present) + "\n";
  std::vector<LabelledValue> rows;
  for (const auto& c : d.categories) {
    if (c.base_ns <= 0 && c.test_ns <= 0) continue;
    rows.push_back({category_label(c.category), c.delta_ns,
                    fmt::format("{} ({:+.1f}% of the base step)", signed_ms(c.delta_ns), c.delta_pct_of_base_step), ""});
  }
  out += "<p class=\"muted\">Change per category, mean per steady-state step (test minus base): green shrank, red grew.</p>\n";
  out += diverging_svg(rows, "diff-categories") + "\n";
  out += "<table class=\"categories\"><tr><th>category</th><th class=\"num\">base</th><th class=\"num\">test</th>"
         "<th class=\"num\">change</th><th class=\"num\">% of base step</th></tr>";
  for (const auto& c : d.categories) {
    if (c.base_ns <= 0 && c.test_ns <= 0) continue;
    put(out, "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num {}\">{}</td><td class=\"num\">{:+.1f}%</td></tr>",
        esc(category_label(c.category)), ms(c.base_ns), ms(c.test_ns), change_class(c.delta_ns), signed_ms(c.delta_ns),
        c.delta_pct_of_base_step);
  }
  out += "</table>\n";
}

void kernel_change_table(const std::vector<KernelChange>& ks, const char* id, const char* what, std::size_t limit, std::string& out) {
  put(out, "<table class=\"kernels\" id=\"{}\"><tr><th>{}</th>{}<th>change</th><th class=\"num\">base / step</th>"
           "<th class=\"num\">test / step</th><th class=\"num\">delta</th><th class=\"num\">launches base</th>"
           "<th class=\"num\">launches test</th></tr>",
      id, what, std::string_view(what) == "kernel" ? "<th>class</th>" : "");
  for (std::size_t i = 0; i < ks.size() && i < limit; ++i) {
    const KernelChange& k = ks[i];
    const double delta = k.test_ns - k.base_ns;
    put(out, "<tr><td class=\"name\">{}</td>{}<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num {}\">{}</td>"
             "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        esc(k.name), std::string_view(what) == "kernel" ? "<td>" + esc(k.kernel_class) + "</td>" : "", change_kind_name(k.kind),
        ms(k.base_ns), ms(k.test_ns), change_class(delta), signed_ms(delta), count_text(k.base_count), count_text(k.test_count));
  }
  out += "</table>\n";
  if (ks.size() > limit) put(out, "<p class=\"muted\">{} more in the JSON report.</p>\n", ks.size() - limit);
}

void kernels_section(const DiffResult& d, std::string& out) {
  if (d.kernel_classes.empty() && d.kernels.empty() && d.counts.empty()) return;
  out += "<h2 id=\"kernels\">Kernels, copies and sync points</h2>\n";
  out += "<p class=\"muted\">GPU time and launches per steady-state step, averaged over ranks.</p>\n";
  if (!d.kernel_classes.empty()) kernel_change_table(d.kernel_classes, "diff-kernel-classes", "kernel class", d.kernel_classes.size(), out);
  if (!d.kernels.empty()) kernel_change_table(d.kernels, "diff-kernel-list", "kernel", 40, out);
  if (d.counts.empty()) return;
  out += "<table class=\"counts\"><tr><th>per step</th><th class=\"num\">base</th><th class=\"num\">test</th></tr>";
  for (const auto& c : d.counts)
    put(out, "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>", esc(c.what), count_text(c.base), count_text(c.test));
  out += "</table>\n";
}

}  // namespace
}  // namespace stepscope::html

namespace stepscope {

std::string render_diff_html(const DiffResult& d) {
  using namespace html;
  std::string out = page_begin("stepscope diff — " + d.base_label + " vs " + d.test_label);
  out += "<h1>stepscope diff</h1>\n";
  out += "<p class=\"muted\">base: <span class=\"name\">" + esc(d.base_label) + "</span><br>test: <span class=\"name\">" +
         esc(d.test_label) + "</span></p>\n";
  out += "<p class=\"headline" + std::string(d.step.significant && d.step.speedup > 1 ? " ok" : "") + "\" id=\"headline\">" +
         esc(d.headline.empty() ? "no headline" : d.headline) + "</p>\n";
  if (!d.comparability.empty()) {
    out += "<h2 id=\"comparability\">Comparability</h2>\n<ul class=\"warn\">";
    for (const auto& w : d.comparability) out += "<li>" + esc(w.text) + "</li>";
    out += "</ul>\n";
  }
  step_section(d, out);
  categories_section(d, out);
  kernels_section(d, out);
  out += "<h2 id=\"sides\">Side by side</h2>\n<div class=\"sides\">\n";
  SectionOptions o;
  o.compact = true;
  o.heading = 3;
  o.step_ymax_ns = std::max(max_step_ns(d.base), max_step_ns(d.test));
  for (int side = 0; side < 2; ++side) {
    o.id_prefix = side == 0 ? "base-" : "test-";
    const std::string& label = side == 0 ? d.base_label : d.test_label;
    out += fmt::format("<section class=\"side\" id=\"side-{}\"><h2>{}: <span class=\"name\">{}</span></h2>\n", side == 0 ? "base" : "test",
                       side == 0 ? "base" : "test", esc(label));
    out += analysis_sections(side == 0 ? d.base : d.test, o);
    out += "</section>\n";
  }
  out += "</div>\n" + page_end();
  return out;
}

}  // namespace stepscope
