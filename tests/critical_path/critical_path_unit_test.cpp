// The critical path on tiny hand-built traces: one rule of HTA's graph per test.
#include <gtest/gtest.h>

#include "gpu_timeline/trace_builder.hpp"
#include "stepscope/critical_path.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

using test::TraceBuilder;
using test::us;

CriticalPathOptions whole_trace() {
  CriticalPathOptions o;
  o.annotation = "";
  return o;
}

std::int64_t count(const CriticalPath& cp, CpEdgeType t) { return cp.edges_by_type[static_cast<std::size_t>(t)]; }

const CpPathEdge* find_edge(const CriticalPath& cp, CpEdgeType t) {
  for (const CpPathEdge& e : cp.path)
    if (e.type == t) return &e;
  return nullptr;
}

// The legacy autograd-profiler array (the shipped example) writes no "cat": HTA reads no row of
// it, and the path says so rather than calling the trace empty.
TEST(CriticalPathUnit, ATraceWithoutCategoriesSaysWhyItHasNoPath) {
  const Trace t = read_traces({std::string(STEPSCOPE_SOURCE_DIR) + "/examples/cpu_training_step.pt.trace.json.gz"});
  ASSERT_GT(t.ranks.at(0).events.size(), 0u);
  const CriticalPath cp = analyze_critical_path(t.ranks.at(0), whole_trace());
  EXPECT_FALSE(cp.success);
  EXPECT_NE(cp.error.find("no event has a \"cat\" field"), std::string::npos) << cp.error;
}

// An op launches a kernel on an idle stream: the wait from the launch call's start to the
// kernel's start is a launch delay on the path.
TEST(CriticalPathUnit, LaunchOnEmptyQueueGivesLaunchDelayEdge) {
  TraceBuilder b;
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::relu", us(0), us(50));
  b.launch("relu_kernel", 10, 10, 100, 100, 7, 1);
  const CriticalPath cp = analyze_critical_path(b.trace(), whole_trace());
  ASSERT_TRUE(cp.success) << cp.error;
  EXPECT_EQ(count(cp, CpEdgeType::KernelLaunchDelay), 1);
  const CpPathEdge* launch = find_edge(cp, CpEdgeType::KernelLaunchDelay);
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->duration, us(90));  // kernel start 100 - launch call start 10
  EXPECT_EQ(launch->bound_by, CpBoundBy::GpuKernelLaunchOverhead);
  EXPECT_EQ(launch->kind, CpKind::Launch);
  // relu start → launch start (10) + launch delay (90) + kernel (100).
  EXPECT_EQ(cp.length, us(200));
  EXPECT_EQ(cp.by_kind[static_cast<std::size_t>(CpKind::Compute)].duration, us(100));
}

// cudaStreamSynchronize waits for the last kernel on its stream: a sync edge joins the
// kernel's end to the call's end, and the call's own wait weighs nothing.
TEST(CriticalPathUnit, StreamSynchronizeGetsSyncEdgeFromLastKernel) {
  TraceBuilder b;
  b.launch("gemm", 10, 5, 30, 470, 7, 1);
  b.runtime("cudaStreamSynchronize", 40, 470, 2);
  b.add_ns(Kind::GpuSync, "cuda_sync", "Stream Sync", us(40), us(470), 7, 2);
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::add", us(520), us(10));  // host work after the wait
  const CriticalPath cp = analyze_critical_path(b.trace(), whole_trace());
  ASSERT_TRUE(cp.success) << cp.error;
  EXPECT_EQ(count(cp, CpEdgeType::SyncDependency), 1);
  const CpPathEdge* sync = find_edge(cp, CpEdgeType::SyncDependency);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->begin_ts, us(500));  // the kernel's end
  EXPECT_EQ(sync->end_ts, us(510));    // the cudaStreamSynchronize's end
  EXPECT_EQ(sync->duration, 0);
  // launch delay 20 + kernel 470 + aten::add 10; the sync call contributes no time of its own.
  EXPECT_EQ(cp.length, us(500));
  EXPECT_EQ(cp.by_kind[static_cast<std::size_t>(CpKind::Host)].duration, us(10));
  EXPECT_EQ(cp.by_kind[static_cast<std::size_t>(CpKind::Sync)].duration, 0);
}

// Two kernels on one stream, the second launched while the first was queued: the gap between
// them is a kernel-kernel delay, unless it reaches HTA's 1,500 µs threshold.
TEST(CriticalPathUnit, LongGpuGapGetsNoKernelKernelEdge) {
  auto build = [](double second_start) {
    TraceBuilder b;
    b.launch("k1", 10, 5, 100, 100, 7, 1);
    b.launch("k2", 150, 5, second_start, 100, 7, 2);
    return analyze_critical_path(b.trace(), whole_trace());
  };
  const CriticalPath near = build(300);
  ASSERT_TRUE(near.success) << near.error;
  EXPECT_EQ(count(near, CpEdgeType::KernelKernelDelay), 1);
  const CpPathEdge* gap = find_edge(near, CpEdgeType::KernelKernelDelay);
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->duration, us(100));
  EXPECT_EQ(gap->kind, CpKind::Idle);

  const CriticalPath far = build(2000);  // 1,800 µs after k1 ends
  ASSERT_TRUE(far.success) << far.error;
  EXPECT_EQ(count(far, CpEdgeType::KernelKernelDelay), 0);
  EXPECT_EQ(count(far, CpEdgeType::KernelLaunchDelay), 1);  // only k1's
}

TEST(CriticalPathUnit, NoGpuEventsIsAnErrorNotACrash) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::add", us(10), us(20));
  CriticalPathOptions o;
  o.annotation = "ProfilerStep#1";
  const CriticalPath cp = analyze_critical_path(b.trace(), o);
  EXPECT_FALSE(cp.success);
  EXPECT_FALSE(cp.error.empty());
  CriticalPathOptions nope;
  nope.annotation = "nope";
  const CriticalPath missing = analyze_critical_path(b.trace(), nope);
  EXPECT_FALSE(missing.success);
}

TEST(CriticalPathUnit, PrimaryCaseIsTheMiddleKeptStep) {
  TraceBuilder b;
  for (int n = 1; n <= 4; ++n) b.step(n, n * 100.0, 90);
  // Steps 1..3 are kept (HTA drops the last), the middle one is index 3 / 2 = 1: step 2.
  EXPECT_EQ(primary_critical_path_options(b.trace()).annotation, "ProfilerStep#2");
  TraceBuilder none;
  none.add_ns(Kind::CpuOp, "cpu_op", "aten::add", us(10), us(20));
  EXPECT_EQ(primary_critical_path_options(none.trace()).annotation, "");
}

}  // namespace
}  // namespace stepscope
