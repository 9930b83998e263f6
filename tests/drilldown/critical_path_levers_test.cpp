// Levers say how much of the analysed step's critical path is time they act on.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "stepscope/pipeline.hpp"

namespace stepscope {
namespace {

const Lever* lever(const DiagnosedResult& r, const std::string& id) {
  auto it = std::find_if(r.diagnosis.levers.begin(), r.diagnosis.levers.end(), [&](const Lever& l) { return lever_name(l.id) == id; });
  return it == r.diagnosis.levers.end() ? nullptr : &*it;
}

TEST(CriticalPathLevers, ShareOfThePathComesFromTheKindsTheLeverActsOn) {
  // DDP trace whose step #4 path is all host time (HTA: cpu_bound 100%).
  const auto p = std::filesystem::path(STEPSCOPE_FIXTURES_DIR) / "hta/df_index_resolver/df_index_resolver.json.gz";
  const Analysis a = analyze_paths({p.string()});
  const DrillDown& d = a.result.ranks.at(0).drilldown.value();
  ASSERT_TRUE(d.critical_path.success) << d.critical_path.error;
  const double host = static_cast<double>(d.critical_path.by_kind[static_cast<int>(CpKind::Host)].duration +
                                          d.critical_path.by_kind[static_cast<int>(CpKind::Launch)].duration) /
                      static_cast<double>(d.critical_path.length);
  const double comm = static_cast<double>(d.critical_path.by_kind[static_cast<int>(CpKind::Communication)].duration) /
                      static_cast<double>(d.critical_path.length);
  for (const Lever& l : a.result.diagnosis.levers) {
    if (l.acts_on == Bound::HostLaunch) {
      EXPECT_DOUBLE_EQ(l.critical_path_share, host) << lever_name(l.id);
    }
    if (l.acts_on == Bound::Communication) {
      EXPECT_DOUBLE_EQ(l.critical_path_share, comm) << lever_name(l.id);
    }
  }
  const Lever* graphs = lever(a.result, "cuda_graphs");
  ASSERT_NE(graphs, nullptr);
  EXPECT_GT(graphs->critical_path_share, 0.99);
  // Operators on the path are flagged; the step's root op is.
  const auto& ops = d.operators.at(0).rows;
  EXPECT_TRUE(std::any_of(ops.begin(), ops.end(), [](const OperatorRow& r) { return r.on_critical_path; }));
  EXPECT_TRUE(std::any_of(ops.begin(), ops.end(), [](const OperatorRow& r) { return !r.on_critical_path; }));
}

TEST(CriticalPathLevers, NoPathMeansNoShare) {
  // A CPU-only trace: HTA's critical path needs GPU events.
  const auto p = std::filesystem::path(STEPSCOPE_FIXTURES_DIR) / "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz";
  const Analysis a = analyze_paths({p.string()});
  EXPECT_FALSE(a.result.ranks.at(0).drilldown.value().critical_path.success);
  for (const Lever& l : a.result.diagnosis.levers) EXPECT_EQ(l.critical_path_share, -1) << lever_name(l.id);
}

}  // namespace
}  // namespace stepscope
