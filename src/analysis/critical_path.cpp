// HTA's critical-path analysis (hta/analyzers/critical_path_analysis.py at f4d0062c, "CPGraph"):
// graph construction from the host call stacks and the GPU activity, validation, the longest
// path, attribution of its edges to events and HTA's bound_by classes. Line numbers below refer
// to that file.
//
// Two cross-thread rules: the runtime-lock chain (558), which orders overlapping cudaHostAlloc /
// cudaLaunchKernel / cudaMemcpyAsync calls by completion, and the merge of the backward thread
// into the forward thread for the call stacks (_construct_graph_from_call_stacks). On the
// fixtures no two lock calls overlap; the merge is what joins a main and an autograd thread.
#include "stepscope/critical_path.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "analysis/critical_path_internal.hpp"
#include "analysis/hta_view.hpp"
#include "analysis/shared_view.hpp"
#include "stepscope/kernel_class.hpp"

namespace stepscope {

namespace {

using cp::CpRow;
using cp::Edge;
using cp::Graph;

constexpr ns_t kUs = 1000;
// KERNEL_KERNEL_DELAY_THRESHOLD_US (46): a larger gap between two GPU events of a stream is no
// kernel-kernel delay; the later event then has no incoming GPU edge.
constexpr ns_t kKernelKernelDelayThreshold = 1500 * kUs;

struct Node {
  std::int32_t row = -1;
  ns_t ts = 0;
  bool is_start = false;
};

class Builder {
 public:
  Builder(const RankTrace& rank, const cp::Rows& rows, const std::vector<std::int32_t>& clipped,
          const CriticalPathOptions& opts)
      : rank_(rank), all_(rows), rows_(rows.rows), clock_(rows.clock), clipped_(clipped), opts_(opts), graph_(0) {}

  bool build(std::string& error);
  Graph& graph() { return graph_; }
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  const CpRow& row(std::int64_t k) const { return rows_[static_cast<std::size_t>(k)]; }
  void create_event_nodes();
  void construct_from_cuda_runtime_events();
  void pick_merged_threads();
  std::int64_t stack_tid(const CpRow& r) const {
    const std::int64_t tid = cp::tid_of(rank_, r);
    return merge_ && tid == bwd_tid_ ? fwd_tid_ : tid;
  }
  bool is_lock_node(std::int32_t n) const;
  bool shares_runtime_lock(std::int32_t a, std::int32_t b) const;
  void construct_from_call_stacks();
  void construct_from_call_stack(const std::vector<std::int32_t>& thread_rows);
  bool construct_from_kernels(std::string& error);
  std::uint32_t add_edge(std::int32_t src, std::int32_t dst, CpEdgeType type, bool zero_weight = false);
  void attribute(std::uint32_t edge, std::int32_t src_parent);
  bool add_launch_edge(std::int32_t runtime_row, std::int32_t kernel_start, bool zero_weight);

  const RankTrace& rank_;
  const cp::Rows& all_;
  const std::vector<CpRow>& rows_;
  const cp::RowClock& clock_;
  const std::vector<std::int32_t>& clipped_;
  const CriticalPathOptions& opts_;
  Graph graph_;
  std::vector<Node> nodes_;
  std::unordered_map<std::int32_t, std::pair<std::int32_t, std::int32_t>> nodes_of_row_;  // start, end
  mutable std::vector<std::uint8_t> lock_name_;  // per StrId: 0 unknown, 1 no, 2 a runtime-lock call
  bool merge_ = false;                   // the backward thread's rows count as the forward thread's
  std::int64_t fwd_tid_ = 0, bwd_tid_ = 0;

 public:
  std::pair<std::int32_t, std::int32_t> nodes_of(std::int64_t r) const {
    auto it = nodes_of_row_.find(static_cast<std::int32_t>(r));
    return it == nodes_of_row_.end() ? std::make_pair(-1, -1) : it->second;
  }
};

// _create_event_nodes (444): a start and an end node for each cpu_op / cuda_runtime /
// cuda_driver row, each data-load row, and each GPU row with a correlation; sorted by (ts, event
// index), the start before the end of a 0-length event.
void Builder::create_event_nodes() {
  for (std::int32_t k : clipped_) {
    const CpRow& r = row(k);
    bool host_node = !r.on_stream() && (r.flags & (cp::kNodeCategory | cp::kDataLoad));
    bool gpu_node = r.on_stream() && r.has_corr;
    if (!host_node && !gpu_node && !(r.flags & cp::kNodeCategory)) continue;
    nodes_.push_back({k, clock_.ts(r), true});
    nodes_.push_back({k, clock_.end(r), false});
  }
  std::stable_sort(nodes_.begin(), nodes_.end(), [&](const Node& a, const Node& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.row != b.row) return row(a.row).event < row(b.row).event;
    return a.is_start && !b.is_start;
  });
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    auto& p = nodes_of_row_.try_emplace(nodes_[n].row, -1, -1).first->second;
    (nodes_[n].is_start ? p.first : p.second) = static_cast<std::int32_t>(n);
  }
  graph_ = Graph(nodes_.size());
}

// _add_edge_helper: the weight is the time between the nodes, except dependency and sync edges
// and edges asked to weigh 0.
std::uint32_t Builder::add_edge(std::int32_t src, std::int32_t dst, CpEdgeType type, bool zero_weight) {
  const bool zero = zero_weight || type == CpEdgeType::Dependency || type == CpEdgeType::SyncDependency;
  const ns_t w = zero ? 0 : nodes_[static_cast<std::size_t>(dst)].ts - nodes_[static_cast<std::size_t>(src)].ts;
  return graph_.add_edge(static_cast<std::uint32_t>(src), static_cast<std::uint32_t>(dst), w, type);
}

// _attribute_edge (294): operator and kernel-kernel edges carry an event. (start→start) and
// (start→end) belong to the source, (end→end) to the destination, (end→start) to the source's
// parent in the call stack; a kernel-kernel gap to the earlier GPU event.
void Builder::attribute(std::uint32_t ei, std::int32_t src_parent) {
  Edge& e = graph_.edges()[ei];
  if (e.type != CpEdgeType::Operator && e.type != CpEdgeType::KernelKernelDelay) return;
  const Node& src = nodes_[e.u];
  const Node& dst = nodes_[e.v];
  std::int32_t r;
  if (e.type == CpEdgeType::KernelKernelDelay || src.is_start) r = src.row;
  else if (!dst.is_start) r = dst.row;
  else r = src_parent;
  e.attributed_row = r;
  e.attributed = true;
}

// CUDA_RUNTIME_EVENTS (34): the calls that take the CUDA runtime lock. Exact names only (not
// cudaLaunchKernelExC, cuLaunchKernel, cudaMemcpy, hip*). _is_cuda_runtime_event_node tests the
// name of any node, whatever its category.
bool Builder::is_lock_node(std::int32_t n) const {
  const StrId name = cp::name_of(rank_, row(nodes_[static_cast<std::size_t>(n)].row));
  if (lock_name_.size() <= name) lock_name_.resize(static_cast<std::size_t>(name) + 1, 0);
  if (lock_name_[name] == 0) {
    const std::string_view s = rank_.str(name);
    lock_name_[name] = (s == "cudaHostAlloc" || s == "cudaLaunchKernel" || s == "cudaMemcpyAsync") ? 2 : 1;
  }
  return lock_name_[name] == 2;
}

// _shares_cuda_runtime_lock: both nodes are lock calls and they are not (end, start), i.e. the
// edge between them is the lock chain's business, not the call stack's.
bool Builder::shares_runtime_lock(std::int32_t a, std::int32_t b) const {
  return is_lock_node(a) && is_lock_node(b) &&
         (nodes_[static_cast<std::size_t>(a)].is_start || !nodes_[static_cast<std::size_t>(b)].is_start);
}

// _construct_graph_from_cuda_runtime_events (558), run before the call stacks. Over all nodes in
// node order (ts, event index), keeping the lock calls' nodes: a start is pushed; an end pops
// every pending start (last in first) and joins each to itself - its own start by an operator
// edge (the call's span, attributed to the call), another call's start by a 0-weight dependency
// - then, if the previous lock node was an end, adds a 0-weight end → end dependency. Without
// overlap this is exactly one span edge per call. With overlap, a call whose start was taken by
// an earlier end gets no span edge: its time runs through the chain at weight 0.
void Builder::construct_from_cuda_runtime_events() {
  std::vector<std::int32_t> pending;
  std::int32_t last = -1;
  for (std::int32_t n = 0; n < static_cast<std::int32_t>(nodes_.size()); ++n) {
    if (!is_lock_node(n)) continue;
    const Node& node = nodes_[static_cast<std::size_t>(n)];
    if (node.is_start) {
      pending.push_back(n);
    } else {
      while (!pending.empty()) {
        const std::int32_t p = pending.back();
        pending.pop_back();
        if (nodes_[static_cast<std::size_t>(p)].row == node.row)
          attribute(add_edge(p, n, CpEdgeType::Operator), node.row);
        else
          add_edge(p, n, CpEdgeType::Dependency);
      }
      if (last >= 0 && !nodes_[static_cast<std::size_t>(last)].is_start) add_edge(last, n, CpEdgeType::Dependency);
    }
    last = n;
  }
}

// _get_fwd_tid / _get_bwd_tid (_get_tid_for_event) on the clipped rows: the one tid whose cpu_op
// or user_annotation rows have a name containing "forward" (resp. "autograd"); none when no or
// several tids do. Both found, non-zero and different: CallGraph(remapped_tids={bwd: fwd}) - the
// tid alone is remapped (any pid), for the call stacks only.
void Builder::pick_merged_threads() {
  auto tid_with = [&](std::string_view needle, std::int64_t& tid) {
    bool found = false, unique = true;
    for (std::int32_t k : clipped_) {
      const CpRow& r = row(k);
      const std::string_view cat = rank_.str(rank_.events.category[r.event]);
      if (cat != "cpu_op" && cat != "user_annotation") continue;
      if (rank_.str(cp::name_of(rank_, r)).find(needle) == std::string_view::npos) continue;
      if (!found) {
        found = true;
        tid = cp::tid_of(rank_, r);
      } else if (cp::tid_of(rank_, r) != tid) {
        unique = false;
      }
    }
    return found && unique;
  };
  const bool f = tid_with("forward", fwd_tid_);
  const bool b = tid_with("autograd", bwd_tid_);
  merge_ = f && b && fwd_tid_ != 0 && bwd_tid_ != 0 && fwd_tid_ != bwd_tid_;
}

// hta/common/call_stack.py compare_events: the order of the start/end events of one thread.
struct StackEvent {
  std::int32_t row;
  std::uint32_t idx;  // HTA's index (file order)
  ns_t time, dur;
  int type;  // +1 start, -1 end
};

int compare_events(const StackEvent& x, const StackEvent& y) {
  if (x.idx == y.idx) return x.type == 1 ? -1 : 1;
  if (x.time != y.time) return x.time < y.time ? -1 : 1;
  if (x.type == y.type) {
    if (x.type == 1) {
      if (x.dur == y.dur) return x.idx < y.idx ? -1 : (x.idx > y.idx ? 1 : 0);
      return x.dur < y.dur ? 1 : -1;
    }
    if (x.dur == y.dur) return x.idx < y.idx ? 1 : (x.idx > y.idx ? -1 : 0);
    return x.dur < y.dur ? -1 : 1;
  }
  if (x.dur > 0 && y.dur > 0) return x.type == 1 ? 1 : -1;
  if (x.dur == 0 && y.dur == 0) return x.idx < y.idx ? -1 : (x.idx > y.idx ? 1 : 0);
  return x.type == 1 ? -1 : 1;
}

// CallGraph (hta/common/call_stack.py): one call stack per (pid, tid), in (pid, tid) order, with
// the backward thread's tid remapped to the forward thread's (pick_merged_threads). A thread with
// a stream > 0 is a GPU stream; a thread is a CPU thread only if every row has stream < 0 (a stray
// stream 0 makes it "unknown" and it is skipped).
void Builder::construct_from_call_stacks() {
  pick_merged_threads();
  std::vector<std::int32_t> order(clipped_.begin(), clipped_.end());
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const CpRow& x = row(a);
    const CpRow& y = row(b);
    const std::int64_t px = cp::pid_of(rank_, x), py = cp::pid_of(rank_, y);
    return px != py ? px < py : stack_tid(x) < stack_tid(y);
  });
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    bool cpu = true;
    while (j < order.size() && cp::pid_of(rank_, row(order[j])) == cp::pid_of(rank_, row(order[i])) &&
           stack_tid(row(order[j])) == stack_tid(row(order[i]))) {
      if (row(order[j]).on_stream()) cpu = false;
      ++j;
    }
    if (cpu) construct_from_call_stack(std::vector<std::int32_t>(order.begin() + static_cast<std::ptrdiff_t>(i),
                                                                 order.begin() + static_cast<std::ptrdiff_t>(j)));
    i = j;
  }
}

// _construct_graph_from_call_stack (739): a depth-first walk of the thread's call stack. Inside a
// top-level op, consecutive nodes of the walk are joined by operator edges (parent start → child
// start, child end → next child start, last child end → parent end); consecutive top-level ops
// by a 0-weight dependency edge. The edge into a blocking call's end node weighs 0 (772). An
// edge between two runtime-lock nodes other than (end, start) is left to the lock chain.
void Builder::construct_from_call_stack(const std::vector<std::int32_t>& thread_rows) {
  // The call stack: HTA pushes on a start and pops the top on any end.
  std::vector<StackEvent> events;
  events.reserve(thread_rows.size() * 2);
  for (std::int32_t k : thread_rows) {
    const CpRow& r = row(k);
    const ns_t ts = clock_.ts(r), dur = std::max<ns_t>(clock_.dur(r), 0);
    events.push_back({k, r.event, ts, dur, 1});
    events.push_back({k, r.event, ts + dur, dur, -1});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const StackEvent& a, const StackEvent& b) { return compare_events(a, b) < 0; });
  std::unordered_map<std::int32_t, std::vector<std::int32_t>> children;
  std::unordered_map<std::int32_t, std::int32_t> parent;
  std::vector<std::int32_t> stack;
  for (const StackEvent& e : events) {
    if (e.type == 1) {
      std::int32_t p = stack.empty() ? -1 : stack.back();
      if (parent.count(e.row)) continue;
      parent[e.row] = p;
      children[p].push_back(e.row);
      stack.push_back(e.row);
    } else if (!stack.empty()) {
      stack.pop_back();
    }
  }

  std::int32_t last_node = -1, last_top_level = -1, last_parent = -1;
  int depth = 0;
  auto enter = [&](std::int32_t k) {
    auto [s, e] = nodes_of(k);
    if (s < 0 || e < 0) return;
    if (depth == 0 && last_top_level >= 0) add_edge(last_top_level, s, CpEdgeType::Dependency);
    ++depth;
    if (last_node >= 0 && !shares_runtime_lock(last_node, s))
      attribute(add_edge(last_node, s, CpEdgeType::Operator), last_parent);
    last_node = s;
    last_parent = parent[k];
  };
  auto exit = [&](std::int32_t k) {
    auto [s, e] = nodes_of(k);
    if (s < 0 || e < 0) return;
    --depth;
    if (last_node >= 0 && !shares_runtime_lock(last_node, e)) {
      const bool blocking = row(k).flags & cp::kBlockingName;
      attribute(add_edge(last_node, e, CpEdgeType::Operator, blocking), last_parent);
    }
    if (depth == 0) {
      last_node = -1;
      last_top_level = e;
    } else {
      last_node = e;
      last_parent = parent[k];
    }
  };
  // Iterative depth-first walk from the root (-1), children in start order.
  struct Frame {
    std::int32_t node;
    std::size_t next;
  };
  std::vector<Frame> walk{{-1, 0}};
  while (!walk.empty()) {
    Frame& f = walk.back();
    const auto it = children.find(f.node);
    const std::size_t n = it == children.end() ? 0 : it->second.size();
    if (f.next < n) {
      std::int32_t c = it->second[f.next++];
      enter(c);
      walk.push_back({c, 0});
    } else {
      if (f.node >= 0) exit(f.node);
      walk.pop_back();
    }
  }
}

bool Builder::add_launch_edge(std::int32_t runtime_row, std::int32_t kernel_start, bool zero_weight) {
  auto [s, e] = nodes_of(runtime_row);
  (void)e;
  if (s < 0) return false;
  add_edge(s, kernel_start, CpEdgeType::KernelLaunchDelay, zero_weight);
  return true;
}

// Launch calls with a GPU partner, as rows in ts order (_get_cuda_runtime_calls_df); the stream
// and GPU are the partner's, read through the row.
using Launches = std::vector<std::int32_t>;

const CpRow& launched(const std::vector<CpRow>& rows, std::int32_t launch) {
  return rows[static_cast<std::size_t>(rows[static_cast<std::size_t>(launch)].partner)];
}

Launches launches_in_ts_order(const cp::Rows& all) {
  const std::vector<CpRow>& rows = all.rows;
  Launches out;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const CpRow& r = rows[k];
    if (!(r.flags & cp::kLaunchName) || r.partner < 0) continue;
    if (!rows[static_cast<std::size_t>(r.partner)].on_stream()) continue;
    out.push_back(static_cast<std::int32_t>(k));
  }
  cp::stable_sort_rows_by_ts(out, all);
  return out;
}

// The first of `launches` (ascending by ts) that starts after `ts`.
Launches::const_iterator first_launch_after(const cp::Rows& all, const Launches& launches, ns_t ts) {
  return std::upper_bound(launches.begin(), launches.end(), ts, [&](ns_t t, std::int32_t l) {
    return t < all.clock.ts(all.rows[static_cast<std::size_t>(l)]);
  });
}

// _get_cuda_event_record_df: for each cudaEventRecord whose event some sync waits on, the last
// launch (any thread) on the recorded stream and GPU at or before it. Keyed by the record's
// correlation id; the value is the launch row.
std::unordered_map<std::int64_t, std::int32_t> previous_launch_of_records(const RankTrace& rank, const cp::Rows& all,
                                                                         const Launches& launches) {
  const std::vector<CpRow>& rows = all.rows;
  std::unordered_map<std::int64_t, std::pair<std::int64_t, std::int64_t>> recorded_on;  // corr → (stream, gpu)
  for (const CpRow& r : rows)
    if (const std::int64_t stream = cp::wait_on_stream_of(rank, r); stream > -1)
      recorded_on.emplace(cp::wait_on_record_corr_of(rank, r), std::make_pair(stream, cp::pid_of(rank, r)));
  std::unordered_map<std::int64_t, std::int32_t> out;
  if (recorded_on.empty()) return out;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int32_t>> by_stream;
  for (std::int32_t l : launches) {
    const CpRow& g = launched(rows, l);
    by_stream[{cp::pid_of(rank, g), cp::stream_of(rank, g)}].push_back(l);
  }
  for (const CpRow& r : rows) {
    if (!(r.flags & cp::kEventRecordName)) continue;
    const std::int64_t corr = cp::correlation_of(rank, r);
    auto it = recorded_on.find(corr);
    if (it == recorded_on.end()) continue;
    auto ls = by_stream.find({it->second.second, it->second.first});
    if (ls == by_stream.end()) continue;
    const auto& v = ls->second;
    const auto pos = first_launch_after(all, v, all.clock.ts(r));
    if (pos != v.begin()) out[corr] = *(pos - 1);
  }
  return out;
}

// _get_cuda_stream_wait_event_df: for each cudaStreamWaitEvent (with its "Stream Wait Event"
// partner), the next launch by the same thread on the waiting stream. Keyed by the call's row.
std::unordered_map<std::int32_t, std::int32_t> next_launch_of_stream_waits(const RankTrace& rank, const cp::Rows& all,
                                                                          const Launches& launches) {
  const std::vector<CpRow>& rows = all.rows;
  std::unordered_map<std::int32_t, std::int32_t> out;
  const bool any_wait = std::any_of(rows.begin(), rows.end(), [](const CpRow& r) { return r.flags & cp::kStreamWaitCall; });
  if (!any_wait) return out;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::vector<std::int32_t>> by_thread;
  for (std::int32_t l : launches) {
    const CpRow& r = rows[static_cast<std::size_t>(l)];
    by_thread[{cp::pid_of(rank, r), cp::tid_of(rank, r), cp::stream_of(rank, launched(rows, l))}].push_back(l);
  }
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const CpRow& r = rows[k];
    if (!(r.flags & cp::kStreamWaitCall) || r.partner < 0) continue;
    const CpRow& g = rows[static_cast<std::size_t>(r.partner)];
    if (!g.on_stream()) continue;
    auto it = by_thread.find({cp::pid_of(rank, r), cp::tid_of(rank, r), cp::stream_of(rank, g)});
    if (it == by_thread.end()) continue;
    const auto& v = it->second;
    const auto pos = first_launch_after(all, v, all.clock.ts(r));
    if (pos != v.end()) out[static_cast<std::int32_t>(k)] = *pos;
  }
  return out;
}

// _construct_graph_from_kernels (1300-1480): GPU events in start order (sync events by their
// end), each with its span edge and one incoming edge: a launch delay when the queue was empty
// (1370), else a kernel-kernel gap on its stream (below the threshold); plus the sync edges that
// the cuda_sync events imply.
bool Builder::construct_from_kernels(std::string& error) {
  // The lengths the kernels below read: at their rows and their launch calls'.
  std::vector<std::int32_t> asked(clipped_);
  for (std::int32_t k : clipped_)
    if (row(k).partner >= 0) asked.push_back(row(k).partner);
  std::sort(asked.begin(), asked.end());
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
  const cp::QueueLengths q = cp::queue_length_at_rows(rank_, all_, std::move(asked));
  const Launches launches = launches_in_ts_order(all_);
  const auto record_launch = previous_launch_of_records(rank_, all_, launches);
  const auto wait_next_launch = next_launch_of_stream_waits(rank_, all_, launches);

  struct Item {
    std::int32_t row;
    ns_t key;
  };
  std::vector<Item> items;
  for (std::int32_t k : clipped_) {
    const CpRow& r = row(k);
    if (!r.has_corr) continue;
    if (!r.on_stream() && !(r.flags & (cp::kEventSyncName | cp::kContextSyncName))) continue;
    items.push_back({k, (r.flags & cp::kSyncCategory) ? clock_.end(r) : clock_.ts(r)});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.key < b.key; });

  // index_previous_launch of a sync row: the launch before the cudaEventRecord it waits on.
  auto previous_launch = [&](const CpRow& r) -> std::int32_t {
    const std::int64_t record_corr = cp::wait_on_record_corr_of(rank_, r);
    if (record_corr < 0) return -1;
    auto it = record_launch.find(record_corr);
    return it == record_launch.end() ? -1 : it->second;
  };

  std::map<std::int64_t, std::int32_t> last_node;  // stream → end node of its last GPU event
  std::vector<std::int64_t> last_node_order;        // streams in first-seen order (dict order)
  std::unordered_map<std::int32_t, std::int32_t> kernel_sync;  // dest GPU row → source GPU row

  auto sync_to_host = [&](std::int32_t gpu_end_node, std::int32_t runtime_row) {
    auto [s, e] = nodes_of(runtime_row);
    (void)s;
    if (e >= 0 && e != gpu_end_node) add_edge(gpu_end_node, e, CpEdgeType::SyncDependency);
  };

  for (const Item& it : items) {
    const CpRow& r = row(it.row);
    if (r.flags & cp::kSyncCategory) {
      if (r.flags & (cp::kStreamWaitName | cp::kEventSyncName)) {
        std::int32_t prev = previous_launch(r);
        if (prev < 0) continue;
        std::int32_t src_kernel = row(prev).partner;
        if (src_kernel < 0) continue;
        if (r.flags & cp::kStreamWaitName) {
          auto w = wait_next_launch.find(r.partner);
          if (w == wait_next_launch.end()) continue;
          std::int32_t dest_kernel = row(w->second).partner;
          if (dest_kernel >= 0) kernel_sync[dest_kernel] = src_kernel;
        } else {
          auto [gs, ge] = nodes_of(src_kernel);
          (void)gs;
          if (ge >= 0 && r.partner >= 0) sync_to_host(ge, r.partner);
        }
        continue;
      }
      if (r.flags & cp::kContextSyncName) {
        for (std::int64_t s : last_node_order)
          if (r.partner >= 0) sync_to_host(last_node[s], r.partner);
      } else if (r.flags & cp::kStreamSyncName) {
        auto ln = last_node.find(cp::stream_of(rank_, r));
        if (ln != last_node.end() && r.partner >= 0) sync_to_host(ln->second, r.partner);
      }
      continue;
    }

    auto [start, end] = nodes_of(it.row);
    if (start < 0 || end < 0) continue;
    attribute(add_edge(start, end, CpEdgeType::Operator), -1);

    std::int32_t sync_end = -1;
    bool launch_added = false;
    if (auto ks = kernel_sync.find(it.row); ks != kernel_sync.end() && ks->second >= 0) {
      sync_end = nodes_of(ks->second).second;
      if (sync_end >= 0) {
        add_edge(sync_end, start, CpEdgeType::SyncDependency);
      }
      ks->second = -1;
    }

    const std::int32_t runtime = r.partner;
    const std::int64_t stream = cp::stream_of(rank_, r);
    const auto ln = last_node.find(stream);
    const bool has_last = ln != last_node.end();
    const ns_t runtime_ts = runtime >= 0 ? clock_.ts(row(runtime)) : std::numeric_limits<ns_t>::min();
    const std::int64_t q_runtime = runtime >= 0 ? q.at(runtime) : -1;
    const std::int64_t q_kernel = q.at(it.row);
    if (q_runtime == 1 && q_kernel == 0 && (!has_last || nodes_[static_cast<std::size_t>(ln->second)].ts < runtime_ts) &&
        (sync_end < 0 || nodes_[static_cast<std::size_t>(sync_end)].ts < runtime_ts)) {
      if (!add_launch_edge(runtime, start, false)) {
        error = "a kernel's launch has no node (\"Could not find runtime index\")";
        return false;
      }
      launch_added = true;
    } else if (has_last && (sync_end < 0 || nodes_[static_cast<std::size_t>(sync_end)].ts < nodes_[static_cast<std::size_t>(ln->second)].ts)) {
      const ns_t gap = nodes_[static_cast<std::size_t>(start)].ts - nodes_[static_cast<std::size_t>(ln->second)].ts;
      if (gap < kKernelKernelDelayThreshold) {
        attribute(add_edge(ln->second, start, CpEdgeType::KernelKernelDelay), -1);
      }
    }
    if (opts_.zero_weight_launch_edges && !launch_added && runtime >= 0) add_launch_edge(runtime, start, true);

    if (!has_last) last_node_order.push_back(stream);
    last_node[stream] = end;
  }
  return true;
}

bool Builder::build(std::string& error) {
  create_event_nodes();
  construct_from_cuda_runtime_events();  // first: the lock calls' nodes enter networkx's node order first
  construct_from_call_stacks();
  return construct_from_kernels(error);
}

// _validate_graph (1491): weights <= -1 become 0 in the graph (the edge keeps its value); a
// sync edge between two events of one stream makes the graph invalid.
bool validate_path(Graph& g, const std::vector<Node>& nodes, const RankTrace& rank, const std::vector<CpRow>& rows,
              std::string& error) {
  for (Edge& e : g.edges()) {
    if (e.weight < 0) e.graph_weight = 0;
    if (e.type == CpEdgeType::SyncDependency) {
      std::int64_t s = cp::stream_of(rank, rows[static_cast<std::size_t>(nodes[e.u].row)]);
      std::int64_t d = cp::stream_of(rank, rows[static_cast<std::size_t>(nodes[e.v].row)]);
      if (s != -1 && s == d) {
        error = "a sync edge joins two events of one stream (HTA: graph is not valid)";
        return false;
      }
    }
  }
  return true;
}

bool is_copy_kind(Kind k) { return k == Kind::Memcpy || k == Kind::Memset; }

// A copy call that holds the host while its own copy runs: a pageable cudaMemcpyAsync or a
// plain cudaMemcpy. Its time on the path is the copy's, not host work; the copy must overlap at
// least half of the call, or the wait was for earlier work queued on the stream (a sync). A
// pageable copy's last staged chunk can end just after the call returns.
// Example: cudaMemcpyAsync [0, 28.36 ms) whose HtoD copy runs [0.14, 28.37 ms) -> copy.
bool waits_on_own_copy(const RankTrace& rank, const cp::Rows& all, const CpRow& call) {
  if (call.partner < 0) return false;
  const CpRow& gpu = all.rows[static_cast<std::size_t>(call.partner)];
  if (rank.events.kind[gpu.event] != Kind::Memcpy) return false;
  const cp::RowClock& c = all.clock;
  const ns_t overlap = std::min(c.end(gpu), c.end(call)) - std::max(c.ts(gpu), c.ts(call));
  return 2 * overlap >= c.dur(call) && c.dur(call) > 0;
}

// bound_by (1563) and our kind. HTA classifies by edge type first, then by the attributed event:
// host → data_loading (name matches a data_load_events regex) or cpu_bound; GPU →
// gpu_communication_bound by HTA's COMMUNICATION regex, else gpu_compute_bound.
// Our kinds split further: compute → copy for memcpy/memset; cpu_bound → copy for a copy call that
// waits on its own copy; cpu_bound → sync for host calls that
// wait for the device (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize,
// cudaEventQuery, blocking cudaMemcpy/cudaMemset and their HIP twins); data_loading → input;
// kernel-kernel gaps → idle (the GPU stream waits); launch delays → launch.
void classify_edge(CpPathEdge& pe, const Edge& e, const RankTrace& rank, const cp::Rows& all) {
  const std::vector<CpRow>& rows = all.rows;
  switch (e.type) {
    case CpEdgeType::KernelKernelDelay:
      pe.bound_by = CpBoundBy::GpuKernelKernelOverhead;
      pe.kind = CpKind::Idle;
      return;
    case CpEdgeType::KernelLaunchDelay:
      pe.bound_by = CpBoundBy::GpuKernelLaunchOverhead;
      pe.kind = CpKind::Launch;
      return;
    case CpEdgeType::Dependency:
    case CpEdgeType::SyncDependency:
      pe.bound_by = CpBoundBy::None;
      pe.kind = CpKind::None;
      return;
    case CpEdgeType::Operator:
      break;
  }
  if (!e.attributed || e.attributed_row < 0) {
    pe.bound_by = CpBoundBy::CpuBound;
    pe.kind = CpKind::Host;
    return;
  }
  const CpRow& r = rows[static_cast<std::size_t>(e.attributed_row)];
  if (!r.on_stream()) {
    if (r.flags & cp::kDataLoad) {
      pe.bound_by = CpBoundBy::DataLoading;
      pe.kind = CpKind::Input;
    } else {
      pe.bound_by = CpBoundBy::CpuBound;
      pe.kind = waits_on_own_copy(rank, all, r) ? CpKind::Copy
                : (r.flags & cp::kHostSyncName)   ? CpKind::Sync
                                                  : CpKind::Host;
    }
    return;
  }
  if (hta_kernel_type(rank.str(cp::name_of(rank, r))) == HtaKernelType::Communication) {
    pe.bound_by = CpBoundBy::GpuCommunication;
    pe.kind = CpKind::Communication;
    return;
  }
  pe.bound_by = CpBoundBy::GpuCompute;
  pe.kind = is_copy_kind(rank.events.kind[r.event]) ? CpKind::Copy : CpKind::Compute;
}

void fill_path(CriticalPath& out, const std::vector<std::uint32_t>& path, const Graph& g, const std::vector<Node>& nodes,
               const RankTrace& rank, const cp::Rows& all) {
  const std::vector<CpRow>& rows = all.rows;
  for (std::size_t k = 0; k + 1 < path.size(); ++k) {
    const Edge& e = g.edges()[static_cast<std::size_t>(g.find(path[k], path[k + 1]))];
    CpPathEdge pe;
    pe.begin_ts = nodes[e.u].ts;
    pe.end_ts = nodes[e.v].ts;
    pe.duration = e.weight;
    pe.type = e.type;
    if (e.attributed && e.attributed_row >= 0) {
      const CpRow& r = rows[static_cast<std::size_t>(e.attributed_row)];
      pe.event = r.event;
      pe.stream = cp::stream_of(rank, r);
    }
    classify_edge(pe, e, rank, all);
    out.length += e.graph_weight;
    auto add = [&](CpTotal& t) {
      t.duration += pe.duration;
      ++t.edges;
    };
    add(out.by_bound_by[static_cast<std::size_t>(pe.bound_by)]);
    add(out.by_edge_type[static_cast<std::size_t>(pe.type)]);
    add(out.by_kind[static_cast<std::size_t>(pe.kind)]);
    out.path.push_back(pe);
  }
  ns_t total = 0;
  for (const CpTotal& t : out.by_bound_by) total += t.duration;
  for (int b = 0; b < kCpBoundByCount; ++b)
    out.summary_pct[static_cast<std::size_t>(b)] =
        total != 0 ? 100.0 * static_cast<double>(out.by_bound_by[static_cast<std::size_t>(b)].duration) / static_cast<double>(total) : 0.0;
}

}  // namespace

const char* cp_edge_type_name(CpEdgeType t) {
  switch (t) {
    case CpEdgeType::Operator: return "critical_path_operator";
    case CpEdgeType::Dependency: return "critical_path_dependency";
    case CpEdgeType::KernelLaunchDelay: return "critical_path_kernel_launch_delay";
    case CpEdgeType::KernelKernelDelay: return "critical_path_kernel_kernel_delay";
    case CpEdgeType::SyncDependency: return "critical_path_sync_dependency";
  }
  return "?";
}

const char* cp_bound_by_name(CpBoundBy b) {
  switch (b) {
    case CpBoundBy::None: return "";
    case CpBoundBy::CpuBound: return "cpu_bound";
    case CpBoundBy::DataLoading: return "data_loading";
    case CpBoundBy::GpuCompute: return "gpu_compute_bound";
    case CpBoundBy::GpuCommunication: return "gpu_communication_bound";
    case CpBoundBy::GpuKernelLaunchOverhead: return "gpu_kernel_launch_overhead";
    case CpBoundBy::GpuKernelKernelOverhead: return "gpu_kernel_kernel_overhead";
  }
  return "?";
}

const char* cp_kind_name(CpKind k) {
  switch (k) {
    case CpKind::Compute: return "compute";
    case CpKind::Communication: return "communication";
    case CpKind::Copy: return "copy";
    case CpKind::Launch: return "launch";
    case CpKind::Host: return "host";
    case CpKind::Sync: return "sync";
    case CpKind::Input: return "input";
    case CpKind::Idle: return "idle";
    case CpKind::None: return "none";
  }
  return "?";
}

// The middle kept ProfilerStep, as HTA's oracle driver picks it; the whole trace without steps.
CriticalPathOptions primary_critical_path_options(const RankTrace& rank) {
  return primary_critical_path_options(hta::build_view(rank, GpuTimelineOptions{}).load);
}

CriticalPathOptions primary_critical_path_options(const HtaLoad& load) {
  CriticalPathOptions o;
  if (load.iterations.empty()) {
    o.annotation = "";
    return o;
  }
  o.annotation = "ProfilerStep#" + std::to_string(load.iterations[load.iterations.size() / 2]);
  return o;
}

CriticalPath analyze_critical_path(const RankTrace& rank, const CriticalPathOptions& opts) {
  GpuTimelineOptions vopts;
  vopts.include_last_profiler_step = opts.include_last_profiler_step;
  return analyze_critical_path(rank, opts, hta::build_view(rank, vopts).load);
}

CriticalPath analyze_critical_path(const RankTrace& rank, const CriticalPathOptions& opts, const HtaLoad& load) {
  CriticalPath out;
  out.annotation = opts.annotation;
  const cp::Rows rows = cp::build_rows(rank, opts, load);
  const cp::Window& w = rows.window;
  if (!w.ok) {
    out.error = w.error;
    return out;
  }
  out.window_start = w.start;
  out.window_end = w.end;
  out.window_open_end = w.open_end;
  if (w.annotation_row >= 0) out.annotation_event = rows.rows[static_cast<std::size_t>(w.annotation_row)].event;
  // TraceCounters needs GPU events for the queue length series; HTA asserts on it.
  if (!rows.has_gpu) {
    out.error = "no GPU events: HTA needs the queue length series";
    return out;
  }
  const std::vector<std::int32_t> clipped = cp::clip_rows(rows, w);
  Builder b(rank, rows, clipped, opts);
  if (!b.build(out.error)) return out;
  Graph& g = b.graph();
  out.nodes = static_cast<std::int64_t>(g.node_order().size());
  out.edges = static_cast<std::int64_t>(g.edges().size());
  for (const Edge& e : g.edges()) ++out.edges_by_type[static_cast<std::size_t>(e.type)];
  if (!validate_path(g, b.nodes(), rank, rows.rows, out.error)) return out;
  bool cycle = false;
  const std::vector<std::uint32_t> path = cp::dag_longest_path(g, cycle);
  if (cycle) {
    out.error = "the graph has a cycle";
    return out;
  }
  if (path.size() < 2) {
    out.error = "the critical path is empty (no edges in the window)";
    return out;
  }
  fill_path(out, path, g, b.nodes(), rank, rows);
  out.success = true;
  return out;
}

}  // namespace stepscope
