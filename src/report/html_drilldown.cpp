// The HTML report's drill-down: sortable, searchable operator and kernel tables, the memory,
// queue-length and bandwidth curves, and the critical path of the analysed step drawn as a
// timeline. Sorting and search are the page's one inline script (html_script below), allowed
// by its hash in the Content-Security-Policy; every trace string stays escaped text.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "report/html_common.hpp"
#include "report/html_sections.hpp"
#include "report/sha256.hpp"
#include "report/text_layout.hpp"

namespace stepscope::html {
namespace {

constexpr double kW = 1000, kPlotL = 110, kPlotR = 20, kPlotT = 12, kPlotB = 26;
constexpr double kPathL = 160;  // the critical path's row labels ("communication 12.3%")
// The page stays under 2 MB for any input: the operator and kernel tables share this many rows
// among the ranks they show (at least kMinTableRows each), and a name past kMaxNameChars is cut
// in the middle; the JSON and CSV hold every row and whole names.
constexpr std::size_t kMaxTableRows = 600;
constexpr std::size_t kMinTableRows = 50;
constexpr std::size_t kMaxNameChars = 300;

std::string name_cell(const std::string& name) {
  return "<td class=\"name\">" + esc(shorten_to_columns(name, kMaxNameChars)) + "</td>";
}

// The last row of a table cut at `shown` of `total` rows.
void more_rows(std::size_t shown, std::size_t total, int columns, std::string& out) {
  if (total > shown)
    put(out, "<tfoot><tr><td class=\"muted\" colspan=\"{}\">{} more rows: the JSON report and <code>--csv</code> hold them</td></tr></tfoot>",
        columns, total - shown);
}

// A numeric cell sorts by `data-v`, its exact value; the text is for reading.
std::string num_cell(double v, const std::string& text) {
  return fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", std::isfinite(v) ? fmt::format("{:.6g}", v) : "0", esc(text));
}

std::string filter_box(const std::string& table_id, const char* what) {
  return fmt::format("<p><input type=\"search\" class=\"filter\" data-table=\"{}\" placeholder=\"search {}\" aria-label=\"search {}\"></p>\n",
                     table_id, what, what);
}

void operator_table(const OperatorView& v, const std::string& id, std::size_t rows, std::string& out) {
  out += filter_box(id, "operators");
  put(out, "<div class=\"scroll\"><table class=\"sortable\" id=\"{}\"><thead><tr><th>op</th><th class=\"num\">calls</th><th class=\"num\">host self</th>"
           "<th class=\"num\">host total</th><th class=\"num\">GPU launched</th><th class=\"num\">kernels / call</th>"
           "<th class=\"num\">of step</th><th>stage</th><th>on path</th></tr></thead><tbody>", id);
  for (std::size_t k = 0; k < v.rows.size() && k < rows; ++k) {
    const OperatorRow& r = v.rows[k];
    const double step = std::isfinite(r.step_share) ? r.step_share : 0;
    out += "<tr>" + name_cell(r.name);
    out += num_cell(static_cast<double>(r.calls), std::to_string(r.calls));
    out += num_cell(static_cast<double>(r.host_self), ms(static_cast<double>(r.host_self)));
    out += num_cell(static_cast<double>(r.host_total), ms(static_cast<double>(r.host_total)));
    out += num_cell(static_cast<double>(r.gpu_total), ms(static_cast<double>(r.gpu_total)));
    out += num_cell(r.kernels_per_call, fmt::format("{:.1f}", r.kernels_per_call));
    out += num_cell(step, std::isfinite(r.step_share) ? pct(r.step_share) : "");
    put(out, "<td>{}</td><td>{}</td></tr>", stage_hint_name(r.stage), r.on_critical_path ? "yes" : "");
  }
  out += "</tbody>";
  more_rows(rows, v.rows.size(), 9, out);
  out += "</table></div>\n";
}

void kernel_table(const KernelView& v, const std::string& id, std::size_t rows, std::string& out) {
  out += filter_box(id, "kernels");
  put(out, "<div class=\"scroll\"><table class=\"sortable\" id=\"{}\"><thead><tr><th>kernel</th><th>class</th><th>dtype</th><th class=\"num\">calls</th>"
           "<th class=\"num\">total</th><th class=\"num\">share</th><th class=\"num\">mean</th><th class=\"num\">max</th>"
           "<th>launched by</th></tr></thead><tbody>", id);
  for (std::size_t k = 0; k < v.rows.size() && k < rows; ++k) {
    const KernelRow& r = v.rows[k];
    out += "<tr>" + name_cell(r.name);
    put(out, "<td>{}</td><td>{}</td>", esc(kernel_class_name(r.cls)), r.dtype == DataType::Unknown ? "" : data_type_name(r.dtype));
    out += num_cell(static_cast<double>(r.calls), std::to_string(r.calls));
    out += num_cell(static_cast<double>(r.total), ms(static_cast<double>(r.total)));
    out += num_cell(std::isfinite(r.share) ? r.share : 0, pct(r.share));
    out += num_cell(r.mean, ms(r.mean));
    out += num_cell(static_cast<double>(r.max), ms(static_cast<double>(r.max)));
    out += name_cell(r.launching_op) + "</tr>";
  }
  out += "</tbody>";
  more_rows(rows, v.rows.size(), 9, out);
  out += "</table></div>\n";
}

// One or more series of (t, value) as step lines on a shared time axis, each a polyline.
struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;
};

std::string curves_svg(const std::vector<Series>& series, const std::string& id, const std::string& label, const std::string& unit) {
  double t0 = 1e300, t1 = -1e300, vmax = 0;
  for (const Series& s : series)
    for (const auto& [t, v] : s.points) t0 = std::min(t0, t), t1 = std::max(t1, t), vmax = std::max(vmax, v);
  const double h = 180, plot_h = h - kPlotT - kPlotB, span = t1 > t0 ? t1 - t0 : 1, vtop = vmax > 0 ? vmax : 1;
  std::string out = fmt::format("<svg class=\"chart curves\" id=\"{}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"{}\">",
                                esc(id), kW, h, esc(label));
  put(out, "<line class=\"axis\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", kPlotL, h - kPlotB, kW - kPlotR, h - kPlotB);
  put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", kPlotL - 6, kPlotT + 4,
      esc(vtop >= 10 ? fmt::format("{:.0f} {}", vtop, unit) : fmt::format("{:.3g} {}", vtop, unit)));
  put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", kPlotL, h - 6, esc(ms(0) + " .. " + ms(span)));
  static const char* const kStroke[] = {"#1565c0", "#ef6c00", "#2e7d32", "#8e24aa", "#6d4c41", "#00838f"};
  for (std::size_t k = 0; k < series.size(); ++k) {
    std::string pts;
    double prev_y = -1;
    for (const auto& [t, v] : series[k].points) {
      const double x = kPlotL + (t - t0) / span * (kW - kPlotL - kPlotR), y = kPlotT + plot_h * (1 - v / vtop);
      if (prev_y >= 0) pts += fmt::format("{:.1f},{:.1f} ", x, prev_y);  // a step: hold until the change
      pts += fmt::format("{:.1f},{:.1f} ", x, y);
      prev_y = y;
    }
    put(out, "<polyline class=\"line\" style=\"stroke:{}\" points=\"{}\"><title>{}</title></polyline>", kStroke[k % 6], pts,
        esc(series[k].label));
  }
  out += "</svg>\n<div class=\"legend\">";
  for (std::size_t k = 0; k < series.size(); ++k)
    put(out, "<span><i style=\"background:{}\"></i>{}</span>", kStroke[k % 6], esc(series[k].label));
  out += "</div>\n";
  return out;
}

void memory_curve(const MemoryTimeline& m, const std::string& id, std::string& out) {
  std::vector<Series> series;
  for (const DeviceMemoryTimeline& d : m.devices) {
    if (d.device_type == 0) continue;  // host allocations
    Series alloc{fmt::format("device {} allocated", d.device_id), {}}, res{fmt::format("device {} reserved", d.device_id), {}};
    for (const MemorySample& s : d.samples) {
      alloc.points.emplace_back(static_cast<double>(s.ts), static_cast<double>(s.allocated) / 1048576.0);
      res.points.emplace_back(static_cast<double>(s.ts), static_cast<double>(s.reserved) / 1048576.0);
    }
    series.push_back(std::move(alloc));
    series.push_back(std::move(res));
    put(out, "<p>Device {}: peak {:.1f} MiB allocated{}, {:.1f} MiB reserved.</p>\n", d.device_id,
        static_cast<double>(d.peak_allocated) / 1048576.0, d.peak_op.empty() ? "" : " in <span class=\"name\">" + esc(d.peak_op) + "</span>",
        static_cast<double>(d.peak_reserved) / 1048576.0);
  }
  if (!series.empty()) out += curves_svg(series, id, "memory over time", "MiB");
}

void queue_curve(const QueueLength& q, const std::string& id, std::string& out) {
  std::vector<Series> series;
  for (const StreamQueue& s : q.streams) {
    Series line{fmt::format("stream {} (mean {:.2f}, max {:.0f})", s.stream, s.summary.mean, s.summary.max), {}};
    for (const QueuePoint& p : s.series) line.points.emplace_back(static_cast<double>(p.ts), static_cast<double>(p.value));
    series.push_back(std::move(line));
  }
  if (!series.empty()) out += curves_svg(series, id, "launch queue length per stream", "launches");
}

void bandwidth_curve(const MemoryBandwidth& b, const std::string& id, std::string& out) {
  std::vector<Series> series;
  for (const CopyBandwidth& c : b.types) {
    if (c.summary.count == 0) continue;  // no bandwidth recorded for this type
    Series line{c.name, {}};
    for (const BandwidthPoint& p : c.series) line.points.emplace_back(static_cast<double>(p.ts), p.gbps);
    series.push_back(std::move(line));
  }
  if (!series.empty()) out += curves_svg(series, id, "memory bandwidth per copy type", "GB/s");
}

const char* kind_color(CpKind k) {
  static const char* const kColors[] = {"#1565c0", "#8e24aa", "#ef6c00", "#fbc02d", "#f48fb1", "#ad1457", "#d32f2f", "#9e9e9e", "#ffffff"};
  return kColors[static_cast<int>(k)];
}

// Edges of one kind drawn as one rectangle where they lie closer than the eye can tell apart.
struct PathRun {
  CpKind kind = CpKind::None;
  double x0 = 0, x1 = 0;  // chart units from the plot's left edge
  ns_t duration = 0;      // the edges' own time, gaps between them left out
  std::size_t edges = 0;
  std::string name;       // the edge's name when the run is one edge
};

// A gap narrower than this (chart units; the chart is 960 wide) joins two edges: a step of
// 87,388 path edges (12 MB of rectangles) draws at most a few hundred per row.
constexpr double kJoinGap = 1.5;

// Example: on the host row, edges at x 10-10.2, 10.9-11.3 and 40-45 -> runs 10-11.3 (2 edges)
// and 40-45 (1 edge).
std::vector<PathRun> path_runs(const CriticalPath& cp, ns_t t0, double scale) {
  std::vector<const CpPathEdge*> edges;
  for (const CpPathEdge& e : cp.path)
    if (e.duration > 0 && e.kind != CpKind::None) edges.push_back(&e);
  std::sort(edges.begin(), edges.end(), [](const CpPathEdge* a, const CpPathEdge* b) {
    return a->kind != b->kind ? a->kind < b->kind : a->begin_ts < b->begin_ts;
  });
  std::vector<PathRun> runs;
  for (const CpPathEdge* e : edges) {
    const double x0 = static_cast<double>(e->begin_ts - t0) * scale, x1 = static_cast<double>(e->end_ts - t0) * scale;
    if (!runs.empty() && runs.back().kind == e->kind && x0 <= runs.back().x1 + kJoinGap) {
      PathRun& r = runs.back();
      r.x1 = std::max(r.x1, x1), r.duration += e->duration, ++r.edges;
      continue;
    }
    runs.push_back({e->kind, x0, x1, e->duration, 1, e->name});
  }
  return runs;
}

// The path's edges on one row per kind, placed by time: where the step's time went, in order.
void critical_path_timeline(const CriticalPath& cp, const std::string& id, std::string& out) {
  if (!cp.success) {
    put(out, "<p class=\"muted\">Critical path: not available ({}).</p>\n", esc(cp.error));
    return;
  }
  ns_t t0 = 0, t1 = 0;
  bool first = true;
  for (const CpPathEdge& e : cp.path)
    if (e.duration > 0) t0 = first ? e.begin_ts : std::min(t0, e.begin_ts), t1 = first ? e.end_ts : std::max(t1, e.end_ts), first = false;
  const double span = t1 > t0 ? static_cast<double>(t1 - t0) : 1, row_h = 18, h = kPlotT + row_h * kCpKindCount + kPlotB;
  put(out, "<p>Critical path of <span class=\"name\">{}</span>: {} long.</p>\n", esc(cp.annotation.empty() ? "the trace" : cp.annotation),
      ms(static_cast<double>(cp.length)));
  put(out, "<svg class=\"chart path\" id=\"{}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"critical path timeline\">", esc(id), kW, h);
  for (int k = 0; k < kCpKindCount - 1; ++k) {
    const CpTotal& t = cp.by_kind[k];
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{} {}</text>", kPathL - 4, kPlotT + row_h * k + 13,
        cp_kind_name(static_cast<CpKind>(k)), cp.length > 0 ? pct(static_cast<double>(t.duration) / static_cast<double>(cp.length)) : "");
  }
  const double scale = (kW - kPathL - kPlotR) / span;
  for (const PathRun& run : path_runs(cp, t0, scale)) {
    const std::string what = run.edges == 1 ? esc(run.name.empty() ? cp_kind_name(run.kind) : run.name)
                                            : fmt::format("{} {} edges", run.edges, cp_kind_name(run.kind));
    put(out, "<rect class=\"edge\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>",
        kPathL + run.x0, kPlotT + row_h * static_cast<int>(run.kind) + 2, std::max(0.5, run.x1 - run.x0), row_h - 4,
        kind_color(run.kind), what, esc(ms(static_cast<double>(run.duration))));
  }
  out += "</svg>\n";
}

void sequences_table(const KernelSequences& s, std::string& out) {
  if (s.sequences.empty()) return;
  put(out, "<h3>Kernel sequences under <span class=\"name\">{}</span> (fusion candidates)</h3>\n", esc(s.op));
  out += "<table><thead><tr><th class=\"num\">count</th><th class=\"num\">GPU time</th><th>GPU records, in order</th></tr></thead><tbody>";
  for (std::size_t k = 0; k < s.sequences.size() && k < 20; ++k) {
    const KernelSequence& q = s.sequences[k];
    std::string names;
    for (std::size_t n = 1; n < q.pattern.size(); ++n) names += (n > 1 ? " → " : "") + esc(q.pattern[n]);
    put(out, "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"name\">{}</td></tr>", q.count,
        esc(ms(static_cast<double>(q.gpu_time))), names);
  }
  out += "</tbody></table>\n";
}

}  // namespace

// Written once, hashed once: the CSP allows exactly this text. It touches no trace string; it
// only reorders rows and hides those that do not match the search box.
const std::string& html_script() {
  static const std::string kScript = R"JS(
(function () {
  function key(row, col) {
    var td = row.cells[col], v = td.getAttribute('data-v');
    return v !== null ? parseFloat(v) : td.textContent.toLowerCase();
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.tabIndex = 0;
      th.addEventListener('click', function () {
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var desc = th.getAttribute('aria-sort') !== 'descending';
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
        rows.sort(function (a, b) {
          var x = key(a, col), y = key(b, col);
          var c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
          return desc ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.querySelectorAll('select.rank-picker').forEach(function (pick) {
    function show() {
      document.querySelectorAll('section.rank-drilldown').forEach(function (s) {
        s.hidden = s.getAttribute('data-rank') !== pick.value;
      });
    }
    pick.addEventListener('change', show);
    show();
  });
  document.querySelectorAll('input.filter').forEach(function (box) {
    var table = document.getElementById(box.getAttribute('data-table'));
    box.addEventListener('input', function () {
      var q = box.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        r.hidden = q !== '' && r.cells[0].textContent.toLowerCase().indexOf(q) < 0;
      });
    });
  });
})();
)JS";
  return kScript;
}

// CSP source for the script: 'sha256-' + base64 of the SHA-256 of its exact text.
std::string html_script_hash() {
  const std::array<std::uint8_t, 32> digest = sha256(html_script());
  return "sha256-" + base64(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

namespace {

// One rank's tables and charts; `prefix` keeps their ids apart from the other ranks'.
void rank_drilldown(const DrillDown& d, const SectionOptions& o, const std::string& prefix, std::size_t rows, std::string& out) {
  if (!d.operators.empty()) operator_table(d.operators.front(), prefix + "ops-table", rows, out);
  if (!d.kernels.rows.empty()) kernel_table(d.kernels, prefix + "kernels-table", rows, out);
  sequences_table(d.sequences, out);
  out += fmt::format("<h{0}>Critical path</h{0}>\n", o.heading + 1);
  critical_path_timeline(d.critical_path, prefix + "critical-path", out);
  if (d.memory.available) {
    out += fmt::format("<h{0}>Memory over time</h{0}>\n", o.heading + 1);
    memory_curve(d.memory, prefix + "memory-curve", out);
  }
  if (d.queue_length.available) {
    out += fmt::format("<h{0}>Launch queue length</h{0}>\n", o.heading + 1);
    queue_curve(d.queue_length, prefix + "queue-curve", out);
  }
  if (d.memory_bandwidth.available) {
    out += fmt::format("<h{0}>Memory bandwidth</h{0}>\n", o.heading + 1);
    bandwidth_curve(d.memory_bandwidth, prefix + "bandwidth-curve", out);
  }
}

// The ranks the picker offers: every rank with a drill-down (the listed ranks at scale).
void rank_picker(const AnalysisResult& r, const SectionOptions& o, std::string& out) {
  put(out, "<p><label for=\"{0}rank-picker\">Rank </label><select id=\"{0}rank-picker\" class=\"rank-picker\">", esc(o.id_prefix));
  for (const RankAnalysis& a : r.ranks) put(out, "<option value=\"{0}\">rank {0}</option>", a.rank());
  out += "</select> <span class=\"muted\">(without the page's script, every rank's tables follow one another)</span></p>\n";
}

}  // namespace

// The first rank's elements keep the plain ids (ops-table, critical-path); the others' carry
// their rank (r3-ops-table).
void drilldown_section(const AnalysisResult& r, const SectionOptions& o, std::string& out) {
  if (o.compact || !has_drilldowns(r)) return;
  const bool several = r.ranks.size() > 1;
  out += fmt::format("<h{0} id=\"{1}drilldown\">Operators and kernels{2}</h{0}>\n", o.heading, o.id_prefix,
                     several ? "" : fmt::format(" (rank {})", r.ranks.front().rank()));
  out += "<p class=\"muted\">Click a column to sort, type to search. The JSON report and <code>--csv</code> hold every row.</p>\n";
  if (several) rank_picker(r, o, out);
  const std::size_t rows = std::max(kMinTableRows, kMaxTableRows / r.ranks.size());
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const DrillDown& d = *r.ranks[k].drilldown;
    const int rank = r.ranks[k].rank();
    put(out, "<section class=\"rank-drilldown\" data-rank=\"{}\">\n", rank);
    if (several) out += fmt::format("<h{0}>Rank {1}</h{0}>\n", o.heading + 1, rank);
    rank_drilldown(d, o, k == 0 ? o.id_prefix : fmt::format("{}r{}-", o.id_prefix, rank), rows, out);
    out += "</section>\n";
  }
}

}  // namespace stepscope::html
