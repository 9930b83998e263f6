// The analyze HTML report: verdict first, then the partition, stability, ranks, the GPU timeline,
// evidence and levers. Every trace-derived string goes through esc().
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>

#include "report/diagnosis_render.hpp"
#include "report/gpu_summary.hpp"
#include "report/html_common.hpp"
#include "report/html_sections.hpp"
#include "stepscope/diagnose.hpp"
#include "stepscope/html.hpp"
#include "stepscope/report.hpp"

namespace stepscope::html {
namespace {

std::string heading(const SectionOptions& o, int delta, std::string_view text, std::string_view id = {}) {
  const int level = std::min(6, o.heading + delta);
  if (id.empty()) return fmt::format("<h{0}>{1}</h{0}>\n", level, esc(text));
  return fmt::format("<h{0} id=\"{1}\">{2}</h{0}>\n", level, esc(std::string(o.id_prefix) + std::string(id)), esc(text));
}

std::string id(const SectionOptions& o, std::string_view name) { return o.id_prefix + std::string(name); }

void verdict_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  out += heading(o, 0, "Verdict", "verdict");
  if (!r.diagnosis.present) {
    out += "<p class=\"headline\">Nothing to analyse: no step holds any recorded time.</p>\n";
    return;
  }
  const Verdict& v = r.diagnosis.verdict;
  put(out, "<p class=\"headline{}\" id=\"{}\">{}</p>\n", v.bound == Bound::GpuCompute ? " ok" : "", esc(id(o, "headline")),
      esc(v.headline));
  out += "<ul>";
  put(out, "<li>bound: <b>{}</b> — {} of the mean steady-state step{}</li>", esc(bound_label(v.bound, v.gpu)), pct(v.share),
      v.scope.empty() ? "" : ", " + esc(v.scope));
  if (v.has_runner_up)
    put(out, "<li>runner-up: {} ({} of the step)</li>", esc(bound_label(v.runner_up, v.gpu)), pct(v.runner_up_share));
  if (!v.compute_kind.empty() && v.bound == Bound::GpuCompute) put(out, "<li>compute kind: {}</li>", esc(v.compute_kind));
  out += "</ul>\n";
}

// What limits the analysis, as the text says it after the verdict: one line per wording, naming
// its ranks.
void trust_section(const DiagnosedResult& r, std::string& out) {
  const auto groups = report_detail::trust_groups(r.job.trust, false);
  if (groups.empty()) return;
  out += "<p class=\"warn\">What limits this analysis:</p><ul class=\"warn trust\">";
  for (const auto& g : groups) {
    put(out, "<li>[{}] {}: {}", esc(trust_code_name(g.first->code)), esc(report_detail::rank_list(g.ranks)), esc(g.first->text));
    if (!g.first->advice.empty()) put(out, "<br><span class=\"muted\">record instead: {}</span>", esc(g.first->advice));
    out += "</li>";
  }
  out += "</ul>\n";
}

void warnings_section(const DiagnosedResult& r, std::string& out) {
  trust_section(r, out);
  const std::vector<std::string> lines = report_detail::reading_warnings(r);
  if (lines.empty()) return;
  out += "<ul class=\"warn\">";
  for (const auto& l : lines) put(out, "<li>warning: {}</li>", esc(l));
  out += "</ul>\n";
}

void steps_summary(const DiagnosedResult& r, std::string& out) {
  out += "<ul class=\"muted\">";
  // What the input holds and what ran on it, once, for the first rank: the claims above rest on it.
  if (!r.ranks.empty()) {
    const RankFacts& f = r.ranks.front().facts;
    put(out, "<li>run: {} ({}); device: {}</li><li>input: {}</li>", esc(run_kind_name(f.run_kind)),
        esc(f.run_kind_evidence), esc(device_line(f)), esc(describe_inventory(f.inventory)));
  }
  for (const RankAnalysis& ra : r.ranks) {
    const auto& p = ra.partition;
    auto warm = std::count_if(p.steps.begin(), p.steps.end(), [](const auto& s) { return s.warmup; });
    const std::string from = step_source_text(p);
    put(out, "<li>rank {}: {} step{} from {}, {} warm-up excluded; {} timeline; main thread {}</li>", ra.rank(), p.steps.size(),
        p.steps.size() == 1 ? "" : "s", esc(from), warm, p.gpu ? "GPU" : "host (CPU-only)", esc(p.main_thread));
    for (const auto& n : p.notes) put(out, "<li>rank {}: {}</li>", ra.rank(), esc(n.text));
  }
  out += "</ul>\n";
}

void mean_partition_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  const JobStep job = job_step(r);
  out += heading(o, 0, "Partition of the mean steady-state step", "partition");
  put(out, "<p>Mean steady-state step: <b>{}</b>{}. Categories do not overlap and sum to the step.</p>\n", ms(job.step_ns),
      r.ranks.size() > 1 ? fmt::format(" (mean of {} ranks)", r.ranks.size()) : "");
  BarRow row{"mean step", {}};
  std::vector<bool> present(kCategoryCount, false);
  for (int c = 0; c < kCategoryCount; ++c) {
    const double v = job.category[static_cast<std::size_t>(c)];
    if (v <= 0) continue;
    present[static_cast<std::size_t>(c)] = true;
    auto cat = static_cast<Category>(c);
    row.segments.push_back({v, category_color(cat), fmt::format("{}: {} ({})", category_label(cat), ms(v),
                                                                pct(job.step_ns > 0 ? v / job.step_ns : 0))});
  }
  out += hbar_svg({row}, id(o, "mean-partition"), 0) + "\n" + category_legend(present) + "\n";
  out += "<table class=\"partition\"><tr><th>category</th><th class=\"num\">per step</th><th class=\"num\">% step</th></tr>";
  for (int c = 0; c < kCategoryCount; ++c) {
    const double v = job.category[static_cast<std::size_t>(c)];
    if (v <= 0) continue;
    auto cat = static_cast<Category>(c);
    put(out, "<tr><td><i style=\"display:inline-block;width:10px;height:10px;background:{}\"></i> {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        category_color(cat), esc(category_label(cat)), ms(v), pct(job.step_ns > 0 ? v / job.step_ns : 0));
  }
  out += "</table>\n";
}

void stability_text(const Stability& s, std::string& out) {
  if (!s.steps) return;
  put(out, "<p>{} — p50 {}, p90 {}, max {}, CV {:.1f}% over {} steady-state steps.</p>\n", s.bursty ? "<b>bursty</b>" : "stable",
      ms(s.p50_ns), ms(s.p90_ns), ms(s.max_ns), s.cv * 100, s.steps);
  if (!s.spikes.empty()) {
    out += "<ul class=\"spikes\">";
    for (const auto& sp : s.spikes)
      put(out, "<li>spike at step {}: {} (+{}), {} grew by {}</li>", sp.step, ms(static_cast<double>(sp.duration)),
          ms(static_cast<double>(sp.excess)), esc(category_label(sp.grew)), ms(static_cast<double>(sp.grew_by)));
    out += "</ul>\n";
  }
  if (s.period.kind != PeriodKind::None)
    put(out, "<p>periodic: every {} steps ({}) — {}</p>\n", s.period.every, esc(category_label(s.period.category)),
        esc(period_kind_name(s.period.kind)));
}

void steps_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  out += heading(o, 0, "Steps", "steps");
  steps_summary(r, out);
  const double ymax = o.step_ymax_ns > 0 ? o.step_ymax_ns : max_step_ns(r);
  std::vector<bool> present(kCategoryCount, false);
  for (const auto& p : each_rank(r, &RankAnalysis::partition))
    for (const auto& s : p.steps)
      for (int c = 0; c < kCategoryCount; ++c)
        if (s.ns[static_cast<std::size_t>(c)] > 0) present[static_cast<std::size_t>(c)] = true;
  out += category_legend(present) + "\n";
  // Several ranks: each in its own collapsible block, the first open; at scale the listed ones
  // (listed_ranks), since the heatmap below compares them all.
  const bool fold = r.ranks.size() > 1;
  const std::vector<std::size_t> listed = listed_ranks(r, kListedRanks);
  if (listed.size() < r.ranks.size())
    put(out, "<p class=\"muted\">{} of {} ranks: the straggler, the fastest, the slowest and quantiles between; the JSON "
             "and CSV reports hold every rank.</p>\n", listed.size(), r.ranks.size());
  for (std::size_t k : listed) {
    const RankPartition& p = r.ranks[k].partition;
    const int rank = r.ranks[k].rank();
    if (fold) put(out, "<details{}><summary>rank {}</summary>\n", k == listed.front() ? " open" : "", rank);
    else out += heading(o, 1, fmt::format("Per-step partition (rank {})", rank));
    out += step_partition_svg(p, rank, id(o, fmt::format("step-partition-r{}", rank)), ymax) + "\n";
    out += "<p class=\"muted\">Step time over steps: dashed line p50, red dots spikes, hollow dots warm-up steps.</p>\n";
    const Stability& s = r.ranks[k].stability;
    out += step_time_svg(p, &s, rank, id(o, fmt::format("step-time-r{}", rank)), ymax) + "\n";
    stability_text(s, out);
    if (fold) out += "</details>\n";
  }
}

// Past this many ranks the heatmap shows groups of ranks, not one row each.
constexpr std::size_t kHeatmapRows = 64;
constexpr std::size_t kHeatmapGroups = 32;

std::vector<double> heatmap_row(const RankPartition& p, const std::vector<int>& cols) {
  std::vector<double> row{p.steady_mean_ns};
  for (int c : cols) row.push_back(p.steady_mean_category[static_cast<std::size_t>(c)]);
  return row;
}

Heatmap heatmap_columns(const std::vector<int>& cols) {
  Heatmap h;
  h.column_labels.push_back("step");
  for (int c : cols) h.column_labels.push_back(category_label(static_cast<Category>(c)));
  return h;
}

Heatmap rank_heatmap(const DiagnosedResult& r, const std::vector<int>& cols) {
  Heatmap h = heatmap_columns(cols);
  for (const RankAnalysis& ra : r.ranks) {
    const auto& p = ra.partition;
    h.row_labels.push_back(fmt::format("rank {}", ra.rank()));
    h.values.push_back(heatmap_row(p, cols));
    h.highlight_row.push_back(r.job.rank_comparison.straggler && *r.job.rank_comparison.straggler == ra.rank());
  }
  return h;
}

// Thousands of ranks: the straggler on a row of its own, then the others in groups of equal size
// by steady step (fastest first), each row the mean of its group.
Heatmap grouped_heatmap(const DiagnosedResult& r, const std::vector<int>& cols) {
  Heatmap h = heatmap_columns(cols);
  const std::optional<int> straggler = r.job.rank_comparison.straggler;
  std::vector<const RankPartition*> order;
  for (const RankAnalysis& ra : r.ranks) {
    const auto& p = ra.partition;
    if (straggler && *straggler == ra.rank()) {
      h.row_labels.push_back(fmt::format("rank {} (straggler)", ra.rank()));
      h.values.push_back(heatmap_row(p, cols));
      h.highlight_row.push_back(true);
    } else if (p.steady_steps) {
      order.push_back(&p);
    }
  }
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->steady_mean_ns < b->steady_mean_ns; });
  const std::size_t groups = std::min(kHeatmapGroups, order.size());
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t from = g * order.size() / groups, to = (g + 1) * order.size() / groups;
    std::vector<double> mean(cols.size() + 1, 0.0);
    for (std::size_t i = from; i < to; ++i) {
      const auto row = heatmap_row(*order[i], cols);
      for (std::size_t c = 0; c < row.size(); ++c) mean[c] += row[c] / static_cast<double>(to - from);
    }
    h.row_labels.push_back(fmt::format("p{:.0f}-p{:.0f} ({} ranks)", 100.0 * from / order.size(), 100.0 * to / order.size(), to - from));
    h.values.push_back(std::move(mean));
    h.highlight_row.push_back(false);
  }
  return h;
}

void ranks_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  const RankComparison& rc = r.job.rank_comparison;
  if (rc.rows.size() < 2 && r.ranks.size() < 2) return;
  out += heading(o, 0, "Ranks", "ranks");
  // Columns: the step, then every category any rank spends time in.
  std::vector<int> cols;
  for (int c = 0; c < kCategoryCount; ++c)
    for (const auto& p : each_rank(r, &RankAnalysis::partition))
      if (p.steady_mean_category[static_cast<std::size_t>(c)] > 0) {
        cols.push_back(c);
        break;
      }
  Heatmap h = r.ranks.size() > kHeatmapRows ? grouped_heatmap(r, cols) : rank_heatmap(r, cols);
  // Differences under 0.5% of the step are noise, not a rank that differs.
  for (const auto& p : each_rank(r, &RankAnalysis::partition)) h.floor = std::max(h.floor, 0.005 * p.steady_mean_ns);
  if (r.ranks.size() > kHeatmapRows)
    put(out, "<p class=\"muted\">{} ranks in groups of equal size by steady-state step, fastest first, each row the "
             "group's mean; the straggler on a row of its own. The JSON and CSV reports hold every rank.</p>\n",
        r.ranks.size());
  out += "<p class=\"muted\">Steady-state mean per step; each column is shaded from its smallest rank (light) to its largest (dark), "
         "so what differs between ranks stands out (differences under 0.5% of the step are left unshaded).</p>\n";
  out += heatmap_svg(h, id(o, "rank-heatmap")) + "\n";
  if (!rc.withheld.empty()) put(out, "<p>slowdown: <b>not judged</b> ({})", esc(rc.withheld));
  else put(out, "<p>slowdown: <b>{}</b>", rc.local ? "rank-local" : "global (all ranks alike)");
  if (rc.straggler)
    put(out, "; straggler rank {} (+{} {} over the others' median); balanced ranks would save {} per step", *rc.straggler,
        pct(rc.straggler_excess), straggler_excess_of(rc.straggler_cause), ms(rc.balanced_saving_ns));
  put(out, "; collective skew {} per step.</p>\n", ms(rc.mean_skew_ns));
  if (auto clocks = report_detail::clock_alignment_sentence(rc.clocks); !clocks.empty())
    put(out, "<p class=\"muted\">{}.</p>\n", esc(clocks));
}

bool any_gpu(const DiagnosedResult& r) {
  return std::ranges::any_of(each_rank(r, &RankAnalysis::gpu_timeline), [](const auto& g) { return g.has_gpu_activity; });
}

void gpu_idle_chart(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  std::vector<BarRow> rows;
  out += heading(o, 1, "GPU time and idle breakdown (HTA definitions)");
  out += "<table class=\"gpu-idle\"><tr><th>rank</th><th class=\"num\">compute</th><th class=\"num\">non-compute</th>"
         "<th class=\"num\">idle</th><th class=\"num\">idle: host wait</th><th class=\"num\">idle: kernel wait</th>"
         "<th class=\"num\">idle: other</th></tr>";
  for (const RankAnalysis& ra : r.ranks) {
    const auto& g = ra.gpu_timeline;
    if (!g.has_gpu_activity) continue;
    const auto& t = g.hta_temporal;
    const auto& idle = g.hta_idle.total;
    BarRow busy{fmt::format("rank {} time", ra.rank()), {}};
    if (t.available) {
      busy.segments = {{static_cast<double>(t.compute), "#2e7d32", fmt::format("compute {} ({:.1f}%)", ms(static_cast<double>(t.compute)), 100.0 * t.compute_share)},
                       {static_cast<double>(t.non_compute), "#8e24aa", fmt::format("non-compute {} ({:.1f}%)", ms(static_cast<double>(t.non_compute)), 100.0 * t.non_compute_share)},
                       {static_cast<double>(t.idle), "#9e9e9e", fmt::format("idle {} ({:.1f}%)", ms(static_cast<double>(t.idle)), 100.0 * t.idle_share)}};
      rows.push_back(busy);
    }
    BarRow why{fmt::format("rank {} idle", ra.rank()), {}};
    const char* colors[kIdleCategoryCount] = {"#d32f2f", "#fbc02d", "#bdbdbd"};
    for (int c = 0; c < kIdleCategoryCount; ++c)
      why.segments.push_back({static_cast<double>(idle[static_cast<std::size_t>(c)]), colors[c],
                              fmt::format("{}: {}", idle_category_name(static_cast<IdleCategory>(c)),
                                          ms(static_cast<double>(idle[static_cast<std::size_t>(c)])))});
    rows.push_back(why);
    put(out, "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
             "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        ra.rank(), t.available ? fmt::format("{:.1f}%", 100.0 * t.compute_share) : "n/a", t.available ? fmt::format("{:.1f}%", 100.0 * t.non_compute_share) : "n/a",
        t.available ? fmt::format("{:.1f}%", 100.0 * t.idle_share) : "n/a", ms(static_cast<double>(idle[0])), ms(static_cast<double>(idle[1])),
        ms(static_cast<double>(idle[2])));
  }
  out += "</table>\n";
  out += "<div class=\"legend\"><span><i style=\"background:#2e7d32\"></i>compute</span><span><i style=\"background:#8e24aa\"></i>"
         "non-compute (communication, memory)</span><span><i style=\"background:#9e9e9e\"></i>idle</span>"
         "<span><i style=\"background:#d32f2f\"></i>idle: host wait</span><span><i style=\"background:#fbc02d\"></i>idle: kernel wait</span>"
         "<span><i style=\"background:#bdbdbd\"></i>idle: other</span></div>\n";
  out += hbar_svg(rows, id(o, "gpu-idle"), 0) + "\n";
}

// Kernel classes summed over ranks.
void kernel_classes_chart(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  std::array<ns_t, kKernelClassCount> time{};
  std::array<std::int64_t, kKernelClassCount> count{};
  ns_t total = 0;
  for (const auto& g : each_rank(r, &RankAnalysis::gpu_timeline)) {
    for (const auto& c : g.classes.classes) {
      time[static_cast<std::size_t>(c.cls)] += c.time;
      count[static_cast<std::size_t>(c.cls)] += c.count;
    }
    total += g.classes.total_time;
  }
  std::vector<LabelledValue> rows;
  for (int c = 0; c < kKernelClassCount; ++c) {
    const auto t = time[static_cast<std::size_t>(c)];
    if (t <= 0) continue;
    rows.push_back({kernel_class_name(static_cast<KernelClass>(c)), static_cast<double>(t),
                    fmt::format("{} ({}, {} launches)", ms(static_cast<double>(t)),
                                pct(total > 0 ? static_cast<double>(t) / static_cast<double>(total) : 0), count[static_cast<std::size_t>(c)]),
                    ""});
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.value > b.value; });
  out += heading(o, 1, "Kernel classes");
  put(out, "<p class=\"muted\">Summed GPU time of kernels, copies and memsets{}.</p>\n",
      r.ranks.size() > 1 ? " over all ranks" : "");
  out += bar_list_svg(rows, id(o, "kernel-classes")) + "\n";
}

void top_kernels_table(const GpuTimeline& g, int rank, std::string& out) {
  out += fmt::format("<details><summary>Top kernels of rank {} (HTA kernel breakdown: HTA's definitions{}; counts can differ "
                     "from the kernels table's, which counts every GPU record of the trace)</summary>\n",
                     rank, g.hta_load.last_step_dropped ? ", the last profiler step left out" : "");
  out += "<table class=\"kernels\"><tr><th>kernel</th><th>type</th><th>class</th><th class=\"num\">total</th>"
         "<th class=\"num\">launches</th><th class=\"num\">mean</th></tr>";
  for (const auto& k : g.hta_kernels.top)
    put(out, "<tr><td class=\"name\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        esc(k.name), hta_kernel_type_name(k.type), k.others ? "" : esc(kernel_class_name(k.cls)),
        ms(static_cast<double>(k.sum)), k.count, ms(k.mean_dur));
  out += "</table></details>\n";
}

void syncs_copies_table(const GpuTimeline& g, const RankPartition* p, int rank, std::string& out) {
  const auto& s = g.syncs;
  put(out, "<p>rank {}: synchronising calls: {}, host blocked {}, GPU idle after them {}; {} copies ({} pageable) "
           "taking {}; {} kernels per step (mean), {} of kernels shorter than {}.</p>\n",
      rank, esc(sync_calls_text(s, p)), ms(static_cast<double>(s.host_blocked)),
      ms(static_cast<double>(s.gpu_idle_after)), g.copies.count, g.copies.pageable_count, ms(static_cast<double>(g.copies.time)),
      std::isfinite(g.launch_overhead.mean_kernels_per_step) ? fmt::format("{:.0f}", g.launch_overhead.mean_kernels_per_step) : "n/a",
      pct(g.launch_overhead.short_kernel_share), ms(static_cast<double>(g.launch_overhead.short_kernel)));
  if (!s.by_name.empty()) {
    out += "<table class=\"syncs\"><tr><th>sync call</th><th class=\"num\">count</th><th class=\"num\">host blocked</th>"
           "<th class=\"num\">GPU idle after</th></tr>";
    for (std::size_t i = 0; i < s.by_name.size() && i < 8; ++i)
      put(out, "<tr><td class=\"name\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
          esc(s.by_name[i].name), s.by_name[i].count, ms(static_cast<double>(s.by_name[i].host_blocked)),
          ms(static_cast<double>(s.by_name[i].gpu_idle_after)));
    out += "</table>\n";
  }
}

// The text's GPU summary line, one row per listed rank: the same figures from the same function.
void gpu_summary_table(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  std::vector<std::string> labels;
  for (std::size_t i : listed_ranks(r, kListedRanks))
    if (i < r.ranks.size())
      for (const GpuSummaryFigure& f : gpu_summary(r.ranks[i].gpu_timeline))
        if (std::find(labels.begin(), labels.end(), f.label) == labels.end()) labels.push_back(f.label);
  if (labels.empty()) return;
  put(out, "<table class=\"gpu-summary\" id=\"{}\"><tr><th>rank</th>", esc(id(o, "gpu-summary")));
  for (const auto& l : labels) put(out, "<th class=\"num\">{}</th>", esc(l));
  out += "</tr>";
  for (std::size_t i : listed_ranks(r, kListedRanks)) {
    if (i >= r.ranks.size() || !r.ranks[i].gpu_timeline.has_gpu_activity) continue;
    const auto figures = gpu_summary(r.ranks[i].gpu_timeline);
    put(out, "<tr><td>{}</td>", r.ranks[i].rank());
    for (const auto& l : labels) {
      const auto f = std::find_if(figures.begin(), figures.end(), [&](const GpuSummaryFigure& x) { return x.label == l; });
      if (f == figures.end()) out += "<td class=\"num\">n/a</td>";
      else put(out, "<td class=\"num\" title=\"{}\">{}</td>", esc(f->basis), esc(f->value));
    }
    out += "</tr>";
  }
  out += "</table>\n";
}

void gpu_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  if (!any_gpu(r)) return;
  out += heading(o, 0, "GPU timeline", "gpu");
  gpu_summary_table(r, o, out);
  gpu_idle_chart(r, o, out);
  kernel_classes_chart(r, o, out);
  if (o.compact) return;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const GpuTimeline& g = r.ranks[i].gpu_timeline;
    if (!g.has_gpu_activity) continue;
    syncs_copies_table(g, &r.ranks[i].partition, r.ranks[i].rank(), out);
    top_kernels_table(g, r.ranks[i].rank(), out);
  }
}

void evidence_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  const Diagnosis& d = r.diagnosis;
  if (!d.present) return;
  out += heading(o, 0, "Evidence and findings", "evidence");
  out += "<ul class=\"evidence\">";
  for (const auto& e : d.verdict.evidence) put(out, "<li>{}</li>", esc(e));
  for (const auto& f : d.findings) {
    put(out, "<li class=\"finding\" data-id=\"{}\">{}", esc(std::string(finding_id(f))), esc(finding_text(f)));
    // Footgun findings also say where to look and what fixing them can gain.
    if (f.footgun && f.gain_ns > 0)
      put(out, " <b>up to {:.2f}x</b> (step {} &rarr; {}){}", f.speedup, ms(f.step_ns), ms(f.step_ns - f.gain_ns),
          !f.lever ? "" : fmt::format(", lever <code>{}</code>", esc(std::string(lever_name(*f.lever)))));
    if (!f.evidence.empty()) {
      out += "<ul class=\"muted\">";
      for (const auto& e : f.evidence) put(out, "<li class=\"name\">{}</li>", esc(e));
      out += "</ul>";
    }
    out += "</li>";
  }
  out += "</ul>\n";
}

// The replay's prediction under the lever's basis: "predicted 2.20x (1.95x to 2.47x): 39.14 ms -> 17.78 ms".
std::string prediction_html(const Lever& l) {
  if (l.predicted_step_ns <= 0) return "";
  std::string settings;
  for (const auto& [value, speedup] : l.predicted_by_setting)
    settings += fmt::format("{}{} &rarr; {:.2f}x", settings.empty() ? "; by setting: " : ", ", esc(value), speedup);
  return fmt::format("<div class=\"muted\">predicted {:.2f}x ({:.2f}x to {:.2f}x): {} &rarr; {}{}{}{}</div>",
                     l.predicted_speedup, l.predicted_speedup_lo, l.predicted_speedup_hi, ms(l.step_ns),
                     ms(l.predicted_step_ns), priced_per_sample(l) ? " for the recorded batch&#39;s samples" : "",
                     l.predicted_replayed ? "" : " (the bound: no graph change models it)", settings);
}

void lever_row(const Lever& l, std::size_t n, bool compact, std::string& out) {
  if (compact) {
    put(out, "<tr><td class=\"num\">{}</td><td><b>{}</b><div class=\"muted\">{}</div></td><td class=\"num\">{:.2f}x</td>"
             "<td class=\"num\">{} &rarr; {}</td></tr>",
        n, esc(l.title), esc(l.knob), l.speedup, ms(l.step_ns), ms(l.step_ns - l.removable_ns));
    return;
  }
  std::string warn;
  if (!l.numerics.empty()) warn += "<div class=\"warn\">numerics: " + esc(l.numerics) + "</div>";
  if (!l.comparability.empty()) warn += "<div class=\"warn\">comparability: " + esc(l.comparability) + "</div>";
  put(out, "<tr><td class=\"num\">{}</td><td><b>{}</b><div class=\"muted\">{}</div></td><td><code>{}</code></td>"
           "<td class=\"num\">{:.2f}x</td><td class=\"num\">{} &rarr; {}</td><td>{}</td><td>{}{}</td></tr>",
      n, esc(l.title), esc(l.targets), esc(l.knob), l.speedup, ms(l.step_ns), ms(l.step_ns - l.removable_ns),
      esc(l.basis) + prediction_html(l),
      esc(l.risk), warn);
}

void levers_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  const Diagnosis& d = r.diagnosis;
  if (!d.present) return;
  out += heading(o, 0, "Levers", "levers");
  out += "<p class=\"muted\">Expected gain is an upper bound from this trace (Amdahl: the step if the lever removed all it can).</p>\n";
  const std::string head = o.compact ? "<tr><th class=\"num\">#</th><th>lever</th><th class=\"num\">up to</th><th class=\"num\">step</th></tr>"
                                     : "<tr><th class=\"num\">#</th><th>lever</th><th>knob</th><th class=\"num\">up to</th>"
                                       "<th class=\"num\">step</th><th>why</th><th>risk</th></tr>";
  put(out, "<table class=\"levers\" id=\"{}\">{}", esc(id(o, "levers-table")), head);
  std::size_t n = 0;
  for (const auto& l : d.levers) {
    if (!l.applies || (o.compact && n >= 3)) continue;
    lever_row(l, ++n, o.compact, out);
  }
  if (!n) out += "<tr><td colspan=\"7\">none: the trace shows no time a catalogued lever acts on</td></tr>";
  out += "</table>\n";
  if (o.compact) return;
  const auto others = std::count_if(d.levers.begin(), d.levers.end(), [](const auto& l) { return !l.applies; });
  if (!others) return;
  put(out, "<details><summary>{} levers that do not apply to this trace</summary><table>{}", others, head);
  std::size_t k = 0;
  for (const auto& l : d.levers)
    if (!l.applies) lever_row(l, ++k, false, out);
  out += "</table></details>\n";
}

void inputs_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out) {
  out += heading(o, 0, "Inputs", "inputs");
  out += "<table class=\"inputs\"><tr><th class=\"num\">rank</th><th>file</th><th>layout</th><th class=\"num\">events</th>"
         "<th>GPU</th><th>world size</th></tr>";
  for (const auto& a : r.ranks) {
    const IngestSummary& s = a.ingest;
    std::string gpus;
    for (const auto& g : s.gpus) gpus += (gpus.empty() ? "" : ", ") + g;
    if (s.gpus.size() > 2) gpus = fmt::format("{} x {}", s.gpus.size(), s.gpus.front());
    put(out, "<tr><td class=\"num\">{}</td><td class=\"name\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
        s.rank, esc(s.path), esc(s.layout), s.events, gpus.empty() ? "none (CPU-only)" : esc(gpus),
        s.world_size ? std::to_string(*s.world_size) : "");
  }
  out += "</table>\n";
}

}  // namespace

std::string analysis_sections(const DiagnosedResult& r, const SectionOptions& o) {
  std::string out;
  verdict_section(r, o, out);
  warnings_section(r, out);
  if (r.diagnosis.present) mean_partition_section(r, o, out);
  steps_section(r, o, out);
  ranks_section(r, o, out);
  gpu_section(r, o, out);
  evidence_section(r, o, out);
  levers_section(r, o, out);
  whatif_section(r, o, out);
  drilldown_section(r, o, out);
  if (!o.compact) inputs_section(r, o, out);
  return out;
}

}  // namespace stepscope::html

namespace stepscope {

std::string render_html(const DiagnosedResult& r) {
  std::string title = "stepscope report";
  if (r.ranks.size() == 1) title += " — " + r.ranks.front().ingest.path;
  else if (!r.ranks.empty()) title += fmt::format(" — {} ranks", r.ranks.size());
  std::string out = html::page_begin(title, true);
  out += "<h1>stepscope report</h1>\n";
  {
    std::string files;
    for (std::size_t i = 0; i < r.ranks.size() && i < 4; ++i) files += (files.empty() ? "" : ", ") + r.ranks[i].ingest.path;
    if (r.ranks.size() > 4) files += fmt::format(" and {} more", r.ranks.size() - 4);
    out += "<p class=\"muted name\">" + html::esc(files) + "</p>\n";
  }
  html::SectionOptions o;
  if (!r.ranks.empty() || r.job.memory_snapshots.empty()) out += html::analysis_sections(r, o);
  for (const auto& m : r.job.memory_snapshots) out += memory::render_html_section(m);
  out += html::page_end(true);
  return out;
}

}  // namespace stepscope
