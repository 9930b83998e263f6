// The page's what-if section: each rank's replay error and the plan's predicted step beside the
// recorded one, held to the analysis it renders.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <string>

#include "stepscope/html.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/whatif.hpp"

namespace stepscope {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

std::string section_of(const std::string& page) {
  const auto from = page.find("id=\"whatif\"");
  if (from == std::string::npos) return "";
  return page.substr(from, page.find("<h2", from + 1) - from);
}

TEST(HtmlWhatIf, ReplayErrorAndThePlansStepBesideTheRecordedOne) {
  PipelineOptions po;
  po.keep_trace = false;
  const DiagnosedResult r =
      analyze_paths({std::string(STEPSCOPE_FIXTURES_DIR) + "/cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz"}, po).result;
  ASSERT_TRUE(r.ranks.at(0).whatif.present);
  const LeverPlan& plan = r.diagnosis.plan;
  ASSERT_FALSE(plan.entries.empty());
  const std::string s = section_of(render_html(r));
  ASSERT_FALSE(s.empty());
  EXPECT_NE(s.find(fmt::format("<td class=\"num\">{:.1f}%</td>", 100 * r.ranks[0].whatif.replay_error_mean)), std::string::npos);
  // One bar for the recording, one per lever of the plan, each as long as its step.
  const std::string bars = s.substr(s.find("<svg class=\"plan\""), s.find("</svg>") - s.find("<svg class=\"plan\""));
  EXPECT_EQ(count(bars, "<rect "), plan.entries.size() + 1);
  EXPECT_NE(s.find(fmt::format("width=\"{:.1f}\"", 600 * plan.entries.back().step_ns / plan.step_ns)), std::string::npos);
  EXPECT_EQ(s.find("<script"), std::string::npos);
}

// The plan's predicted timeline beside the recorded one: each replayed step a block on one time
// axis, the predicted ones ending where the plan's speedup puts them.
TEST(HtmlWhatIf, ThePlansTimelineBesideTheRecordedOne) {
  PipelineOptions po;
  po.keep_trace = false;
  const DiagnosedResult r =
      analyze_paths({std::string(STEPSCOPE_FIXTURES_DIR) + "/cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz"}, po).result;
  const whatif::RankWhatIf& w = r.ranks.at(0).whatif;
  ASSERT_TRUE(w.timeline.present);
  const std::string s = section_of(render_html(r));
  const auto from = s.find("id=\"whatif-timeline\"");
  ASSERT_NE(from, std::string::npos);
  const std::string svg = s.substr(from, s.find("</svg>", from) - from);
  EXPECT_EQ(count(svg, "<rect "), 2 * w.steps.size());
  // A row for the host's waits and one for the GPU where they happened, recorded and predicted.
  EXPECT_EQ(count(svg, "<path "), 2 * (!w.timeline.recorded.host_waits.empty() + !w.timeline.recorded.gpu.empty()));
  EXPECT_FALSE(w.timeline.recorded.host_waits.empty());  // the loader's waits
  // The recorded steps fill the axis (150 to 750); the predicted ones end at 1 / speedup of it.
  const whatif::TimeSpan& last = w.timeline.predicted.steps.back();
  const whatif::TimeSpan& first = w.timeline.recorded.steps.front();
  const whatif::TimeSpan& end = w.timeline.recorded.steps.back();
  EXPECT_NEAR(static_cast<double>(last.end - first.start) / static_cast<double>(end.end - first.start), 1 / w.plan.back().speedup,
              1e-6);
  EXPECT_LT(svg.size(), 6000u);  // the page's budget: a few kB a section
}

}  // namespace
}  // namespace stepscope
