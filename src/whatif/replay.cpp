// Re-timing the step graph: every node starts when the edges into it allow, and lasts as long as
// the scenario says (the recorded duration unless a lever changes it).
#include <algorithm>
#include <limits>

#include "whatif/graph.hpp"

namespace stepscope::whatif {
namespace {

constexpr ns_t kUnset = std::numeric_limits<ns_t>::min();

class Replayer {
 public:
  Replayer(const Graph& g, const Scenario& s) : g_(g), s_(s) {
    r_.atom_start.assign(g.atoms.size(), kUnset);
    r_.atom_end.assign(g.atoms.size(), kUnset);
    r_.op_start.assign(g.ops.size(), kUnset);
    r_.op_end.assign(g.ops.size(), kUnset);
    consumer_ = median_consumer_time();
  }

  Replayed run() {
    for (const Visit& v : g_.order) {
      if (v.type == 0) start_atom(v.index);
      else if (v.type == 1) time_op(v.index);
      else atom_end(v.index);
    }
    measure_steps();
    return std::move(r_);
  }

 private:
  // The loader's consumer: the recorded time from one batch's arrival to the next fetch.
  ns_t median_consumer_time() const {
    std::vector<ns_t> c;
    ns_t last = kUnset;
    for (const Atom& a : g_.atoms) {
      if (a.kind != AtomKind::Loader) continue;
      if (last != kUnset) c.push_back(a.ts - last);
      last = a.ts + a.dur;
    }
    if (c.empty()) return 0;
    std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(c.size() / 2), c.end());
    return c[c.size() / 2];
  }

  ns_t atom_end(std::int32_t i) {
    const auto k = static_cast<std::size_t>(i);
    if (r_.atom_end[k] != kUnset) return r_.atom_end[k];
    if (r_.atom_start[k] == kUnset) start_atom(i);
    const Atom& a = g_.atoms[k];
    const ns_t start = r_.atom_start[k];
    ns_t end = start + s_.atom_dur[k];
    if (a.kind == AtomKind::Sync && !s_.release[k] && a.target >= 0) {
      const ns_t own = a.waited ? a.own : s_.atom_dur[k];
      end = std::max(start + own, op_end(a.target) + a.wake);
    } else if (a.kind == AtomKind::Sync && s_.release[k]) {
      end = start + std::min(s_.atom_dur[k], a.own);
    } else if (a.kind == AtomKind::Loader && s_.workers > 0 && !s_.undivided[k]) {
      // Workers load ahead while the step runs: the wait is what a worker still needs once the
      // consumer is back. Example: 36 ms per batch, 2 workers, 3 ms of step -> 15 ms of wait.
      const ns_t consumer = last_batch_ == kUnset ? consumer_ : start - last_batch_;
      const auto load = static_cast<ns_t>(static_cast<double>(s_.atom_dur[k]) / s_.workers);
      end = start + std::max(s_.ipc, load - consumer);
    }
    if (a.kind == AtomKind::Loader) last_batch_ = end;
    return r_.atom_end[k] = end;
  }

  void start_atom(std::int32_t i) {
    const auto k = static_cast<std::size_t>(i);
    if (r_.atom_start[k] != kUnset) return;
    const Atom& a = g_.atoms[k];
    ns_t start = a.pred >= 0 ? atom_end(a.pred) + s_.atom_gap[k] : a.ts;
    if (a.own_prev >= 0) start = std::max(start, atom_end(a.own_prev));
    r_.atom_start[k] = start;
    if (a.kind != AtomKind::Sync && a.kind != AtomKind::Loader) r_.atom_end[k] = start + s_.atom_dur[k];
  }

  ns_t op_end(std::int32_t i) {
    const auto k = static_cast<std::size_t>(i);
    if (r_.op_end[k] == kUnset) time_op(i);
    return r_.op_end[k];
  }

  void time_op(std::int32_t i) {
    const auto k = static_cast<std::size_t>(i);
    if (r_.op_start[k] != kUnset) return;
    const Op& o = g_.ops[k];
    ns_t start = kUnset;
    if (const std::int32_t l = s_.op_launch[k]; l >= 0) {
      if (r_.atom_start[static_cast<std::size_t>(l)] == kUnset) start_atom(l);
      start = r_.atom_start[static_cast<std::size_t>(l)] + s_.op_delay[k];
    }
    const std::int32_t prev = s_.op_prev[k];
    start = std::max(start, (prev >= 0 ? op_end(prev) : o.prev_end) + s_.op_gap[k]);
    if (const std::int32_t w = s_.op_after[k]; w >= 0) start = std::max(start, op_end(w) + s_.op_after_gap[k]);
    r_.op_start[k] = start;
    r_.op_end[k] = start + s_.op_dur[k];
  }

  void measure_steps() {
    const std::size_t n = g_.steps.size();
    std::vector<ns_t> start(n, kUnset), end(n, kUnset), gpu_start(n, std::numeric_limits<ns_t>::max()), gpu_end(n, kUnset);
    for (std::size_t i = 0; i < g_.ops.size(); ++i) {
      const std::int32_t k = g_.ops[i].step;
      if (k < 0) continue;
      gpu_start[static_cast<std::size_t>(k)] = std::min(gpu_start[static_cast<std::size_t>(k)], r_.op_start[i]);
      gpu_end[static_cast<std::size_t>(k)] = std::max(gpu_end[static_cast<std::size_t>(k)], r_.op_end[i]);
    }
    ns_t lo = std::numeric_limits<ns_t>::max(), hi = kUnset;
    r_.step_ns.assign(n, 0);
    r_.step_start.assign(n, 0);
    for (std::size_t k = 0; k < n; ++k) {
      const GraphStep& s = g_.steps[k];
      start[k] = s.start_marker >= 0 ? r_.atom_start[static_cast<std::size_t>(s.start_marker)] : 0;
      end[k] = std::max(s.end_marker >= 0 ? atom_end(s.end_marker) : start[k], gpu_end[k]);
      if (s.gpu_window && gpu_end[k] != kUnset) start[k] = gpu_start[k], end[k] = gpu_end[k];
      r_.step_ns[k] = end[k] - start[k];
      r_.step_start[k] = start[k];
      lo = std::min(lo, start[k]);
      hi = std::max(hi, end[k]);
    }
    r_.span = n ? hi - lo : 0;
  }

  const Graph& g_;
  const Scenario& s_;
  Replayed r_;
  ns_t consumer_ = 0;
  ns_t last_batch_ = kUnset;
};

}  // namespace

// Each edge runs from an earlier key to a later one, so a node's inputs are timed before it;
// where the recording breaks that (clock skew), a missing input is timed when asked for.
void order_visits(Graph& g) {
  struct Keyed {
    ns_t key;
    Visit v;
  };
  std::vector<Keyed> items;
  items.reserve(g.atoms.size() + g.ops.size());
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    items.push_back({a.ts, {0, static_cast<std::int32_t>(i)}});
    if (a.kind == AtomKind::Sync) items.push_back({a.ts + a.dur, {2, static_cast<std::int32_t>(i)}});
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) items.push_back({g.ops[i].ts, {1, static_cast<std::int32_t>(i)}});
  std::sort(items.begin(), items.end(), [](const Keyed& a, const Keyed& b) {
    return a.key != b.key ? a.key < b.key : a.v.type < b.v.type;
  });
  g.order.clear();
  g.order.reserve(items.size());
  for (const Keyed& k : items) g.order.push_back(k.v);
}

Scenario base_scenario(const Graph& g) {
  Scenario s;
  for (const Atom& a : g.atoms) {
    s.atom_dur.push_back(a.dur);
    s.atom_gap.push_back(a.gap);
  }
  s.release.assign(g.atoms.size(), 0);
  s.undivided.assign(g.atoms.size(), 0);

  for (const Op& o : g.ops) {
    s.op_dur.push_back(o.dur);
    s.op_delay.push_back(o.delay);
    s.op_gap.push_back(o.gap);
    s.op_prev.push_back(o.prev);
    s.op_launch.push_back(o.launch);
    s.op_after.push_back(o.after);
    s.op_after_gap.push_back(o.after_gap);
  }
  return s;
}

Replayed replay(const Graph& g, const Scenario& s) { return Replayer(g, s).run(); }

std::vector<TimeSpan> recorded_step_windows(const Graph& g) {
  std::vector<ns_t> gpu_start(g.steps.size(), std::numeric_limits<ns_t>::max()), gpu_end(g.steps.size(), kUnset);
  for (const Op& o : g.ops) {
    if (o.step < 0) continue;
    const auto k = static_cast<std::size_t>(o.step);
    gpu_start[k] = std::min(gpu_start[k], o.ts);
    gpu_end[k] = std::max(gpu_end[k], o.ts + o.dur);
  }
  std::vector<TimeSpan> out;
  for (std::size_t k = 0; k < g.steps.size(); ++k) {
    const GraphStep& s = g.steps[k];
    const ns_t start = s.start_marker >= 0 ? g.atoms[static_cast<std::size_t>(s.start_marker)].ts : 0;
    const Atom* e = s.end_marker >= 0 ? &g.atoms[static_cast<std::size_t>(s.end_marker)] : nullptr;
    const ns_t end = std::max(e ? e->ts + e->dur : start, gpu_end[k]);
    out.push_back(s.gpu_window && gpu_end[k] != kUnset ? TimeSpan{gpu_start[k], gpu_end[k]} : TimeSpan{start, end});
  }
  return out;
}

std::vector<ns_t> recorded_windows(const Graph& g) {
  std::vector<ns_t> out;
  for (const TimeSpan& w : recorded_step_windows(g)) out.push_back(w.end - w.start);
  return out;
}

}  // namespace stepscope::whatif
