// The page's what-if section: each rank's replay error and the plan's predicted step beside the
// recorded one, held to the analysis it renders.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <string>

#include "stepscope/html.hpp"
#include "stepscope/pipeline.hpp"

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
  ASSERT_TRUE(r.whatif.at(0).present);
  const LeverPlan& plan = r.diagnosis.plan;
  ASSERT_FALSE(plan.entries.empty());
  const std::string s = section_of(render_html(r));
  ASSERT_FALSE(s.empty());
  EXPECT_NE(s.find(fmt::format("<td class=\"num\">{:.1f}%</td>", 100 * r.whatif[0].replay_error_mean)), std::string::npos);
  // One bar for the recording, one per lever of the plan, each as long as its step.
  EXPECT_EQ(count(s, "<rect "), plan.entries.size() + 1);
  EXPECT_NE(s.find(fmt::format("width=\"{:.1f}\"", 600 * plan.entries.back().step_ns / plan.step_ns)), std::string::npos);
  EXPECT_EQ(s.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace stepscope
