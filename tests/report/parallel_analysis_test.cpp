// Ranks are analysed in parallel: the result must not depend on how many threads did it.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <string>

#include "partition/support.hpp"
#include "stepscope/analysis.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/report.hpp"
#include "stepscope/threads.hpp"

namespace stepscope {
namespace {

std::string report_with_jobs(const Trace& t, int jobs) {
  AnalyzeOptions o;
  o.jobs = jobs;
  return to_json(diagnosed(analyze(t, o))).dump();
}

// One rule shares the threads among ranks, whether they are analysed after reading (analyze) or
// as each file is read (the pipeline).
TEST(ParallelAnalysis, RankThreadsShareTheJobs) {
  struct Case {
    int jobs;
    std::size_t ranks;
    int each;
  };
  for (const Case c : {Case{4, 1, 4}, Case{4, 2, 2}, Case{4, 3, 1}, Case{8, 3, 2}, Case{2, 64, 1}, Case{4, 0, 4},
                       Case{0, 1, threads_for(0)}})
    EXPECT_EQ(rank_threads_for(c.jobs, c.ranks), c.each) << c.jobs << " jobs, " << c.ranks << " ranks";
}

// With 8 jobs the 4 ranks get 2 threads each: ranks side by side, and each rank's own analyses.
TEST(ParallelAnalysis, SameReportOnOneThreadAndMany) {
  const auto dir = test::generate("straggler", "--ranks 4 --steps 5");
  ASSERT_FALSE(dir.empty());
  const Trace t = read_traces({dir.string()});
  ASSERT_EQ(t.ranks.size(), 4u);
  const std::string serial = report_with_jobs(t, 1);
  EXPECT_EQ(serial, report_with_jobs(t, 3));
  EXPECT_EQ(serial, report_with_jobs(t, 8));
}

// A lone rank shares the threads among its own analyses: on one thread everything runs in turn;
// on two the critical path and then the step analyses run beside the GPU timeline and the
// drill-down; on three the step analyses get a thread of their own. The report is the same.
TEST(ParallelAnalysis, OneRankSameReportOnOneTwoAndThreeThreads) {
  const Trace t = read_traces(
      {std::string(STEPSCOPE_FIXTURES_DIR) + "/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"});
  ASSERT_EQ(t.ranks.size(), 1u);
  const std::string serial = report_with_jobs(t, 1);
  EXPECT_NE(serial.find("\"critical_path\""), std::string::npos);
  EXPECT_EQ(serial, report_with_jobs(t, 2));
  EXPECT_EQ(serial, report_with_jobs(t, 3));
}

}  // namespace
}  // namespace stepscope
