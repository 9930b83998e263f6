// The graph edits levers are made of.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "whatif/transforms.hpp"

namespace stepscope::whatif {
namespace {

// One CUDA graph launch: the host call and the device's first kernel, ~10 us (cudaGraphLaunch).
constexpr ns_t kGraphLaunch = 10'000;
// A replayed graph starts each kernel node this long after the previous one ended: 0.26 us median,
// 0.30 us mean between the 1.3 us kernels of the recorded H200 step captured whole
// (cuda_graph_step; 0.29 us median under torch.compile's reduce-overhead); NVIDIA's "Getting
// Started with CUDA Graphs" measured 3.4 us a node for 2.9 us kernels on a V100 (CUDA 10).
constexpr ns_t kGraphNodeGapHopper = 300, kGraphNodeGapOlder = 500;
// A run of fewer launches than this between syncs is not worth a graph.
constexpr std::size_t kMinCapture = 2;
// Pinned host-to-device bandwidth by PCIe generation, GB/s: about 80% of the link (gen3 x16
// 15.8 GB/s, gen4 31.5, gen5 63); measured pinned copies override it.
constexpr double kPinnedGen3 = 12, kPinnedGen4 = 24, kPinnedGen5 = 48;
// A copy's fixed cost beside its bytes.
constexpr ns_t kCopyLatency = 2'000;
// A device-to-host copy this small is a scalar's read (.item(), a flag, a count).
constexpr std::int64_t kScalarRead = 64;
// A released call still costs its call: a non-blocking copy returns in about this.
constexpr ns_t kAsyncCall = 10'000;

ns_t scaled(ns_t v, double f) { return static_cast<ns_t>(std::llround(static_cast<double>(v) * f)); }

// The framework's dispatch of one op: the median host time before a launch call. Longer host work
// before a launch is the program's own (Python between layers) and stays when an op goes.
ns_t dispatch_time(const Graph& g) {
  std::vector<ns_t> gaps;
  for (const Atom& a : g.atoms)
    if (a.kind == AtomKind::Launch) gaps.push_back(a.gap);
  return median_of(std::move(gaps));
}


}  // namespace

double speedup_of(const Context& c, const Scenario& s) {
  const Replayed r = replay(c.g, s);
  return r.span > 0 ? s.samples * static_cast<double>(c.base_span) / static_cast<double>(r.span) : 1;
}

void grow_micro_batch(const Graph& g, Scenario& s, double factor) {
  s.samples *= factor;
  for (ns_t& d : s.op_dur) d = scaled(d, factor);
  for (std::size_t i = 0; i < g.atoms.size(); ++i)
    if (g.atoms[i].kind == AtomKind::Loader || g.atoms[i].kind == AtomKind::Side) s.atom_dur[i] = scaled(s.atom_dur[i], factor);
}

void scale_ops(const Graph& g, Scenario& s, const std::function<bool(const Op&)>& pick, double factor) {
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (pick(g.ops[i])) s.op_dur[i] = scaled(s.op_dur[i], factor);
}

std::vector<std::size_t> epoch_restarts(const Graph& g) {
  std::vector<std::size_t> out;
  std::int64_t last = -1;
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    if (a.kind != AtomKind::Loader) continue;
    if (last >= 0 && g.atoms[static_cast<std::size_t>(last)].step == a.step && a.step >= 0) out.push_back(i);
    last = static_cast<std::int64_t>(i);
  }
  return out;
}

std::vector<std::uint8_t> epoch_start_waits(const Graph& g) {
  std::vector<std::uint8_t> out(g.atoms.size(), 0);
  for (std::size_t i : epoch_restarts(g)) {
    out[i] = 1;
    if (const std::int32_t p = g.atoms[i].pred; p >= 0 && g.atoms[static_cast<std::size_t>(p)].kind == AtomKind::Loader)
      out[static_cast<std::size_t>(p)] = 1;
  }
  return out;
}

void loader_workers(const Graph& g, Scenario& s, double workers) {
  s.workers = workers;
  // Each batch's loading: the recorded wait in a single-process loader. A multiprocess loader
  // delivers a batch every mean(wait + consumer's time) (its workers finish in bursts: one long
  // wait, then batches ready at once); `workers` times as many workers divide that interval.
  // Example: waits 31, 0, 31, 0 ms with 1.3 ms steps -> a batch every 16.5 ms; x2 -> 8.25 ms.
  // An epoch's respawn is not divided: its waits (the call that ran out and the fresh workers'
  // first) stay as recorded and out of the interval.
  s.undivided = epoch_start_waits(g);
  if (!g.multiprocess_loader) return;
  ns_t last = -1, sum = 0, n = 0;
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    if (a.kind != AtomKind::Loader) continue;
    if (last >= 0 && !s.undivided[i]) sum += a.dur + (a.ts - last), ++n;
    last = a.ts + a.dur;
  }
  if (n == 0) return;
  for (std::size_t i = 0; i < g.atoms.size(); ++i)
    if (g.atoms[i].kind == AtomKind::Loader && !s.undivided[i]) s.atom_dur[i] = sum / n;
}

int burst_workers(const Graph& g) {
  std::vector<double> waits;
  for (const Atom& a : g.atoms)
    if (a.kind == AtomKind::Loader) waits.push_back(static_cast<double>(a.dur));
  constexpr double kLongWait = 1e6;
  if (waits.size() < 4 || *std::max_element(waits.begin(), waits.end()) < kLongWait) return 0;
  // The shortest period whose phases explain most of the waits' spread, its phases apart: the
  // workers' batches arrive in rounds of `workers`. Example: 23, 11, 23, 11 ms -> 2;
  // 30, 1, 1, 1, 30, 1, 1, 1 ms -> 4.
  constexpr double kExplained = 0.75, kPhaseContrast = 1.5;
  constexpr std::size_t kMaxWorkers = 8;
  double mean = 0;
  for (double w : waits) mean += w / static_cast<double>(waits.size());
  double total = 0;
  for (double w : waits) total += (w - mean) * (w - mean);
  for (std::size_t p = 2; p <= kMaxWorkers && 2 * p <= waits.size(); ++p) {
    std::vector<double> sum(p, 0), n(p, 0);
    for (std::size_t i = 0; i < waits.size(); ++i) sum[i % p] += waits[i], n[i % p] += 1;
    double within = 0, lo = std::numeric_limits<double>::max(), hi = 0;
    for (std::size_t k = 0; k < p; ++k) lo = std::min(lo, sum[k] / n[k]), hi = std::max(hi, sum[k] / n[k]);
    for (std::size_t i = 0; i < waits.size(); ++i) {
      const double d = waits[i] - sum[i % p] / n[i % p];
      within += d * d;
    }
    if (within <= (1 - kExplained) * total && hi > kPhaseContrast * lo) return static_cast<int>(p);
  }
  return 0;
}

void settle_host_work(const Graph& g, Scenario& s) {
  // Each atom's step; a step's end marker (at the end, outside the step's half-open window)
  // closes its own step: the host work before it is the step's last.
  std::vector<std::int32_t> step(g.atoms.size());
  for (std::size_t i = 0; i < g.atoms.size(); ++i) step[i] = g.atoms[i].step;
  for (std::size_t k = 0; k < g.steps.size(); ++k)
    if (g.steps[k].end_marker >= 0) step[static_cast<std::size_t>(g.steps[k].end_marker)] = static_cast<std::int32_t>(k);
  std::vector<ns_t> work(g.steps.size(), 0);
  for (std::size_t i = 0; i < g.atoms.size(); ++i)
    if (step[i] >= 0) work[static_cast<std::size_t>(step[i])] += s.atom_gap[i];
  if (work.size() < 4) return;
  std::vector<ns_t> sorted = work;
  std::sort(sorted.begin(), sorted.end());
  const ns_t quiet = sorted[sorted.size() / 4];
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const std::int32_t k = step[i];
    if (k < 0 || work[static_cast<std::size_t>(k)] <= quiet) continue;
    s.atom_gap[i] = scaled(s.atom_gap[i], static_cast<double>(quiet) / static_cast<double>(work[static_cast<std::size_t>(k)]));
  }
}

void release_syncs(const Graph& g, Scenario& s, KeepLast keep) {
  std::vector<std::int32_t> last(g.steps.size(), -1);
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    if (a.kind != AtomKind::Sync || !a.waited || a.queue_wait) continue;
    s.release[i] = 1;
    if (a.step >= 0) last[static_cast<std::size_t>(a.step)] = static_cast<std::int32_t>(i);
  }
  if (keep == KeepLast::None) return;
  std::vector<int> count(g.steps.size(), 0);
  for (std::size_t i = 0; i < g.atoms.size(); ++i)
    if (s.release[i] && g.atoms[i].step >= 0) ++count[static_cast<std::size_t>(g.atoms[i].step)];
  for (std::size_t k = 0; k < last.size(); ++k)
    if (last[k] >= 0 && (keep == KeepLast::Always || count[k] > 1)) s.release[static_cast<std::size_t>(last[k])] = 0;

}

namespace {

bool scalar_read(const Graph& g, const Atom& a) {
  if (a.kind != AtomKind::Sync || a.target < 0) return false;
  const Op& o = g.ops[static_cast<std::size_t>(a.target)];
  return o.copy == CopyKind::DtoH && o.bytes >= 0 && o.bytes <= kScalarRead;
}

// One op's dispatch where the program reads a value after every op: the median host time before
// a launch that follows no sync (after a sync, that time holds the code that used the value).
ns_t dispatch_between_ops(const Graph& g) {
  std::vector<ns_t> gaps;
  for (const Atom& a : g.atoms)
    if (a.kind == AtomKind::Launch && (a.pred < 0 || g.atoms[static_cast<std::size_t>(a.pred)].kind != AtomKind::Sync))
      gaps.push_back(a.gap);
  return median_of(std::move(gaps));
}

// Per atom, the host op that follows it (the next whose last-ended predecessor it is); -1: none.
std::vector<std::int32_t> next_atoms(const Graph& g) {
  std::vector<std::int32_t> next(g.atoms.size(), -1);
  for (std::size_t j = 0; j < g.atoms.size(); ++j)
    if (const std::int32_t p = g.atoms[j].pred; p >= 0 && next[static_cast<std::size_t>(p)] < 0)
      next[static_cast<std::size_t>(p)] = static_cast<std::int32_t>(j);
  return next;
}

// The reads that go: those released, and those that found the GPU done (they waited for nothing,
// but their calls and the code that used the value still cost host time), but a step's last read
// (the loss read once a step).
std::vector<std::uint8_t> reads_going(const Graph& g, const Scenario& s) {
  std::vector<std::int32_t> last(g.steps.size(), -1);
  for (std::size_t i = 0; i < g.atoms.size(); ++i)
    if (scalar_read(g, g.atoms[i]) && !g.atoms[i].queue_wait && g.atoms[i].step >= 0)
      last[static_cast<std::size_t>(g.atoms[i].step)] = static_cast<std::int32_t>(i);
  std::vector<std::uint8_t> going(g.atoms.size(), 0);
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    if (!scalar_read(g, a) || a.queue_wait) continue;
    const bool last_of_step = a.step >= 0 && last[static_cast<std::size_t>(a.step)] == static_cast<std::int32_t>(i);
    going[i] = s.release[i] || (!a.waited && !last_of_step);
  }
  return going;
}

}  // namespace

void drop_reads(const Graph& g, Scenario& s) {
  const ns_t dispatch = dispatch_time(g);
  const std::vector<std::uint8_t> going = reads_going(g, s);
  std::vector<int> reads(g.steps.size(), 0);
  for (std::size_t i = 0; i < g.atoms.size(); ++i)
    if (going[i] && g.atoms[i].step >= 0) ++reads[static_cast<std::size_t>(g.atoms[i].step)];
  const std::vector<std::int32_t> next = next_atoms(g);
  const ns_t op_dispatch = dispatch_between_ops(g);
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    if (!going[i]) continue;
    const auto t = static_cast<std::size_t>(a.target);
    const Op& o = g.ops[t];
    s.release[i] = 1;
    s.op_dur[t] = 0;
    s.atom_dur[i] = 0;
    s.atom_gap[i] = 0;
    // A step that reads several scalars reads them as checks (a value printed or compared after
    // each op): the Python that used the value goes with its read, down to the next op's own
    // dispatch. A step's one read is the loss, whose logging stays, reading the value later.
    if (a.step >= 0 && reads[static_cast<std::size_t>(a.step)] > 1 && next[i] >= 0) {
      const auto after = static_cast<std::size_t>(next[i]);
      s.atom_gap[after] = std::min(s.atom_gap[after], op_dispatch);
    }
    if (o.launch < 0 || static_cast<std::size_t>(o.launch) == i) continue;
    // The read's own op goes too: its copy call and the framework's dispatch before it.
    const auto call = static_cast<std::size_t>(o.launch);
    s.atom_dur[call] = 0;
    s.atom_gap[call] -= std::min(s.atom_gap[call], dispatch);
  }
}

namespace {

// Where a captured region must end: a sync (a graph cannot wait for the host), the loader and side
// work (host work no graph holds), a device allocation (not capturable), a graph launch already
// there, and the step's own boundaries.
bool ends_capture(const Atom& a, const NameFact& f) {
  return a.kind == AtomKind::Marker || a.kind == AtomKind::Loader || a.kind == AtomKind::Side ||
         (a.kind == AtomKind::Sync && !a.queue_wait) || f.has(kNameDeviceAlloc) || f.has(kNameGraphLaunch);
}

}  // namespace

namespace {

// Capturing Adam's step needs capturable=True: the step count stays on the device, and PyTorch's
// single-tensor update (torch/optim/adam.py, _single_tensor_adam's capturable branch) computes the
// bias corrections there, per parameter: the step's increment, 1 - beta ** step twice (a fill, a
// pow, a subtraction each), the step size's reciprocal and negation, the second correction's square
// root, and the products and quotients of the denominator: 14 scalar kernels beside the 8 of the
// update itself (the recorded H200 pair: 1,621 kernels a captured step against 723 launched).
constexpr int kCapturableAdamScalarKernels = 14;

bool adam_step(std::string_view n) { return n == "Optimizer.step#Adam.step" || n == "Optimizer.step#AdamW.step"; }

// The kernel that ends one parameter's update in a single-tensor Adam(W) step (its addcdiv_), not a
// multi-tensor (foreach, fused) one, whose kernels cover many parameters.
bool single_tensor_adam_update(const RankFacts& f, const RankTrace& t, const Op& o) {
  if (o.event >= f.event_stage.size() || f.event_stage[o.event] != StageHint::Optimizer) return false;
  const std::string_view name = t.name_of(o.event);
  if (name.find("addcdiv") == std::string_view::npos || name.find("multi_tensor") != std::string_view::npos) return false;
  const std::int64_t corr = o.event < t.events.correlation.size() ? t.events.correlation[o.event] : kNone;
  for (std::uint32_t e = corr == kNone ? CorrelationIndex::kNoEvent : t.correlations.launch(corr); e < f.event_parent.size();) {
    e = f.event_parent[e];
    if (e != kNoParent && adam_step(t.name_of(e))) return true;
  }
  return false;
}

// The median kernel of the optimizer stage: what a scalar kernel of the capturable step takes.
ns_t median_optimizer_kernel(const Graph& g, const RankFacts& f) {
  std::vector<ns_t> d;
  for (const Op& o : g.ops)
    if (o.kind == OpKind::Compute && o.event < f.event_stage.size() && f.event_stage[o.event] == StageHint::Optimizer)
      d.push_back(o.dur);
  return median_of(std::move(d));
}

}  // namespace

void capture_graphs(const Graph& g, const RankFacts& f, const RankTrace& t, Scenario& s) {
  std::vector<std::vector<std::size_t>> launched(g.atoms.size());
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].launch >= 0) launched[static_cast<std::size_t>(g.ops[i].launch)].push_back(i);
  // A region: the host ops between two boundaries, launch calls and the other runtime calls with
  // the host work between them (Python, the framework's dispatch per op). Replayed from a graph,
  // none of it runs: one graph launch starts the region's kernels, which follow each other on the
  // GPU. The host work before the region's first op stays (the loop's own code).
  // Example: 16 launches 30-60 us apart (a 750 us step, 130 us of kernels) -> one 10 us launch,
  // the kernels back to back: the step is the host work outside the region plus 140 us.
  const ns_t node_gap = f.device.cc_major >= 9 || f.device.vendor == GpuVendor::Amd ? kGraphNodeGapHopper : kGraphNodeGapOlder;
  const ns_t capturable_extra = kCapturableAdamScalarKernels * (median_optimizer_kernel(g, f) + node_gap);
  auto capture = [&](const std::vector<std::size_t>& run) {
    std::size_t launches = 0;
    for (std::size_t a : run) launches += !launched[a].empty();
    if (launches < kMinCapture) return;
    const std::size_t head = run.front();
    s.atom_dur[head] = std::min(s.atom_dur[head], kGraphLaunch);
    for (std::size_t k = 1; k < run.size(); ++k) s.atom_dur[run[k]] = 0, s.atom_gap[run[k]] = 0;
    for (std::size_t a : run)
      for (std::size_t o : launched[a]) {
        s.op_launch[o] = static_cast<std::int32_t>(head);
        s.op_delay[o] = g.launch_delay_p50;
        s.op_gap[o] = node_gap;
        if (single_tensor_adam_update(f, t, g.ops[o])) s.op_dur[o] += capturable_extra;
      }
  };
  // The batch's copy in and the results' copy out stay outside the graph, as the loop does them.
  auto host_copy = [&](std::size_t a) {
    return std::any_of(launched[a].begin(), launched[a].end(), [&](std::size_t o) {
      return g.ops[o].copy == CopyKind::HtoD || g.ops[o].copy == CopyKind::DtoH;
    });
  };
  std::vector<std::size_t> run;
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    const bool stop = ends_capture(a, f.of_event(t, a.event)) || host_copy(i);
    if (stop || (!run.empty() && g.atoms[run.back()].step != a.step)) {
      capture(run);
      run.clear();
    }
    if (!stop) run.push_back(i);
  }
  capture(run);
}

void fuse_launches(const Graph& g, Scenario& s, const std::function<bool(const Op&)>& pick) {
  // A launch call is fused away only when every op it launched is one the fusion takes.
  std::vector<int> verdict(g.atoms.size(), 0);  // 0: launched nothing, 1: only picked ops, -1: others too
  for (const Op& o : g.ops) {
    if (o.launch < 0) continue;
    int& v = verdict[static_cast<std::size_t>(o.launch)];
    v = pick(o) && v >= 0 ? 1 : -1;
  }
  const ns_t dispatch = dispatch_time(g);

  bool odd = false;
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    if (verdict[i] != 1 || g.atoms[i].kind != AtomKind::Launch) continue;
    if (odd) s.atom_dur[i] = 0, s.atom_gap[i] -= std::min(s.atom_gap[i], dispatch);
    odd = !odd;
  }
}

void copies_to_side_stream(const Graph& g, Scenario& s, const std::function<bool(const Op&)>& pick) {
  std::vector<std::int32_t> last_kept(static_cast<std::size_t>(g.streams), -1), last_moved(static_cast<std::size_t>(g.streams), -1);
  std::vector<std::int32_t> pending_input(static_cast<std::size_t>(g.streams), -1);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& o = g.ops[i];
    const auto st = static_cast<std::size_t>(o.stream);
    if (pick(o)) {
      s.op_prev[i] = last_moved[st];
      s.op_gap[i] = 0;
      last_moved[st] = static_cast<std::int32_t>(i);
      if (o.copy == CopyKind::HtoD) pending_input[st] = static_cast<std::int32_t>(i);
      continue;
    }
    if (o.prev >= 0 && pick(g.ops[static_cast<std::size_t>(o.prev)])) s.op_prev[i] = last_kept[st], s.op_gap[i] = 0;
    if (pending_input[st] >= 0) {  // the kernel reads the copied input: it waits for the copy's event
      s.op_after[i] = pending_input[st];
      s.op_after_gap[i] = 0;
      pending_input[st] = -1;
    }
    last_kept[st] = static_cast<std::int32_t>(i);
  }
}

void overlap_comm(const Graph& g, const RankFacts& f, Scenario& s, const std::function<bool(const Op&)>& pick) {
  std::vector<std::int32_t> first_backward(g.steps.size(), -1), first_compute(g.steps.size(), -1);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& o = g.ops[i];
    if (o.step < 0 || o.kind != OpKind::Compute || o.launch < 0) continue;
    const auto k = static_cast<std::size_t>(o.step);
    if (first_compute[k] < 0) first_compute[k] = o.launch;
    if (first_backward[k] < 0 && o.event < f.event_stage.size() && f.event_stage[o.event] == StageHint::Backward)
      first_backward[k] = o.launch;
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& o = g.ops[i];
    if (!pick(o) || o.step < 0) continue;
    const auto k = static_cast<std::size_t>(o.step);
    const std::int32_t from = first_backward[k] >= 0 ? first_backward[k] : first_compute[k];
    // Only earlier: a collective already issued before the backward (a forward all-gather) stays.
    if (from < 0 || o.launch < 0 || g.atoms[static_cast<std::size_t>(from)].ts >= g.atoms[static_cast<std::size_t>(o.launch)].ts) continue;
    s.op_launch[i] = from;
    s.op_delay[i] = g.launch_delay_p50;
    s.op_after[i] = -1;
  }
}

namespace {

// Each step's backward kernels (compute ops launched in the backward stage), in order.
std::vector<std::vector<std::int32_t>> backward_ops(const Graph& g, const RankFacts& f) {
  std::vector<std::vector<std::int32_t>> out(g.steps.size());
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& o = g.ops[i];
    if (o.step < 0 || o.kind != OpKind::Compute || o.launch < 0) continue;
    if (o.event < f.event_stage.size() && f.event_stage[o.event] == StageHint::Backward)
      out[static_cast<std::size_t>(o.step)].push_back(static_cast<std::int32_t>(i));
  }
  return out;
}

}  // namespace

void overlap_comm_as_ready(const Graph& g, const RankFacts& f, Scenario& s, const std::function<bool(const Op&)>& pick) {
  const std::vector<std::vector<std::int32_t>> backward = backward_ops(g, f);
  std::vector<std::vector<std::int32_t>> picked(g.steps.size());
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (pick(g.ops[i]) && g.ops[i].step >= 0 && g.ops[i].launch >= 0)
      picked[static_cast<std::size_t>(g.ops[i].step)].push_back(static_cast<std::int32_t>(i));
  // One collective in a step: its buckets are not in the trace, so it starts with the backward.
  for (std::size_t k = 0; k < g.steps.size(); ++k)
    if (picked[k].size() < 2 || backward[k].empty()) {
      overlap_comm(g, f, s, [&](const Op& o) { return pick(o) && o.step == static_cast<std::int32_t>(k); });
      picked[k].clear();
    }
  for (std::size_t k = 0; k < g.steps.size(); ++k) {
    const std::size_t n = picked[k].size(), b = backward[k].size();
    for (std::size_t j = 0; j < n; ++j) {
      const auto ready = static_cast<std::size_t>(backward[k][((j + 1) * b + n - 1) / n - 1]);
      const auto i = static_cast<std::size_t>(picked[k][j]);
      const std::int32_t from = g.ops[ready].launch;
      // Only earlier: a bucket whose gradients were all recorded before its collective was issued.
      // Its kernel must also have started first: every edge of the replay points back in recorded
      // order, which keeps the graph free of cycles.
      if (ready >= i || g.atoms[static_cast<std::size_t>(from)].ts >= g.atoms[static_cast<std::size_t>(g.ops[i].launch)].ts)
        continue;
      s.op_launch[i] = from;
      s.op_delay[i] = g.launch_delay_p50;
      s.op_after[i] = static_cast<std::int32_t>(ready);  // the comm stream waits on the gradient's event
      s.op_after_gap[i] = 0;
    }
  }
}

double pinned_bandwidth_gbs(const Graph& g, const RankFacts& f, const RankTrace& t) {
  double best = 0;
  for (const Op& o : g.ops)
    if (o.copy == CopyKind::HtoD && o.mem == HostMem::Pinned && o.bytes > 0 && o.dur > 0) {
      const auto x = t.extra_of(o.event);
      const double bw = x && x->bandwidth_gbps > 0 ? x->bandwidth_gbps : static_cast<double>(o.bytes) / static_cast<double>(o.dur);
      best = std::max(best, bw);
    }
  if (best > 0) return best;
  if (f.device.cc_major >= 9) return kPinnedGen5;
  if (f.device.cc_major >= 8) return kPinnedGen4;
  return kPinnedGen3;
}

void pin_copies(const Graph& g, Scenario& s, double pinned_gbs) {
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& o = g.ops[i];
    if (o.kind != OpKind::Copy || o.mem == HostMem::Pinned || (o.copy != CopyKind::HtoD && o.copy != CopyKind::DtoH)) continue;
    // GB/s is bytes per ns.
    const ns_t at_pinned = o.bytes > 0 ? kCopyLatency + static_cast<ns_t>(static_cast<double>(o.bytes) / pinned_gbs)
                                       : scaled(o.dur, 0.5);
    s.op_dur[i] = std::min(s.op_dur[i], at_pinned);
    if (o.launch >= 0) {
      const auto a = static_cast<std::size_t>(o.launch);
      if (g.atoms[a].kind == AtomKind::Sync && !g.atoms[a].queue_wait) {  // the call that held the host for its copy
        s.release[a] = 1;
        s.atom_dur[a] = std::min(s.atom_dur[a], kAsyncCall);
      }
    }
  }
}

bool fp32_matmul(const Op& o) {
  if (o.kind != OpKind::Compute) return false;
  const bool matmul = (o.cls == KernelClass::Gemm && !o.gemv) || o.cls == KernelClass::Convolution;
  const bool fp32 = o.dtype == DataType::Fp32 || (o.dtype == DataType::Unknown && o.engine != Engine::TensorCore);
  return matmul && fp32;
}

bool half_matmul(const Op& o) {
  return o.kind == OpKind::Compute &&
         (o.cls == KernelClass::GemmTensorCore || o.cls == KernelClass::Convolution || o.cls == KernelClass::Attention) &&
         is_16bit_or_narrower(o.dtype);
}

namespace {

// Large GEMMs attain about this share of their unit's dense peak, fp32 SIMT and 16-bit tensor
// cores alike (cuBLAS on the recorded H200: 51 of 67 TFLOP/s in fp32, 872 of 989 in bf16).
constexpr double kAttained = 0.8;
// The shortest tensor-core GEMM kernel: the recorded H200's smallest bf16 GEMMs take 2.98 us.
constexpr ns_t kMinMatmulKernel = 3'000;
// A cast reads each fp32 element (4 bytes) and writes it in 16 bits (2).
constexpr double kCastBytes = 6;

// "[[8192, 8192], [], [8, 2]]" -> {{8192, 8192}, {}, {8, 2}}; empty when the text is no list of lists.
std::vector<std::vector<std::int64_t>> dims_of(std::string_view text) {
  std::vector<std::vector<std::int64_t>> out;
  int depth = 0;
  std::int64_t v = 0;
  bool digits = false;
  for (char ch : text) {
    if (ch >= '0' && ch <= '9') {
      v = v * 10 + (ch - '0'), digits = true;
      continue;
    }
    if (digits && depth == 2) out.back().push_back(v);
    v = 0, digits = false;
    if (ch == '[' && ++depth == 2) out.emplace_back();
    if (ch == ']') --depth;
  }
  return out;
}

bool gemm_op_name(std::string_view n) {
  return n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm" || n == "aten::baddbmm" || n == "aten::_addmm_activation";
}

}  // namespace

std::optional<MatmulWork> gemm_work(std::string_view input_dims) {
  // The last two operands of rank 2 or more: addmm's and baddbmm's bias comes first.
  std::vector<std::vector<std::int64_t>> dims = dims_of(input_dims);
  std::erase_if(dims, [](const auto& d) { return d.size() < 2; });
  if (dims.size() < 2) return std::nullopt;
  const auto& a = dims[dims.size() - 2];
  const auto& b = dims.back();
  const double m = static_cast<double>(a[a.size() - 2]), k = static_cast<double>(a.back());
  const double n = static_cast<double>(b.back());
  if (b[b.size() - 2] != a.back() || m <= 0 || k <= 0 || n <= 0) return std::nullopt;
  double batch = 1;
  for (std::size_t i = 0; i + 2 < a.size(); ++i) batch *= static_cast<double>(std::max<std::int64_t>(a[i], 1));
  return MatmulWork{2 * batch * m * k * n, batch * (m * k + k * n), batch * m * n};
}

namespace {

// The GEMM op (aten::mm, addmm, ...) that launched a kernel, or kNoParent. By correlation, not by
// the op's launch atom: the backward's launches on the autograd thread may hang from another atom.
std::uint32_t gemm_op_of(const RankFacts& f, const RankTrace& t, const Op& o) {
  const std::int64_t corr = o.event < t.events.correlation.size() ? t.events.correlation[o.event] : kNone;
  for (std::uint32_t e = corr == kNone ? CorrelationIndex::kNoEvent : t.correlations.launch(corr); e < f.event_parent.size();) {
    e = f.event_parent[e];
    if (e != kNoParent && gemm_op_name(t.name_of(e))) return e;
  }
  return kNoParent;
}

std::optional<MatmulWork> work_of(const RankTrace& t, std::uint32_t op) {
  const std::optional<EventExtra> x = op == kNoParent ? std::nullopt : t.extra_of(op);
  return x && x->input_dims != kNoStr ? gemm_work(t.str(x->input_dims)) : std::nullopt;
}

}  // namespace

std::optional<MatmulWork> recorded_gemm_work(const RankFacts& f, const RankTrace& t, const Op& o) {
  return work_of(t, gemm_op_of(f, t, o));
}

void narrow_matmuls(const Graph& g, const RankFacts& f, const RankTrace& t, Scenario& s, const MatmulTarget& m) {
  // An op's work is shared among its matmul kernels (a split-K GEMM and its reduction) by their
  // recorded time.
  std::vector<std::uint32_t> op_of(g.ops.size(), kNoParent);
  std::vector<std::optional<MatmulWork>> work(g.ops.size());
  std::map<std::uint32_t, ns_t> op_total;
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (fp32_matmul(g.ops[i])) {
      op_of[i] = gemm_op_of(f, t, g.ops[i]);
      work[i] = work_of(t, op_of[i]);
      if (work[i]) op_total[op_of[i]] += std::max<ns_t>(g.ops[i].dur, 1);
    }
  const double flops_per_ns = m.tflops * 1e3 * kAttained;  // TFLOP/s = 1e3 FLOP/ns; GB/s = bytes/ns
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& o = g.ops[i];
    if (!fp32_matmul(o)) continue;
    MatmulWork w;
    if (work[i]) {
      const double share = static_cast<double>(std::max<ns_t>(o.dur, 1)) / static_cast<double>(op_total[op_of[i]]);
      w = {work[i]->flops * share, work[i]->operand_elements * share, work[i]->output_elements * share};
    } else {
      w.flops = static_cast<double>(o.dur) * m.fp32_tflops * 1e3 * kAttained;
      const double n = std::cbrt(w.flops / 2);
      w.operand_elements = 2 * n * n, w.output_elements = n * n;
    }
    const double compute = w.flops / flops_per_ns;
    const double memory = (w.operand_elements + w.output_elements) * m.element_bytes / m.bandwidth_gbs;
    const double casts = m.casts ? w.operand_elements * kCastBytes / m.bandwidth_gbs : 0;
    const double narrowed = std::max({compute, memory, static_cast<double>(kMinMatmulKernel)}) + casts;
    s.op_dur[i] = std::min(s.op_dur[i], static_cast<ns_t>(std::llround(narrowed)));
  }
}

}  // namespace stepscope::whatif
