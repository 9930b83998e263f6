#include "report/html_common.hpp"
#include "report/html_sections.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace stepscope::html {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (c >= 0xF5 || n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF.
  if (c == 0xE0 && b(i + 1) < 0xA0) return 0;
  if (c == 0xED && b(i + 1) >= 0xA0) return 0;
  if (c == 0xF0 && b(i + 1) < 0x90) return 0;
  if (c == 0xF4 && b(i + 1) >= 0x90) return 0;
  return n;
}

// Chart geometry (SVG user units; the SVG scales to the page width).
constexpr double kWidth = 960, kLeft = 64, kRight = 12, kTop = 12, kBottom = 30;

void y_axis(std::string& out, double ymax, double height) {
  const double plot_h = height - kTop - kBottom;
  for (int k = 0; k <= 4; ++k) {
    double v = ymax * k / 4, y = kTop + plot_h * (1 - k / 4.0);
    put(out, "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", kLeft, y, kWidth - kRight, y);
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLeft - 6, y + 4, k == 0 ? "0" : esc(ms(v)));
  }
}

std::string svg_open(const std::string& id, const char* kind, double height, std::string_view label) {
  return fmt::format("<svg class=\"chart {}\" id=\"{}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" "
                     "aria-label=\"{}\" preserveAspectRatio=\"xMinYMin meet\">",
                     kind, esc(id), kWidth, height, esc(label));
}

// Consecutive steps averaged into one bar when there are too many to draw one bar each.
struct Bucket {
  std::size_t first = 0, last = 0;  // indexes into the steps, inclusive
  std::array<double, kCategoryCount> ns{};
  double total = 0;
  bool warmup = false;
};

std::vector<Bucket> buckets(const std::vector<StepPartition>& steps, std::size_t max_bars) {
  std::vector<Bucket> out;
  const std::size_t k = std::max<std::size_t>(1, (steps.size() + max_bars - 1) / max_bars);
  for (std::size_t i = 0; i < steps.size(); i += k) {
    Bucket b;
    b.first = i;
    b.last = std::min(steps.size(), i + k) - 1;
    const double n = static_cast<double>(b.last - b.first + 1);
    for (std::size_t j = b.first; j <= b.last; ++j) {
      for (int c = 0; c < kCategoryCount; ++c) b.ns[static_cast<std::size_t>(c)] += static_cast<double>(steps[j].ns[static_cast<std::size_t>(c)]) / n;
      b.warmup = b.warmup || steps[j].warmup;
    }
    for (double v : b.ns) b.total += v;
    out.push_back(b);
  }
  return out;
}

std::string step_span(const std::vector<StepPartition>& steps, const Bucket& b) {
  if (b.first == b.last) return steps[b.first].name.empty() ? fmt::format("step {}", steps[b.first].number) : steps[b.first].name;
  return fmt::format("steps {}..{} (mean)", steps[b.first].number, steps[b.last].number);
}

}  // namespace

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default:
          if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) out += kReplacement;
          else out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    if (std::size_t n = utf8_sequence(s, i)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

const char* category_color(Category c) {
  static constexpr const char* kColors[kCategoryCount] = {
      "#2e7d32",  // compute: forward
      "#66bb6a",  // compute: backward
      "#1565c0",  // compute: optimizer
      "#64b5f6",  // compute: other
      "#8e24aa",  // communication (exposed)
      "#ef6c00",  // H2D copy
      "#ffa726",  // D2H copy
      "#bcaaa4",  // memset
      "#d32f2f",  // batch wait
      "#ad1457",  // sync stall
      "#6d4c41",  // side work
      "#fbc02d",  // launch overhead
      "#f48fb1",  // host compute
      "#9e9e9e",  // idle (unknown)
  };
  return kColors[static_cast<int>(c)];
}

std::string page_begin(std::string_view title, bool with_script) {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // No fetch of any kind: the inline stylesheet and, on a page with tables to sort, the page's
  // own script by its hash; any other script (one a trace string could smuggle in) is refused.
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ";
  if (with_script) out += "script-src '" + html_script_hash() + "'; ";
  out += "style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  put(out, "<title>{}</title>\n", esc(title));
  out += R"(<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.headline{font-size:18px;font-weight:600;background:#fff;border-left:6px solid #d32f2f;padding:10px 14px;margin:10px 0}
.headline.ok{border-left-color:#2e7d32}
.muted{color:#666}.warn{color:#8a4b00}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px}
th,td{border:1px solid #e0e0e0;padding:4px 8px;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,.name{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}
svg.chart{width:100%;height:auto;background:#fff;border:1px solid #e6e6e6;margin:4px 0}
svg .grid{stroke:#eee;stroke-width:1}svg .axis{stroke:#999;stroke-width:1}
svg text{font:11px system-ui,sans-serif;fill:#444}svg .tick{fill:#777}
svg .p50{stroke:#555;stroke-dasharray:4 3;stroke-width:1}
svg .line{fill:none;stroke:#1565c0;stroke-width:1.5}
svg .spike{fill:#d32f2f}svg .warmup{fill:#fff;stroke:#999}svg .off-scale{fill:#8a4b00;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:4px 0 8px;font-size:12.5px}
.legend span{display:inline-flex;align-items:center;gap:5px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:24px}
.sides>section{min-width:0}.sides table{display:block;overflow-x:auto;max-width:100%}
ul{margin:4px 0 10px;padding-left:22px}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}
.better{color:#2e7d32}.worse{color:#c62828}
.scroll{max-height:640px;overflow:auto;margin:6px 0 12px}.scroll table{margin:0}
table.sortable th{cursor:pointer}table.sortable th[aria-sort=descending]::after{content:" \2193"}
table.sortable th[aria-sort=ascending]::after{content:" \2191"}
input.filter{font:inherit;padding:4px 8px;width:320px;max-width:100%}
</style>
</head>
<body><main>
)";
  return out;
}

std::string page_end(bool with_script) {
  if (!with_script)
    return "<footer class=\"muted\"><p>Generated by stepscope. Self-contained: this page loads nothing "
           "and runs no script.</p></footer>\n</main></body>\n</html>\n";
  return "<footer class=\"muted\"><p>Generated by stepscope. Self-contained: this page loads nothing; its one "
         "script sorts and searches the tables.</p></footer>\n</main>\n<script>" +
         html_script() + "</script>\n</body>\n</html>\n";
}

std::string category_legend(const std::vector<bool>& present) {
  std::string out = "<div class=\"legend\">";
  for (int c = 0; c < kCategoryCount; ++c) {
    if (!present[static_cast<std::size_t>(c)]) continue;
    auto cat = static_cast<Category>(c);
    put(out, "<span><i style=\"background:{}\"></i>{}</span>", category_color(cat), esc(category_label(cat)));
  }
  return out + "</div>";
}

namespace {

// Above a bar or a dot cut at the top of the scale: an arrow and its real length.
void off_scale_mark(std::string& out, double x, double ns, bool warmup) {
  put(out, "<text class=\"off-scale\" x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\">\u2191<title>{}{} (off the scale, "
           "which fits the steady steps)</title></text>",
      x, kTop - 2, warmup ? "warm-up step: " : "", esc(ms(ns)));
}

}  // namespace

std::string step_partition_svg(const RankPartition& p, int rank, const std::string& id, double ymax_ns) {
  constexpr double kHeight = 240;
  std::string out = svg_open(id, "step-partition", kHeight, fmt::format("step partition of rank {}", rank));
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double ymax = ymax_ns > 0 ? ymax_ns : 1;
  y_axis(out, ymax, kHeight);
  const std::vector<Bucket> bars = buckets(p.steps, 240);
  const double bw = bars.empty() ? 0 : plot_w / static_cast<double>(bars.size());
  const double gap = std::min(2.0, bw * 0.2);
  for (std::size_t k = 0; k < bars.size(); ++k) {
    const Bucket& b = bars[k];
    const double x = kLeft + bw * static_cast<double>(k);
    double y = kTop + plot_h;
    put(out, "<g class=\"bar{}\">", b.warmup ? " warm" : "");
    double total = 0;
    for (int c = 0; c < kCategoryCount; ++c) {
      const double v = b.ns[static_cast<std::size_t>(c)];
      if (v <= 0) continue;
      total += v;
      // A bar past the top (a warm-up step of seconds beside steps of milliseconds) is cut there.
      const double h = std::max(0.0, std::min(plot_h * v / ymax, y - kTop));
      y -= h;
      auto cat = static_cast<Category>(c);
      put(out, "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"{}><title>{}: {} {}</title></rect>",
          x + gap / 2, y, std::max(0.5, bw - gap), h, category_color(cat), b.warmup ? " opacity=\"0.45\"" : "",
          esc(step_span(p.steps, b)), esc(category_label(cat)), esc(ms(v)));
    }
    if (total > ymax) off_scale_mark(out, x + bw / 2, total, b.warmup);
    out += "</g>";
  }
  put(out, "<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", kLeft, kTop + plot_h,
      kWidth - kRight, kTop + plot_h);
  if (!p.steps.empty()) {
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\">step {}</text>", kLeft, kHeight - 10, p.steps.front().number);
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">step {}{}</text>", kWidth - kRight, kHeight - 10,
        p.steps.back().number,
        bars.size() < p.steps.size() ? fmt::format(" (each bar: mean of {} steps)", bars.front().last - bars.front().first + 1) : "");
  }
  return out + "</svg>";
}

std::string step_time_svg(const RankPartition& p, const Stability* s, int rank, const std::string& id, double ymax_ns) {
  constexpr double kHeight = 200;
  std::string out = svg_open(id, "step-time", kHeight, fmt::format("step time of rank {}", rank));
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double ymax = ymax_ns > 0 ? ymax_ns : 1;
  y_axis(out, ymax, kHeight);
  const std::size_t n = p.steps.size();
  const auto px = [&](std::size_t i) { return kLeft + (n > 1 ? plot_w * static_cast<double>(i) / static_cast<double>(n - 1) : plot_w / 2); };
  const auto py = [&](double v) { return kTop + plot_h * (1 - std::min(v, ymax) / ymax); };
  if (s && s->steps > 0)
    put(out, "<line class=\"p50\" x1=\"{:.1f}\" y1=\"{:.2f}\" x2=\"{:.1f}\" y2=\"{:.2f}\"><title>p50 {}</title></line>", kLeft,
        py(s->p50_ns), kWidth - kRight, py(s->p50_ns), esc(ms(s->p50_ns)));
  std::string pts;
  for (std::size_t i = 0; i < n; ++i) pts += fmt::format("{:.2f},{:.2f} ", px(i), py(static_cast<double>(p.steps[i].duration())));
  if (n > 1) put(out, "<polyline class=\"line\" points=\"{}\"/>", pts);
  // Markers: every step when there are few, otherwise warm-up steps and spikes only.
  for (std::size_t i = 0; i < n; ++i) {
    const auto& st = p.steps[i];
    const bool spike = s && std::any_of(s->spikes.begin(), s->spikes.end(), [&](const Spike& k) { return k.step == st.number; });
    if (!spike && !st.warmup && n > 120) continue;
    std::string tip = fmt::format("{}: {}", st.name.empty() ? fmt::format("step {}", st.number) : st.name, ms(static_cast<double>(st.duration())));
    if (st.warmup) tip += " (warm-up: " + st.warmup_reason + ")";
    const char* cls = spike ? "spike" : st.warmup ? "warmup" : "pt";
    if (spike) {
      auto k = std::find_if(s->spikes.begin(), s->spikes.end(), [&](const Spike& x) { return x.step == st.number; });
      tip += fmt::format(" — spike: +{} over the quiet step, {} grew by {}", ms(static_cast<double>(k->excess)),
                         category_label(k->grew), ms(static_cast<double>(k->grew_by)));
    }
    put(out, "<circle class=\"{}\" cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"{}\"{}><title>{}</title></circle>", cls, px(i),
        py(static_cast<double>(st.duration())), spike ? 4.5 : 3, std::string_view(cls) == "pt" ? " fill=\"#1565c0\"" : "", esc(tip));
    if (static_cast<double>(st.duration()) > ymax) off_scale_mark(out, px(i), static_cast<double>(st.duration()), st.warmup);
  }
  put(out, "<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", kLeft, kTop + plot_h,
      kWidth - kRight, kTop + plot_h);
  if (n) {
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\">step {}</text>", kLeft, kHeight - 10, p.steps.front().number);
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">step {}</text>", kWidth - kRight, kHeight - 10, p.steps.back().number);
  }
  return out + "</svg>";
}

std::string hbar_svg(const std::vector<BarRow>& rows, const std::string& id, double scale) {
  constexpr double kRow = 26, kLabel = 150;
  const double height = kTop + kRow * static_cast<double>(rows.size()) + 8;
  std::string out = svg_open(id, "hbar", height, "stacked bars");
  const double plot_w = kWidth - kLabel - kRight;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double y = kTop + kRow * static_cast<double>(r);
    double total = 0;
    for (const auto& s : rows[r].segments) total += std::max(0.0, s.value);
    const double sc = scale > 0 ? scale : total;
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLabel - 8, y + 15, esc(rows[r].label));
    double x = kLabel;
    for (const auto& s : rows[r].segments) {
      if (s.value <= 0 || sc <= 0) continue;
      const double w = plot_w * s.value / sc;
      put(out, "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}</title></rect>", x, y + 2,
          w, kRow - 6, s.color, esc(s.label));
      x += w;
    }
  }
  return out + "</svg>";
}

std::string bar_list_svg(const std::vector<LabelledValue>& rows, const std::string& id) {
  constexpr double kRow = 22, kLabel = 190, kText = 250;
  const double height = kTop + kRow * static_cast<double>(rows.size()) + 8;
  std::string out = svg_open(id, "bars", height, "bars");
  double vmax = 0;
  for (const auto& r : rows) vmax = std::max(vmax, r.value);
  const double plot_w = kWidth - kLabel - kText - kRight;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const double y = kTop + kRow * static_cast<double>(k);
    const double w = vmax > 0 ? std::max(1.0, plot_w * rows[k].value / vmax) : 1.0;
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLabel - 8, y + 14, esc(rows[k].label));
    put(out, "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>", kLabel,
        y + 3, w, kRow - 7, rows[k].color.empty() ? "#1565c0" : rows[k].color, esc(rows[k].label), esc(rows[k].text));
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", kLabel + w + 6, y + 14, esc(rows[k].text));
  }
  return out + "</svg>";
}

std::string diverging_svg(const std::vector<LabelledValue>& rows, const std::string& id) {
  constexpr double kRow = 22, kLabel = 190;
  const double height = kTop + kRow * static_cast<double>(rows.size()) + 8;
  std::string out = svg_open(id, "diverging", height, "changes");
  double vmax = 0;
  for (const auto& r : rows) vmax = std::max(vmax, std::fabs(r.value));
  const double half = (kWidth - kLabel - kRight) / 2 - 90;
  const double zero = kLabel + 90 + half;
  put(out, "<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", zero, kTop, zero,
      height - 8);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const double y = kTop + kRow * static_cast<double>(k);
    const double v = rows[k].value;
    const double w = vmax > 0 ? std::max(1.0, half * std::fabs(v) / vmax) : 1.0;
    const double x = v < 0 ? zero - w : zero;
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kLabel - 8, y + 14, esc(rows[k].label));
    put(out, "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>", x, y + 3,
        w, kRow - 7, v < 0 ? "#2e7d32" : v > 0 ? "#c62828" : "#9e9e9e", esc(rows[k].label), esc(rows[k].text));
    // The value goes on the side of the zero line the bar leaves free.
    if (v < 0)
      put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", zero + 6, y + 14, esc(rows[k].text));
    else
      put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", zero - 6, y + 14, esc(rows[k].text));
  }
  return out + "</svg>";
}

std::string heatmap_svg(const Heatmap& h, const std::string& id) {
  constexpr double kRow = 26, kLabel = 110, kHead = 84;
  const std::size_t cols = h.column_labels.size();
  const double height = kHead + kRow * static_cast<double>(h.row_labels.size()) + 8;
  std::string out = svg_open(id, "heatmap", height, "per-rank heatmap");
  // Room on the right for the last column's slanted header.
  const double cw = cols ? (kWidth - kLabel - kRight - 70) / static_cast<double>(cols) : 0;
  // Shade from the column's smallest rank to its largest: what differs between ranks stands out,
  // a column where all ranks agree stays light.
  std::vector<double> colmax(cols, 0), colmin(cols, 0);
  for (std::size_t r = 0; r < h.values.size(); ++r)
    for (std::size_t c = 0; c < cols && c < h.values[r].size(); ++c) {
      colmax[c] = r == 0 ? h.values[r][c] : std::max(colmax[c], h.values[r][c]);
      colmin[c] = r == 0 ? h.values[r][c] : std::min(colmin[c], h.values[r][c]);
    }
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = kLabel + cw * (static_cast<double>(c) + 0.5), y = kHead - 8;
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" transform=\"rotate(-30 {:.1f} {:.1f})\">{}</text>", x, y, x, y, esc(h.column_labels[c]));
  }
  for (std::size_t r = 0; r < h.row_labels.size(); ++r) {
    const double y = kHead + kRow * static_cast<double>(r);
    const bool hl = r < h.highlight_row.size() && h.highlight_row[r];
    put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\"{}>{}</text>", kLabel - 8, y + 17,
        hl ? " font-weight=\"bold\"" : "", esc(h.row_labels[r]));
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = c < h.values[r].size() ? h.values[r][c] : 0;
      const double range = colmax[c] - colmin[c];
      const double a = range > 0.01 * std::fabs(colmax[c]) && range > h.floor && range > 0 ? (v - colmin[c]) / range : 0;
      const double x = kLabel + cw * static_cast<double>(c);
      put(out, "<rect class=\"cell\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"rgb({},{},{})\"{}>"
               "<title>{}, {}: {}</title></rect>",
          x + 1, y + 1, cw - 2, kRow - 2, static_cast<int>(255 - 200 * a), static_cast<int>(255 - 150 * a),
          static_cast<int>(255 - 60 * a), hl ? " stroke=\"#d32f2f\" stroke-width=\"1.5\"" : "", esc(h.row_labels[r]),
          esc(h.column_labels[c]), esc(ms(v)));
      put(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" style=\"fill:{}\">{}</text>", x + cw / 2, y + 17,
          a > 0.6 ? "#fff" : "#222", esc(ms(v)));
    }
  }
  return out + "</svg>";
}

double max_step_ns(const AnalysisResult& r) {
  double steady = 0, any = 0;
  for (const auto& p : each_rank(r, &RankAnalysis::partition))
    for (const auto& s : p.steps) {
      any = std::max(any, static_cast<double>(s.duration()));
      if (!s.warmup) steady = std::max(steady, static_cast<double>(s.duration()));
    }
  return steady > 0 ? steady * kSteadyHeadroom : any;
}

}  // namespace stepscope::html

namespace stepscope {

std::string html_escape(std::string_view s) { return html::esc(s); }

}  // namespace stepscope
