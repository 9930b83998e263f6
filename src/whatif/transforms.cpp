// The graph edits levers are made of.
#include <algorithm>
#include <cmath>

#include "whatif/transforms.hpp"

namespace stepscope::whatif {
namespace {

// One CUDA graph launch: the host call and the device's first kernel, ~10 us (cudaGraphLaunch).
constexpr ns_t kGraphLaunch = 10'000;
// Kernels of a replayed graph follow each other within about a microsecond.
constexpr ns_t kGraphKernelGap = 1'000;
// A run of fewer launches than this between syncs is not worth a graph.
constexpr std::size_t kMinCapture = 2;
// Pinned host-to-device bandwidth by PCIe generation, GB/s: about 80% of the link (gen3 x16
// 15.8 GB/s, gen4 31.5, gen5 63); measured pinned copies override it.
constexpr double kPinnedGen3 = 12, kPinnedGen4 = 24, kPinnedGen5 = 48;
// A copy's fixed cost beside its bytes.
constexpr ns_t kCopyLatency = 2'000;
// A released call still costs its call: a non-blocking copy returns in about this.
constexpr ns_t kAsyncCall = 10'000;

ns_t scaled(ns_t v, double f) { return static_cast<ns_t>(std::llround(static_cast<double>(v) * f)); }

}  // namespace

double speedup_of(const Context& c, const Scenario& s) {
  const Replayed r = replay(c.g, s);
  return r.span > 0 ? static_cast<double>(c.base_span) / static_cast<double>(r.span) : 1;
}

void scale_ops(const Graph& g, Scenario& s, const std::function<bool(const Op&)>& pick, double factor) {
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (pick(g.ops[i])) s.op_dur[i] = scaled(s.op_dur[i], factor);
}

void loader_workers(const Graph& g, Scenario& s, double workers) {
  s.workers = workers;
  // Each batch's loading: the recorded wait in a single-process loader. A multiprocess loader
  // delivers a batch every mean(wait + consumer's time) (its workers finish in bursts: one long
  // wait, then batches ready at once); `workers` times as many workers divide that interval.
  // Example: waits 31, 0, 31, 0 ms with 1.3 ms steps -> a batch every 16.5 ms; x2 -> 8.25 ms.
  if (!g.multiprocess_loader) return;
  ns_t last = -1, sum = 0, n = 0;
  for (const Atom& a : g.atoms) {
    if (a.kind != AtomKind::Loader) continue;
    if (last >= 0) sum += a.dur + (a.ts - last), ++n;
    last = a.ts + a.dur;
  }
  if (n == 0) return;
  for (std::size_t i = 0; i < g.atoms.size(); ++i)
    if (g.atoms[i].kind == AtomKind::Loader) s.atom_dur[i] = sum / n;
}

int burst_workers(const Graph& g) {
  std::vector<ns_t> waits;
  for (const Atom& a : g.atoms)
    if (a.kind == AtomKind::Loader) waits.push_back(a.dur);
  if (waits.size() < 4) return 0;
  const ns_t top = *std::max_element(waits.begin(), waits.end());
  constexpr ns_t kLongWait = 1'000'000;
  if (top < kLongWait) return 0;
  std::vector<std::size_t> long_at;
  for (std::size_t i = 0; i < waits.size(); ++i)
    if (2 * waits[i] > top) long_at.push_back(i);
  if (long_at.size() < 2) return 0;
  std::vector<std::size_t> gaps;
  for (std::size_t i = 1; i < long_at.size(); ++i) gaps.push_back(long_at[i] - long_at[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  return static_cast<int>(gaps[gaps.size() / 2]);
}

void release_syncs(const Graph& g, Scenario& s, bool keep_last) {
  std::vector<std::int32_t> last(g.steps.size(), -1);
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    if (a.kind != AtomKind::Sync || !a.waited || a.queue_wait) continue;
    s.release[i] = 1;
    if (a.step >= 0) last[static_cast<std::size_t>(a.step)] = static_cast<std::int32_t>(i);
  }
  if (keep_last)
    for (std::int32_t i : last)
      if (i >= 0) s.release[static_cast<std::size_t>(i)] = 0;
}

void capture_graphs(const Graph& g, const RankFacts& f, const RankTrace& t, Scenario& s) {
  std::vector<std::vector<std::size_t>> launched(g.atoms.size());
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].launch >= 0) launched[static_cast<std::size_t>(g.ops[i].launch)].push_back(i);
  auto capture = [&](const std::vector<std::size_t>& run) {
    if (run.size() < kMinCapture) return;
    const std::size_t head = run.front();
    s.atom_dur[head] = kGraphLaunch;
    for (std::size_t k = 1; k < run.size(); ++k) s.atom_dur[run[k]] = 0, s.atom_gap[run[k]] = 0;
    for (std::size_t a : run)
      for (std::size_t o : launched[a]) {
        s.op_launch[o] = static_cast<std::int32_t>(head);
        s.op_delay[o] = g.launch_delay_p50;
        s.op_gap[o] = std::min(s.op_gap[o], kGraphKernelGap);
      }
  };
  std::vector<std::size_t> run;
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    const bool plain_launch = (a.kind == AtomKind::Launch || a.queue_wait) && !f.of_event(t, a.event).has(kNameGraphLaunch);
    if (a.kind == AtomKind::Marker) continue;
    if (plain_launch && (run.empty() || g.atoms[run.back()].step == a.step)) {
      run.push_back(i);
      continue;
    }
    capture(run);
    run.clear();
    if (plain_launch) run.push_back(i);
  }
  capture(run);
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

}  // namespace stepscope::whatif
