// The HTML report rendered in headless Chromium: it loads with no console message and no network
// request, its charts are present and drawn from the analysis, and hostile trace names stay text.
// A screenshot of each page is kept under the build directory (tests/html/*.png) for humans.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "html/support.hpp"
#include "stepscope/diagnose.hpp"
#include "stepscope/html.hpp"

namespace stepscope {
namespace {

using namespace html_test;
using nlohmann::json;

const fs::path kOutDir = fs::path(STEPSCOPE_BINARY_DIR) / "tests" / "html";
constexpr const char* kChromium = "/usr/bin/chromium";

// Renders `html` as `name`.html in Chromium; returns what the page did (see render_page.py).
json render(const std::string& html, const std::string& name) {
  fs::create_directories(kOutDir);
  const fs::path page = kOutDir / (name + ".html"), shot = kOutDir / (name + ".png"), out = kOutDir / (name + ".render.json");
  write_file(page, html);
  fs::remove(out);
  // `timeout` keeps a hung browser from blocking the suite.
  const std::string cmd = fmt::format("timeout -k 10 180 /usr/bin/python3 '{}/tests/html/render_page.py' '{}' '{}' '{}' > '{}' 2>'{}.err'",
                                      STEPSCOPE_SOURCE_DIR, page.string(), shot.string(), kChromium, out.string(), out.string());
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << "rendering failed: " << read_file(out.string() + ".err");
  if (rc != 0) return json::object();
  return json::parse(read_file(out));
}

const json* chart(const json& r, const std::string& id) {
  for (const auto& c : r["dom"]["charts"])
    if (c["id"] == id) return &c;
  return nullptr;
}

// The page loaded nothing but itself, logged nothing (a script the CSP refused would log), opened
// no dialog and holds at most its own script.
void expect_clean_load(const json& r) {
  ASSERT_TRUE(r.contains("dom")) << "the page did not render";
  EXPECT_TRUE(r["console"].empty()) << r["console"].dump();
  ASSERT_EQ(r["requests"].size(), 1u) << r["requests"].dump();
  EXPECT_EQ(r["requests"][0], r["page_url"]);
  EXPECT_TRUE(r["dialogs"].empty()) << r["dialogs"].dump();
  EXPECT_LE(r["dom"]["scripts"].get<int>(), 1);
  EXPECT_EQ(r["dom"]["handlers"], 0);
  EXPECT_FALSE(r["dom"]["pwned"].get<bool>());
  EXPECT_GT(r["screenshot_bytes"].get<long>(), 10'000);
}

void expect_drawn(const json& r, const std::string& id) {
  const json* c = chart(r, id);
  ASSERT_NE(c, nullptr) << "no chart " << id;
  EXPECT_GT((*c)["drawn"].get<int>(), 0) << id;
  EXPECT_GT((*c)["width"].get<double>(), 100) << id;
  EXPECT_GT((*c)["height"].get<double>(), 20) << id;
}

std::size_t nonzero_cells(const RankPartition& p) {
  std::size_t n = 0;
  for (const auto& s : p.steps)
    for (auto v : s.ns) n += v > 0;
  return n;
}

// Sorts the operator table by host self time both ways and searches it, through the page's own
// script (clicks and typing as a user would), and reports what the table showed each time.
const char* const kSortAndSearch = R"JS(
(async () => {
  const table = document.getElementById('ops-table');
  const col = [...table.tHead.rows[0].cells].findIndex(th => th.textContent === 'host self');
  const values = () => [...table.tBodies[0].rows].map(r => parseFloat(r.cells[col].getAttribute('data-v')));
  const head = table.tHead.rows[0].cells[col];
  head.click();
  const desc = values();
  head.click();
  const asc = values();
  const box = document.querySelector('input.filter[data-table="ops-table"]');
  box.value = 'aten::mm';
  box.dispatchEvent(new Event('input'));
  const shown = [...table.tBodies[0].rows].filter(r => !r.hidden).map(r => r.cells[0].textContent);
  return JSON.stringify({rows: desc.length, desc, asc, shown});
})()
)JS";

TEST(HtmlReport, OperatorTableSortsAndSearches) {
  const fs::path p = fs::path(STEPSCOPE_FIXTURES_DIR) / "hta/df_index_resolver/df_index_resolver.json.gz";
  const Analysis a = run_pipeline({p.string()});
  setenv("STEPSCOPE_PAGE_ACTIONS", kSortAndSearch, 1);
  const json r = render(render_html(a.result), "sort-search");
  unsetenv("STEPSCOPE_PAGE_ACTIONS");
  expect_clean_load(r);
  EXPECT_EQ(r["dom"]["scripts"], 1);
  ASSERT_TRUE(r.contains("actions")) << r.dump().substr(0, 500);
  const json& act = r["actions"];
  const auto& rows = a.result.ranks.at(0).drilldown.value().operators.at(0).rows;
  ASSERT_EQ(act["rows"].get<std::size_t>(), rows.size());
  std::vector<double> desc = act["desc"], asc = act["asc"];
  EXPECT_TRUE(std::is_sorted(desc.rbegin(), desc.rend()));
  EXPECT_TRUE(std::is_sorted(asc.begin(), asc.end()));
  EXPECT_DOUBLE_EQ(desc.front(), static_cast<double>(rows.front().host_self));
  // The search keeps the rows whose name holds the text, and only those.
  std::size_t matching = 0;
  for (const auto& row : rows) matching += row.name.find("aten::mm") != std::string::npos;
  ASSERT_EQ(act["shown"].size(), matching);
  for (const auto& name : act["shown"]) EXPECT_NE(name.get<std::string>().find("aten::mm"), std::string::npos);
  for (const char* id : {"critical-path", "memory-curve", "queue-curve", "bandwidth-curve"}) expect_drawn(r, id);
}

TEST(HtmlReport, ChromiumIsInstalled) {
  ASSERT_TRUE(fs::exists(kChromium)) << kChromium << " is missing: scripts/install-deps installs the chromium package";
}

TEST(HtmlReport, GpuTracePageLoadsCleanAndDrawsTheAnalysis) {
  TempDir dir("html-gpu");
  const auto files = generate(dir.path, "loader-stall", "--steps 13");
  ASSERT_EQ(files.size(), 1u);
  const Analysis a = run_pipeline(files);
  ASSERT_TRUE(a.result.diagnosis.present);
  const json r = render(render_html(a.result), "report");
  expect_clean_load(r);
  EXPECT_EQ(r["dom"]["headline"], a.result.diagnosis.verdict.headline);
  for (const char* id : {"mean-partition", "step-partition-r0", "step-time-r0", "gpu-idle", "kernel-classes"}) expect_drawn(r, id);
  // The plan's predicted timeline beside the recorded one: a block per replayed step on each side.
  ASSERT_FALSE(a.result.diagnosis.plan.entries.empty());
  expect_drawn(r, "whatif-timeline");
  EXPECT_EQ((*chart(r, "whatif-timeline"))["rects"].get<std::size_t>(), 2 * a.result.ranks.at(0).whatif.steps.size());
  // One rect per (step, category) with time, as the partition holds them.
  const RankPartition& p = a.result.ranks[0].partition;
  EXPECT_EQ((*chart(r, "step-partition-r0"))["rects"].get<std::size_t>(), nonzero_cells(p));
  // Every spike the stability analysis found is marked, and the loader stall does spike.
  const Stability& s = a.result.ranks[0].stability;
  EXPECT_FALSE(s.spikes.empty());
  EXPECT_EQ((*chart(r, "step-time-r0"))["spikes"].get<std::size_t>(), s.spikes.size());
  EXPECT_EQ((*chart(r, "step-time-r0"))["lines"], 1);
  // One kernel-class bar per class with time.
  std::size_t classes = a.result.ranks[0].gpu_timeline.classes.classes.size();
  EXPECT_EQ((*chart(r, "kernel-classes"))["rects"].get<std::size_t>(), classes);
  // The levers table lists every applicable lever.
  std::size_t applicable = 0;
  for (const auto& l : a.result.diagnosis.levers) applicable += l.applies;
  const std::string text = r["dom"]["text"];
  for (const auto& l : a.result.diagnosis.levers)
    if (l.applies) {
      EXPECT_NE(text.find(l.title), std::string::npos) << l.title;
    }
  EXPECT_GT(applicable, 0u);
  EXPECT_TRUE(fs::exists(kOutDir / "report.png"));
}

TEST(HtmlReport, SeveralRanksGetAHeatmapWithTheStragglerMarked) {
  TempDir dir("html-ranks");
  const auto files = generate(dir.path, "straggler", "--ranks 4");
  ASSERT_EQ(files.size(), 4u);
  const Analysis a = run_pipeline(files);
  ASSERT_TRUE(a.result.job.rank_comparison.straggler.has_value());
  const json r = render(render_html(a.result), "report-ranks");
  expect_clean_load(r);
  expect_drawn(r, "rank-heatmap");
  // Columns: the step and every category some rank spends time in.
  std::size_t cols = 1;
  for (int c = 0; c < kCategoryCount; ++c)
    for (const auto& p : each_rank(a.result, &RankAnalysis::partition))
      if (p.steady_mean_category[static_cast<std::size_t>(c)] > 0) {
        ++cols;
        break;
      }
  const json& h = *chart(r, "rank-heatmap");
  EXPECT_EQ(h["cells"].get<std::size_t>(), 4 * cols);
  EXPECT_EQ(h["highlighted"].get<std::size_t>(), cols);  // the straggler's row
  for (const RankAnalysis& ra : a.result.ranks) {
    ASSERT_NE(chart(r, fmt::format("step-partition-r{}", ra.rank())), nullptr);
    EXPECT_EQ((*chart(r, fmt::format("step-partition-r{}", ra.rank())))["rects"].get<std::size_t>(), nonzero_cells(ra.partition));
  }
}

// Picks rank 3 in the rank picker as a reader would and reports which ranks' tables show.
const char* const kPickRank = R"JS(
(async () => {
  const pick = document.querySelector('select.rank-picker');
  const visible = () => [...document.querySelectorAll('section.rank-drilldown')]
      .filter(s => !s.hidden && s.offsetParent !== null).map(s => s.getAttribute('data-rank'));
  const before = visible();
  pick.value = '3';
  pick.dispatchEvent(new Event('change'));
  const table = document.getElementById('r3-ops-table');
  return JSON.stringify({options: [...pick.options].map(o => o.value), before, after: visible(),
                         rows: table ? table.tBodies[0].rows.length : -1,
                         table_shown: table !== null && table.offsetParent !== null});
})()
)JS";

TEST(HtmlReport, RankPickerShowsEveryRanksOperatorsAndKernels) {
  const fs::path dir = fs::path(STEPSCOPE_FIXTURES_DIR) / "param/dlrm_8rank/kineto";
  const Analysis a = run_pipeline({dir.string()});
  ASSERT_EQ(a.result.ranks.size(), 8u);
  setenv("STEPSCOPE_PAGE_ACTIONS", kPickRank, 1);
  const std::string html = render_html(a.result);
  const json r = render(html, "rank-picker");
  unsetenv("STEPSCOPE_PAGE_ACTIONS");
  expect_clean_load(r);
  ASSERT_TRUE(r.contains("actions")) << r.dump().substr(0, 500);
  const json& act = r["actions"];
  EXPECT_EQ(act["options"], json({"0", "1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(act["before"], json({"0"}));  // the first rank until another is picked
  EXPECT_EQ(act["after"], json({"3"}));
  EXPECT_TRUE(act["table_shown"].get<bool>());
  const DrillDown& rank3 = a.result.ranks.at(3).drilldown.value();
  EXPECT_EQ(act["rows"].get<std::size_t>(), std::min<std::size_t>(rank3.operators.at(0).rows.size(), 75));
  // The GPU summary: a row per rank, with the figures the text's summary line shows.
  const std::string text = r["dom"]["text"];
  EXPECT_NE(text.find("SM efficiency"), std::string::npos);
  EXPECT_NE(text.find("utilisation"), std::string::npos);
  EXPECT_LT(html.size(), 2u << 20);
  // Eight ranks of one step each: one trust line naming them all, as the text has it.
  const std::string one_step = "[one_step] ranks 0-7: one steady-state step";
  EXPECT_NE(text.find(one_step), std::string::npos) << text.substr(0, 2000);
  EXPECT_EQ(text.find(one_step, text.find(one_step) + 1), std::string::npos);
}

// A warm-up step hundreds of times the steady ones (a cold first iteration): the step charts are scaled
// to the steady steps, which fill most of the plot's height, and the warm-up step is marked off
// the scale.
const char* const kSteadyHeight = R"JS(
(async () => {
  const out = {};
  for (const id of ['step-time-r0', 'step-partition-r0']) {
    const svg = document.getElementById(id);
    const axis = [...svg.querySelectorAll('line.axis')].pop().getBBox().y;
    const ticks = [...svg.querySelectorAll('line.grid')].map(l => l.getBBox().y);
    const top = Math.min(...ticks);
    const steady = id === 'step-time-r0'
        ? [...svg.querySelectorAll('circle:not(.warmup)')].map(c => c.getBBox().y + c.getBBox().height / 2)
        : [...svg.querySelectorAll('g.bar:not(.warm)')].map(g => g.getBBox().y);
    out[id] = {fill: (axis - Math.min(...steady)) / (axis - top), marks: svg.querySelectorAll('text.off-scale').length};
  }
  return JSON.stringify(out);
})()
)JS";

TEST(HtmlReport, SteadyStepsFillMostOfTheChartsHeight) {
  // A recorded run whose first step (1.9 s, a cold start) is warm-up beside 5 ms steady steps.
  const Analysis a = run_pipeline({std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/cold_start.pt.trace.json.gz"});
  const RankPartition& p = a.result.ranks.at(0).partition;
  double warm = 0, steady = 0;
  for (const auto& s : p.steps) (s.warmup ? warm : steady) = std::max(s.warmup ? warm : steady, static_cast<double>(s.duration()));
  ASSERT_GT(warm, 3 * steady) << "the scenario needs a long warm-up step";
  setenv("STEPSCOPE_PAGE_ACTIONS", kSteadyHeight, 1);
  const json r = render(render_html(a.result), "steady-scale");
  unsetenv("STEPSCOPE_PAGE_ACTIONS");
  expect_clean_load(r);
  ASSERT_TRUE(r.contains("actions")) << r.dump().substr(0, 500);
  for (const char* id : {"step-time-r0", "step-partition-r0"}) {
    const json& c = r["actions"][id];
    EXPECT_GT(c["fill"].get<double>(), 0.8) << id;  // the largest steady step at 1/1.1 of the plot
    EXPECT_GE(c["marks"].get<int>(), 1) << id;
  }
}

TEST(HtmlReport, CpuOnlyTraceHasNoGpuSection) {
  const Analysis a = run_pipeline({std::string(STEPSCOPE_SOURCE_DIR) + "/examples/cpu_training_step.pt.trace.json.gz"});
  const json r = render(render_html(a.result), "report-cpu");
  expect_clean_load(r);
  expect_drawn(r, "mean-partition");
  expect_drawn(r, "step-partition-r0");
  EXPECT_EQ(chart(r, "gpu-idle"), nullptr);
  EXPECT_EQ(chart(r, "kernel-classes"), nullptr);
}

TEST(HtmlReport, FootgunFindingsShowTheirEvidenceAndGain) {
  TempDir dir("html-footgun");
  const auto files = generate(dir.path, "cudnn-autotune");
  ASSERT_EQ(files.size(), 1u);
  const Analysis a = run_pipeline(files);
  const json r = render(render_html(a.result), "report-footgun");
  expect_clean_load(r);
  const std::string text = r["dom"]["text"];
  std::size_t footguns = 0;
  for (const auto& f : a.result.diagnosis.findings) {
    if (!f.footgun) continue;
    ++footguns;
    EXPECT_NE(text.find(finding_text(f)), std::string::npos) << finding_id(f);
    for (const auto& e : f.evidence) EXPECT_NE(text.find(e), std::string::npos) << finding_id(f) << ": " << e;
    if (f.gain_ns > 0) {
      EXPECT_NE(text.find(fmt::format("up to {:.2f}x", f.speedup)), std::string::npos) << finding_id(f);
    }
  }
  EXPECT_GT(footguns, 0u);
}

// Kernel, op, thread and file names chosen to break out of text, attributes and SVG.
const std::string kHostile = R"(<script>window.__pwned=1;alert(1)</script>"'</svg><img src=x onerror=alert(2)>&amp;)";

std::string hostile_trace() {
  json events = json::array();
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", kHostile}}}});
  int corr = 1;
  for (int s = 0; s < 4; ++s) {
    const double t0 = 1000.0 * s;
    events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", fmt::format("ProfilerStep#{}", s)}, {"pid", 1}, {"tid", 1},
                      {"ts", t0}, {"dur", 900}});
    events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", kHostile}, {"pid", 1}, {"tid", 1}, {"ts", t0 + 10}, {"dur", 300}});
    for (int k = 0; k < 2; ++k) {
      const std::string kernel = k == 0 ? kHostile : "ampere_sgemm_128x64_nn";
      events.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"pid", 1}, {"tid", 1},
                        {"ts", t0 + 20 + 5 * k}, {"dur", 4}, {"args", {{"correlation", corr}}}});
      events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kernel}, {"pid", 0}, {"tid", 7}, {"ts", t0 + 100 + 300 * k},
                        {"dur", 250}, {"args", {{"correlation", corr}, {"stream", 7}, {"device", 0}}}});
      ++corr;
    }
  }
  return json{{"schemaVersion", 1}, {"traceEvents", events}}.dump();
}

TEST(HtmlReport, HostileNamesRunNoScriptAndShowAsText) {
  TempDir dir("html-hostile");
  const fs::path trace = dir.path / "evil<b>'x'.pt.trace.json";
  write_file(trace, hostile_trace());
  const Analysis a = run_pipeline({trace.string()});
  const std::string html = render_html(a.result);
  // One script element, the page's own (its CSP hash allows nothing else); no name made another.
  const std::size_t script = html.find("<script");
  ASSERT_NE(script, std::string::npos);
  EXPECT_EQ(html.find("<script", script + 1), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  const json r = render(html, "report-hostile");
  expect_clean_load(r);
  // The names are on the page as text, byte for byte: in the kernel table, the main thread, the path.
  const std::string all = r["dom"]["textContent"];
  EXPECT_NE(all.find(kHostile), std::string::npos);
  bool in_kernel_table = false, path_shown = false;
  for (const auto& n : r["dom"]["names"]) {
    in_kernel_table = in_kernel_table || n == kHostile;
    path_shown = path_shown || n.get<std::string>().find(trace.string()) != std::string::npos;
  }
  EXPECT_TRUE(in_kernel_table);
  EXPECT_TRUE(path_shown);
  for (const char* id : {"mean-partition", "step-partition-r0", "kernel-classes"}) expect_drawn(r, id);
}

TEST(HtmlReport, DiffPageShowsTheChangesAndBothSides) {
  TempDir dir_a("html-diff-a"), dir_b("html-diff-b");
  const auto before = generate(dir_a.path, "input-bound");
  const auto after = generate(dir_b.path, "input-bound", "--num-workers 8 --fetch-us 120");
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(after.size(), 1u);
  // The input-bound job before and after its loader got workers.
  DiffResult d = diff_runs(run_pipeline(before), run_pipeline(after));
  d.base_label = "before/<i>run</i>";
  d.test_label = "after";
  ASSERT_TRUE(d.bottleneck_moved);
  const json r = render(render_diff_html(d), "diff");
  expect_clean_load(r);
  std::size_t changed = 0;
  for (const auto& c : d.categories) changed += c.base_ns > 0 || c.test_ns > 0;
  expect_drawn(r, "diff-categories");
  EXPECT_EQ((*chart(r, "diff-categories"))["rects"].get<std::size_t>(), changed);
  expect_drawn(r, "diff-mean-partition");
  for (const char* side : {"base-", "test-"})
    for (const char* id : {"mean-partition", "step-partition-r0", "step-time-r0", "kernel-classes"}) expect_drawn(r, std::string(side) + id);
  const std::string text = r["dom"]["text"];
  EXPECT_NE(text.find(d.headline), std::string::npos);
  EXPECT_NE(text.find(d.base.diagnosis.verdict.headline), std::string::npos);
  EXPECT_NE(text.find(d.test.diagnosis.verdict.headline), std::string::npos);
  EXPECT_NE(r["dom"]["textContent"].get<std::string>().find("before/<i>run</i>"), std::string::npos);
  EXPECT_NE(text.find(fmt::format("The bottleneck moved from {} to {}", bound_label(d.base_bound), bound_label(d.test_bound))),
            std::string::npos);
}

}  // namespace
}  // namespace stepscope

namespace stepscope {
namespace {

TEST(HtmlReport, DiffCommandWritesThePage) {
  html_test::TempDir dir("html-diff-cli");
  const auto base = html_test::generate(dir.path / "a", "sync-stall");
  const auto test = html_test::generate(dir.path / "b", "sync-stall", "--mid-sync 0");
  ASSERT_EQ(base.size(), 1u);
  ASSERT_EQ(test.size(), 1u);
  const auto page = dir.path / "diff.html";
  const std::string cmd = fmt::format("'{}/stepscope' diff -q '{}' '{}' --html '{}' >/dev/null 2>&1", STEPSCOPE_BINARY_DIR, base[0],
                                      test[0], page.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string html = html_test::read_file(page);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"id=\"diff-categories\"", "id=\"base-step-partition-r0\"", "id=\"test-step-partition-r0\""})
    EXPECT_NE(html.find(id), std::string::npos) << id;
}

}  // namespace
}  // namespace stepscope
