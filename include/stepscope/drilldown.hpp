// Drill-down: which ops and kernels the time goes to, and HTA's counter analyses.
//
// The verdict says where a step goes; these tables answer "which ops and kernels?". The operator
// and kernel views are ours (tb_plugin's operator page, with the GPU time each op launched);
// queue length, memory bandwidth and the frequent kernel sequences follow HTA's definitions
// (hta/analyzers/trace_counters.py, cuda_kernel_analysis.py) so their figures can be checked
// against HTA's on the same trace. Times are int64 ns, shares 0..1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/critical_path.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/gpu_timeline.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {

// ---- operator view ---------------------------------------------------------------------------

enum class OperatorGrouping : std::uint8_t { Name, NameAndShape, Module };
const char* operator_grouping_name(OperatorGrouping g);  // "name", "name_and_shape", "module"

// One host op name (or name + input shape, or module), over every call on every thread.
//   host_total: summed durations of the calls (a call nested in a call of the same name counts
//               twice, as in tb_plugin);
//   host_self:  host_total minus the durations of the direct child ops on the same thread;
//   gpu_self:   GPU records (kernels, copies, memsets) launched by runtime calls directly under
//               the op, not under one of its child ops;
//   gpu_total:  GPU records launched anywhere under the op.
struct OperatorRow {
  std::string name;
  std::string input_dims;  // NameAndShape: args["Input Dims"] as written; else ""
  std::string module;      // Module: the innermost "nn.Module: X" range around the call; else ""
  std::int64_t calls = 0;
  ns_t host_total = 0, host_self = 0;
  ns_t gpu_total = 0, gpu_self = 0;
  std::int64_t kernels = 0;        // GPU records launched anywhere under the op
  double kernels_per_call = 0;
  double step_share = 0;           // host_total / summed step time (NaN without steps)
  double gpu_share = 0;            // gpu_self / all GPU record time (NaN without GPU records)
  StageHint stage = StageHint::None;  // the stage most of its host time belongs to
  // Some call of the op (or a runtime call or GPU record under it) lies on the critical path of
  // the step analysed (DrillDown::critical_path); time off the path does not shorten the step.
  bool on_critical_path = false;
};

struct OperatorView {
  OperatorGrouping grouping = OperatorGrouping::Name;
  ns_t step_time = 0;   // summed ProfilerStep windows, the step_share denominator (0 without)
  ns_t gpu_time = 0;    // summed durations of every GPU record
  std::vector<OperatorRow> rows;  // descending host_self, then name
};

// ---- kernel view -----------------------------------------------------------------------------

// One GPU record name: kernels, copies and memsets.
struct KernelRow {
  std::string name;
  Kind kind = Kind::Kernel;
  KernelClass cls = KernelClass::OtherCompute;
  Engine engine = Engine::Unknown;
  DataType dtype = DataType::Unknown;
  std::int64_t calls = 0;
  ns_t total = 0, min = 0, max = 0;
  double mean = 0;
  double share = 0;            // of all GPU record time
  std::string launching_op;    // the op that launched most of its calls ("" when none)
  double achieved_occupancy_pct = -1;  // time-weighted, -1 when the trace has none
  std::int32_t registers_per_thread = -1;  // of the longest call, -1 when absent
  std::int64_t shared_memory = -1;         // bytes, of the longest call, -1 when absent
};

struct KernelView {
  ns_t gpu_time = 0;
  std::vector<KernelRow> rows;  // descending total, then name
};

// ---- HTA's queue length and memory bandwidth ---------------------------------------------------

// One change of a stream's queue length: after the row at `ts`, `value` launches wait.
struct QueuePoint {
  ns_t ts = 0;
  std::int64_t value = 0;
};

struct StreamQueue {
  std::int64_t stream = -1;
  SampleStats summary;  // pandas describe() over the rows (per change, not time-weighted), as HTA
  std::vector<QueuePoint> series;    // HTA's rows, in HTA's time base (ns, rounded as HTA rounds)
  ns_t time_at_max = 0;              // time the queue held >= kMaxLaunchQueue launches
};

inline constexpr std::int64_t kMaxLaunchQueue = 1024;  // CUDA_MAX_LAUNCH_QUEUE_PER_STREAM

struct QueueLength {
  bool available = false;
  std::string note;                  // why not
  std::vector<StreamQueue> streams;  // ascending stream
};

struct BandwidthPoint {
  ns_t ts = 0;
  double gbps = 0;
};

// HTA copy types: "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memcpy PtoP", "Memset", ...
struct CopyBandwidth {
  std::string name;
  SampleStats summary;                // describe() over the rows with a value > 0, as HTA
  std::vector<BandwidthPoint> series; // total bandwidth of the type after each change
};

struct MemoryBandwidth {
  bool available = false;
  std::string note;
  std::vector<CopyBandwidth> types;  // ascending name
};

// ---- frequent kernel sequences (fusion candidates) ---------------------------------------------

struct KernelSequence {
  std::vector<std::string> pattern;  // the root op's name, then its GPU records' names in order
  std::int64_t count = 0;
  ns_t gpu_time = 0;  // summed GPU record time of the matching op instances
  ns_t cpu_time = 0;  // summed duration of the matching op instances
};

struct KernelSequences {
  std::string op;               // the operator name searched (a substring, as HTA matches)
  bool chosen = false;          // true when picked by us (the op with the most qualifying instances)
  int min_pattern_len = 3;
  std::string note;             // when nothing qualifies, or HTA would fail
  std::vector<KernelSequence> sequences;  // descending count, then pattern
};

// ---- memory over time ------------------------------------------------------------------------

struct MemorySample {
  ns_t ts = 0;
  std::int64_t allocated = 0, reserved = 0;
};

struct StepMemoryPeak {
  std::int64_t step = -1;   // ProfilerStep number
  std::int64_t peak_allocated = 0;
  ns_t ts = 0;
  std::string op;           // the host op running when the peak was reached ("" when none)
};

struct DeviceMemoryTimeline {
  std::int32_t device_type = -1, device_id = -1;
  std::vector<MemorySample> samples;      // every [memory] event of the device, in time order
  std::int64_t peak_allocated = 0, peak_reserved = 0;
  ns_t peak_ts = 0;
  std::string peak_op;                    // the op that made the peak ("" when none)
  std::vector<StepMemoryPeak> steps;
};

struct MemoryTimeline {
  bool available = false;  // the profile recorded [memory] events
  std::vector<DeviceMemoryTimeline> devices;
};

// Longer time series are thinned to this many points, each the peak of its run (summaries are
// computed first, on every point): more than a chart's width in pixels.
inline constexpr std::size_t kMaxSeriesPoints = 2000;

// ---- all of it, for one rank -----------------------------------------------------------------

struct DrillDownOptions {
  // Operator tables built; the text report shows the first.
  std::vector<OperatorGrouping> groupings = {OperatorGrouping::Name, OperatorGrouping::NameAndShape,
                                             OperatorGrouping::Module};
  std::string sequence_op;  // HTA's operator_name; "" picks the op with the most qualifying instances
  int min_pattern_len = 3;
  std::size_t max_series_points = kMaxSeriesPoints;
  bool critical_path = true;  // HTA's critical path of the middle kept step (or the whole trace)
};

// The rank's number is its RankAnalysis's (ingest.rank), not held here.
struct DrillDown {
  std::vector<OperatorView> operators;  // one per DrillDownOptions::groupings entry that has rows
  KernelView kernels;
  QueueLength queue_length;
  MemoryBandwidth memory_bandwidth;
  KernelSequences sequences;
  MemoryTimeline memory;
  CriticalPath critical_path;  // success = false with the reason when not computed or HTA would fail
};

// `steps` are the rank's ProfilerStep windows (GpuTimeline::steps). Never throws on odd input.
DrillDown analyze_drilldown(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                            const DrillDownOptions& opts = {});

// Parts, for callers that need one table.
std::vector<OperatorRow> operator_rows(const RankTrace& rank, const RankFacts& facts, OperatorGrouping grouping);
QueueLength hta_queue_length(const RankTrace& rank, std::size_t max_points = kMaxSeriesPoints);
MemoryBandwidth hta_memory_bandwidth(const RankTrace& rank, std::size_t max_points = kMaxSeriesPoints);
KernelSequences hta_kernel_sequences(const RankTrace& rank, const std::string& op, int min_pattern_len = 3);

}  // namespace stepscope
