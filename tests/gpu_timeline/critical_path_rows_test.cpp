// The critical path's rows (HTA's trace dataframe after its loader), on hand-built traces.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/critical_path_internal.hpp"
#include "analysis/hta_view.hpp"
#include "trace_builder.hpp"

namespace stepscope {
namespace {

using test::TraceBuilder;
using test::us;

bool has_row_of(const cp::Rows& rows, std::uint32_t event) {
  return std::any_of(rows.rows.begin(), rows.rows.end(), [&](const cp::CpRow& r) { return r.event == event; });
}

// With two step names HTA drops the last step: it keeps host rows starting before it, then GPU
// rows whose correlation a kept host row has. A plain host row's correlation is -1, so a
// "Context Sync" row, which has none, stays. The path leaves plain rows outside its
// annotation's span out of its rows. Here every plain row before the last step lies outside
// that span (the annotation is in the last step), so only the carried -1 keeps the sync row.
//   ProfilerStep#1 [0, 100), ProfilerStep#2 [100, 200), aten::plain [10, 15)   plain, kept, left out
//   Context Sync [30, 35), no correlation                                      kept through the -1
//   my_window [150, 160)                                                        in the span, dropped
TEST(CriticalPathRows, APlainRowLeftOutOfTheSpanStillKeepsSyncRowsWithoutCorrelation) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.step(2, 100, 100);
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::plain", us(10), us(5));
  const std::uint32_t sync = b.add_ns(Kind::GpuSync, "cuda_sync", "Context Sync", us(30), us(5));
  const std::uint32_t window = b.add_ns(Kind::UserAnnotation, "user_annotation", "my_window", us(150), us(10));
  RankTrace& t = b.trace();
  t.build_indexes();
  CriticalPathOptions o;
  o.annotation = "my_window";
  const hta::View view = hta::build_view(t, GpuTimelineOptions{});
  ASSERT_TRUE(view.load.last_step_dropped);
  const cp::Rows rows = cp::build_rows(t, o, view.load);
  EXPECT_TRUE(has_row_of(rows, sync));
  EXPECT_FALSE(has_row_of(rows, window));  // in the last step: the filter drops it
}

}  // namespace
}  // namespace stepscope
