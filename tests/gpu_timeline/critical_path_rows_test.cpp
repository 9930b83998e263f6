// The critical path's rows (HTA's trace dataframe after its loader), on hand-built traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

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

// HTA's series as first written here: every +1 and -1 in one list, stably sorted by (stream, ts)
// with the launches pushed first, then cumulated per stream.
std::vector<std::int32_t> queue_lengths_by_one_sort(const RankTrace& t, const cp::Rows& rows) {
  const std::vector<cp::CpRow>& r = rows.rows;
  struct Change {
    ns_t ts;
    std::int64_t stream;
    std::int32_t row, delta;
  };
  std::vector<Change> changes;
  std::vector<std::int64_t> launch_corr;
  for (std::size_t k = 0; k < r.size(); ++k)
    if (!r[k].on_stream() && (r[k].flags & cp::kLaunchName) && r[k].partner >= 0) {
      changes.push_back({rows.clock.ts(r[k]), cp::stream_of(t, r[static_cast<std::size_t>(r[k].partner)]), static_cast<std::int32_t>(k), 1});
      launch_corr.push_back(cp::correlation_of(t, r[k]));
    }
  for (std::size_t k = 0; k < r.size(); ++k)
    if (r[k].on_stream() && std::count(launch_corr.begin(), launch_corr.end(), cp::correlation_of(t, r[k])))
      changes.push_back({rows.clock.ts(r[k]), cp::stream_of(t, r[k]), static_cast<std::int32_t>(k), -1});
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.stream != b.stream ? a.stream < b.stream : a.ts < b.ts;
  });
  std::vector<std::int32_t> q(r.size(), -1);
  std::int32_t running = 0;
  for (std::size_t k = 0; k < changes.size(); ++k) {
    if (k == 0 || changes[k].stream != changes[k - 1].stream) running = 0;
    running += changes[k].delta;
    q[static_cast<std::size_t>(changes[k].row)] = running;
  }
  return q;
}

// The per-stream merge gives what one stable sort of all changes gives, ties included: launch
// calls and kernels drawn on three streams from a handful of times, so that many coincide, with
// kernels whose correlation no launch has and launches out of time order.
TEST(CriticalPathRows, QueueLengthsMatchOneStableSortOfEveryChange) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    TraceBuilder b;
    std::uniform_int_distribution<int> when(0, 12), stream(7, 9), kind(0, 9);
    for (std::int64_t corr = 1; corr <= 200; ++corr) {
      const double call = when(rng), start = when(rng);
      const int k = kind(rng);
      if (k == 0) b.kernel("orphan", start, 1, stream(rng), corr + 100000);
      else if (k == 1) b.runtime("cudaLaunchKernel", call, 1, corr);  // no kernel
      else b.launch("k", call, 1, start, 1, stream(rng), corr);
    }
    RankTrace& t = b.trace();
    t.build_indexes();
    const hta::View view = hta::build_view(t, GpuTimelineOptions{});
    const cp::Rows rows = cp::build_rows(t, CriticalPathOptions{}, view.load);
    std::vector<std::int32_t> every(rows.rows.size());
    for (std::size_t k = 0; k < every.size(); ++k) every[k] = static_cast<std::int32_t>(k);
    const cp::QueueLengths q = cp::queue_length_at_rows(t, rows, every);
    std::vector<std::int32_t> at_each;
    for (std::int32_t k : every) at_each.push_back(q.at(k));
    ASSERT_EQ(at_each, queue_lengths_by_one_sort(t, rows)) << "round " << round;
    // Asked for some rows, the others read -1.
    const cp::QueueLengths odd = cp::queue_length_at_rows(t, rows, {1, 3, 5});
    for (std::int32_t k = 0; k < static_cast<std::int32_t>(every.size()) && k < 8; ++k)
      ASSERT_EQ(odd.at(k), k % 2 == 1 && k <= 5 ? at_each[static_cast<std::size_t>(k)] : -1) << "round " << round << " row " << k;
  }
}

}  // namespace
}  // namespace stepscope
