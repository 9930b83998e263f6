// Each step's category times are summed as the partition's sweep runs, without its segments;
// partition_runs re-runs the sweep and cuts the kept segments into each window. The two must
// agree, also where windows overlap (GPU work draining into the next step's host span).
#include <gtest/gtest.h>

#include <string>

#include "stepscope/facts.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/partition.hpp"

namespace stepscope {
namespace {

class WindowTimes : public ::testing::TestWithParam<std::string> {};

TEST_P(WindowTimes, SumsEqualTheRunsOfEachWindow) {
  IngestOptions io;
  io.jobs = 1;
  const Trace t = read_traces({std::string(STEPSCOPE_FIXTURES_DIR) + "/" + GetParam()}, io);
  const RankTrace& rank = t.ranks.at(0);
  const RankPartition p = partition_rank(rank, compute_facts(rank));
  const auto runs = partition_runs(rank, p.steps);
  ASSERT_EQ(runs.size(), p.steps.size());
  ASSERT_GE(p.steps.size(), 2u);
  bool overlap = false;
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    CategoryTimes summed{};
    for (const CategoryRun& r : runs[k]) summed[static_cast<std::size_t>(r.category)] += r.end - r.start;
    EXPECT_EQ(summed, p.steps[k].ns) << "step " << k;
    overlap = overlap || (k > 0 && p.steps[k - 1].end > p.steps[k].start);
  }
  EXPECT_TRUE(overlap) << "the fixture no longer has overlapping windows";
}

// Fixtures whose windows overlap: the text report says "GPU work drains past the host's step end".
INSTANTIATE_TEST_SUITE_P(Fixtures, WindowTimes,
                         ::testing::Values("param/linear_kineto.json.gz", "tracelens/mi300/train_resnet18.json.gz",
                                           "hta/trace_diff/control/control.json.gz"));

}  // namespace
}  // namespace stepscope

namespace stepscope {
namespace {

StepPartition span(ns_t host_start, ns_t host_end, ns_t start, ns_t end) {
  StepPartition s;
  s.host_start = host_start, s.host_end = host_end, s.start = start, s.end = end;
  return s;
}

// With the host running ahead, windows sit on the GPU side, after the host spans that issued
// them: host times are placed by host span, and a time between spans belongs to no step.
TEST(HostSpanStep, PlacesHostTimesByHostSpanNotByWindow) {
  const std::vector<StepPartition> steps = {span(0, 10, 25, 40), span(10, 20, 40, 55), span(22, 30, 55, 70)};
  EXPECT_EQ(host_span_step(steps, 0), 0);
  EXPECT_EQ(host_span_step(steps, 12), 1);  // before every GPU-side window
  EXPECT_EQ(host_span_step(steps, 20), -1);  // between spans
  EXPECT_EQ(host_span_step(steps, 29), 2);
  EXPECT_EQ(host_span_step(steps, 30), -1);  // ends are open
  EXPECT_EQ(host_span_step(steps, -5), -1);
  EXPECT_EQ(host_span_step({}, 5), -1);
}

}  // namespace
}  // namespace stepscope
