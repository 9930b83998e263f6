// GPU timeline analysis of one rank: the figures users know from Holistic Trace Analysis (HTA),
// computed with HTA's own definitions so the numbers agree, and finer figures HTA lacks.
//
// Two views of the same trace:
//  - the HTA-compatible figures (`hta_*` members) are computed on HTA's view of the trace:
//    complete events only, times rounded to whole microseconds the way HTA rounds them, the last
//    profiler step dropped when there are two or more, GPU rows without a launching host row
//    dropped with it. The exact rules sit beside the code in src/analysis/hta_*.cpp and in
//    docs/gpu_timeline.md. Times are still stored in ns (multiples of 1000 once rounded).
//  - the other figures use every event at full nanosecond resolution over the whole trace.
//
// Plain data: nothing here prints. Percentages are 0..100, ratios 0..1; NaN means "undefined"
// (for instance an overlap percentage when there is no communication at all).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stepscope/kernel_class.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {

struct RankFacts;  // stepscope/facts.hpp

struct GpuTimelineOptions {
  // HTA's arguments; the defaults are HTA's API defaults.
  bool include_last_profiler_step = false;
  ns_t consecutive_kernel_delay = 30'000;  // idle breakdown: kernel-wait threshold (30 µs)
  ns_t runtime_cutoff = 50'000;            // launch stats: runtime-call outlier threshold
  ns_t launch_delay_cutoff = 100'000;      // launch stats: launch-delay outlier threshold
  bool include_memory_events = true;       // launch stats: count cudaMemcpyAsync/MemsetAsync
  double duration_ratio = 0.8;             // kernel table: quantile of the cumulative sum
  int num_kernels = 10;                    // kernel table: names kept before "others"
  // Our own figures.
  ns_t short_kernel = 10'000;  // kernels shorter than this count as "short" (launch-bound)
  int top_events = 10;         // how many worst events to keep for traceability
};

// Summary of a sample, with pandas' conventions: std uses n-1, quantiles interpolate linearly
// between closest ranks. Undefined entries are NaN.
struct SampleStats {
  std::int64_t count = 0;
  double sum = 0;
  double mean = 0, std = 0, min = 0, p25 = 0, median = 0, p75 = 0, p95 = 0, max = 0;
};

// ---------------------------------------------------------------------------------------------
// HTA-compatible figures

// What HTA's loader kept.
struct HtaLoad {
  bool rounded_to_us = false;     // the trace had sub-µs times: ts ceil'd, ts+dur floor'd
  int profiler_step_names = 0;    // distinct names containing "ProfilerStep"
  bool last_step_dropped = false;
  ns_t cutoff_ts = 0;             // when dropped: host rows at or after this ts are gone
  std::int64_t rows_kept = 0;     // complete, non-"Trace" rows after filtering
  std::int64_t gpu_rows = 0;      // of those, rows with a stream (kernels, copies, syncs)
  std::vector<std::int64_t> iterations;  // N of the ProfilerStep#N rows kept, ascending
};

// get_temporal_breakdown: over the span from the first GPU row start to the last GPU row end.
struct HtaTemporalBreakdown {
  bool available = false;
  std::string note;  // why not, when not available
  ns_t idle = 0;         // span minus the union of all GPU rows
  ns_t compute = 0;      // union of COMPUTATION rows
  ns_t non_compute = 0;  // the rest of the busy time: communication, memory, other rows
  ns_t kernel_time = 0;  // the span ("kernel_time" in HTA)
  // Fractions of kernel_time (0..1); HTA reports hta_percent(share, 2).
  double idle_share = 0, compute_share = 0, non_compute_share = 0;
};

enum class IdleCategory : std::uint8_t { HostWait, KernelWait, Other };
inline constexpr int kIdleCategoryCount = 3;
const char* idle_category_name(IdleCategory c);  // "host_wait", "kernel_wait", "other"

struct HtaIdleCategory {
  bool present = false;  // HTA lists a category only when some kernel of the stream got it
  ns_t idle = 0;         // sum of the gaps (negative gaps of overlapping rows included)
  double ratio = 0;      // idle / all idle of the stream (NaN if that is 0); HTA rounds to 2
  SampleStats intervals; // the gaps themselves (HTA's show_idle_interval_stats)
};

struct HtaStreamIdle {
  std::int64_t stream = -1;
  std::int64_t kernels = 0;  // kernels, copies and memsets on the stream
  std::array<HtaIdleCategory, kIdleCategoryCount> category{};
};

// get_idle_time_breakdown: per stream, gaps between consecutive kernels/copies/memsets.
struct HtaIdleBreakdown {
  bool available = false;
  std::string note;
  std::vector<HtaStreamIdle> streams;  // in order of first appearance
  std::array<ns_t, kIdleCategoryCount> total{};  // summed over streams (our summary)
};

// get_comm_comp_overlap: share of communication time that computation hides.
struct HtaCommCompOverlap {
  bool available = false;  // false when there is no communication time (HTA answers NaN)
  std::string note;
  ns_t overlap = 0;        // |union(COMP) ∩ union(COMM)|
  ns_t communication = 0;  // |union(COMM)|
  double share = 0;        // overlap / communication (NaN when unavailable); HTA: hta_percent(share, 2)
};

// One state of the kernel-type sweep: "COMPUTATION", "COMPUTATION overlapping COMMUNICATION"...
struct HtaKernelTypeTime {
  std::string label;
  unsigned mask = 0;  // bit 0 computation, bit 1 communication, bit 2 memory
  ns_t time = 0;
  double share = 0;   // of the summed times of all states; HTA: hta_percent(share, 1)
};

// One row of HTA's per-kernel table. For a type with more than `num_kernels` names, HTA
// regroups: the columns max/min/mean/stddev become statistics of per-name *sums* (so a named
// row shows max = min = mean = sum) and "others" gets those of the names it absorbed. We keep
// HTA's columns and, beside them, the true per-launch statistics.
struct HtaKernelRow {
  std::string name;  // kernel name, or "others"
  HtaKernelType type = HtaKernelType::Computation;
  bool others = false;
  // HTA's columns.
  ns_t sum = 0;
  double max = 0, min = 0, mean = 0, stddev = 0;
  // Per-launch statistics of the kernels behind the row.
  std::int64_t count = 0;   // launches
  std::int64_t names = 1;   // distinct kernel names behind the row
  ns_t max_dur = 0, min_dur = 0;
  double mean_dur = 0;
  // Our finer class of the kernel (the facts layer's); meaningless for "others".
  KernelClass cls = KernelClass::OtherCompute;
};

struct HtaKernelBreakdown {
  std::vector<HtaKernelTypeTime> types;  // descending time
  std::vector<HtaKernelRow> top;         // per type, descending sum
};

// One launch joined with its GPU row (kept for the worst ones only).
struct HtaLaunch {
  std::uint32_t cpu_event = 0, gpu_event = 0;  // indexes into the rank's EventTable
  std::int64_t correlation = -1;
  ns_t cpu_duration = 0, gpu_duration = 0, launch_delay = 0;
};

// get_cuda_kernel_launch_stats: runtime launch calls joined with their GPU rows.
struct HtaLaunchStats {
  std::int64_t events = 0;
  std::int64_t short_gpu_kernels = 0;      // cpu <= runtime_cutoff and gpu < cpu
  std::int64_t runtime_outliers = 0;       // cpu > runtime_cutoff
  std::int64_t launch_delay_outliers = 0;  // delay > launch_delay_cutoff
  std::int64_t gpu_shorter_than_cpu = 0;   // gpu < cpu, whatever the cpu duration
  SampleStats cpu_duration, gpu_duration, launch_delay;
  std::vector<HtaLaunch> worst_delays;     // largest launch delays
  std::vector<HtaLaunch> worst_runtimes;   // longest launch calls
};

// ---------------------------------------------------------------------------------------------
// Beyond HTA (full resolution, whole trace)

// A ProfilerStep#N window on the host.
struct StepWindow {
  std::int64_t number = -1;
  ns_t start = 0, end = 0;
};

struct KernelClassShare {
  KernelClass cls = KernelClass::OtherCompute;
  std::int64_t count = 0;
  ns_t time = 0;       // summed durations
  double share = 0;    // of the summed durations of all GPU activity (0..1)
};

struct CollectiveShare {
  Collective collective = Collective::None;
  std::int64_t count = 0;
  ns_t time = 0;
  double share = 0;    // of all communication time (0..1)
};

struct KernelClasses {
  ns_t total_time = 0;  // summed durations of kernels, copies and memsets
  std::vector<KernelClassShare> classes;        // descending time, non-empty classes only
  std::vector<CollectiveShare> collectives;     // descending time
  double tensor_core_share_of_gemm = 0;         // NaN without GEMMs
};

// Synchronising runtime calls: the host blocks until the GPU drains.
struct SyncCall {
  std::uint32_t event = 0;
  ns_t ts = 0;
  ns_t host_blocked = 0;    // duration of the call
  ns_t gpu_idle_after = 0;  // the GPU gap the call sits in, counted from the call's start
  std::int64_t step = -1;   // ProfilerStep number, -1 outside steps
};

struct SyncByName {
  std::string name;
  std::int64_t count = 0;
  ns_t host_blocked = 0;
  ns_t gpu_idle_after = 0;
};

struct SyncPoints {
  std::int64_t count = 0;
  ns_t host_blocked = 0;
  ns_t gpu_idle_after = 0;
  double per_step = 0;  // mean count per profiler step (NaN without steps)
  std::vector<SyncByName> by_name;            // descending host_blocked
  std::vector<std::int64_t> count_per_step;   // parallel to GpuTimeline::steps
  std::vector<SyncCall> worst;                // largest gpu_idle_after + host_blocked
};

struct CopyGroup {
  CopyKind direction = CopyKind::Other;
  HostMem host = HostMem::Unknown;
  std::int64_t count = 0;
  std::int64_t bytes = 0;    // summed over copies that report bytes
  ns_t time = 0;
  double gbps = 0;           // bytes / time of the copies that report bytes (NaN if none)
  std::int64_t critical_count = 0;  // copies no kernel overlaps
  ns_t critical_time = 0;
};

struct CopyEvent {
  std::uint32_t event = 0;
  CopyKind direction = CopyKind::Other;
  HostMem host = HostMem::Unknown;
  std::int64_t bytes = -1;
  ns_t ts = 0, dur = 0;
  double gbps = 0;  // NaN when bytes unknown or dur 0
  bool critical = false;
};

struct Copies {
  std::int64_t count = 0;
  ns_t time = 0;
  std::int64_t pageable_count = 0;
  ns_t pageable_time = 0;
  ns_t critical_time = 0;
  std::vector<CopyGroup> groups;  // per (direction, host memory), descending time
  std::vector<CopyEvent> longest;
};

struct LaunchOverhead {
  std::int64_t kernels = 0;                   // compute and communication kernels
  std::vector<std::int64_t> kernels_per_step; // parallel to GpuTimeline::steps
  double mean_kernels_per_step = 0;           // NaN without steps
  SampleStats kernel_duration;                // ns
  double short_kernel_share = 0;              // share of kernels shorter than short_kernel
  ns_t short_kernel = 0;
  SampleStats gaps;                           // positive gaps between kernels on a stream
  SampleStats launch_call;                    // durations of launch runtime/driver calls
};

struct Occupancy {
  bool available = false;         // some kernel carries occupancy arguments
  double coverage = 0;            // share of kernel time whose kernels carry them
  double achieved_occupancy_pct = 0;  // time-weighted "est. achieved occupancy %"
  double blocks_per_sm = 0;       // time-weighted
  double warps_per_sm = 0;        // time-weighted
  double sm_efficiency_pct = 0;   // Σ min(Σ concurrent blocks/SM, 1)·dt over the kernel span
};

struct DeviceMemoryPeak {
  std::int32_t device_type = -1;
  std::int32_t device_id = -1;
  std::int64_t samples = 0;
  std::int64_t peak_allocated = 0;
  ns_t peak_allocated_ts = 0;
  std::int64_t peak_allocated_step = -1;
  std::int64_t peak_reserved = 0;
  ns_t peak_reserved_ts = 0;
  std::int64_t peak_reserved_step = -1;
};

struct MemoryPeaks {
  bool available = false;  // the profile recorded [memory] events
  std::vector<DeviceMemoryPeak> devices;
};

// ---------------------------------------------------------------------------------------------

// The rank's number is its RankAnalysis's (ingest.rank), not held here.
struct GpuTimeline {
  bool has_gpu_activity = false;  // any kernel, copy or memset at all

  HtaLoad hta_load;
  HtaTemporalBreakdown hta_temporal;
  HtaIdleBreakdown hta_idle;
  HtaCommCompOverlap hta_overlap;
  HtaKernelBreakdown hta_kernels;
  HtaLaunchStats hta_launches;

  std::vector<StepWindow> steps;
  KernelClasses classes;
  SyncPoints syncs;
  Copies copies;
  LaunchOverhead launch_overhead;
  Occupancy occupancy;
  MemoryPeaks memory;
};

// `facts` are the rank's (compute_facts): our own figures read kernel classes and call kinds from
// them; the HTA-compatible figures keep HTA's own name rules.
GpuTimeline analyze_gpu_timeline(const RankTrace& rank, const RankFacts& facts, const GpuTimelineOptions& opts = {});
// Same, computing the rank's facts first (for a trace analysed on its own).
GpuTimeline analyze_gpu_timeline(const RankTrace& rank, const GpuTimelineOptions& opts = {});

// HTA reports the kernel-type table summed over all ranks; this does the same.
std::vector<HtaKernelTypeTime> combine_kernel_types(const std::vector<const GpuTimeline*>& ranks);

// numpy.round(x, decimals): how HTA rounds its percentages and ratios (ties to even).
double hta_round(double x, int decimals);
// HTA's percentage of a share, rounded as HTA rounds it. HTA computes 100 * (part / whole) and
// the share is part / whole, so the figure is HTA's bit for bit.
double hta_percent(double share, int decimals);

}  // namespace stepscope
