// Text report of `stepscope diff`: the answer first (faster or not, beyond noise or not, where the
// bottleneck went), then the partition side by side, the kernels and counts that moved, and what
// makes the runs hard to compare.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "report/text_layout.hpp"
#include "report/units.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

using report_units::ms;
using report_units::signed_ms;

std::string count_phrase(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e12) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

void diff_verdict_lines(const DiffResult& d, std::string& out) {
  out += fmt::format("diff: {}\n", terminal_safe(d.headline));
  auto side = [&](const char* label, const DiagnosedResult& r) {
    if (r.diagnosis.present)
      out += fmt::format("  {:<5} {}\n", label, terminal_safe(r.diagnosis.verdict.headline));
    else
      out += fmt::format("  {:<5} no steps to diagnose\n", label);
  };
  side("base:", d.base);
  side("test:", d.test);
}

void diff_partition_table(const DiffResult& d, bool verbose, std::string& out) {
  out += "\nstep partition (mean steady-state step):\n";
  out += fmt::format("  {:<22} {:>11} {:>11} {:>12} {:>9}\n", "category", "base", "test", "change", "of base");
  for (const auto& c : d.categories) {
    if (!verbose && c.base_ns <= 0 && c.test_ns <= 0) continue;
    out += fmt::format("  {:<22} {:>11} {:>11} {:>12} {:>8.1f}%\n", category_label(c.category), ms(c.base_ns),
                       ms(c.test_ns), signed_ms(c.delta_ns), c.delta_pct_of_base_step);
  }
  out += fmt::format("  {:<22} {:>11} {:>11} {:>12}\n", "step", ms(d.step.base_ns), ms(d.step.test_ns),
                     signed_ms(d.step.test_ns - d.step.base_ns));
  out += fmt::format("  noise: step CV {:.1f}% (base, {} steps), {:.1f}% (test, {} steps)\n", d.step.base_cv * 100,
                     d.step.base_steps, d.step.test_cv * 100, d.step.test_steps);
}

// The kernel column is last, after 68 columns of figures: names fill what the width leaves,
// shortened to tell them apart (whole under --wide or --verbose). Where that is under 24 columns
// (an 80-column terminal), each name goes on a line of its own below its figures.
constexpr std::size_t kFigureColumns = 68, kMinNameColumns = 24;

void kernel_rows(const std::vector<KernelChange>& rows, std::size_t shown, const TextOptions& o, std::string& out) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < shown; ++i) names.push_back(terminal_safe(rows[i].name));
  const std::size_t columns = o.width ? o.width : 100;
  const bool below = !o.wide && !o.verbose && columns < kFigureColumns + kMinNameColumns;
  if (!o.wide && !o.verbose) names = shorten_distinct(names, below ? columns - 4 : columns - kFigureColumns);
  for (std::size_t i = 0; i < shown; ++i) {
    const KernelChange& k = rows[i];
    out += fmt::format("  {:<9} {:>11} {:>11} {:>12} {:>8} {:>8}{}{}\n", change_kind_name(k.kind), ms(k.base_ns),
                       ms(k.test_ns), signed_ms(k.test_ns - k.base_ns), count_phrase(k.base_count), count_phrase(k.test_count),
                       below ? "\n    " : "  ", names[i]);
  }
}

void kernel_tables(const DiffResult& d, const TextOptions& o, std::string& out) {
  if (d.kernel_classes.empty()) return;
  const char* header = "  {:<9} {:>11} {:>11} {:>12} {:>8} {:>8}  {}\n";
  out += "\nGPU time per step by kernel class:\n";
  out += fmt::format(fmt::runtime(header), "", "base", "test", "change", "n base", "n test", "class");
  kernel_rows(d.kernel_classes, d.kernel_classes.size(), o, out);
  if (d.kernels.empty()) return;
  const std::size_t shown = o.verbose ? d.kernels.size() : std::min(d.kernels.size(), o.top);
  out += fmt::format("\nkernels that changed (largest first, {} of {}):\n", shown, d.kernels.size());
  out += fmt::format(fmt::runtime(header), "", "base", "test", "change", "n base", "n test", "kernel");
  kernel_rows(d.kernels, shown, o, out);
}

void count_table(const DiffResult& d, std::string& out) {
  if (d.counts.empty()) return;
  out += "\nper step:\n";
  for (const auto& c : d.counts)
    out += fmt::format("  {:<18} {:>12} -> {:<12}\n", c.what, count_phrase(c.base), count_phrase(c.test));
}

void comparability_lines(const DiffResult& d, std::string& out) {
  if (d.comparability.empty()) {
    out += "\ncomparability: same GPUs, ranks, shapes, step count and profiler settings\n";
    return;
  }
  out += "\ncomparability:\n";
  for (const auto& w : d.comparability) out += "  ! " + terminal_safe(w.text) + "\n";
}

}  // namespace

std::string render_diff_text(const DiffResult& d, const TextOptions& opts) {
  std::string out;
  out += fmt::format("base: {}\ntest: {}\n", terminal_safe(d.base_label), terminal_safe(d.test_label));
  diff_verdict_lines(d, out);
  diff_partition_table(d, opts.verbose, out);
  kernel_tables(d, opts, out);
  count_table(d, out);
  comparability_lines(d, out);
  return opts.wide ? out : fit_to_width(out, opts.width);
}

}  // namespace stepscope
