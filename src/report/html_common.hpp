// Building blocks of the HTML reports: escaping, number formats, the page frame and the inline
// SVG charts. Charts are drawn here rather than by an inlined charting library: a few hundred
// lines of SVG need no script at all, so the page can forbid scripts entirely (see html.hpp).
#pragma once

#include <fmt/core.h>

#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "report/units.hpp"
#include "stepscope/analysis.hpp"

namespace stepscope::html {

// Escapes for HTML text and quoted attribute values alike; invalid UTF-8 and control characters
// become U+FFFD so that every byte of a trace name renders as visible text.
std::string esc(std::string_view s);

// fmt::format appended to `out`, the pages' one way of writing.
template <class... Args>
void put(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

using report_units::ms;
using report_units::pct;
using report_units::signed_ms;

const char* category_color(Category c);

// The page frame: <!DOCTYPE html> ... <body>, with the stylesheet and the security policy.
// `with_script`: the page carries html_script() (sorting, search), allowed by its hash alone.
std::string page_begin(std::string_view title, bool with_script = false);
std::string page_end(bool with_script = false);

// A legend of the categories that appear in `present`.
std::string category_legend(const std::vector<bool>& present);

// One bar per step (or per bucket of consecutive steps when there are many), stacked by category.
// `ymax_ns` fixes the vertical scale so that two runs can share it.
std::string step_partition_svg(const RankPartition& p, int rank, const std::string& id, double ymax_ns);

// Step time over steps, the quiet-step p50 as a dashed line, spikes marked in red, warm-up
// steps hollow.
std::string step_time_svg(const RankPartition& p, const Stability* s, int rank, const std::string& id, double ymax_ns);

// Horizontal stacked bars, one row each; every row is scaled to `scale` (0: to its own total).
struct Segment {
  double value = 0;
  std::string color;
  std::string label;  // already plain text; escaped when drawn
};
struct BarRow {
  std::string label;
  std::vector<Segment> segments;
};
std::string hbar_svg(const std::vector<BarRow>& rows, const std::string& id, double scale);

// Labelled horizontal bars, one value each, scaled to the largest.
struct LabelledValue {
  std::string label;
  double value = 0;
  std::string text;  // shown after the bar
  std::string color;
};
std::string bar_list_svg(const std::vector<LabelledValue>& rows, const std::string& id);

// Signed bars around a zero line (a decrease drawn green to the left, an increase red to the right).
std::string diverging_svg(const std::vector<LabelledValue>& rows, const std::string& id);

// A grid of cells shaded by value / column maximum, with the value as text.
struct Heatmap {
  std::vector<std::string> row_labels, column_labels;
  std::vector<std::vector<double>> values;  // [row][column], ns
  std::vector<bool> highlight_row;
  double floor = 0;  // a column whose values differ by less than this stays unshaded
};
std::string heatmap_svg(const Heatmap& h, const std::string& id);

// The top of the step charts' scale, shared by every rank (and both runs of a diff): the largest
// steady step with a little room above it, so that a warm-up step of seconds beside steps of
// milliseconds does not flatten them (it is cut at the top and marked); the largest step when
// every step is a warm-up step.
constexpr double kSteadyHeadroom = 1.1;
double max_step_ns(const AnalysisResult& r);

}  // namespace stepscope::html
