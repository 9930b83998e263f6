// The analyze reports carry the GPU timeline: the JSON report holds HTA's own numbers for a real
// trace (the oracle HTA produced for it), and the text report shows the section.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <fstream>

#include "stepscope/analysis.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

const std::string kTrace = std::string(STEPSCOPE_FIXTURES_DIR) +
                           "/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
const std::string kOracle = std::string(STEPSCOPE_ORACLES_DIR) +
                            "/hta/hta__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.json";

TEST(AnalyzeReport, JsonCarriesHtaTemporalBreakdownPerRank) {
  DiagnosedResult r{analyze(read_traces({kTrace})), {}};
  nlohmann::json j = to_json(r);
  nlohmann::json oracle = nlohmann::json::parse(std::ifstream(kOracle));
  const auto& want = oracle["results"]["get_temporal_breakdown"][0];
  const auto& got = j["ranks"][0]["gpu_timeline"]["hta"]["temporal_breakdown"];
  // The report's one language (ns, shares 0..1) gives back HTA's figures exactly.
  EXPECT_DOUBLE_EQ(hta_percent(got["compute_time_share"].get<double>(), 2), want["compute_time_pctg"].get<double>());
  EXPECT_DOUBLE_EQ(got["idle_time_ns"].get<double>() / 1000.0, want["idle_time(us)"].get<double>());
  EXPECT_DOUBLE_EQ(got["kernel_time_ns"].get<double>() / 1000.0, want["kernel_time(us)"].get<double>());
  EXPECT_TRUE(j.contains("hta_kernel_types_all_ranks"));
  EXPECT_EQ(j["schema"], kJsonSchemaVersion);
}

TEST(AnalyzeReport, TextShowsVerdictFirstAndTheGpuTimeline) {
  DiagnosedResult r{analyze(read_traces({kTrace})), {}};
  std::string text = render_text(r);
  EXPECT_EQ(text.rfind("verdict:", 0), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("GPU timeline"), std::string::npos);
}

TEST(AnalyzeReport, CpuOnlyTraceHasNoGpuSection) {
  DiagnosedResult r{analyze(read_traces({std::string(STEPSCOPE_SOURCE_DIR) +
                                          "/examples/cpu_training_step.pt.trace.json.gz"})), {}};
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_FALSE(r.ranks[0].gpu_timeline.has_gpu_activity);
  EXPECT_EQ(render_text(r).find("GPU timeline"), std::string::npos);
}

}  // namespace
}  // namespace stepscope
