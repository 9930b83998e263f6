// Reports at a hundred ranks: the text lists a sample of them (the straggler, the fastest, the
// slowest and quantiles between), `--ranks all` every one, and the HTML heatmap groups them.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "stepscope/diagnose.hpp"
#include "stepscope/html.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

constexpr int kRanks = 100;
constexpr int kStraggler = 57;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A hundred ranks made from the eight of a real job, rank k's steady step 0.1% x k longer than
// rank 0's, so rank 0 is the fastest and rank 99 the slowest; rank 57 is named the straggler.
DiagnosedResult hundred_ranks() {
  PipelineOptions po;
  po.ingest.jobs = po.analyze.jobs = 1;
  po.keep_summary = true;
  const SummaryFile job = analyze_paths({std::string(STEPSCOPE_FIXTURES_DIR) + "/param/dlrm_8rank/kineto"}, po).summary;
  std::vector<RankAnalysis> ranks;
  for (int k = 0; k < kRanks; ++k) {
    RankAnalysis a = job.ranks[static_cast<std::size_t>(k) % job.ranks.size()];
    a.ingest.rank = k;
    a.partition.steady_steps = std::max<std::size_t>(a.partition.steady_steps, 1);
    a.partition.steady_mean_ns = job.ranks[0].partition.steady_mean_ns * (1 + 0.001 * k);
    ranks.push_back(std::move(a));
  }
  DiagnosedResult r{combine_ranks(std::move(ranks), {}), {}};
  r.job.rank_comparison.straggler = kStraggler;
  r.diagnosis = diagnose(r);
  return r;
}

// A line of `text` that holds every one of `parts`.
bool has_line(const std::string& text, std::initializer_list<const char*> parts) {
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    if (std::all_of(parts.begin(), parts.end(), [&](const char* p) { return line.find(p) != std::string::npos; })) return true;
    start = end + 1;
  }
  return false;
}

const DiagnosedResult& result() {
  static const DiagnosedResult r = hundred_ranks();
  return r;
}

TEST(RankListing, TheStragglerTheExtremesAndQuantilesAtMostTheLimit) {
  const auto listed = listed_ranks(result(), 16);
  EXPECT_LE(listed.size(), 16u);
  EXPECT_GE(listed.size(), 12u);
  EXPECT_TRUE(std::is_sorted(listed.begin(), listed.end()));
  for (std::size_t must : {std::size_t{0}, std::size_t{kStraggler}, std::size_t{kRanks - 1}})
    EXPECT_NE(std::find(listed.begin(), listed.end(), must), listed.end()) << must;
  EXPECT_EQ(listed_ranks(result(), 0).size(), static_cast<std::size_t>(kRanks));
  EXPECT_EQ(listed_ranks(result(), kRanks).size(), static_cast<std::size_t>(kRanks));
  EXPECT_DOUBLE_EQ(step_quantile(result(), 0), 0.0);
  EXPECT_DOUBLE_EQ(step_quantile(result(), kRanks - 1), 1.0);
  EXPECT_DOUBLE_EQ(step_quantile(result(), 33), 33.0 / (kRanks - 1));
}

TEST(RankListing, TheTextListsTheSampleAndSaysHowManyItLeftOut) {
  TextOptions o;
  o.ranks = 16;
  const std::string text = render_text(result(), o);
  const std::size_t listed = listed_ranks(result(), 16).size();
  EXPECT_NE(text.find("... and " + std::to_string(kRanks - listed) + " more ranks (--ranks all lists every one)"),
            std::string::npos);
  EXPECT_NE(text.find("\nrank 0: "), std::string::npos);
  EXPECT_EQ(text.find("\nrank 1: "), std::string::npos);
  // The ranks table: the fastest at p0, the slowest at p100, the straggler marked at its quantile.
  EXPECT_TRUE(has_line(text, {"     0 ", " p0 ", "ms"})) << text;
  EXPECT_TRUE(has_line(text, {"    99 ", " p100 "})) << text;
  EXPECT_TRUE(has_line(text, {"    57 ", " p58 ", "<- straggler"})) << text;
  EXPECT_NE(text.find(std::to_string(listed) + " of " + std::to_string(kRanks) + ": the straggler"), std::string::npos);
}

TEST(RankListing, AllListsEveryRankAndNoQuantiles) {
  TextOptions o;
  o.ranks = 0;
  const std::string text = render_text(result(), o);
  EXPECT_EQ(text.find("more ranks"), std::string::npos);
  for (int k = 0; k < kRanks; ++k) EXPECT_NE(text.find("\nrank " + std::to_string(k) + ": "), std::string::npos) << k;
  EXPECT_EQ(text.find(" p100 "), std::string::npos);
}

TEST(RankListing, TheHtmlHeatmapGroupsRanksAndKeepsTheStragglerApart) {
  const std::string html = render_html(result());
  EXPECT_NE(html.find("rank 57 (straggler)"), std::string::npos);
  // 99 other ranks in 32 groups of 3 or 4, fastest first.
  EXPECT_NE(html.find("p0-p3 (3 ranks)"), std::string::npos);
  EXPECT_NE(html.find("p96-p100 (4 ranks)"), std::string::npos);
  EXPECT_EQ(count(html, " ranks)<"), 32u);
  // The per-rank step charts: the listed ranks only.
  EXPECT_EQ(count(html, "<summary>rank "), listed_ranks(result(), kListedRanks).size());
}

}  // namespace
}  // namespace stepscope

namespace stepscope {
namespace {

std::string pieces_of(const DiagnosedResult& r, const JsonOptions& opts) {
  std::string out;
  write_json_report(r, opts, [&](std::string_view piece) { out.append(piece); });
  return out;
}

std::string whole_of(const DiagnosedResult& r, const JsonOptions& opts) {
  return to_json(r, opts).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// At a hundred ranks the JSON holds the drill-down of the listed ones, and `--ranks all` every
// rank's; written rank by rank, it is the same bytes as the whole document dumped at once.
TEST(JsonReport, HoldsTheListedRanksDrillDownAndIsWrittenRankByRankAsDumpedWhole) {
  for (std::size_t limit : {std::size_t{16}, std::size_t{0}}) {
    const JsonOptions opts{.drilldown_ranks = limit};
    const std::string text = pieces_of(result(), opts);
    EXPECT_EQ(text, whole_of(result(), opts)) << limit;
    const auto j = nlohmann::json::parse(text);
    std::size_t drilled = 0;
    for (const auto& rank : j["ranks"]) drilled += rank.contains("drilldown") ? 1 : 0;
    EXPECT_EQ(drilled, limit ? listed_ranks(result(), limit).size() : std::size_t{kRanks});
    EXPECT_EQ(j["drilldown_ranks"].size(), drilled);
  }
  for (const char* one : {"/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "/param/dlrm_8rank/kineto"}) {
    const Analysis a = analyze_paths({std::string(STEPSCOPE_FIXTURES_DIR) + one});
    EXPECT_EQ(pieces_of(a.result, {}), whole_of(a.result, {})) << one;
  }
}

}  // namespace
}  // namespace stepscope
