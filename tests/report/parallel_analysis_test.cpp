// Ranks are analysed in parallel: the result must not depend on how many threads did it.
#include <gtest/gtest.h>

#include "partition/support.hpp"
#include "stepscope/analysis.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

std::string report_with_jobs(const Trace& t, int jobs) {
  AnalyzeOptions o;
  o.jobs = jobs;
  AnalysisResult r = analyze(t, o);
  diagnose(r);
  return to_json(r).dump();
}

TEST(ParallelAnalysis, SameReportOnOneThreadAndMany) {
  const auto dir = test::generate("straggler", "--ranks 4 --steps 5");
  ASSERT_FALSE(dir.empty());
  const Trace t = read_traces({dir.string()});
  ASSERT_EQ(t.ranks.size(), 4u);
  const std::string serial = report_with_jobs(t, 1);
  EXPECT_EQ(serial, report_with_jobs(t, 3));
  EXPECT_EQ(serial, report_with_jobs(t, 8));
}

}  // namespace
}  // namespace stepscope
