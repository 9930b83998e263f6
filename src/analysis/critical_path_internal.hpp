// Internals of the critical-path analysis (critical_path*.cpp): HTA's rows of one rank, the
// window, and the graph with networkx's semantics.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/hta_view.hpp"
#include "stepscope/critical_path.hpp"
#include "stepscope/gpu_timeline.hpp"
#include "stepscope/trace.hpp"

namespace stepscope::cp {

// What a row's name or category means to the critical path, looked up once per string.
enum RowFlag : std::uint16_t {
  kNodeCategory = 1,      // cat is cpu_op, cuda_runtime or cuda_driver: the row gets nodes
  kSyncCategory = 2,      // cat is cuda_sync
  kLaunchName = 4,        // a launch call counted by the queue length series
  kBlockingName = 8,      // a blocking call: its end edge weighs 0
  kEventSyncName = 16,    // "Event Sync"
  kContextSyncName = 32,  // "Context Sync"
  kStreamSyncName = 64,   // "Stream Sync"
  kStreamWaitName = 128,  // "Stream Wait Event"
  kEventRecordName = 256, // cudaEventRecord
  kStreamWaitCall = 512,  // cudaStreamWaitEvent
  kDataLoad = 1024,       // matches a data_load_patterns regex
  kHostSyncName = 2048,   // a host call that waits for the device (our Sync kind)
  kOnStream = 4096,       // the row's own: HTA's stream column is not -1 (a GPU row)
};

// One row of HTA's trace dataframe for the rank, after its loader's filtering. Only the columns
// HTA computes live here; those it takes as they are (pid, tid, name, stream, correlation, the
// cuda_sync args) are read from the event table through `event` (the functions below), and so
// are its times (hta::RowClock), which keeps a row at 12 bytes: a trace has millions.
struct CpRow {
  std::uint32_t event = 0;  // index into the rank's EventTable (HTA's `index`, in file order)
  // HTA's index_correlation: `partner` is the row it names when > 0, -1 otherwise; `has_corr`
  // is index_correlation >= 0 (the row has a correlation id, matched or not).
  std::int32_t partner = -1;
  std::uint16_t flags = 0;  // RowFlag bits
  bool has_corr = false;
  bool gpu_for_filter = false;  // stream >= 0 with a correlation, or Event/Context Sync
  bool on_stream() const { return flags & kOnStream; }
};
static_assert(sizeof(CpRow) == 12);

// A row's times (HTA's rounding) come from its event.
using hta::RowClock;

// HTA's correlation column: the id, or -1 for none (negative ids read as none).
inline std::int64_t correlation_of(const RankTrace& t, const CpRow& r) {
  const std::int64_t c = t.events.correlation[r.event];
  return c < 0 ? -1 : c;
}
inline std::int64_t pid_of(const RankTrace& t, const CpRow& r) { return t.events.pid(r.event); }
inline std::int64_t tid_of(const RankTrace& t, const CpRow& r) { return t.events.tid(r.event); }
inline StrId name_of(const RankTrace& t, const CpRow& r) { return t.events.name[r.event]; }
// HTA's stream column (hta::hta_stream): -1, or the stream of a row on_stream().
inline std::int64_t stream_of(const RankTrace& t, const CpRow& r) {
  return r.on_stream() ? t.events.stream[r.event] : -1;
}
// A cuda_sync row's args.wait_on_stream and args.wait_on_cuda_event_record_corr_id, or -1.
inline std::int64_t wait_on_stream_of(const RankTrace& t, const CpRow& r) {
  const std::optional<EventExtra> x = t.extra_of(r.event);
  return x ? x->wait_on_stream : -1;
}
inline std::int64_t wait_on_record_corr_of(const RankTrace& t, const CpRow& r) {
  const std::optional<EventExtra> x = t.extra_of(r.event);
  return x ? x->wait_on_event_record_corr : -1;
}

// critical_path_analysis.py:1838-1892: the window.
struct Window {
  bool ok = false;
  std::string error;
  ns_t start = 0, end = 0;
  bool open_end = false;
  std::int64_t annotation_row = -1;
};

struct Rows {
  std::vector<CpRow> rows;  // the (filtered) trace in event order, but plain host rows outside the window
  RowClock clock;           // the rows' times
  bool has_gpu = false;
  Window window;  // as pick_window picks it; annotation_row numbers a row of `rows`
};

// HTA's trace dataframe for the rank (loader filtering, rounding, index_correlation).
// `load` is what HTA's loader did to the rank (hta::View::load, built with
// include_last_profiler_step as in `opts`).
Rows build_rows(const RankTrace& rank, const CriticalPathOptions& opts, const HtaLoad& load);

// The queue-length series (trace_counters.py:18-95) read at the rows asked for. The series runs
// over every row, but only the asked rows' values are kept: the path reads a window's rows.
class QueueLengths {
 public:
  explicit QueueLengths(std::vector<std::int32_t> asked);  // row numbers, ascending
  // The length at an asked row; -1 where the row has no entry (HTA's NaN) or was not asked for.
  std::int32_t at(std::int32_t row) const;
  // Records the length at `row` if it was asked for.
  void set(std::int32_t row, std::int32_t length);

 private:
  std::vector<std::int32_t> rows_, lengths_;
};
QueueLengths queue_length_at_rows(const RankTrace& rank, const Rows& rows, std::vector<std::int32_t> asked);

// Row numbers ordered by their rows' ts, ties in the order given; already ordered lists (the
// common case: rows in file order) are left as they are.
void stable_sort_rows_by_ts(std::vector<std::int32_t>& order, const Rows& rows);

// The window of `rows` (build_rows keeps it in Rows::window); the clipped rows, ascending.
Window pick_window(const Rows& rows, const RankTrace& rank, const CriticalPathOptions& opts);
std::vector<std::int32_t> clip_rows(const Rows& rows, const Window& w);

// A DiGraph with networkx's iteration orders: nodes in order of first appearance in an edge,
// successors and predecessors in edge insertion order, and re-adding (u, v) overwriting the
// attributes in place.
struct Edge {
  std::uint32_t u = 0, v = 0;
  ns_t weight = 0;        // the edge object's weight
  ns_t graph_weight = 0;  // the graph attribute (clamped to 0 by validation)
  CpEdgeType type = CpEdgeType::Operator;
  std::int32_t attributed_row = -1;  // edge_to_event_map, as a row index
  bool attributed = false;
};

class Graph {
 public:
  explicit Graph(std::size_t nodes) : in_graph_(nodes, 0), succ_(nodes), pred_(nodes) {}
  // Returns the edge's index.
  std::uint32_t add_edge(std::uint32_t u, std::uint32_t v, ns_t weight, CpEdgeType type);
  std::vector<Edge>& edges() { return edges_; }
  const std::vector<Edge>& edges() const { return edges_; }
  const std::vector<std::uint32_t>& node_order() const { return order_; }
  const std::vector<std::uint32_t>& succ(std::uint32_t n) const { return succ_[n]; }
  const std::vector<std::uint32_t>& pred(std::uint32_t n) const { return pred_[n]; }
  std::int64_t find(std::uint32_t u, std::uint32_t v) const;

 private:
  void touch(std::uint32_t n);
  std::vector<Edge> edges_;
  std::vector<std::uint8_t> in_graph_;
  std::vector<std::uint32_t> order_;
  std::vector<std::vector<std::uint32_t>> succ_, pred_;  // edge indices
  std::unordered_map<std::uint64_t, std::uint32_t> index_;
};

// networkx.dag_longest_path(weight="weight") on graph weights: node ids in path order, or
// empty when the graph has a cycle (`cycle` set).
std::vector<std::uint32_t> dag_longest_path(const Graph& g, bool& cycle);

}  // namespace stepscope::cp
