// The server's own pages: the runs of the log directory and each job's history. No script: the
// runs table sorts and filters through links the server answers, so the page keeps the report's
// policy of no script at all.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "serve/serve_internal.hpp"
#include "stepscope/serve.hpp"

namespace stepscope::serve_detail {
namespace {

using stepscope::html_escape;

template <typename... Args>
void put(std::string& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

std::string date_text(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%d %H:%M}Z", tm);
}

std::string page_ms(double ns) {
  if (ns >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.1f} us", ns / 1e3);
}

// The categories' colours in the report's order (stepscope/partition.hpp).
constexpr const char* kCategoryColors[kCategoryCount] = {
    "#1565c0", "#42a5f5", "#90caf9", "#5c6bc0", "#8e24aa", "#ef6c00", "#ffa726", "#ffcc80",
    "#d32f2f", "#f9a825", "#6d4c41", "#00897b", "#80cbc4", "#9e9e9e"};

std::string query_string(const RunsQuery& q, const std::string& sort, bool descending) {
  std::string s = "?sort=" + url_encode(sort) + "&amp;order=" + (descending ? "desc" : "asc");
  if (!q.q.empty()) s += "&amp;q=" + url_encode(q.q);
  if (!q.bound.empty()) s += "&amp;bound=" + url_encode(q.bound);
  if (!q.trust.empty()) s += "&amp;trust=" + url_encode(q.trust);
  if (!q.job.empty()) s += "&amp;job=" + url_encode(q.job);
  if (q.base > 0) s += "&amp;base=" + std::to_string(q.base);
  return s;
}

bool matches(const StoredRun& r, const RunsQuery& q) {
  if (!q.bound.empty() && r.bound != q.bound) return false;
  if (!q.trust.empty() && (r.ok ? r.trust : std::string("error")) != q.trust) return false;
  if (!q.job.empty() && r.job != q.job) return false;
  if (q.q.empty()) return true;
  for (const auto* field : {&r.name, &r.job, &r.verdict, &r.error, &r.bound})
    if (field->find(q.q) != std::string::npos) return true;
  return false;
}

void sort_runs(std::vector<const StoredRun*>& rows, const RunsQuery& q) {
  auto key_less = [&](const StoredRun* a, const StoredRun* b) {
    if (q.sort == "name") return a->name < b->name;
    if (q.sort == "ranks") return a->ranks < b->ranks;
    if (q.sort == "steps") return a->steps < b->steps;
    if (q.sort == "step") return a->step_ns < b->step_ns;
    if (q.sort == "bound") return a->bound < b->bound;
    if (q.sort == "trust") return a->trust < b->trust;
    return a->date != b->date ? a->date < b->date : a->id < b->id;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const StoredRun* a, const StoredRun* b) {
    return q.descending ? key_less(b, a) : key_less(a, b);
  });
}

std::string header_cell(const RunsQuery& q, const char* key, const char* label, bool numeric) {
  const bool current = q.sort == key;
  const bool next_descending = current ? !q.descending : true;
  std::string mark = current ? (q.descending ? " \u2193" : " \u2191") : "";
  return fmt::format("<th{}><a href=\"/{}\">{}{}</a></th>", numeric ? " class=\"num\"" : "",
                     query_string(q, key, next_descending), label, mark);
}

void filter_links(std::string& out, const std::vector<StoredRun>& runs, const RunsQuery& q) {
  std::vector<std::string> bounds, trusts, jobs;
  for (const auto& r : runs) {
    if (!r.bound.empty() && std::find(bounds.begin(), bounds.end(), r.bound) == bounds.end()) bounds.push_back(r.bound);
    const std::string t = r.ok ? r.trust : "error";
    if (std::find(trusts.begin(), trusts.end(), t) == trusts.end()) trusts.push_back(t);
    if (std::find(jobs.begin(), jobs.end(), r.job) == jobs.end()) jobs.push_back(r.job);
  }
  auto links = [&](const char* label, const std::vector<std::string>& values, std::string RunsQuery::*field) {
    out += "<p class=\"filters\">" + std::string(label) + ": ";
    RunsQuery all = q;
    all.*field = "";
    put(out, "<a href=\"/{}\">{}</a>", query_string(all, q.sort, q.descending), (q.*field).empty() ? "<b>all</b>" : "all");
    for (const auto& v : values) {
      RunsQuery one = q;
      one.*field = v;
      put(out, " · <a href=\"/{}\">{}</a>", query_string(one, q.sort, q.descending),
          q.*field == v ? "<b>" + html_escape(v) + "</b>" : html_escape(v));
    }
    out += "</p>\n";
  };
  links("bound", bounds, &RunsQuery::bound);
  links("trust", trusts, &RunsQuery::trust);
  if (jobs.size() > 1) links("job", jobs, &RunsQuery::job);
  if (!q.q.empty()) {
    RunsQuery cleared = q;
    cleared.q.clear();
    put(out, "<p>name contains <code>{}</code> (<a href=\"/{}\">clear</a>)</p>\n", html_escape(q.q),
        query_string(cleared, q.sort, q.descending));
  }
}

void progress_line(std::string& out, const IndexState& s, std::size_t stored) {
  if (s.scanning && s.total > 0) {
    const double share = s.bytes_total > 0 ? static_cast<double>(s.bytes_done) / static_cast<double>(s.bytes_total) : 0;
    put(out, "<p class=\"progress\" id=\"progress\">analysing run {} of {}: <code>{}</code>, {:.0f}% read "
             "<progress max=\"100\" value=\"{:.0f}\"></progress></p>\n",
        std::min(s.done + 1, s.total), s.total, html_escape(s.run), share * 100, share * 100);
  } else if (s.scanning) {
    out += "<p class=\"progress\" id=\"progress\">looking for new runs&hellip;</p>\n";
  } else {
    put(out, "<p class=\"muted\" id=\"progress\">{} runs in the history; the log directory is scanned for new runs "
             "every few seconds{}</p>\n",
        stored, s.last_scan > 0 ? " (last scan " + date_text(s.last_scan) + ")" : std::string());
  }
  if (!s.last_error.empty()) put(out, "<p class=\"warn\">last scan failed: {}</p>\n", html_escape(s.last_error));
}

void run_row(std::string& out, const StoredRun& r, const RunsQuery& q, const StoredRun* previous) {
  out += "<tr>";
  put(out, "<td class=\"name\"><a href=\"/run?id={}\">{}</a></td>", r.id, html_escape(r.name));
  put(out, "<td class=\"num\">{}</td>", date_text(r.date));
  if (!r.ok) {
    put(out, "<td class=\"num\">-</td><td class=\"num\">-</td><td class=\"num\">-</td><td class=\"warn\">not analysed: {}</td>"
             "<td>error</td><td></td></tr>\n",
        html_escape(r.error));
    return;
  }
  put(out, "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num step\">{}</td>", r.ranks, r.steps, page_ms(r.step_ns));
  put(out, "<td><b class=\"bound\">{}</b> {}</td>", html_escape(r.bound.empty() ? "-" : r.bound), html_escape(r.verdict));
  put(out, "<td class=\"trust\">{}</td><td>", html_escape(r.trust));
  if (previous) put(out, "<a href=\"/diff?base={}&amp;test={}\">vs previous</a> · ", previous->id, r.id);
  if (q.base > 0 && q.base != r.id) put(out, "<a href=\"/diff?base={}&amp;test={}\">vs base</a> · ", q.base, r.id);
  RunsQuery pick = q;
  pick.base = r.id;
  put(out, "<a href=\"/{}\">{}</a> · <a href=\"/history?job={}\">history</a></td></tr>\n",
      query_string(pick, q.sort, q.descending), q.base == r.id ? "<b>base</b>" : "set as base", url_encode(r.job));
}

}  // namespace

std::string url_encode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string nav_bar(const std::string& logdir_label, const std::string& here) {
  return fmt::format(
      "<nav class=\"serve\" style=\"font:14px system-ui,sans-serif;background:#263238;color:#eceff1;padding:8px 16px\">"
      "<a style=\"color:#fff\" href=\"/\">runs</a> · <a style=\"color:#fff\" href=\"/history\">history</a> · "
      "<span>{}</span> · <code>{}</code></nav>\n",
      html_escape(here), html_escape(logdir_label));
}

std::string page_begin(const std::string& title, const std::string& logdir_label) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  put(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n", kPageCsp);
  put(out, "<title>{}</title>\n", html_escape(title));
  out += R"(<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1280px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px}
th,td{border:1px solid #e0e0e0;padding:4px 8px;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,.name{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}
.muted{color:#666}.warn{color:#8a4b00}.worse{color:#c62828;font-weight:600}.better{color:#2e7d32}
svg.chart{width:100%;height:auto;background:#fff;border:1px solid #e6e6e6;margin:4px 0}
svg text{font:11px system-ui,sans-serif;fill:#444}
.legend span{display:inline-block;margin-right:12px;font-size:12.5px}.legend i{display:inline-block;width:11px;height:11px;margin-right:4px}
</style>
</head>
<body>
)";
  out += nav_bar(logdir_label, title);
  out += "<main>\n";
  return out;
}

std::string page_end() {
  return "<footer class=\"muted\"><p>stepscope serve: read-only; this page loads nothing from elsewhere and runs no "
         "script.</p></footer>\n</main></body>\n</html>\n";
}

std::string render_runs_page(const std::vector<StoredRun>& runs, const RunsQuery& q, const IndexState& state,
                             const std::string& logdir_label) {
  std::string out = page_begin("runs", logdir_label);
  // Reloads itself while runs are being analysed, so new ones appear without a script.
  if (state.scanning && state.total > 0)
    out.insert(out.find("<title>"), "<meta http-equiv=\"refresh\" content=\"3\">\n");
  put(out, "<h1>Runs of <code>{}</code></h1>\n", html_escape(logdir_label));
  progress_line(out, state, runs.size());
  filter_links(out, runs, q);
  std::vector<const StoredRun*> rows;
  for (const auto& r : runs)
    if (matches(r, q)) rows.push_back(&r);
  // Each run's predecessor in its job, for the "vs previous" link.
  std::map<std::int64_t, const StoredRun*> previous;
  std::map<std::string, const StoredRun*> last_of_job;
  for (const auto& r : runs) {
    if (!r.ok) continue;
    if (auto it = last_of_job.find(r.job); it != last_of_job.end()) previous[r.id] = it->second;
    last_of_job[r.job] = &r;
  }
  sort_runs(rows, q);
  out += "<table id=\"runs\"><thead><tr>";
  out += header_cell(q, "name", "run", false) + header_cell(q, "date", "date", true) +
         header_cell(q, "ranks", "ranks", true) + header_cell(q, "steps", "steps", true) +
         header_cell(q, "step", "steady step", true) + header_cell(q, "bound", "verdict", false) +
         header_cell(q, "trust", "trust", false) + "<th>compare</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto* r : rows) {
    auto it = previous.find(r->id);
    run_row(out, *r, q, it == previous.end() ? nullptr : it->second);
  }
  out += "</tbody></table>\n";
  if (rows.empty()) out += "<p class=\"muted\">no run matches.</p>\n";
  out += page_end();
  return out;
}

namespace {

// Step time over the runs of a job, the regressed runs in red.
std::string trend_svg(const JobHistory& h) {
  constexpr double kW = 900, kH = 220, kLeft = 70, kRight = 20, kTop = 14, kBottom = 28;
  double ymax = 0;
  for (const auto& p : h.points) ymax = std::max(ymax, p.run.step_ns);
  if (ymax <= 0) ymax = 1;
  const std::size_t n = h.points.size();
  auto x = [&](std::size_t i) { return kLeft + (n > 1 ? (kW - kLeft - kRight) * static_cast<double>(i) / static_cast<double>(n - 1) : (kW - kLeft - kRight) / 2); };
  auto y = [&](double v) { return kTop + (kH - kTop - kBottom) * (1 - v / (ymax * 1.1)); };
  std::string out = fmt::format("<svg class=\"chart trend\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"step time per run\">", kW, kH);
  for (int k = 0; k <= 4; ++k) {
    const double v = ymax * 1.1 * k / 4;
    put(out, "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
        kLeft, kW - kRight, y(v), y(v), kLeft - 6, y(v) + 4, k == 0 ? std::string("0") : page_ms(v));
  }
  std::string line;
  for (std::size_t i = 0; i < n; ++i) line += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", x(i), y(h.points[i].run.step_ns));
  put(out, "<polyline fill=\"none\" stroke=\"#1565c0\" stroke-width=\"1.5\" points=\"{}\"/>", line);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& p = h.points[i];
    put(out, "<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"><title>{}: {}{}</title></circle>",
        p.regressed ? "regressed" : "run", x(i), y(p.run.step_ns), p.regressed ? 6 : 4, p.regressed ? "#c62828" : "#1565c0",
        html_escape(p.run.name), page_ms(p.run.step_ns), p.regressed ? " (regressed)" : "");
  }
  out += "</svg>\n";
  return out;
}

// Each run's step split by category, as shares of the step.
std::string shares_svg(const JobHistory& h) {
  const std::size_t n = h.points.size();
  const double kW = 900, kH = 180, kLeft = 70, kRight = 20, kTop = 8, kBottom = 10;
  const double slot = (kW - kLeft - kRight) / static_cast<double>(std::max<std::size_t>(n, 1));
  std::string out = fmt::format("<svg class=\"chart shares\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"share of each stage per run\">", kW, kH);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = h.points[i].run;
    double y = kTop;
    for (int c = 0; c < kCategoryCount; ++c) {
      const double share = r.step_ns > 0 ? r.category_ns[static_cast<std::size_t>(c)] / r.step_ns : 0;
      if (share <= 0) continue;
      const double hgt = share * (kH - kTop - kBottom);
      put(out, "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {} {:.1f}%</title></rect>",
          kLeft + slot * static_cast<double>(i) + slot * 0.15, y, slot * 0.7, hgt, kCategoryColors[c], html_escape(r.name),
          category_label(static_cast<Category>(c)), share * 100);
      y += hgt;
    }
  }
  out += "</svg>\n<p class=\"legend\">";
  for (int c = 0; c < kCategoryCount; ++c)
    put(out, "<span><i style=\"background:{}\"></i>{}</span>", kCategoryColors[c], category_label(static_cast<Category>(c)));
  out += "</p>\n";
  return out;
}

std::string change_cell(const HistoryPoint& p) {
  if (!p.has_baseline) return "<td class=\"muted\">first run</td>";
  const std::string interval = fmt::format("{:.2f}x [{:.2f}&ndash;{:.2f}]", p.speedup, p.speedup_lo, p.speedup_hi);
  if (p.regressed) return "<td class=\"worse regressed\">" + interval + " regressed</td>";
  if (p.significant) return "<td class=\"better\">" + interval + " faster</td>";
  return "<td class=\"muted\">" + interval + " within noise</td>";
}

void job_section(std::string& out, const JobHistory& h) {
  put(out, "<h2 id=\"job-{}\">job <code>{}</code>: {} runs</h2>\n", url_encode(h.job), html_escape(h.job), h.points.size());
  out += trend_svg(h);
  out += shares_svg(h);
  out += "<table class=\"history\"><thead><tr><th>run</th><th class=\"num\">date</th><th class=\"num\">steady step</th>"
         "<th>vs previous run (bootstrap 95%)</th><th>bound</th><th>trust</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < h.points.size(); ++i) {
    const auto& p = h.points[i];
    put(out, "<tr><td class=\"name\"><a href=\"/run?id={}\">{}</a></td><td class=\"num\">{}</td><td class=\"num\">{}</td>", p.run.id,
        html_escape(p.run.name), date_text(p.run.date), page_ms(p.run.step_ns));
    out += change_cell(p);
    put(out, "<td>{}</td><td>{}</td></tr>\n", html_escape(p.run.bound), html_escape(p.run.trust));
  }
  out += "</tbody></table>\n";
}

}  // namespace

std::string render_history_page(const std::vector<JobHistory>& jobs, const std::string& job,
                                 const std::string& logdir_label) {
  std::string out = page_begin("history", logdir_label);
  out += "<h1>History</h1>\n<p class=\"muted\">Each run is compared with the run of its job before it by the bootstrap "
         "test of <code>stepscope diff</code>; a run slower beyond noise is marked regressed.</p>\n";
  if (job.empty() && jobs.size() > 1) {
    out += "<p>jobs: ";
    for (std::size_t i = 0; i < jobs.size(); ++i)
      put(out, "{}<a href=\"/history?job={}\">{}</a>", i ? " · " : "", url_encode(jobs[i].job), html_escape(jobs[i].job));
    out += "</p>\n";
  }
  if (jobs.empty()) out += "<p class=\"muted\">no analysed run yet.</p>\n";
  for (const auto& h : jobs) job_section(out, h);
  out += page_end();
  return out;
}

std::string decorate_run_page(std::string report, const StoredRun& run, const std::string& logdir_label) {
  std::string extra = nav_bar(logdir_label, "run " + run.name);
  extra += "<div class=\"serve downloads\" style=\"font:14px system-ui,sans-serif;padding:8px 16px;background:#eceff1\">"
           "<b>run</b> <code>" + html_escape(run.name) + "</code> · downloads: ";
  for (int rank = 0; rank < std::max(run.ranks, 1); ++rank)
    extra += fmt::format("<a href=\"/annotated?id={}&amp;rank={}\">annotated trace{}</a> · ", run.id, rank,
                         run.ranks > 1 ? " of rank " + std::to_string(rank) : std::string());
  for (const auto& f : run.files)
    extra += "<a href=\"/files/" + url_encode(f) + "\">" + html_escape(f) + "</a> ";
  extra += fmt::format(" · <a href=\"/history?job={}\">history of its job</a></div>\n", url_encode(run.job));
  const auto at = report.find("<body>");
  if (at == std::string::npos) return extra + report;
  report.insert(at + 6, extra);
  return report;
}

std::string decorate_diff_page(std::string report, const StoredRun& base, const StoredRun& test,
                               const std::string& logdir_label) {
  std::string extra = nav_bar(logdir_label, "diff " + base.name + " → " + test.name);
  const auto at = report.find("<body>");
  if (at == std::string::npos) return extra + report;
  report.insert(at + 6, extra);
  return report;
}

}  // namespace stepscope::serve_detail
