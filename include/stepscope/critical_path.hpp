// Critical-path analysis of one rank, as Meta's Holistic Trace Analysis (HTA) computes it
// (hta/analyzers/critical_path_analysis.py: CriticalPathAnalysis.critical_path_analysis, then
// CPGraph.get_critical_path_breakdown and CPGraph.summary).
//
// The rank's events inside a window (one or more instances of an annotation, or the whole
// trace) become a DAG: a node at the start and at the end of every host op, runtime call and
// GPU activity; edges for the time spent in them, for launch and kernel-to-kernel delays, and for
// synchronisation. The longest path through it is the critical path; each of its edges is blamed
// on an event and classified (HTA's `bound_by`), and on a coarser kind of ours.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/trace.hpp"

namespace stepscope {

struct CriticalPathOptions {
  // Rows whose name contains this string (HTA's substring match over names) delimit the window;
  // "" is the whole trace.
  std::string annotation = "ProfilerStep";
  // Which of the matching rows, in row order: [instance_first, instance_last], inclusive.
  int instance_first = 0;
  int instance_last = 0;
  // CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1: a 0-weight launch → kernel edge for every GPU
  // event that has no launch-delay edge.
  bool zero_weight_launch_edges = false;
  // HTA's data_load_events: regexes (RE2, searched) over the shortened names of host events;
  // matching events get nodes and their edges are `data_loading`.
  std::vector<std::string> data_load_patterns;
  // HTA's loader option: with two or more ProfilerStep markers the last step is dropped unless set.
  bool include_last_profiler_step = false;
};

// HTA's "primary" case of a rank: the middle kept ProfilerStep (ProfilerStep#N, index len/2 of
// the kept step numbers, instance 0), or the whole trace (annotation "") when it has none.
CriticalPathOptions primary_critical_path_options(const RankTrace& rank);

enum class CpEdgeType : std::uint8_t {
  Operator,           // critical_path_operator: time inside an op, runtime call or GPU event
  Dependency,         // critical_path_dependency: 0-weight ordering between host ops
  KernelLaunchDelay,  // critical_path_kernel_launch_delay: launch call start → GPU start
  KernelKernelDelay,  // critical_path_kernel_kernel_delay: GPU gap on one stream
  SyncDependency,     // critical_path_sync_dependency: 0-weight GPU → host/GPU sync
};
inline constexpr int kCpEdgeTypeCount = 5;
const char* cp_edge_type_name(CpEdgeType t);  // HTA's spelling ("critical_path_operator", ...)

enum class CpBoundBy : std::uint8_t {
  None,                    // "" (dependency and sync edges, always 0 µs)
  CpuBound,                // cpu_bound
  DataLoading,             // data_loading
  GpuCompute,              // gpu_compute_bound (memcpy and memset included, as in HTA)
  GpuCommunication,        // gpu_communication_bound
  GpuKernelLaunchOverhead, // gpu_kernel_launch_overhead
  GpuKernelKernelOverhead, // gpu_kernel_kernel_overhead
};
inline constexpr int kCpBoundByCount = 7;
const char* cp_bound_by_name(CpBoundBy b);  // HTA's spelling ("" for None)

// Our breakdown of the path, coarser than HTA's and closer to what a user acts on.
enum class CpKind : std::uint8_t {
  Compute,        // GPU kernels that compute
  Communication,  // collective kernels
  Copy,           // memcpy / memset on the GPU, and copy calls that hold the host for their copy
  Launch,         // launch call → GPU start while the queue was empty
  Host,           // host ops and runtime calls
  Sync,           // blocking sync calls on the host (cudaDeviceSynchronize, ...)
  Input,          // data loading (data_load_patterns)
  Idle,           // GPU gap between two events of a stream
  None,           // 0-weight dependency and sync edges
};
inline constexpr int kCpKindCount = 9;
const char* cp_kind_name(CpKind k);  // "compute", "communication", ...

inline constexpr std::int64_t kNoEvent = -1;

struct CpPathEdge {
  ns_t begin_ts = 0, end_ts = 0;  // times of its two nodes (HTA's rounded times, trace clock)
  ns_t duration = 0;              // the edge's weight as HTA records it (end - begin, or 0)
  CpEdgeType type = CpEdgeType::Operator;
  CpBoundBy bound_by = CpBoundBy::None;
  CpKind kind = CpKind::None;
  std::int64_t event = kNoEvent;  // attributed event: index into the rank's EventTable
  std::int64_t stream = -1;       // of the attributed event (-1 on the host)
  std::string name;               // the attributed event's name ("" without one)
};

struct CpTotal {
  ns_t duration = 0;
  std::int64_t edges = 0;
};

struct CriticalPath {
  bool success = false;
  std::string error;  // why not, when !success

  // Window: [start, end] in the trace's clock (ns; HTA's rounded µs on sub-µs traces). For the
  // whole trace (annotation "") the end is open: HTA compares with an unshifted end column.
  std::string annotation;
  std::int64_t annotation_event = kNoEvent;  // first picked annotation row
  ns_t window_start = 0, window_end = 0;
  bool window_open_end = false;

  // The graph.
  std::int64_t nodes = 0;  // nodes that carry an edge (HTA adds nodes through edges)
  std::int64_t edges = 0;
  std::array<std::int64_t, kCpEdgeTypeCount> edges_by_type{};

  // The path, in path order, and its totals.
  std::vector<CpPathEdge> path;
  ns_t length = 0;  // Σ edge weights in the graph (negative weights clamped to 0)
  std::array<CpTotal, kCpBoundByCount> by_bound_by{};
  std::array<CpTotal, kCpEdgeTypeCount> by_edge_type{};
  std::array<double, kCpBoundByCount> summary_pct{};  // HTA's summary(): % of Σ durations
  std::array<CpTotal, kCpKindCount> by_kind{};
};

CriticalPath analyze_critical_path(const RankTrace& rank, const CriticalPathOptions& opts = {});

}  // namespace stepscope
