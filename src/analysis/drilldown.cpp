// The operator view, the kernel view and memory over time, and the drill-down of one rank.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "analysis/drilldown_internal.hpp"
#include "analysis/shared_view.hpp"
#include "stepscope/id_map.hpp"

namespace stepscope {

const char* operator_grouping_name(OperatorGrouping g) {
  switch (g) {
    case OperatorGrouping::Name: return "name";
    case OperatorGrouping::NameAndShape: return "name_and_shape";
    case OperatorGrouping::Module: return "module";
  }
  return "name";
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_gpu_record(Kind k) { return k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset; }

// The nearest enclosing host op (cpu_op) of event i, or kNoParent.
std::uint32_t op_ancestor(const RankTrace& rank, const std::vector<std::uint32_t>& parent, std::uint32_t i) {
  for (std::uint32_t p = parent[i]; p != kNoParent; p = parent[p])
    if (rank.events.kind[p] == Kind::CpuOp) return p;
  return kNoParent;
}

// The name of the innermost "nn.Module: X" range around event i (recorded with with_modules /
// with_stack), or kNoStr.
StrId module_range_of(const RankTrace& rank, const RankFacts& facts, const CallTree& tree, std::uint32_t i) {
  for (std::uint32_t p = tree.parent[i]; p != kNoParent; p = tree.parent[p])
    if (facts.of_event(rank, p).has(kNameModuleRange)) return rank.events.name[p];
  return kNoStr;
}

// GPU records a launch call put on the GPU: their count and summed duration.
struct Launched {
  std::int64_t records = 0;
  ns_t time = 0;
};

Launched launched_by(const RankTrace& rank, std::uint32_t call) {
  Launched l;
  const std::int64_t corr = rank.events.correlation[call];
  if (corr < 0) return l;
  for (std::uint32_t g : rank.correlations.gpu(corr))
    if (is_gpu_record(rank.events.kind[g]) && rank.events.phase[g] == Phase::Complete) ++l.records, l.time += rank.events.dur[g];
  return l;
}

// An op's group as interned ids: its name, and its input dims or its module range's name. Equal
// texts intern to equal ids, so the ids group exactly as the texts would.
// `module`: module_range_of(i), which the walk keeps on its stack.
std::pair<StrId, StrId> group_key(const RankTrace& rank, std::uint32_t i, OperatorGrouping g, StrId module) {
  StrId second = kNoStr;
  if (g == OperatorGrouping::NameAndShape) {
    const std::optional<EventExtra> x = rank.extra_of(i);
    second = x ? x->input_dims : kNoStr;
  } else if (g == OperatorGrouping::Module) {
    second = module;
  }
  return {rank.events.name[i], second};
}

std::string group_detail(const RankTrace& rank, StrId second, OperatorGrouping g) {
  if (second == kNoStr) return "";
  const std::string_view text = rank.str(second);
  return std::string(g == OperatorGrouping::Module ? text.substr(kModuleRangePrefix.size()) : text);
}

StageHint main_stage(const std::array<ns_t, kStageHintCount + 1>& time) {
  // time[0] is "no stage"; a stage wins only with more time than no stage.
  int best = 0;
  for (int s = 1; s <= kStageHintCount; ++s)
    if (time[s] > time[best]) best = s;
  return best == 0 ? StageHint::None : static_cast<StageHint>(best - 1);
}

// The operator tables of some groupings, built in one walk of the call tree, track by track in
// start order: an op's figures are complete when the walk leaves it, and go to its group in each
// table then, so no figure is kept per op. An op's GPU total is its own launches' time plus its
// child ops' totals, handed up as each child closes; calls between ops (annotations, Python
// frames) pass both through.
// Example: aten::linear [0, 10) holding aten::addmm [1, 9), whose cudaLaunchKernel launched a
// 5 µs kernel: linear gets self 2, gpu_self 0, gpu_total 5; addmm self 8, gpu_self 5, gpu_total 5.
class OperatorTables {
 public:
  OperatorTables(const RankTrace& rank, const RankFacts& facts, const CallTree& tree,
                 const std::vector<OperatorGrouping>& groupings)
      : rank_(rank), facts_(facts), tree_(tree) {
    for (OperatorGrouping g : groupings) tables_.push_back({g, {}, {}, {}});
    for (std::uint32_t t = 0; t < rank.host_tracks.size(); ++t) walk(rank.host_tracks[t].events);
  }
  // Grouping k's rows, most host self time first.
  std::vector<OperatorRow> take_rows(std::size_t k);

 private:
  struct Figures {
    ns_t child_time = 0;  // durations of the direct child ops
    ns_t gpu_self = 0, gpu_total = 0;
    std::int64_t kernels = 0;
  };
  struct Open {
    std::uint32_t event;
    Figures figures;      // used when the call is an op
    std::int32_t op_at;   // the stack entry of the innermost op at or below this one, or -1
    StrId enclosing_module;  // module_range_of(event): the innermost module range above it
    StrId module_inside;     // the same for the calls below it: itself when it is a module range
  };
  struct Table {
    OperatorGrouping grouping;
    IdMap<std::size_t> index;  // group key (name id << 32 | detail id) -> 1 + its row (0: new group)
    std::vector<OperatorRow> rows;
    std::vector<std::array<ns_t, kStageHintCount + 1>> stage_time;
  };

  void walk(const std::vector<std::uint32_t>& track);
  void enter(std::uint32_t i);
  void leave();
  void close(std::uint32_t op, const Figures& f, StrId module);

  const RankTrace& rank_;
  const RankFacts& facts_;
  const CallTree& tree_;
  std::vector<Table> tables_;
  std::vector<Open> stack_;  // the calls around the one visited, outermost first
};

void OperatorTables::walk(const std::vector<std::uint32_t>& track) {
  for (std::uint32_t i : track) {
    if (!tree_.in_tree(i)) continue;
    while (!stack_.empty() && stack_.back().event != tree_.parent[i]) leave();
    enter(i);
  }
  while (!stack_.empty()) leave();
}

void OperatorTables::enter(std::uint32_t i) {
  const EventTable& ev = rank_.events;
  const std::int32_t op = stack_.empty() ? -1 : stack_.back().op_at;  // the innermost enclosing op
  if (op >= 0 && ev.kind[i] == Kind::CpuOp) stack_[static_cast<std::size_t>(op)].figures.child_time += ev.dur[i];
  if (op >= 0 && (ev.kind[i] == Kind::Runtime || ev.kind[i] == Kind::Driver)) {
    const Launched l = launched_by(rank_, i);
    Figures& f = stack_[static_cast<std::size_t>(op)].figures;
    if (l.records > 0) f.gpu_self += l.time, f.gpu_total += l.time, f.kernels += l.records;
  }
  const auto here = static_cast<std::int32_t>(stack_.size());
  // The module above a call, from the stack of its ancestors rather than a climb up the tree
  // per op (which grows with the square of the nesting depth).
  const StrId enclosing = stack_.empty() ? module_range_of(rank_, facts_, tree_, i) : stack_.back().module_inside;
  const StrId inside = facts_.of(ev.name[i]).has(kNameModuleRange) ? ev.name[i] : enclosing;
  stack_.push_back({i, {}, ev.kind[i] == Kind::CpuOp ? here : op, enclosing, inside});
}

void OperatorTables::leave() {
  const Open o = stack_.back();
  stack_.pop_back();
  if (rank_.events.kind[o.event] != Kind::CpuOp) return;
  if (!stack_.empty() && stack_.back().op_at >= 0) {
    Figures& up = stack_[static_cast<std::size_t>(stack_.back().op_at)].figures;
    up.gpu_total += o.figures.gpu_total;
    up.kernels += o.figures.kernels;
  }
  close(o.event, o.figures, o.enclosing_module);
}

void OperatorTables::close(std::uint32_t i, const Figures& f, StrId module) {
  const EventTable& ev = rank_.events;
  const StageHint s = i < facts_.event_stage.size() ? facts_.event_stage[i] : StageHint::None;
  for (Table& t : tables_) {
    const auto key = group_key(rank_, i, t.grouping, module);
    std::size_t& row = t.index[static_cast<std::int64_t>(std::uint64_t{key.first} << 32 | key.second)];
    if (row == 0) {
      row = t.rows.size() + 1;
      const std::string detail = group_detail(rank_, key.second, t.grouping);
      t.rows.push_back(OperatorRow{std::string(rank_.name_of(i)), t.grouping == OperatorGrouping::NameAndShape ? detail : "",
                                   t.grouping == OperatorGrouping::Module ? detail : ""});
      t.stage_time.push_back({});
    }
    OperatorRow& r = t.rows[row - 1];
    ++r.calls;
    r.host_total += ev.dur[i];
    r.host_self += ev.dur[i] - f.child_time;
    r.gpu_self += f.gpu_self;
    r.gpu_total += f.gpu_total;
    r.kernels += f.kernels;
    t.stage_time[row - 1][static_cast<std::size_t>(static_cast<int>(s) + 1)] += ev.dur[i];
  }
}

std::vector<OperatorRow> OperatorTables::take_rows(std::size_t k) {
  Table& t = tables_[k];
  std::vector<OperatorRow> rows = std::move(t.rows);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    rows[r].kernels_per_call = static_cast<double>(rows[r].kernels) / static_cast<double>(rows[r].calls);
    rows[r].stage = main_stage(t.stage_time[r]);
  }
  // Groups differ in name, shape or module, so the order is total: the walk's order is not seen.
  std::sort(rows.begin(), rows.end(), [](const OperatorRow& a, const OperatorRow& b) {
    if (a.host_self != b.host_self) return a.host_self > b.host_self;
    return std::tie(a.name, a.input_dims, a.module) < std::tie(b.name, b.input_dims, b.module);
  });
  return rows;
}

}  // namespace

std::vector<OperatorRow> operator_rows_with(const RankTrace& rank, const RankFacts& facts, const CallTree& tree,
                                            OperatorGrouping grouping) {
  return OperatorTables(rank, facts, tree, {grouping}).take_rows(0);
}

std::vector<OperatorRow> operator_rows(const RankTrace& rank, const RankFacts& facts, OperatorGrouping grouping) {
  return operator_rows_with(rank, facts, build_call_tree(rank), grouping);
}

namespace {

ns_t gpu_record_time(const RankTrace& rank) {
  ns_t t = 0;
  for (std::size_t i = 0; i < rank.events.size(); ++i)
    if (is_gpu_record(rank.events.kind[i]) && rank.events.phase[i] == Phase::Complete) t += rank.events.dur[i];
  return t;
}

OperatorView operator_view(std::vector<OperatorRow> rows, OperatorGrouping g, ns_t step_time, ns_t gpu_time) {
  OperatorView v;
  v.grouping = g;
  v.step_time = step_time;
  v.gpu_time = gpu_time;
  v.rows = std::move(rows);
  for (OperatorRow& r : v.rows) {
    r.step_share = step_time > 0 ? static_cast<double>(r.host_total) / static_cast<double>(step_time) : kNaN;
    r.gpu_share = gpu_time > 0 ? static_cast<double>(r.gpu_self) / static_cast<double>(gpu_time) : kNaN;
  }
  return v;
}

struct KernelAccumulator {
  KernelRow row;
  double occupancy_weighted = 0;
  ns_t occupancy_time = 0, longest = -1;
  std::map<std::string_view, std::int64_t> ops;
};

void add_kernel_call(const RankTrace& rank, const CallTree& tree, std::uint32_t g, KernelAccumulator& a) {
  const ns_t d = rank.events.dur[g];
  KernelRow& r = a.row;
  r.min = r.calls == 0 ? d : std::min(r.min, d);
  r.max = r.calls == 0 ? d : std::max(r.max, d);
  ++r.calls;
  r.total += d;
  if (const KernelArgs* k = rank.kernel_args_of(g)) {
    if (k->est_occupancy_pct >= 0) a.occupancy_weighted += k->est_occupancy_pct * static_cast<double>(d), a.occupancy_time += d;
    if (d > a.longest) a.longest = d, r.registers_per_thread = k->registers_per_thread, r.shared_memory = k->shared_memory;
  }
  const std::uint32_t launch = rank.correlations.launch(rank.events.correlation[g]);
  if (rank.events.correlation[g] < 0 || launch == CorrelationIndex::kNoEvent) return;
  if (std::uint32_t op = op_ancestor(rank, tree.parent, launch); op != kNoParent) ++a.ops[rank.name_of(op)];
}

KernelView kernel_view(const RankTrace& rank, const RankFacts& facts, const CallTree& tree, ns_t gpu_time) {
  std::unordered_map<StrId, KernelAccumulator> by_name;
  const EventTable& ev = rank.events;
  for (std::uint32_t g = 0; g < ev.size(); ++g) {
    if (!is_gpu_record(ev.kind[g]) || ev.phase[g] != Phase::Complete) continue;
    auto [it, fresh] = by_name.try_emplace(ev.name[g]);
    if (fresh) {
      KernelRow& r = it->second.row;
      r.name = std::string(rank.name_of(g));
      r.kind = ev.kind[g];
      if (ev.name[g] < facts.names.size()) {
        const NameFact& nf = facts.names[ev.name[g]];
        r.cls = nf.cls, r.engine = nf.engine, r.dtype = nf.dtype;
      }
    }
    add_kernel_call(rank, tree, g, it->second);
  }
  KernelView v;
  v.gpu_time = gpu_time;
  for (auto& [name, a] : by_name) {
    KernelRow r = std::move(a.row);
    r.mean = static_cast<double>(r.total) / static_cast<double>(r.calls);
    r.share = gpu_time > 0 ? static_cast<double>(r.total) / static_cast<double>(gpu_time) : kNaN;
    if (a.occupancy_time > 0) r.achieved_occupancy_pct = a.occupancy_weighted / static_cast<double>(a.occupancy_time);
    auto top = std::max_element(a.ops.begin(), a.ops.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
    if (top != a.ops.end()) r.launching_op = std::string(top->first);
    v.rows.push_back(std::move(r));
  }
  std::sort(v.rows.begin(), v.rows.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
  return v;
}

// The innermost host op on `pid`/`tid` running at `ts` (the op whose allocation a [memory] sample
// records), or "".
std::string op_at(const RankTrace& rank, std::int64_t pid, std::int64_t tid, ns_t ts) {
  for (const Track& t : rank.host_tracks) {
    if (t.pid != pid || t.tid != tid) continue;
    std::string_view best;
    for (std::uint32_t i : t.events) {
      if (rank.events.ts[i] > ts) break;
      if (rank.events.kind[i] == Kind::CpuOp && rank.events.phase[i] == Phase::Complete && rank.events.end(i) >= ts)
        best = rank.name_of(i);  // later starts are nested deeper
    }
    return std::string(best);
  }
  return {};
}

struct MemoryEvent {
  std::uint32_t event;
  MemorySample sample;
};

DeviceMemoryTimeline device_timeline(const RankTrace& rank, std::int32_t type, std::int32_t id, std::vector<MemoryEvent> evs,
                                     const std::vector<StepWindow>& steps, std::size_t max_points) {
  DeviceMemoryTimeline d;
  d.device_type = type, d.device_id = id;
  std::stable_sort(evs.begin(), evs.end(), [](const MemoryEvent& a, const MemoryEvent& b) { return a.sample.ts < b.sample.ts; });
  const MemoryEvent* peak = nullptr;
  for (const MemoryEvent& e : evs) {
    if (!peak || e.sample.allocated > peak->sample.allocated) peak = &e;
    d.peak_reserved = std::max(d.peak_reserved, e.sample.reserved);
  }
  auto op_of = [&](const MemoryEvent& e) { return op_at(rank, rank.events.pid(e.event), rank.events.tid(e.event), e.sample.ts); };
  if (peak) d.peak_allocated = peak->sample.allocated, d.peak_ts = peak->sample.ts, d.peak_op = op_of(*peak);
  for (const StepWindow& w : steps) {
    const MemoryEvent* top = nullptr;
    for (const MemoryEvent& e : evs)
      if (e.sample.ts >= w.start && e.sample.ts < w.end && (!top || e.sample.allocated > top->sample.allocated)) top = &e;
    if (top) d.steps.push_back({w.number, top->sample.allocated, top->sample.ts, op_of(*top)});
  }
  for (const MemoryEvent& e : evs) d.samples.push_back(e.sample);
  d.samples = thinned(std::move(d.samples), max_points, [](const MemorySample& m) { return m.allocated; });
  return d;
}

// [memory] instants (profile_memory=True) carry the allocator's totals after each allocation or
// free, per device; a CPU allocation has device type 0.
MemoryTimeline memory_timeline(const RankTrace& rank, const std::vector<StepWindow>& steps, std::size_t max_points) {
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<MemoryEvent>> by_device;
  const EventTable& ev = rank.events;
  for (std::uint32_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != Kind::CpuInstant) continue;
    const std::optional<EventExtra> x = rank.extra_of(i);
    if (!x || x->total_allocated == kNone) continue;
    by_device[{x->device_type, x->device_id}].push_back(
        {i, {ev.ts[i], x->total_allocated, x->total_reserved == kNone ? 0 : x->total_reserved}});
  }
  MemoryTimeline m;
  for (auto& [dev, evs] : by_device) m.devices.push_back(device_timeline(rank, dev.first, dev.second, std::move(evs), steps, max_points));
  m.available = !m.devices.empty();
  return m;
}

// The host calls whose enclosing ops the path names: its host events and its GPU records'
// launch calls, those in the call tree (complete calls on a host thread), sorted.
std::vector<std::uint32_t> path_host_calls(const RankTrace& rank, const CriticalPath& cp) {
  std::vector<std::uint32_t> calls;
  for (const CpPathEdge& e : cp.path) {
    if (e.event < 0 || e.duration <= 0) continue;
    const auto i = static_cast<std::uint32_t>(e.event);
    if (!is_gpu_record(rank.events.kind[i])) {
      calls.push_back(i);
      continue;
    }
    const std::uint32_t launch = rank.correlations.launch(rank.events.correlation[i]);
    if (rank.events.correlation[i] >= 0 && launch != CorrelationIndex::kNoEvent) calls.push_back(launch);
  }
  std::sort(calls.begin(), calls.end());
  calls.erase(std::unique(calls.begin(), calls.end()), calls.end());
  return calls;
}

// The host ops whose calls hold an event of the path: the path edge's event itself when it is an
// op, and the ops around it (a launch call's op, a kernel's launching op). The threads of those
// calls are walked again as the call tree was: keeping the tree's parents (4 bytes an event)
// through the critical path for a few hundred lookups cost more memory than the walk costs time.
std::vector<char> ops_on_path(const RankTrace& rank, const CriticalPath& cp) {
  std::vector<char> on(rank.strings.size(), 0);
  const std::vector<std::uint32_t> calls = path_host_calls(rank, cp);
  if (calls.empty()) return on;
  std::vector<char> track_has_call(rank.events.keys.size(), 0);
  for (std::uint32_t i : calls) track_has_call[rank.events.track[i]] = 1;
  auto mark = [&](std::uint32_t i) {
    if (rank.events.kind[i] == Kind::CpuOp) on[rank.events.name[i]] = 1;
  };
  for (std::uint32_t t = 0; t < rank.host_tracks.size(); ++t) {
    const std::vector<std::uint32_t>& events = rank.host_tracks[t].events;
    if (events.empty() || !track_has_call[rank.events.track[events.front()]]) continue;
    walk_calls(
        rank, t,
        [&](std::uint32_t, std::uint32_t i, const std::vector<OpenCall>& open) {
          if (!std::binary_search(calls.begin(), calls.end(), i)) return;
          mark(i);
          for (const OpenCall& a : open) mark(a.event);
        },
        [](std::uint32_t, const OpenCall&) {});
  }
  return on;
}

}  // namespace

CriticalPath drilldown_critical_path(const RankTrace& rank, const DrillDownOptions& opts, const HtaLoad& load) {
  CriticalPath cp;
  if (!opts.critical_path) {
    cp.error = "not computed";
    return cp;
  }
  cp = analyze_critical_path(rank, primary_critical_path_options(load), load);
  for (CpPathEdge& e : cp.path)
    if (e.event >= 0) e.name = std::string(rank.name_of(static_cast<std::size_t>(e.event)));
  return cp;
}

DrillDown analyze_drilldown(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                            const DrillDownOptions& opts) {
  hta::View view = hta::build_view(rank, GpuTimelineOptions{});
  const HtaLoad load = view.load;
  return analyze_drilldown(rank, facts, steps, opts, [&] { return drilldown_critical_path(rank, opts, load); },
                           std::move(view));
}

DrillDown analyze_drilldown(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                            const DrillDownOptions& opts, const std::function<CriticalPath()>& critical_path,
                            hta::View&& view_in) {
  DrillDown d;
  {
    // The view's readers first: its rows are freed before the call tree and the critical path
    // take their own.
    const hta::View view = std::move(view_in);
    d.queue_length = hta_queue_length_with(rank, view, opts.max_series_points);
    d.memory_bandwidth = hta_memory_bandwidth_with(rank, view, opts.max_series_points);
    d.sequences = hta_kernel_sequences_with(rank, view, opts.sequence_op, opts.min_pattern_len);
  }
  d.memory = memory_timeline(rank, steps, opts.max_series_points);
  CallTree tree = build_call_tree(rank);
  ns_t step_time = 0;
  for (const StepWindow& w : steps) step_time += w.end - w.start;
  const ns_t gpu_time = gpu_record_time(rank);
  {
    OperatorTables tables(rank, facts, tree, opts.groupings);
    for (std::size_t k = 0; k < opts.groupings.size(); ++k) {
      const OperatorGrouping g = opts.groupings[k];
      OperatorView v = operator_view(tables.take_rows(k), g, step_time, gpu_time);
      // A module table needs module ranges; without them every row would say "no module".
      const bool empty_modules = g == OperatorGrouping::Module &&
                                 std::all_of(v.rows.begin(), v.rows.end(), [](const OperatorRow& r) { return r.module.empty(); });
      if (!v.rows.empty() && !empty_modules) d.operators.push_back(std::move(v));
    }
  }
  d.kernels = kernel_view(rank, facts, tree, gpu_time);
  // The path last, with the tree freed: its rows and graph are the drill-down's largest. A caller
  // computing it on another thread has had the tables' time to do it.
  { const CallTree gone = std::move(tree); }
  d.critical_path = critical_path();
  const std::vector<char> on_path = ops_on_path(rank, d.critical_path);
  for (OperatorView& v : d.operators)
    for (OperatorRow& r : v.rows)
      if (auto id = rank.strings.find(r.name)) r.on_critical_path = *id < on_path.size() && on_path[*id];
  return d;
}

}  // namespace stepscope
