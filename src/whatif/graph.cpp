// Building the step dependency graph of one rank from its events and its step partition.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <queue>
#include <unordered_map>

#include "whatif/graph.hpp"

namespace stepscope::whatif {
namespace {

// Two times this close are the same instant: a kernel that starts within it of its stream's
// previous end was waiting for that work (Kineto writes microseconds with three decimals).
constexpr ns_t kTouch = 2'000;
// A kernel that starts within this of another stream's end waited for it (an event wait's wake-up).
constexpr ns_t kCrossWake = 10'000;
// A launch explains a start at most this long after it, or kLaunchSpread times the rank's median
// launch latency: a later start waited for something the graph does not hold.
constexpr ns_t kLaunchLimit = 50'000;
constexpr ns_t kLaunchSpread = 3;
// No launch takes longer than this to reach an idle GPU: a later start waited for other work
// (a backlogged GPU runs kernels 100 ms after their launches), and is no launch latency.
constexpr ns_t kLaunchCeiling = 1'000'000;

// A synchronising call's own cost once the GPU is done (the call returning): a few microseconds.
constexpr ns_t kSyncOwn = 5'000;
// A launch call longer than this (and kLaunchSpread times the usual one) waited for queue room.
constexpr ns_t kQueueWait = 20'000;
// A copy call longer than this that overlaps 4/5 of its copy held the host (a pageable copy).
constexpr ns_t kBlockingCall = 10'000;
constexpr ns_t kHeldShare = 5;

bool in_window(ns_t ts, ns_t lo, ns_t hi) { return ts >= lo && ts < hi; }

// At most this many steps are replayed: a steady state shows in a few, and the graph's memory and
// every lever's replay grow with the steps (a 2 GB trace holds hundreds).
constexpr std::size_t kMaxReplayedSteps = 8;

// The steps the graph replays: the steady ones (all when none is steady), at most
// kMaxReplayedSteps in a row, those whose mean is nearest the steady mean where there are more:
// a loader that stalls from the ninth step on is in the replay. Example: 29 steady steps of 160 ms,
// then 750 ms every fourth from step 8 (a 330 ms mean) -> steps 13 to 20, not 1 to 8.
std::pair<std::size_t, std::size_t> replayed_steps(const RankPartition& p) {
  std::size_t first = p.steps.size(), last = 0;
  for (std::size_t i = 0; i < p.steps.size(); ++i)
    if (!p.steps[i].warmup) first = std::min(first, i), last = i;
  if (first == p.steps.size()) first = 0, last = p.steps.size() - 1;
  std::size_t best = first;
  double best_off = std::numeric_limits<double>::max();
  for (std::size_t i = first; i + kMaxReplayedSteps <= last + 1; ++i) {
    double sum = 0;
    for (std::size_t k = i; k < i + kMaxReplayedSteps; ++k) sum += static_cast<double>(p.steps[k].duration());
    const double off = std::abs(sum / kMaxReplayedSteps - p.steady_mean_ns);
    if (off < best_off) best_off = off, best = i;
  }
  return {best, std::min(last + 1, best + kMaxReplayedSteps)};
}


struct Candidate {
  std::uint32_t event;
  AtomKind kind;
};

AtomKind host_kind(const NameFact& f, Kind k) {
  if (k == Kind::Runtime || k == Kind::Driver) {
    if (f.sync == SyncKind::DeviceWait || f.sync == SyncKind::BlockingCopy) return AtomKind::Sync;
    return f.has(kNameLaunchCall) || f.has(kNameAsyncCopyCall) ? AtomKind::Launch : AtomKind::Call;
  }
  if (f.role == HostRole::Loader) return AtomKind::Loader;
  return AtomKind::Side;
}

// The outermost runtime calls of a thread, with the loader's waits and side work on the main thread.
std::vector<Candidate> thread_atoms(const RankTrace& t, const RankFacts& facts, const Track& track, bool main,
                                    ns_t lo, ns_t hi) {
  std::vector<Candidate> c;
  for (std::uint32_t e : track.events) {
    if (t.events.phase[e] != Phase::Complete || !in_window(t.events.ts[e], lo, hi)) continue;
    const Kind k = t.events.kind[e];
    const NameFact& f = facts.of_event(t, e);
    const bool runtime = k == Kind::Runtime || k == Kind::Driver;
    const bool host_stage = main && (k == Kind::CpuOp || k == Kind::UserAnnotation || k == Kind::PythonFunction) &&
                            (f.role == HostRole::Loader || f.role == HostRole::Side);
    if (runtime || host_stage) c.push_back({e, host_kind(f, k)});
  }
  std::stable_sort(c.begin(), c.end(), [&](const Candidate& a, const Candidate& b) {
    if (t.events.ts[a.event] != t.events.ts[b.event]) return t.events.ts[a.event] < t.events.ts[b.event];
    return t.events.dur[a.event] > t.events.dur[b.event];
  });
  std::vector<Candidate> out;
  ns_t end = std::numeric_limits<ns_t>::min();
  for (const Candidate& x : c) {
    if (t.events.ts[x.event] < end) continue;  // nested in the previous one
    out.push_back(x);
    end = t.events.end(x.event);
  }
  return out;
}

// Not the facts' event steps: the replay numbers its atoms among the replayed steps only, by the
// host span (where the step graph lives), the step markers included, which are no event; the
// facts place an event in its window, which runs to the end of its GPU work.
std::int32_t step_of(const std::vector<StepPartition>& steps, std::size_t first, std::size_t last, ns_t ts) {
  for (std::size_t i = first; i < last; ++i)
    if (ts >= steps[i].host_start && ts < steps[i].host_end) return static_cast<std::int32_t>(i - first);
  return -1;
}

class Builder {
 public:
  Builder(const RankTrace& t, const RankFacts& f, const RankPartition& p) : t_(t), f_(f), p_(p) {}

  Graph build() {
    auto [first, last] = replayed_steps(p_);
    if (first >= last) return std::move(g_);
    first_ = first, last_ = last;
    lo_ = p_.steps[first].host_start;
    hi_ = p_.steps[last - 1].host_end;
    collect_atoms();
    link_atoms();
    collect_ops();
    link_ops();
    link_syncs();
    link_queue_waits();
    mark_steps();
    order_visits(g_);
    return std::move(g_);
  }

 private:
  void add_atom(std::uint32_t event, ns_t ts, ns_t dur, AtomKind kind, bool main) {
    Atom a;
    a.ts = ts;
    a.dur = dur;
    a.kind = kind;
    a.event = event;
    a.thread_main = main;
    g_.atoms.push_back(a);
  }

  void collect_atoms() {
    for (std::size_t k = 0; k < t_.host_tracks.size() && k < f_.track_role.size(); ++k) {
      // The loader's own thread (where the trace puts the loader's __next__ apart from the loop's)
      // joins the loop's threads: its waits are the loop's.
      const bool main = static_cast<int>(k) == f_.main_track || f_.track_role[k] == ThreadRole::Loader;
      if (!main && f_.track_role[k] != ThreadRole::Autograd) continue;
      for (const Candidate& c : thread_atoms(t_, f_, t_.host_tracks[k], main, lo_, hi_)) {
        add_atom(c.event, t_.events.ts[c.event], t_.events.dur[c.event], c.kind, main);
        if (c.kind == AtomKind::Loader && t_.name_of(c.event).find("MultiProcessing") != std::string_view::npos)
          g_.multiprocess_loader = true;
      }
    }
    for (std::size_t i = first_; i < last_; ++i) {
      add_atom(0, p_.steps[i].host_start, 0, AtomKind::Marker, true);
      add_atom(0, p_.steps[i].host_end, 0, AtomKind::Marker, true);
    }
    std::stable_sort(g_.atoms.begin(), g_.atoms.end(), [](const Atom& a, const Atom& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      return (a.kind == AtomKind::Marker) > (b.kind == AtomKind::Marker);
    });
    for (std::size_t i = 0; i < g_.atoms.size(); ++i) {
      Atom& a = g_.atoms[i];
      a.step = step_of(p_.steps, first_, last_, a.ts);
      if (a.kind != AtomKind::Marker) atom_of_[a.event] = static_cast<std::int32_t>(i);
    }
  }

  // Each atom follows the one that ended last before it on the replayed threads (a hand-off when
  // that one is on the other thread), and its own thread's previous one.
  void link_atoms() {
    using Pending = std::pair<ns_t, std::int32_t>;  // (end, atom)
    std::priority_queue<Pending, std::vector<Pending>, std::greater<>> running;
    std::int32_t best = -1;
    ns_t best_end = std::numeric_limits<ns_t>::min();
    std::int32_t last_main = -1, last_other = -1;
    for (std::size_t i = 0; i < g_.atoms.size(); ++i) {
      Atom& a = g_.atoms[i];
      while (!running.empty() && running.top().first <= a.ts) {
        if (running.top().first >= best_end) best_end = running.top().first, best = running.top().second;
        running.pop();
      }
      a.pred = best;
      a.gap = best >= 0 ? a.ts - best_end : 0;
      std::int32_t& own = a.thread_main ? last_main : last_other;
      a.own_prev = own;
      own = static_cast<std::int32_t>(i);
      g_.edges += (a.pred >= 0) + (a.own_prev >= 0);
      running.push({a.ts + a.dur, static_cast<std::int32_t>(i)});
    }
  }

  std::int32_t stream_number(std::int32_t device, std::int64_t stream) {
    auto [it, fresh] = streams_.try_emplace({device, stream}, g_.streams);
    if (fresh) ++g_.streams;
    return it->second;
  }

  // The atom an op hangs from without a launch in the graph: the last atom that started before it.
  std::int32_t anchor(ns_t ts) const {
    auto it = std::upper_bound(g_.atoms.begin(), g_.atoms.end(), ts, [](ns_t v, const Atom& a) { return v < a.ts; });
    return it == g_.atoms.begin() ? -1 : static_cast<std::int32_t>(it - g_.atoms.begin() - 1);
  }

  void collect_ops() {
    const ns_t end = last_window_end();
    std::vector<ns_t> before;  // per stream: the latest end of its work before the graph's window
    for (std::size_t e = 0; e < t_.events.size(); ++e) {
      const Kind k = t_.events.kind[e];
      if ((k != Kind::Kernel && k != Kind::Memcpy && k != Kind::Memset) || t_.events.phase[e] != Phase::Complete ||
          t_.events.stream[e] < 0)
        continue;
      const ns_t ts = t_.events.ts[e];
      const std::int32_t s = stream_number(t_.events.device[e], t_.events.stream[e]);
      if (before.size() <= static_cast<std::size_t>(s)) before.resize(static_cast<std::size_t>(s) + 1, 0);
      std::int32_t launch = -1;
      if (const std::int64_t corr = t_.events.correlation[e]; corr >= 0)
        if (const std::uint32_t l = t_.correlations.launch(corr); l != CorrelationIndex::kNoEvent)
          if (auto it = atom_of_.find(l); it != atom_of_.end()) launch = it->second;
      if (launch < 0 && !in_window(ts, lo_, end)) {
        if (ts < lo_) before[static_cast<std::size_t>(s)] = std::max(before[static_cast<std::size_t>(s)], t_.events.end(e));
        continue;
      }
      Op o;
      o.ts = ts;
      o.dur = t_.events.dur[e];
      o.stream = s;
      o.event = static_cast<std::uint32_t>(e);
      o.launch = launch;
      anchored_.push_back(launch < 0);
      if (launch < 0) o.launch = anchor(ts);
      describe(o, k);
      g_.ops.push_back(o);
    }
    before_ = std::move(before);
    std::vector<std::size_t> order(g_.ops.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return g_.ops[a].ts < g_.ops[b].ts; });
    std::vector<Op> ops;
    std::vector<bool> anchored;
    for (std::size_t i : order) ops.push_back(g_.ops[i]), anchored.push_back(anchored_[i]);
    g_.ops.swap(ops);
    anchored_.swap(anchored);
  }

  ns_t last_window_end() const {
    ns_t end = hi_;
    for (std::size_t i = first_; i < last_; ++i) end = std::max(end, p_.steps[i].end);
    return end;
  }

  void describe(Op& o, Kind k) {
    const NameFact& f = f_.of_event(t_, o.event);
    o.cls = f.cls;
    o.dtype = f.dtype;
    o.engine = f.engine;
    o.gemv = f.has(kNameGemv);
    o.kind = f.is_comm() ? OpKind::Comm : k == Kind::Memcpy ? OpKind::Copy : k == Kind::Memset ? OpKind::Memset : OpKind::Compute;
    if (k == Kind::Memcpy) {
      o.mem = t_.events.host_mem[o.event];
      o.copy = t_.events.copy_kind[o.event];
      o.bytes = t_.bytes_of(o.event);
    }
  }

  // The median launch latency of kernels whose stream was idle when their launch came, and that
  // no other stream's work held (a kernel after an event wait on a backlogged GPU starts long
  // after its launch: not the launch's latency).
  ns_t launch_p50(const std::vector<std::vector<std::int32_t>>& by_stream) const {
    std::vector<ns_t> d;
    std::vector<ns_t> last_end(static_cast<std::size_t>(g_.streams), std::numeric_limits<ns_t>::min());
    for (std::size_t i = 0; i < g_.ops.size(); ++i) {
      const Op& o = g_.ops[i];
      ns_t& prev = last_end[static_cast<std::size_t>(o.stream)];
      const ns_t since = o.launch >= 0 ? o.ts - g_.atoms[static_cast<std::size_t>(o.launch)].ts : 0;
      if (!anchored_[i] && o.launch >= 0 && o.ts - prev > kTouch && since <= kLaunchCeiling &&
          waited_for(by_stream, o.stream, o.ts) < 0)
        d.push_back(since);
      prev = std::max(prev, o.ts + o.dur);
    }
    return median_of(std::move(d));
  }

  // The other stream's op whose end is the latest at or before `ts`, within kCrossWake of it.
  std::int32_t waited_for(const std::vector<std::vector<std::int32_t>>& by_stream, std::int32_t stream, ns_t ts,
                          ns_t window = kCrossWake) const {
    std::int32_t best = -1;
    ns_t best_end = ts - window;
    for (std::size_t s = 0; s < by_stream.size(); ++s) {
      if (static_cast<std::int32_t>(s) == stream) continue;
      const auto& v = by_stream[s];
      auto it = std::upper_bound(v.begin(), v.end(), ts, [&](ns_t x, std::int32_t i) { return x < g_.ops[static_cast<std::size_t>(i)].ts; });
      for (int back = 0; back < 2 && it != v.begin(); ++back) {
        --it;
        const Op& o = g_.ops[static_cast<std::size_t>(*it)];
        if (o.ts + o.dur <= ts && o.ts + o.dur >= best_end) best_end = o.ts + o.dur, best = *it;
      }
    }
    return best;
  }

  // Each op's edges: stream order; its launch when the stream was idle; else the other stream's
  // work it waited for. What none explains is a disagreement of the graph with the recording.
  void link_ops() {
    std::vector<std::vector<std::int32_t>> by_stream(static_cast<std::size_t>(g_.streams));
    for (std::size_t i = 0; i < g_.ops.size(); ++i) by_stream[static_cast<std::size_t>(g_.ops[i].stream)].push_back(static_cast<std::int32_t>(i));
    g_.launch_delay_p50 = launch_p50(by_stream);
    const ns_t limit = std::max(kLaunchLimit, kLaunchSpread * g_.launch_delay_p50);

    std::vector<std::int32_t> last(static_cast<std::size_t>(g_.streams), -1);
    std::map<std::string, Disagreement> disagree;
    for (std::size_t i = 0; i < g_.ops.size(); ++i) {
      Op& o = g_.ops[i];
      std::int32_t& prev = last[static_cast<std::size_t>(o.stream)];
      o.prev = prev;
      o.prev_end = prev >= 0 ? g_.ops[static_cast<std::size_t>(prev)].ts + g_.ops[static_cast<std::size_t>(prev)].dur
                             : (static_cast<std::size_t>(o.stream) < before_.size() ? before_[static_cast<std::size_t>(o.stream)] : 0);
      prev = static_cast<std::int32_t>(i);
      o.step = o.launch >= 0 ? g_.atoms[static_cast<std::size_t>(o.launch)].step : -1;
      g_.edges += (o.prev >= 0) + (o.launch >= 0);
      const ns_t since_launch = o.launch >= 0 ? o.ts - g_.atoms[static_cast<std::size_t>(o.launch)].ts : 0;
      if (o.ts - o.prev_end <= kTouch) {  // the stream was busy: its order decided the start
        o.gap = std::max<ns_t>(0, o.ts - o.prev_end);
        o.delay = std::min(since_launch, g_.launch_delay_p50);
        continue;
      }
      // A stream of a backlogged GPU leaves a few microseconds between kernels: its order decided
      // the start, long after the launch.
      if (!anchored_[i] && since_launch > limit && o.ts - o.prev_end <= kCrossWake) {
        o.gap = o.ts - o.prev_end;
        o.delay = std::min(since_launch, g_.launch_delay_p50);
        continue;
      }
      if (anchored_[i] || since_launch <= limit) {  // the launch decided it
        o.delay = since_launch;
        continue;
      }
      // A launch call that held the host until the kernel started (the first call of a kernel
      // loading its module, ~seconds) decided it too: the kernel followed the call's return.
      // Example: a 4.2 s cudaLaunchKernel whose kernel starts 8 us before the call returns.
      if (const Atom& call = g_.atoms[static_cast<std::size_t>(o.launch)]; o.ts <= call.ts + call.dur + limit) {
        o.delay = since_launch;
        continue;
      }

      o.delay = std::min(since_launch, limit);
      o.after = waited_for(by_stream, o.stream, o.ts);
      if (o.after >= 0) {
        const Op& w = g_.ops[static_cast<std::size_t>(o.after)];
        o.after_gap = o.ts - (w.ts + w.dur);
        ++g_.edges;
        continue;
      }
      // Nothing ended just before it: it waited for the GPU (an event, or room on the device)
      // longer than a wake-up. It follows the other stream's work that ended last before it, so
      // that it moves as the GPU does; the wait beyond that work's end is what the graph cannot
      // explain. Example: a memset queued behind a 3 ms all-reduce on the comm stream starts 60 us
      // after it ends. With no such work in the trace (graph replays whose kernels were not
      // recorded), it keeps its recorded start after its launch.
      ns_t explained = std::max(o.prev_end, g_.atoms[static_cast<std::size_t>(o.launch)].ts + o.delay);
      o.after = waited_for(by_stream, o.stream, o.ts, since_launch);
      if (o.after >= 0) {
        const Op& w = g_.ops[static_cast<std::size_t>(o.after)];
        o.after_gap = o.ts - (w.ts + w.dur);
        explained = std::max(explained, w.ts + w.dur);
        ++g_.edges;
      } else {
        o.delay = since_launch;
      }
      Disagreement& d = disagree[fmt::format("launch -> {} '{}' (stream {})", o.kind == OpKind::Copy ? "copy" : "kernel",
                                             t_.name_of(o.event), t_.events.stream[o.event])];
      d.count += 1;
      d.total_ns += o.ts - explained;
    }

    for (auto& [edge, d] : disagree) {
      d.edge = edge;
      g_.disagreements.push_back(d);
    }
    std::sort(g_.disagreements.begin(), g_.disagreements.end(),
              [](const Disagreement& a, const Disagreement& b) { return a.total_ns > b.total_ns; });
    if (g_.disagreements.size() > 3) g_.disagreements.resize(3);
  }

  // A launch far longer than the rank's usual one waited for room in the GPU's queue (the host
  // ran ahead of a busy GPU): it returned once the GPU finished the work that ended last before
  // its return. Example: a 47 us cudaLaunchKernel where launches take 4 us -> a queue wait.
  void link_queue_waits() {
    std::vector<ns_t> durs;
    for (const Atom& a : g_.atoms)
      if (a.kind == AtomKind::Launch) durs.push_back(a.dur);
    if (durs.empty()) return;
    const ns_t typical = median_of(std::move(durs));
    const ns_t blocked = std::max(kQueueWait, kLaunchSpread * typical);
    std::vector<std::pair<ns_t, std::int32_t>> ends;
    for (std::size_t i = 0; i < g_.ops.size(); ++i) ends.push_back({g_.ops[i].ts + g_.ops[i].dur, static_cast<std::int32_t>(i)});
    std::sort(ends.begin(), ends.end());
    for (Atom& a : g_.atoms) {
      if (a.kind != AtomKind::Launch || a.dur <= blocked) continue;
      auto it = std::upper_bound(ends.begin(), ends.end(), std::make_pair(a.ts + a.dur + kTouch, std::numeric_limits<std::int32_t>::max()));
      if (it == ends.begin() || (it - 1)->first <= a.ts) continue;
      --it;
      a.kind = AtomKind::Sync;
      a.queue_wait = true;
      a.target = it->second;
      a.waited = true;
      a.wake = std::max<ns_t>(0, a.ts + a.dur - it->first);
      a.own = typical;
      ++g_.edges;
    }
  }

  // A sync returns after the last work queued before it on some stream (the latest that ended
  // by its return); a copy call that outlasted its own copy held the host like one.
  void link_syncs() {
    std::vector<std::vector<std::int32_t>> launched(g_.atoms.size());
    for (std::size_t i = 0; i < g_.ops.size(); ++i)
      if (!anchored_[i] && g_.ops[i].launch >= 0) launched[static_cast<std::size_t>(g_.ops[i].launch)].push_back(static_cast<std::int32_t>(i));
    std::vector<std::int32_t> last(static_cast<std::size_t>(g_.streams), -1);
    for (std::size_t a = 0; a < g_.atoms.size(); ++a) {
      Atom& atom = g_.atoms[a];
      for (std::int32_t o : launched[a]) last[static_cast<std::size_t>(g_.ops[static_cast<std::size_t>(o)].stream)] = o;
      const ns_t end = atom.ts + atom.dur;
      ns_t best_end = std::numeric_limits<ns_t>::min();
      // A copy call that held the host through most of its copy (a pageable copy) waits for it.
      if (atom.kind == AtomKind::Launch && atom.dur > kBlockingCall)
        for (std::int32_t o : launched[a]) {
          const Op& op = g_.ops[static_cast<std::size_t>(o)];
          const ns_t held = std::min(end, op.ts + op.dur) - std::max(atom.ts, op.ts);
          if (op.kind != OpKind::Copy || held * kHeldShare < op.dur * (kHeldShare - 1)) continue;
          atom.kind = AtomKind::Sync;
          atom.target = o;
          best_end = op.ts + op.dur;
        }
      if (atom.kind != AtomKind::Sync || atom.queue_wait) continue;
      const bool own_copy = atom.target >= 0;
      for (std::int32_t o : last) {
        if (o < 0 || own_copy) continue;
        const Op& op = g_.ops[static_cast<std::size_t>(o)];
        if (op.ts + op.dur <= end + kTouch && op.ts + op.dur > best_end) best_end = op.ts + op.dur, atom.target = o;
      }
      atom.waited = atom.target >= 0 && best_end > atom.ts + kTouch;
      atom.wake = atom.waited ? std::max<ns_t>(0, end - best_end) : 0;
      atom.own = atom.waited ? std::min(atom.dur, kSyncOwn) : atom.dur;
      g_.edges += atom.target >= 0;
    }
  }

  void mark_steps() {
    std::vector<std::int32_t> markers;
    for (std::size_t i = 0; i < g_.atoms.size(); ++i)
      if (g_.atoms[i].kind == AtomKind::Marker) markers.push_back(static_cast<std::int32_t>(i));
    // Markers come in (start, end) pairs in step order; a step's end may share its instant with
    // the next one's start, and the sort put equal times in insertion order.
    for (std::size_t i = first_; i < last_; ++i) {
      GraphStep s;
      s.number = p_.steps[i].number;
      s.gpu_window = p_.host_runs_ahead;
      const ns_t start = p_.steps[i].host_start, end = p_.steps[i].host_end;
      for (std::int32_t m : markers) {
        const Atom& a = g_.atoms[static_cast<std::size_t>(m)];
        if (s.start_marker < 0 && a.ts == start && a.step == static_cast<std::int32_t>(i - first_)) s.start_marker = m;
        if (a.ts == end) s.end_marker = m;
        if (a.ts > end) break;
      }
      if (s.start_marker < 0) s.start_marker = anchor(start);
      if (s.end_marker < 0) s.end_marker = anchor(end);
      g_.steps.push_back(s);
    }
  }

  const RankTrace& t_;
  const RankFacts& f_;
  const RankPartition& p_;
  Graph g_;
  std::size_t first_ = 0, last_ = 0;
  ns_t lo_ = 0, hi_ = 0;
  std::unordered_map<std::uint32_t, std::int32_t> atom_of_;
  std::map<std::pair<std::int32_t, std::int64_t>, std::int32_t> streams_;
  std::vector<ns_t> before_;
  std::vector<bool> anchored_;
};

}  // namespace

ns_t median_of(std::vector<ns_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

Graph build_graph(const RankTrace& rank, const RankFacts& facts, const RankPartition& partition) {

  return Builder(rank, facts, partition).build();
}

}  // namespace stepscope::whatif
