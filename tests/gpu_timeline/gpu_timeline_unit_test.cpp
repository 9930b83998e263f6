// Unit tests on hand-built traces. Each expected value is worked out by hand in the comment
// above it from the event list, independently of the code under test.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "analysis/hta_view.hpp"
#include "report/gpu_timeline_json.hpp"
#include "report/gpu_timeline_text.hpp"
#include "stepscope/drilldown.hpp"
#include "stepscope/gpu_timeline.hpp"
#include "trace_builder.hpp"

namespace stepscope {
namespace {

using test::TraceBuilder;
using test::us;

const HtaKernelRow* find_row(const GpuTimeline& t, std::string_view name) {
  for (const auto& r : t.hta_kernels.top)
    if (r.name == name) return &r;
  return nullptr;
}

const HtaKernelTypeTime* find_type(const GpuTimeline& t, std::string_view label) {
  for (const auto& r : t.hta_kernels.types)
    if (r.label == label) return &r;
  return nullptr;
}

// Two compute streams overlapping, a copy, and an all-reduce whose second half runs under a
// compute kernel (all times µs):
//   s7  gemm       [0,100)        s8  elementwise [50,150)
//   s7  Memcpy     [200,220)      s9  nccl        [300,400)      s7  gemm2 [350,400)
TraceBuilder overlapping_streams() {
  TraceBuilder b;
  b.launch("ampere_sgemm_128x64_nn", 0, 5, 0, 100, 7, 1);
  b.launch("vectorized_elementwise_kernel", 10, 5, 50, 100, 8, 2);
  b.runtime("cudaMemcpyAsync", 190, 5, 3);
  b.copy("Memcpy HtoD (Pinned -> Device)", 200, 20, 7, CopyKind::HtoD, HostMem::Pinned, 2'000'000, 3);
  b.launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", 290, 5, 300, 100, 9, 4);
  b.launch("ampere_sgemm_64x64_tn", 340, 5, 350, 50, 7, 5);
  return b;
}

TEST(HtaTemporal, TwoStreamsOverlapAndCommHalfHidden) {
  TraceBuilder b = overlapping_streams();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  const auto& tb = t.hta_temporal;
  ASSERT_TRUE(tb.available);
  // Span 0..400. Union of all GPU rows: [0,150) + [200,220) + [300,400) = 270 → idle 130.
  EXPECT_EQ(tb.kernel_time, us(400));
  EXPECT_EQ(tb.idle, us(130));
  // Compute union: [0,150) + [350,400) = 200; non-compute = 400 - 200 - 130 = 70
  // (the 20 µs copy plus the 50 µs of all-reduce that no compute hides).
  EXPECT_EQ(tb.compute, us(200));
  EXPECT_EQ(tb.non_compute, us(70));
  EXPECT_DOUBLE_EQ(tb.idle_share, 0.325);
  EXPECT_DOUBLE_EQ(tb.compute_share, 0.5);
  EXPECT_DOUBLE_EQ(tb.non_compute_share, 0.175);
}

TEST(HtaOverlap, CommHalfHiddenByCompute) {
  TraceBuilder b = overlapping_streams();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  ASSERT_TRUE(t.hta_overlap.available);
  // All-reduce [300,400) meets compute [350,400): 50 of 100 µs hidden.
  EXPECT_EQ(t.hta_overlap.communication, us(100));
  EXPECT_EQ(t.hta_overlap.overlap, us(50));
  EXPECT_DOUBLE_EQ(t.hta_overlap.share, 0.5);
}

TEST(HtaOverlap, NoCommunicationIsReportedNotNaNNumber) {
  TraceBuilder b;
  b.launch("ampere_sgemm_128x64_nn", 0, 5, 10, 100, 7, 1);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  EXPECT_FALSE(t.hta_overlap.available);
  EXPECT_TRUE(std::isnan(t.hta_overlap.share));
  EXPECT_FALSE(t.hta_overlap.note.empty());
}

TEST(HtaKernelBreakdown, TypeStatesOfTheSweep) {
  TraceBuilder b = overlapping_streams();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  // COMPUTATION alone [0,150) = 150; COMMUNICATION alone [300,350) = 50; both [350,400) = 50;
  // MEMORY alone [200,220) = 20; total 270.
  const auto* comp = find_type(t, "COMPUTATION");
  const auto* both = find_type(t, "COMPUTATION overlapping COMMUNICATION");
  const auto* comm = find_type(t, "COMMUNICATION");
  const auto* mem = find_type(t, "MEMORY");
  ASSERT_TRUE(comp && both && comm && mem);
  EXPECT_EQ(comp->time, us(150));
  EXPECT_EQ(both->time, us(50));
  EXPECT_EQ(comm->time, us(50));
  EXPECT_EQ(mem->time, us(20));
  EXPECT_EQ(t.hta_kernels.types.size(), 4u);
  EXPECT_NEAR(comp->share, 150.0 / 270, 1e-12);
  EXPECT_EQ(t.hta_kernels.types.front().label, "COMPUTATION");  // descending time
}

// 12 compute kernel names with totals 12, 11, ..., 1 µs. Cumulative sums in that order:
// 12 23 33 42 50 57 63 68 72 75 77 78. quantile(0.8) with linear interpolation: position
// 0.8 * 11 = 8.8, between 72 and 75 → 74.4. Names whose cumsum exceeds 74.4 (totals 3, 2, 1)
// become "others"; the rank cut (index >= 10) adds nothing new. "others": sum 6, and its
// max/min/mean/std are over the per-name sums {3, 2, 1}: 3, 1, 2, 1.
TEST(HtaKernelBreakdown, OthersLumpingUsesQuantileOfCumsum) {
  TraceBuilder b;
  double ts = 0;
  for (int k = 12; k >= 1; --k) {
    b.launch("kernel_" + std::to_string(100 + k), ts, 1, ts + 1, k, 7, k);
    ts += 20;
  }
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  const HtaKernelRow* others = find_row(t, "others");
  ASSERT_NE(others, nullptr);
  EXPECT_EQ(others->sum, us(6));
  EXPECT_DOUBLE_EQ(others->max, us(3));
  EXPECT_DOUBLE_EQ(others->min, us(1));
  EXPECT_DOUBLE_EQ(others->mean, us(2));
  EXPECT_DOUBLE_EQ(others->stddev, us(1));
  EXPECT_EQ(others->names, 3);
  EXPECT_EQ(others->count, 3);
  // A named row after regrouping: max = min = mean = sum, std 0 (HTA's columns); the true
  // per-launch numbers sit beside them.
  const HtaKernelRow* k4 = find_row(t, "kernel_104");
  ASSERT_NE(k4, nullptr);
  EXPECT_EQ(k4->sum, us(4));
  EXPECT_DOUBLE_EQ(k4->mean, us(4));
  EXPECT_DOUBLE_EQ(k4->stddev, 0);
  EXPECT_EQ(find_row(t, "kernel_103"), nullptr);
  EXPECT_EQ(t.hta_kernels.top.size(), 10u);  // 9 named + others
}

// With at most 10 names the columns are true per-kernel statistics: two copies of 4 and 6 µs
// → sum 10, max 6, min 4, mean 5, sample std sqrt(2).
TEST(HtaKernelBreakdown, FewNamesKeepPerKernelStatistics) {
  TraceBuilder b;
  b.copy("Memcpy DtoD (Device -> Device)", 0, 4, 7, CopyKind::DtoD, HostMem::Unknown, 100);
  b.copy("Memcpy DtoD (Device -> Device)", 10, 6, 7, CopyKind::DtoD, HostMem::Unknown, 100);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  const HtaKernelRow* r = find_row(t, "Memcpy DtoD (Device -> Device)");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->type, HtaKernelType::Memory);
  EXPECT_EQ(r->sum, us(10));
  EXPECT_DOUBLE_EQ(r->max, us(6));
  EXPECT_DOUBLE_EQ(r->min, us(4));
  EXPECT_DOUBLE_EQ(r->mean, us(5));
  EXPECT_NEAR(r->stddev, std::sqrt(2.0) * 1000, 1e-6);
  EXPECT_EQ(r->count, 2);
}

// One stream, four kernels, one synchronising call (µs):
//   R1 cudaLaunchKernel [0,20)   → K1 [10,20)
//   R2 cudaLaunchKernel [12,72)  → K2 [25,35)    gap 5, launched before K1 ended → kernel wait
//   R3 cudaLaunchKernel [15,20)  → K3 [130,140)  gap 95 ≥ 30, launched early     → other
//   cudaStreamSynchronize [40,141): waits for K3, the GPU then idles
//   R4 cudaLaunchKernel [200,203)→ K4 [205,215)  gap 65, launched after K3 ended → host wait
TraceBuilder host_and_sync_gaps() {
  TraceBuilder b;
  b.step(1, 0, 300);
  b.launch("ampere_sgemm_128x64_nn", 0, 20, 10, 10, 7, 1);
  b.launch("ampere_sgemm_128x64_nn", 12, 60, 25, 10, 7, 2);
  b.launch("ampere_sgemm_128x64_nn", 15, 5, 130, 10, 7, 3);
  b.runtime("cudaStreamSynchronize", 40, 101, 9);
  b.launch("ampere_sgemm_128x64_nn", 200, 3, 205, 10, 7, 4);
  return b;
}

TEST(HtaIdle, HostWaitKernelWaitOther) {
  TraceBuilder b = host_and_sync_gaps();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  ASSERT_TRUE(t.hta_idle.available);
  ASSERT_EQ(t.hta_idle.streams.size(), 1u);
  const HtaStreamIdle& s = t.hta_idle.streams[0];
  EXPECT_EQ(s.stream, 7);
  EXPECT_EQ(s.kernels, 4);
  const auto& host = s.category[static_cast<int>(IdleCategory::HostWait)];
  const auto& kwait = s.category[static_cast<int>(IdleCategory::KernelWait)];
  const auto& other = s.category[static_cast<int>(IdleCategory::Other)];
  EXPECT_EQ(host.idle, us(65));
  EXPECT_EQ(kwait.idle, us(5));
  EXPECT_EQ(other.idle, us(95));
  // Ratios within the stream: 65/165, 5/165, 95/165.
  EXPECT_NEAR(host.ratio, 65.0 / 165, 1e-12);
  EXPECT_NEAR(kwait.ratio, 5.0 / 165, 1e-12);
  EXPECT_NEAR(other.ratio, 95.0 / 165, 1e-12);
  EXPECT_DOUBLE_EQ(hta_round(host.ratio, 2), 0.39);
  // The first kernel opens the stream with no gap, so "other" has one interval, not two.
  EXPECT_EQ(other.intervals.count, 1);
  EXPECT_EQ(host.intervals.count, 1);
  // Temporal: span 10..215 = 205, busy 40 → idle 165, matching the per-stream sum here.
  EXPECT_EQ(t.hta_temporal.idle, us(165));
}

TEST(HtaIdle, OverlappingRowsGiveNegativeGaps) {
  // K2 starts 5 µs before K1 ends on the same stream: HTA counts a -5 µs kernel wait.
  TraceBuilder b;
  b.launch("ampere_sgemm_128x64_nn", 0, 1, 2, 10, 7, 1);
  b.launch("ampere_sgemm_128x64_nn", 1, 1, 7, 10, 7, 2);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  EXPECT_EQ(t.hta_idle.streams.at(0).category[static_cast<int>(IdleCategory::KernelWait)].idle, us(-5));
}

// Launch calls (cpu, gpu, delay = max(0, kernel start - call end)):
//   R1 (20, 10, 0)  R2 (60, 10, 0)  R3 (5, 10, 110)  R4 (3, 10, 2)
TEST(HtaLaunchStats, CountsAndDistributions) {
  TraceBuilder b = host_and_sync_gaps();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  const HtaLaunchStats& l = t.hta_launches;
  EXPECT_EQ(l.events, 4);
  EXPECT_EQ(l.short_gpu_kernels, 1);      // R1: cpu 20 <= 50 and gpu 10 < 20
  EXPECT_EQ(l.runtime_outliers, 1);       // R2: cpu 60 > 50
  EXPECT_EQ(l.launch_delay_outliers, 1);  // R3: delay 110 > 100
  EXPECT_EQ(l.gpu_shorter_than_cpu, 2);   // R1 and R2
  EXPECT_DOUBLE_EQ(l.cpu_duration.sum, us(88));
  EXPECT_DOUBLE_EQ(l.cpu_duration.median, us(12.5));  // sorted 3 5 20 60
  EXPECT_DOUBLE_EQ(l.launch_delay.sum, us(112));
  EXPECT_DOUBLE_EQ(l.launch_delay.median, us(1));     // sorted 0 0 2 110
  EXPECT_DOUBLE_EQ(l.launch_delay.max, us(110));
  ASSERT_FALSE(l.worst_delays.empty());
  EXPECT_EQ(l.worst_delays[0].correlation, 3);
}

// The worst launches are the first n of the join stably sorted by the key, descending: ties on a
// key (here most delays and durations repeat) keep the earlier launch.
TEST(HtaLaunchStats, WorstLaunchesAreTheStableTopOfTheJoin) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> pick(1, 4);
  TraceBuilder b;
  struct Launch {
    std::int64_t corr;
    ns_t cpu, delay;
  };
  std::vector<Launch> join;
  double call = 0;
  for (std::int64_t corr = 1; corr <= 60; ++corr) {
    const double cpu = pick(rng), delay = 10 * pick(rng);
    b.launch("ampere_sgemm_128x64_nn", call, cpu, call + cpu + delay, 1, 7, corr);
    join.push_back({corr, us(cpu), us(delay)});
    call += 100;
  }
  GpuTimelineOptions opts;
  opts.top_events = 7;
  const HtaLaunchStats l = analyze_gpu_timeline(b.trace(), opts).hta_launches;
  auto expect_top = [&](ns_t Launch::*key, const std::vector<HtaLaunch>& got) {
    std::vector<Launch> sorted = join;
    std::stable_sort(sorted.begin(), sorted.end(), [&](const Launch& x, const Launch& y) { return x.*key > y.*key; });
    ASSERT_EQ(got.size(), 7u);
    for (std::size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k].correlation, sorted[k].corr) << k;
  };
  expect_top(&Launch::delay, l.worst_delays);
  expect_top(&Launch::cpu, l.worst_runtimes);
  opts.top_events = 0;
  EXPECT_TRUE(analyze_gpu_timeline(b.trace(), opts).hta_launches.worst_delays.empty());
}

TEST(SyncPoints, DrainedQueueAfterStreamSynchronize) {
  TraceBuilder b = host_and_sync_gaps();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  const SyncPoints& s = t.syncs;
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.host_blocked, us(101));
  // The GPU finished K3 at 140, the call returned at 141, the next kernel started at 205.
  EXPECT_EQ(s.gpu_idle_after, us(65));
  ASSERT_EQ(s.count_per_step.size(), 1u);
  EXPECT_EQ(s.count_per_step[0], 1);
  EXPECT_DOUBLE_EQ(s.per_step, 1.0);
  ASSERT_EQ(s.by_name.size(), 1u);
  EXPECT_EQ(s.by_name[0].name, "cudaStreamSynchronize");
}

TEST(LaunchOverhead, KernelsPerStepShortShareAndGaps) {
  TraceBuilder b = host_and_sync_gaps();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  const LaunchOverhead& l = t.launch_overhead;
  EXPECT_EQ(l.kernels, 4);
  ASSERT_EQ(l.kernels_per_step.size(), 1u);
  EXPECT_EQ(l.kernels_per_step[0], 4);
  EXPECT_DOUBLE_EQ(l.short_kernel_share, 0.0);  // all 10 µs, none < 10 µs
  // Positive gaps on stream 7: 5, 95, 65 → median 65, sum 165.
  EXPECT_EQ(l.gaps.count, 3);
  EXPECT_DOUBLE_EQ(l.gaps.median, us(65));
  EXPECT_DOUBLE_EQ(l.gaps.sum, us(165));
}

// HTA rounds sub-µs times: ts up, ts+dur down.
//   A ts 1000.4 dur 10.2 → [1001, 1010)     B ts 1020.9 dur 5.05 → [1021, 1025)
// Span 24, busy 9 + 4 = 13, idle 11. Unrounded it would be a 25.55 µs span.
TEST(HtaView, RoundsLikeHta) {
  TraceBuilder b;
  b.add_ns(Kind::Runtime, "cuda_runtime", "cudaLaunchKernel", 999'000, 1'000, -1, 1);
  b.add_ns(Kind::Kernel, "kernel", "ampere_sgemm_128x64_nn", 1'000'400, 10'200, 7, 1);
  b.add_ns(Kind::Runtime, "cuda_runtime", "cudaLaunchKernel", 1'019'000, 1'000, -1, 2);
  b.add_ns(Kind::Kernel, "kernel", "ampere_sgemm_128x64_nn", 1'020'900, 5'050, 7, 2);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  EXPECT_TRUE(t.hta_load.rounded_to_us);
  EXPECT_EQ(t.hta_temporal.kernel_time, us(24));
  EXPECT_EQ(t.hta_temporal.idle, us(11));
  EXPECT_EQ(t.hta_temporal.compute, us(13));
}

// Epoch timestamps in ns (past 2^53) become the double Python reads from Kineto's µs text,
// which resolves a quarter µs there; the values are Python's float() of "...456.789", ".125"
// (a tie, to even) and ".126".
TEST(HtaView, EpochTimesReadAsPythonReadsThem) {
  EXPECT_EQ(hta::python_us(1'700'000'000'123'456'789), 1'700'000'000'123'456.75);
  EXPECT_EQ(hta::python_us(1'700'000'000'123'456'125), 1'700'000'000'123'456.0);
  EXPECT_EQ(hta::python_us(1'700'000'000'123'456'126), 1'700'000'000'123'456.25);
}

// Kernel sequences (HTA's definition: roots at the smallest depth of the op's name, leaf calls'
// GPU records in ts order). One thread, µs; each launch's kernel on stream 7:
//   linear [0,30) { addmm [1,20) { launch [2,3) -> gemm_a [40,45); launch [5,6) -> gemm_b [46,50) } }
//   linear [60,90) { addmm [61,80) { launch -> gemm_a [95,100); launch -> gemm_b [101,105) } }
//   addmm [110,130) { launch -> gemm_a [135,140); launch -> gemm_b [141,145) }
// addmm's smallest depth is 0, reached only after two deeper instances: its one root is the
// last. The op picked is linear, 2 roots against addmm's 1; each linear holds 9 µs of kernels.
TEST(KernelSequences, RootsAreAtTheSmallestDepthOfTheName) {
  TraceBuilder b;
  std::int64_t corr = 0;
  auto addmm = [&](double ts, double kernels_at) {
    b.add_ns(Kind::CpuOp, "cpu_op", "aten::addmm", us(ts), us(ts < 100 ? 19 : 20));
    b.launch("gemm_a", ts + 1, 1, kernels_at, 5, 7, ++corr);
    b.launch("gemm_b", ts + 4, 1, kernels_at + 6, 4, 7, ++corr);
  };
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::linear", us(0), us(30));
  addmm(1, 40);
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::linear", us(60), us(30));
  addmm(61, 95);
  addmm(110, 135);
  b.trace().build_indexes();

  const KernelSequences picked = hta_kernel_sequences(b.trace(), "", 2);
  EXPECT_TRUE(picked.chosen);
  EXPECT_EQ(picked.op, "aten::linear");
  ASSERT_EQ(picked.sequences.size(), 1u);
  EXPECT_EQ(picked.sequences[0].pattern, (std::vector<std::string>{"aten::linear", "gemm_a", "gemm_b"}));
  EXPECT_EQ(picked.sequences[0].count, 2);
  EXPECT_EQ(picked.sequences[0].gpu_time, us(18));
  EXPECT_EQ(picked.sequences[0].cpu_time, us(60));

  const KernelSequences asked = hta_kernel_sequences(b.trace(), "aten::addmm", 2);
  ASSERT_EQ(asked.sequences.size(), 1u);
  EXPECT_EQ(asked.sequences[0].pattern, (std::vector<std::string>{"aten::addmm", "gemm_a", "gemm_b"}));
  EXPECT_EQ(asked.sequences[0].count, 1);
  EXPECT_EQ(asked.sequences[0].gpu_time, us(9));
  EXPECT_EQ(asked.sequences[0].cpu_time, us(20));
  // Three records are more than any root launched.
  EXPECT_TRUE(hta_kernel_sequences(b.trace(), "aten::addmm", 3).sequences.empty());
}

TEST(HtaView, SubMicrosecondRowTurnsNegative) {
  // ts 10.2 dur 0.5 → ts 11, end floor(10.7) = 10: a -1 µs row, which HTA keeps.
  TraceBuilder b;
  b.add_ns(Kind::Kernel, "kernel", "tiny_kernel", 10'200, 500, 7, 1);
  b.add_ns(Kind::Kernel, "kernel", "tiny_kernel", 20'000, 3'000, 7, 2);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  const HtaKernelRow* r = find_row(t, "tiny_kernel");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->sum, us(2));  // -1 + 3
  EXPECT_EQ(r->min_dur, us(-1));
}

// Steps #1 [0,100) and #2 [100,200): with two or more steps HTA drops the last one and every
// GPU row whose launch went with it; a kernel without any launching host row goes too.
TEST(HtaView, DropsLastProfilerStep) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.step(2, 100, 100);
  b.launch("ampere_sgemm_128x64_nn", 10, 5, 20, 10, 7, 1);
  b.launch("ampere_sgemm_128x64_nn", 110, 5, 120, 30, 7, 2);
  b.kernel("orphan_kernel", 50, 10, 7, 77);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  EXPECT_TRUE(t.hta_load.last_step_dropped);
  EXPECT_EQ(t.hta_load.cutoff_ts, us(100));
  EXPECT_EQ(t.hta_load.iterations, std::vector<std::int64_t>{1});
  EXPECT_EQ(t.hta_load.gpu_rows, 1);
  EXPECT_EQ(t.hta_temporal.kernel_time, us(10));  // only [20,30) is left
  // Kept rows: step #1, the first launch call and its kernel.
  EXPECT_EQ(t.hta_load.rows_kept, 3);

  GpuTimelineOptions keep_last;
  keep_last.include_last_profiler_step = true;
  GpuTimeline all = analyze_gpu_timeline(b.trace(), keep_last);
  EXPECT_EQ(all.hta_temporal.kernel_time, us(130));  // [20, 150)
  // Our own figures never drop a step: both launched kernels and the orphan count.
  EXPECT_EQ(t.launch_overhead.kernels, 3);
}

TEST(HtaView, OneStepFiltersNothing) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.kernel("orphan_kernel", 150, 10, 7, 77);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  EXPECT_FALSE(t.hta_load.last_step_dropped);
  EXPECT_EQ(t.hta_temporal.kernel_time, us(10));
}

TEST(HtaTemporal, NoGpuEventsAnswersPlainly) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::add", us(10), us(5));
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  EXPECT_FALSE(t.has_gpu_activity);
  EXPECT_FALSE(t.hta_temporal.available);
  EXPECT_FALSE(t.hta_temporal.note.empty());
  EXPECT_FALSE(t.hta_idle.available);
  EXPECT_EQ(t.hta_launches.events, 0);
  EXPECT_TRUE(std::isnan(t.hta_launches.cpu_duration.mean));
}

// HTA's GPU rows are rows with a numeric stream. Triton writes "stream": 0 on the cpu_op that
// launches a compiled kernel, so HTA adds that host op to the GPU timeline: op [0,95) with its
// kernel [90,92) → span 95, compute 95. Runtime calls never count (ROCm's "stream": "0x0" is a
// string, -1 for HTA, whatever an importer makes of it).
TEST(HtaView, HostRowWithNumericStreamCountsLikeHta) {
  TraceBuilder b;
  b.add_ns(Kind::CpuOp, "cpu_op", "triton_poi_fused_add_0", us(0), us(95), 0);
  b.add_ns(Kind::Driver, "cuda_driver", "cuLaunchKernel", us(80), us(5), 0, 1);
  b.kernel("triton_poi_fused_add_0", 90, 2, 7, 1);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  EXPECT_EQ(t.hta_temporal.kernel_time, us(95));
  EXPECT_EQ(t.hta_temporal.compute, us(95));
  const HtaKernelRow* r = find_row(t, "triton_poi_fused_add_0");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->count, 2);  // the op and the kernel
  EXPECT_EQ(r->sum, us(97));
  // Our own figures count the kernel only.
  EXPECT_EQ(t.launch_overhead.kernels, 1);
}

// Copies: 1 MB pageable HtoD in 100 µs with no kernel running (critical), 1 MB pinned HtoD in
// 50 µs under a kernel (hidden). Bandwidth = bytes / ns: 1e6 / 1e5 = 10 GB/s and 20 GB/s.
TEST(Copies, PageablePinnedAndCriticalPath) {
  TraceBuilder b;
  b.copy("Memcpy HtoD (Pageable -> Device)", 0, 100, 7, CopyKind::HtoD, HostMem::Pageable, 1'000'000);
  b.kernel("ampere_sgemm_128x64_nn", 200, 100, 7);
  b.copy("Memcpy HtoD (Pinned -> Device)", 220, 50, 8, CopyKind::HtoD, HostMem::Pinned, 1'000'000);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  const Copies& c = t.copies;
  EXPECT_EQ(c.count, 2);
  EXPECT_EQ(c.pageable_count, 1);
  EXPECT_EQ(c.pageable_time, us(100));
  EXPECT_EQ(c.critical_time, us(100));
  ASSERT_EQ(c.longest.size(), 2u);
  EXPECT_TRUE(c.longest[0].critical);
  EXPECT_DOUBLE_EQ(c.longest[0].gbps, 10.0);
  EXPECT_FALSE(c.longest[1].critical);
  EXPECT_DOUBLE_EQ(c.longest[1].gbps, 20.0);
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].host, HostMem::Pageable);
  EXPECT_EQ(c.groups[0].critical_count, 1);
}

// Kernel A [0,100) occupancy 50 %, 0.5 blocks/SM; kernel B [100,400) occupancy 25 %, 2
// blocks/SM. Time-weighted occupancy (50*100 + 25*300) / 400 = 31.25 %. SM efficiency:
// min(0.5,1)*100 + min(2,1)*300 = 350 of the 400 µs span = 87.5 %.
TEST(Occupancy, TimeWeighted) {
  TraceBuilder b;
  auto a = b.kernel("ampere_sgemm_128x64_nn", 0, 100, 7);
  auto c = b.kernel("ampere_sgemm_128x64_nn", 100, 300, 7);
  KernelArgs ka;
  ka.est_occupancy_pct = 50;
  ka.blocks_per_sm = 0.5;
  ka.warps_per_sm = 4;
  b.set_kernel_args(a, ka);
  ka.est_occupancy_pct = 25;
  ka.blocks_per_sm = 2;
  ka.warps_per_sm = 8;
  b.set_kernel_args(c, ka);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  ASSERT_TRUE(t.occupancy.available);
  EXPECT_DOUBLE_EQ(t.occupancy.achieved_occupancy_pct, 31.25);
  EXPECT_DOUBLE_EQ(t.occupancy.warps_per_sm, 7.0);  // (4*100 + 8*300) / 400
  EXPECT_DOUBLE_EQ(t.occupancy.sm_efficiency_pct, 87.5);
  EXPECT_DOUBLE_EQ(t.occupancy.coverage, 1.0);
}

TEST(Memory, PeakAndItsStep) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.step(2, 100, 100);
  b.memory_sample(10, 100, 400);
  b.memory_sample(150, 300, 500);
  b.memory_sample(160, 200, 600);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  ASSERT_TRUE(t.memory.available);
  ASSERT_EQ(t.memory.devices.size(), 1u);
  const auto& d = t.memory.devices[0];
  EXPECT_EQ(d.peak_allocated, 300);
  EXPECT_EQ(d.peak_allocated_step, 2);
  EXPECT_EQ(d.peak_reserved, 600);
  EXPECT_EQ(d.samples, 3);
}

TEST(KernelClasses, SharesOfGpuTime) {
  TraceBuilder b = overlapping_streams();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  // Summed durations: sgemm 100 + 50, elementwise 100, nccl 100, copy 20 → 370.
  EXPECT_EQ(t.classes.total_time, us(370));
  ASSERT_FALSE(t.classes.classes.empty());
  EXPECT_EQ(t.classes.classes[0].cls, KernelClass::Gemm);  // 150, the largest
  EXPECT_NEAR(t.classes.classes[0].share, 150.0 / 370, 1e-12);
  ASSERT_EQ(t.classes.collectives.size(), 1u);
  EXPECT_EQ(t.classes.collectives[0].collective, Collective::AllReduce);
  EXPECT_DOUBLE_EQ(t.classes.tensor_core_share_of_gemm, 0.0);  // sgemm: no tensor cores
}

TEST(HtaRound, TiesToEvenLikeNumpy) {
  // numpy.around scales, rounds half to even, unscales; these products are exact binary ties.
  EXPECT_DOUBLE_EQ(hta_round(0.125, 2), 0.12);
  EXPECT_DOUBLE_EQ(hta_round(0.375, 2), 0.38);
  EXPECT_DOUBLE_EQ(hta_round(61.25, 1), 61.2);
  EXPECT_DOUBLE_EQ(hta_round(2.5, 0), 2.0);
  EXPECT_DOUBLE_EQ(hta_round(53.5649, 2), 53.56);
}

// The JSON report carries durations in ns and shares as fractions (HTA's rounded percentages are
// derived from them) and null for undefined values; the text section names the figures.
TEST(GpuTimelineReport, JsonAndText) {
  TraceBuilder b = host_and_sync_gaps();
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  nlohmann::json j = to_json(t, 0);
  const auto& tb = j["hta"]["temporal_breakdown"];
  EXPECT_EQ(tb["kernel_time_ns"].get<std::int64_t>(), 205'000);
  EXPECT_DOUBLE_EQ(tb["idle_time_share"].get<double>(), 165.0 / 205.0);
  EXPECT_DOUBLE_EQ(hta_percent(tb["idle_time_share"].get<double>(), 2), 80.49);  // 80.4878...
  EXPECT_TRUE(j["hta"]["comm_comp_overlap"]["comp_comm_overlap_share"].is_null());
  EXPECT_EQ(j["sync_points"]["count"].get<int>(), 1);
  std::string text = gpu_timeline_text(t, 0);
  EXPECT_NE(text.find("idle 80.49%"), std::string::npos) << text;
  EXPECT_NE(text.find("sync points  1 calls"), std::string::npos) << text;
}

// A kernel name with invalid UTF-8 (a truncated sequence and a stray continuation byte) must
// still serialise: each byte that does not start a well-formed sequence becomes U+FFFD (here
// E2 and 82 of the truncated sequence, and the stray 80).
TEST(GpuTimelineReport, InvalidUtf8NamesStillDump) {
  TraceBuilder b;
  b.launch(std::string("bad\xE2\x82kernel\x80"), 0, 5, 10, 10, 7, 1);
  GpuTimeline t = analyze_gpu_timeline(b.trace());
  std::string dumped;
  ASSERT_NO_THROW(dumped = to_json(t, 0).dump());
  EXPECT_NE(dumped.find("bad\xEF\xBF\xBD\xEF\xBF\xBD" "kernel\xEF\xBF\xBD"), std::string::npos) << dumped;
}

// describe(v) gives what a comparison sort of v gives: the order statistics, and the std summed
// in sorted order (NaN where an infinity makes it so).
void expect_like_sort(const std::vector<double>& v) {
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const SampleStats got = hta::describe(v);
  EXPECT_EQ(got.min, sorted.front());
  EXPECT_EQ(got.max, sorted.back());
  EXPECT_EQ(got.p25, hta::quantile_linear(sorted, 0.25));
  EXPECT_EQ(got.median, hta::quantile_linear(sorted, 0.5));
  EXPECT_EQ(got.p75, hta::quantile_linear(sorted, 0.75));
  EXPECT_EQ(got.p95, hta::quantile_linear(sorted, 0.95));
  double ss = 0;
  for (double x : sorted) ss += (x - got.mean) * (x - got.mean);
  const double want_std = std::sqrt(ss / static_cast<double>(sorted.size() - 1));
  EXPECT_TRUE(std::isnan(want_std) ? std::isnan(got.std) : got.std == want_std) << got.std << " vs " << want_std;
}

// Samples large enough for describe()'s radix sort: negatives, zeros, repeats, a wide range.
TEST(Describe, LargeSamplesMatchAComparisonSort) {
  std::mt19937_64 rng(5);
  std::vector<double> v;
  for (int k = 0; k < 50000; ++k) {
    const double x = static_cast<double>(rng() % 2000000) / 7.0 - 1000.0;
    v.push_back(k % 11 == 0 ? 0.0 : k % 13 == 0 ? 1e15 * x : x);
  }
  expect_like_sort(v);
}

// The same for whole numbers in a small range (queue lengths), which are sorted by counting; a
// sample holding -0.0, a fraction or an infinity, or spanning more than 65,536, takes the radix
// sort and still matches.
TEST(Describe, WholeNumberSamplesMatchAComparisonSort) {
  std::mt19937_64 rng(7);
  std::vector<double> queue;
  for (int k = 0; k < 20000; ++k) queue.push_back(static_cast<double>(static_cast<int>(rng() % 1025) - 12));
  expect_like_sort(queue);
  for (double odd : {0.5, -0.0, std::numeric_limits<double>::infinity(), 1e9}) {
    std::vector<double> v = queue;
    v[123] = odd;
    expect_like_sort(v);
  }
}

// A count per value gives describe() of the values to the last bit: negatives, repeats, one
// value, none.
TEST(Describe, WholeNumberCountsMatchTheSample) {
  std::mt19937_64 rng(11);
  for (int n : {0, 1, 2, 7, 5000}) {
    std::vector<double> v;
    hta::WholeNumberCounts counts;
    for (int k = 0; k < n; ++k) {
      const std::int64_t x = static_cast<std::int64_t>(rng() % 300) - 40;
      v.push_back(static_cast<double>(x));
      counts.add(x);
    }
    const SampleStats want = hta::describe(v), got = counts.describe();
    EXPECT_EQ(got.count, want.count) << n;
    for (auto [a, b] : {std::pair{got.sum, want.sum}, {got.mean, want.mean}, {got.std, want.std}, {got.min, want.min},
                        {got.p25, want.p25}, {got.median, want.median}, {got.p75, want.p75}, {got.p95, want.p95},
                        {got.max, want.max}})
      EXPECT_TRUE(std::isnan(b) ? std::isnan(a) : a == b) << n << ": " << a << " vs " << b;
  }
}

}  // namespace
}  // namespace stepscope
