// compute_facts: name facts once per distinct name, then the per-event and per-rank facts.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <tuple>
#include <unordered_map>

#include "facts/event_stages.hpp"
#include "facts/name_match.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/correlation_table.hpp"
#include "stepscope/id_map.hpp"

namespace stepscope {

namespace {

using namespace facts_detail;

bool is_host_op_kind(Kind k) {
  return k == Kind::CpuOp || k == Kind::UserAnnotation || k == Kind::PythonFunction || k == Kind::Runtime ||
         k == Kind::Driver;
}

bool is_gpu_work(Kind k) { return k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset; }

// Name facts for every name an event carries: host names and GPU names are read by different
// grammars, and a trace repeats a few thousand names millions of times.
std::vector<NameFact> name_facts(const RankTrace& t) {
  std::vector<NameFact> names(t.strings.size());
  std::vector<std::uint8_t> done(t.strings.size(), 0);
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const StrId id = t.events.name[i];
    const Kind k = t.events.kind[i];
    const std::uint8_t want = is_gpu_kind(k) ? 2 : 1;
    if (done[id] & want) continue;
    if (want == 2) {
      NameFact g = kernel_name_fact(t.str(id));
      if (done[id] & 1) {  // a name seen on both sides keeps its host facts too
        g.role = names[id].role, g.stage = names[id].stage, g.sync = names[id].sync;
        g.flags |= names[id].flags;
      }
      names[id] = g;
    } else {
      NameFact h = host_name_fact(t.str(id));
      if (done[id] & 2) h.cls = names[id].cls, h.engine = names[id].engine, h.dtype = names[id].dtype,
                        h.comm = names[id].comm, h.collective = names[id].collective, h.flags |= names[id].flags;
      names[id] = h;
    }
    done[id] |= want;
  }
  return names;
}

// ---- GEMM precision from the launching ops ------------------------------------------------------

// The element type of an op's first tensor input that names a narrow type, from its recorded
// "Input type" list. fp32 inputs say nothing of the math (TF32 tensor cores or FFMA), so they
// resolve nothing. Example: ["c10::BFloat16", "c10::BFloat16", "Scalar"] -> Bf16.
DataType narrow_input_type(std::string_view types) {
  struct Entry {
    std::string_view spelling;
    DataType type;
  };
  static constexpr Entry kTypes[] = {{"BFloat16", DataType::Bf16}, {"Half", DataType::Fp16},
                                     {"Float8", DataType::Fp8},    {"c10::qint8", DataType::Int8},
                                     {"\"signed char\"", DataType::Int8}};
  std::size_t first = std::string_view::npos;
  DataType found = DataType::Unknown;
  for (const auto& e : kTypes)
    if (const auto at = types.find(e.spelling); at < first) first = at, found = e.type;
  return found;
}

// GEMM kernels whose names carry no element type (cuBLAS's nvjet kernels on Hopper and later)
// take it from the ops that launched them: kernel -> launch call (correlation) -> the op with the
// call's External id -> its input types. A name takes the type most of its launches agree on.
void gemm_types_from_ops(const RankTrace& t, std::vector<NameFact>& names) {
  std::vector<std::uint32_t> untyped_events;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.kind[i] != Kind::Kernel) continue;
    const NameFact& n = names[t.events.name[i]];
    const bool gemm = n.cls == KernelClass::Gemm || n.cls == KernelClass::GemmTensorCore;
    if (gemm && n.dtype == DataType::Unknown) untyped_events.push_back(static_cast<std::uint32_t>(i));
  }
  if (untyped_events.empty()) return;
  IdMap<std::uint32_t> op_by_external;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.kind[i] != Kind::CpuOp || t.events.external_id[i] == kNone) continue;
    if (const std::optional<EventExtra> x = t.extra_of(i); x && x->input_type != kNoStr)
      op_by_external[t.events.external_id[i]] = static_cast<std::uint32_t>(i);
  }
  std::unordered_map<StrId, std::array<std::uint32_t, kDataTypeCount>> votes;
  for (auto i : untyped_events) {
    const auto corr = t.events.correlation[i];
    const std::uint32_t call = corr == kNone ? CorrelationIndex::kNoEvent : t.correlations.launch(corr);
    if (call == CorrelationIndex::kNoEvent || t.events.external_id[call] == kNone) continue;
    const std::uint32_t* op = op_by_external.find(t.events.external_id[call]);
    if (!op) continue;
    const DataType d = narrow_input_type(t.str(t.extra_of(*op)->input_type));
    ++votes[t.events.name[i]][static_cast<std::size_t>(d)];
  }
  for (const auto& [name, count] : votes) {
    const auto best = std::max_element(count.begin() + 1, count.end());
    if (*best > count[0]) names[name].dtype = static_cast<DataType>(best - count.begin());
  }
}

// ---- threads ---------------------------------------------------------------------------------

bool is_timed_host(const RankTrace& t, std::uint32_t i) {
  return t.events.phase[i] == Phase::Complete && is_host_op_kind(t.events.kind[i]);
}

struct TrackCounts {
  std::size_t steps = 0, loop_markers = 0, forward = 0, backward = 0, ops = 0;
};

TrackCounts count_track(const RankTrace& t, const Track& tr, const std::vector<NameFact>& names) {
  TrackCounts c;
  for (auto i : tr.events) {
    if (!is_timed_host(t, i)) continue;
    const NameFact& f = names[t.events.name[i]];
    if (f.has(kNameProfilerStep)) ++c.steps;
    if (f.has(kNameOptimizerStep) || f.role == HostRole::Loader) ++c.loop_markers;
    if (f.stage == StageHint::Backward) ++c.backward;
    if (f.stage == StageHint::Forward || f.has(kNameForwardEntry)) ++c.forward;
    if (t.events.kind[i] == Kind::CpuOp || t.events.kind[i] == Kind::UserAnnotation) ++c.ops;
  }
  return c;
}

bool python_named(const Track& tr) {
  const std::string l = lower(tr.name);
  return has_any(l, {"python", "pt_main_thread", "mainthread"});
}

bool autograd_named(const Track& tr) { return has(lower(tr.name), "autograd"); }

// The training loop's thread: the one with ProfilerStep markers; else the one with the loop's
// own markers (optimizer steps, batch fetches); else the Python main thread (tid = pid, or named
// python / pt_main_thread) when it ran ops; else the busiest thread that is not the autograd
// engine's (which can hold more ops than the thread that called backward).
int find_main_track(const RankTrace& t, const std::vector<TrackCounts>& counts) {
  auto best_by = [&](auto score) {
    int best = -1;
    for (std::size_t k = 0; k < counts.size(); ++k)
      if (score(k) > 0 && (best < 0 || score(k) > score(static_cast<std::size_t>(best)))) best = static_cast<int>(k);
    return best;
  };
  if (int k = best_by([&](std::size_t c) { return counts[c].steps; }); k >= 0) return k;
  if (int k = best_by([&](std::size_t c) { return counts[c].loop_markers; }); k >= 0) return k;
  auto is_autograd = [&](std::size_t k) {
    return autograd_named(t.host_tracks[k]) || (counts[k].backward > 0 && counts[k].forward == 0 &&
                                                 t.host_tracks[k].tid != t.host_tracks[k].pid);
  };
  if (int k = best_by([&](std::size_t k) {
        const Track& tr = t.host_tracks[k];
        return (tr.tid == tr.pid || python_named(tr)) && !is_autograd(k) ? counts[k].ops + 1 : 0;
      });
      k >= 0)
    return k;
  if (int k = best_by([&](std::size_t k) { return is_autograd(k) ? 0 : counts[k].ops + counts[k].forward; }); k >= 0)
    return k;
  return best_by([&](std::size_t k) { return t.host_tracks[k].events.size(); });
}

ThreadRole track_role(const RankTrace& t, std::size_t k, int main, const TrackCounts& c) {
  if (static_cast<int>(k) == main) return ThreadRole::Main;
  const Track& tr = t.host_tracks[k];
  if (autograd_named(tr) || c.backward > 0) return ThreadRole::Autograd;
  if (has(lower(tr.name), "data") && has(lower(tr.name), "worker")) return ThreadRole::Loader;
  if (c.loop_markers > 0 && c.backward == 0) return ThreadRole::Loader;
  return ThreadRole::Other;
}

// ---- stages ------------------------------------------------------------------------------------

// Each host op inherits the stage of its innermost ancestor that marks one. In a training trace
// without explicit forward markers, backward runs on the autograd engine's thread and the
// optimizer under its own marker: a model op on the main thread outside both (and outside
// zero_grad) is the forward pass, loss included.
// The innermost timed host op enclosing each one on the thread (RankFacts::event_parent). Events
// are in start order, so a stack of the open ops answers for each in one pass.
void link_parents(const RankTrace& t, const Track& tr, std::vector<std::uint32_t>& parent) {
  std::vector<std::uint32_t> open;
  for (auto i : tr.events) {
    if (!is_timed_host(t, i)) continue;
    while (!open.empty() && t.events.end(open.back()) <= t.events.ts[i]) open.pop_back();
    parent[i] = open.empty() ? kNoParent : open.back();
    open.push_back(i);
  }
}

void inherit_stages(const RankTrace& t, const Track& tr, const std::vector<NameFact>& names, bool main,
                    bool infer_forward, const std::vector<std::uint32_t>& parent, std::vector<StageHint>& stage) {
  for (auto i : tr.events) {
    if (!is_timed_host(t, i)) continue;
    const NameFact& f = names[t.events.name[i]];
    StageHint own = f.stage;
    if (own == StageHint::None && main && f.has(kNameForwardEntry) && t.events.kind[i] != Kind::CpuOp)
      own = StageHint::Forward;
    const StageHint inherited = parent[i] == kNoParent ? StageHint::None : stage[parent[i]];
    if (own == StageHint::None && inherited == StageHint::None && infer_forward && main &&
        t.events.kind[i] == Kind::CpuOp && f.role == HostRole::Op && !f.has(kNameZeroGrad))
      own = StageHint::Forward;
    stage[i] = own != StageHint::None ? own : inherited;
  }
}

// The role each timed host op plays when the GPU idles: its name's, except that a call launching
// GPU work is a launch and a scalar read that never waited (.item() on a CPU tensor) host work.
void host_roles(const RankTrace& t, RankFacts& f) {
  f.event_role.assign(t.events.size(), kNotHostOp);
  for (const auto& tr : t.host_tracks)
    for (auto i : tr.events) {
      if (!is_timed_host(t, i)) continue;
      const NameFact& n = f.of_event(t, i);
      HostRole r = n.role;
      if (n.sync == SyncKind::ScalarRead &&
          std::binary_search(f.scalar_reads_without_wait.begin(), f.scalar_reads_without_wait.end(), i))
        r = HostRole::Op;
      const bool launches = (t.events.kind[i] == Kind::Runtime || t.events.kind[i] == Kind::Driver) &&
                            t.correlations.has_gpu(t.events.correlation[i]);
      if (r == HostRole::Op && launches) r = HostRole::Launch;
      f.event_role[i] = static_cast<std::int8_t>(r);
    }
}

}  // namespace

void facts_detail::gpu_stages(const RankTrace& t, std::vector<StageHint>& stage) {
  for (const auto& tr : t.gpu_tracks)
    for (auto i : tr.events) {
      const auto corr = t.events.correlation[i];
      if (corr == kNone) continue;
      if (auto call = t.correlations.launch(corr); call != CorrelationIndex::kNoEvent) stage[i] = stage[call];
    }
}

namespace {

// ---- communication roles -------------------------------------------------------------------------

// The launch call of every communication kernel: (call, kernel), ascending by call; kernels with
// no call on record carry kNoEvent and sort last.
std::vector<std::pair<std::uint32_t, std::uint32_t>> comm_launches(const RankTrace& t,
                                                                   const std::vector<NameFact>& names) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (const auto& tr : t.gpu_tracks)
    for (auto i : tr.events) {
      if (t.events.kind[i] != Kind::Kernel || !names[t.events.name[i]].is_comm()) continue;
      const auto corr = t.events.correlation[i];
      out.emplace_back(corr == kNone ? CorrelationIndex::kNoEvent : t.correlations.launch(corr), i);
    }
  std::sort(out.begin(), out.end());
  return out;
}

// The innermost communication call around a launch: the collective it names, and whether it is
// a coalesced group (batch_isend_irecv ends in one "nccl:coalesced" call that launches them all);
// and whether any call around it is a tensor-parallel region.
struct HostComm {
  Collective collective = Collective::None;
  bool coalesced = false;
  bool tensor_parallel = false;
};

// The HostComm of each launch in `launches` (the call itself included), written to `host[k]`
// for launches[k]: nccl:all_to_all > record_param_comms > cudaLaunchKernel gives AllToAll.
void host_collectives(const RankTrace& t, const Track& tr, const std::vector<NameFact>& names,
                      const std::vector<std::pair<std::uint32_t, std::uint32_t>>& launches,
                      std::vector<HostComm>& host) {
  std::vector<std::pair<ns_t, HostComm>> open;  // (end, call in force)
  for (auto i : tr.events) {
    if (!is_timed_host(t, i)) continue;
    while (!open.empty() && open.back().first <= t.events.ts[i]) open.pop_back();
    const NameFact& n = names[t.events.name[i]];
    HostComm c = open.empty() ? HostComm{} : open.back().second;
    if (n.collective != Collective::None || n.has(kNameCoalescedComm))
      c.collective = n.collective, c.coalesced = n.has(kNameCoalescedComm);
    c.tensor_parallel = c.tensor_parallel || n.has(kNameTensorParallel);
    open.emplace_back(t.events.end(i), c);
    const Kind k = t.events.kind[i];
    if (k != Kind::Runtime && k != Kind::Driver) continue;  // only runtime and driver calls launch
    auto it = std::lower_bound(launches.begin(), launches.end(), std::make_pair(i, std::uint32_t{0}));
    for (; it != launches.end() && it->first == i; ++it) host[static_cast<std::size_t>(it - launches.begin())] = c;
  }
}

// What one kernel's communication is for (CommRole's examples). A forward counts only where the
// trace marks it: a forward inferred for unmarked top-level ops would also take in what runs
// after backward, such as a gradient reduce-scatter launched from the main thread. SendRecv
// kernels launched by a coalesced group are point-to-point: coalesced collectives launch kernels
// of their own kind. Inside a tensor-parallel region, all-reduce, reduce-scatter and all-gather
// move activations or their gradients, in backward too.
CommRole comm_role_of(const NameFact& kernel, HostComm host, StageHint stage, bool forward_marked) {
  if (kernel.comm == CommKind::ExpertParallel) return CommRole::Exchange;
  const bool named = host.collective != Collective::None || host.coalesced;
  switch (host.collective != Collective::None ? host.collective : kernel.collective) {
    case Collective::AllToAll: return CommRole::Exchange;
    case Collective::SendRecv: return named ? CommRole::PointToPoint : CommRole::Other;
    case Collective::AllGather: return host.tensor_parallel ? CommRole::Activation : CommRole::ParamGather;
    case Collective::Broadcast:
    case Collective::Reduce: return CommRole::Other;
    case Collective::AllReduce:
    case Collective::ReduceScatter:
    case Collective::None: break;
  }
  if (host.tensor_parallel) return CommRole::Activation;
  return forward_marked && stage == StageHint::Forward ? CommRole::Activation : CommRole::GradientSync;
}

void comm_roles(const RankTrace& t, bool forward_marked, RankFacts& f) {
  const auto launches = comm_launches(t, f.names);
  if (launches.empty()) return;
  std::vector<HostComm> host(launches.size());
  for (const auto& tr : t.host_tracks) host_collectives(t, tr, f.names, launches, host);
  for (std::size_t k = 0; k < launches.size(); ++k) {
    const std::uint32_t g = launches[k].second;
    f.comm_roles.emplace_back(g, comm_role_of(f.of_event(t, g), host[k], f.event_stage[g], forward_marked));
  }
  std::sort(f.comm_roles.begin(), f.comm_roles.end());
}

// ---- syncs -------------------------------------------------------------------------------------

bool waits(SyncKind k) { return k == SyncKind::DeviceWait || k == SyncKind::BlockingCopy; }

// One count per synchronisation the host really waited for: the outermost synchronising call of
// a nest (aten::item > _local_scalar_dense > cudaMemcpyAsync > cudaStreamSynchronize is one), and a
// scalar read only when a device wait or a device-to-host copy runs inside it (on a CPU tensor,
// .item() waits on nothing).
void device_syncs(const RankTrace& t, const Track& tr, const std::vector<NameFact>& names, RankFacts& f) {
  struct Open {
    ns_t end;
    std::uint32_t event;
    bool waited;
  };
  std::vector<Open> open;
  // Synchronising calls nested in the open one: when it waited on nothing, neither did they
  // (aten::item > _local_scalar_dense on a CPU tensor are both host work).
  std::vector<std::uint32_t> nested;
  auto close = [&](const Open& o) {
    if (o.waited) {
      f.device_syncs.push_back(o.event);
    } else {
      f.scalar_reads_without_wait.push_back(o.event);
      f.scalar_reads_without_wait.insert(f.scalar_reads_without_wait.end(), nested.begin(), nested.end());
    }
    nested.clear();
  };
  for (auto i : tr.events) {
    if (!is_timed_host(t, i)) continue;
    while (!open.empty() && open.back().end <= t.events.ts[i]) close(open.back()), open.pop_back();
    const NameFact& n = names[t.events.name[i]];
    const bool wait_inside = waits(n.sync) || n.has(kNameAsyncCopyCall);
    if (!open.empty()) {
      if (wait_inside) open.front().waited = true;
      if (n.sync != SyncKind::None) {  // nested: counted with its outermost call
        nested.push_back(i);
        continue;
      }
    }
    if (n.sync == SyncKind::None) continue;
    open.push_back({t.events.end(i), i, waits(n.sync)});
    // Keep only the outermost sync open: nested non-sync ops never enter the stack.
  }
  for (const auto& o : open) close(o);
}

// ---- start-up ----------------------------------------------------------------------------------

// A runtime or driver call that took at least this long, and this many times the median of its
// name's other calls, is one-time start-up (lazy module loading, handle creation, autotuning).
constexpr ns_t kStartupMinNs = 20'000'000;
constexpr double kStartupFactor = 50;
constexpr std::size_t kStartupMaxPerName = 2;

// The union of the GPU's work (records of positive length on any stream; touching ones join),
// interval by interval in time order: f(lo, hi). The streams' lists are in start order, so
// their records are met in start order through a heap of one cursor per stream, and the union
// is never stored (16 bytes a record, then a merged interval: a 1 GB trace has 1.5 million).
template <class F>
void for_each_busy_interval(const RankTrace& t, F&& f) {
  struct Cursor {
    ns_t ts;
    std::uint32_t track, pos;
    bool operator>(const Cursor& o) const { return ts > o.ts; }
  };
  std::priority_queue<Cursor, std::vector<Cursor>, std::greater<>> heap;
  auto push_from = [&](std::uint32_t track, std::uint32_t pos) {
    const std::vector<std::uint32_t>& events = t.gpu_tracks[track].events;
    for (; pos < events.size(); ++pos)
      if (is_gpu_work(t.events.kind[events[pos]]) && t.events.dur[events[pos]] > 0) {
        heap.push({t.events.ts[events[pos]], track, pos});
        return;
      }
  };
  for (std::uint32_t k = 0; k < t.gpu_tracks.size(); ++k) push_from(k, 0);
  bool open = false;
  ns_t lo = 0, hi = 0;
  while (!heap.empty()) {
    const Cursor c = heap.top();
    heap.pop();
    const ns_t end = t.events.end(t.gpu_tracks[c.track].events[c.pos]);
    if (open && c.ts <= hi) {
      hi = std::max(hi, end);
    } else {
      if (open) f(lo, hi);
      lo = c.ts, hi = end, open = true;
    }
    push_from(c.track, c.pos + 1);
  }
  if (open) f(lo, hi);
}

}  // namespace

// U(b) - U(a), where U(x) is the time the union of the GPU's work covers before x, read at every
// interval end during one pass over the union.
//   work [0,10) [5,20) [30,40); [15,35) -> U(35) - U(15) = 25 - 15 = 10
std::vector<ns_t> gpu_busy_within(const RankTrace& t, const std::vector<std::pair<ns_t, ns_t>>& intervals) {
  std::vector<std::pair<ns_t, std::size_t>> ends;  // (x, 2k for interval k's start, 2k + 1 for its end)
  ends.reserve(2 * intervals.size());
  for (std::size_t k = 0; k < intervals.size(); ++k) {
    ends.emplace_back(intervals[k].first, 2 * k);
    ends.emplace_back(intervals[k].second, 2 * k + 1);
  }
  std::sort(ends.begin(), ends.end());
  std::vector<ns_t> covered(ends.size(), 0);  // U at each end, by its number
  std::size_t next = 0;
  ns_t before = 0;  // U(lo) of the union interval at hand
  if (!ends.empty())
    for_each_busy_interval(t, [&](ns_t lo, ns_t hi) {
      for (; next < ends.size() && ends[next].first < hi; ++next)
        covered[ends[next].second] = before + std::max<ns_t>(0, ends[next].first - lo);
      before += hi - lo;
    });
  for (; next < ends.size(); ++next) covered[ends[next].second] = before;
  std::vector<ns_t> busy(intervals.size());
  for (std::size_t k = 0; k < intervals.size(); ++k) busy[k] = covered[2 * k + 1] - covered[2 * k];
  return busy;
}

namespace {

// A call the GPU was busy through is waiting on the GPU (a full launch queue, a copy behind
// queued work), which is steady-state cost; a start-up call leaves the GPU idle.
constexpr double kStartupGpuBusyShare = 0.1;

// The runtime and driver calls that are no sync, grouped by name: name n's calls are
// calls[first[n] .. first[n + 1]), each group in track order. Counted before it is filled, so
// that the list takes 4 bytes a call (a 1 GB trace makes a million launch calls).
struct CallsByName {
  std::vector<std::uint32_t> first, calls;
  CallsByName(const RankTrace& t, const std::vector<NameFact>& names) : first(names.size() + 1, 0) {
    auto each = [&](auto&& f) {
      for (const auto& tr : t.host_tracks)
        for (auto i : tr.events)
          if ((t.events.kind[i] == Kind::Runtime || t.events.kind[i] == Kind::Driver) &&
              t.events.phase[i] == Phase::Complete && names[t.events.name[i]].sync == SyncKind::None)
            f(i);
    };
    each([&](std::uint32_t i) { ++first[t.events.name[i] + 1]; });
    for (std::size_t n = 1; n < first.size(); ++n) first[n] += first[n - 1];
    calls.resize(first.back());
    std::vector<std::uint32_t> next(first.begin(), first.end() - 1);
    each([&](std::uint32_t i) { calls[next[t.events.name[i]]++] = i; });
  }
  std::span<const std::uint32_t> of(StrId n) const { return {calls.data() + first[n], calls.data() + first[n + 1]}; }
};

std::vector<StartupOutlier> startup_outliers(const RankTrace& t, const std::vector<NameFact>& names) {
  // The slow calls of each name, by name; then the GPU's busy time within all of them at once.
  std::vector<StartupOutlier> slow;
  std::vector<std::size_t> name_end;  // one past each name's slow calls in `slow`, names with some
  {
    const CallsByName by_name(t, names);
    std::vector<std::uint32_t> by_dur;  // one name's calls, for its median
    for (StrId name = 0; name < names.size(); ++name) {
      const std::span<const std::uint32_t> ev = by_name.of(name);
      if (ev.size() < 3) continue;
      by_dur.assign(ev.begin(), ev.end());
      const auto mid = by_dur.begin() + static_cast<std::ptrdiff_t>(by_dur.size() / 2);
      std::nth_element(by_dur.begin(), mid, by_dur.end(),
                       [&](std::uint32_t a, std::uint32_t b) { return t.events.dur[a] < t.events.dur[b]; });
      const ns_t median = t.events.dur[*mid];
      for (auto i : ev) {
        const ns_t d = t.events.dur[i];
        if (d < kStartupMinNs || static_cast<double>(d) < kStartupFactor * static_cast<double>(median)) continue;
        slow.push_back({i, t.events.ts[i], t.events.end(i), median});
      }
      if (name_end.empty() || name_end.back() != slow.size()) name_end.push_back(slow.size());
    }
  }
  std::vector<std::pair<ns_t, ns_t>> spans;
  for (const StartupOutlier& o : slow) spans.emplace_back(o.start, o.end);
  const std::vector<ns_t> busy = gpu_busy_within(t, spans);
  std::vector<StartupOutlier> out;
  std::size_t k = 0;
  for (const std::size_t end : name_end) {
    std::vector<StartupOutlier> mine;
    for (; k < end; ++k)
      if (static_cast<double>(busy[k]) <= kStartupGpuBusyShare * static_cast<double>(slow[k].end - slow[k].start))
        mine.push_back(slow[k]);
    // More than a couple of slow calls of one name is a recurring cost (allocator churn), not start-up.
    if (mine.size() <= kStartupMaxPerName) out.insert(out.end(), mine.begin(), mine.end());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return std::tie(a.start, a.event) < std::tie(b.start, b.event); });
  return out;
}

// Time the host spent in device syncs that were long while the GPU, as traced, did nothing: the
// sync waited on work the trace does not hold (untraced graph kernels, another process's stream).
constexpr ns_t kLongSyncNs = 5'000'000;
constexpr double kIdleInsideShare = 0.9;

ns_t syncs_waiting_on_nothing(const RankTrace& t, const RankFacts& f) {
  if (!f.gpu_records) return 0;
  ns_t total = 0;
  for (std::size_t k = 0; k < f.device_syncs.size(); ++k) {
    const ns_t d = t.events.dur[f.device_syncs[k]];
    if (d < kLongSyncNs) continue;
    const ns_t idle = d - f.device_sync_busy[k];
    if (static_cast<double>(idle) >= kIdleInsideShare * static_cast<double>(d)) total += idle;
  }
  return total;
}

// ---- records -----------------------------------------------------------------------------------

// Names only PyTorch writes: its operators and its profiler's markers. Not the op kind: an
// Nsight capture records MPI or cuBLAS API ranges as ops too.
bool pytorch_name(std::string_view n) {
  for (std::string_view p : {"aten::", "c10d::", "autograd::", "torch::", "ProfilerStep#", "Optimizer.", "enumerate(DataLoader)"})
    if (starts(n, p)) return true;
  return false;
}

void count_records(const RankTrace& t, RankFacts& f) {
  CorrelationTable<char> host_corr(t.correlations, 0);
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Kind k = t.events.kind[i];
    if (is_gpu_work(k) && t.events.dur[i] > 0) f.gpu_records = true;
    if (!f.pytorch && is_host_op_kind(k) && pytorch_name(t.name_of(i))) f.pytorch = true;
    if ((k == Kind::Runtime || k == Kind::Driver) && t.events.correlation[i] != kNone) {
      const NameFact& n = f.names[t.events.name[i]];
      if (!n.has(kNameLaunchCall) && !n.has(kNameAsyncCopyCall)) continue;
      ++f.launch_calls;
      host_corr[t.events.correlation[i]] = 1;
      const bool recorded = t.correlations.has_gpu(t.events.correlation[i]);
      if (!recorded) ++f.launches_without_gpu;
      if (n.has(kNameGraphLaunch)) ++f.graph_launches, f.graph_launches_without_gpu += !recorded;
    }
  }
  if (f.launch_calls == 0) return;  // a GPU-only capture: nothing to pair with
  for (const auto& tr : t.gpu_tracks)
    for (auto i : tr.events)
      if (is_gpu_work(t.events.kind[i]) && t.events.correlation[i] != kNone &&
          !host_corr.contains(t.events.correlation[i]) && !t.correlations.has_launch(t.events.correlation[i]))
        ++f.gpu_without_launch;
}

// ---- kind of run -------------------------------------------------------------------------------

struct KindCounts {
  std::size_t backward = 0, optimizer = 0, loader = 0, serving = 0, harness = 0, event_timing = 0,
              graph_launches = 0, profiler_steps = 0, launches = 0, grad_collectives = 0, backward_kernels = 0;
  std::int64_t last_step_number = -1;  // a ProfilerStep#N with N > 1 was recorded inside a loop
};

KindCounts kind_counts(const RankTrace& t, const RankFacts& f) {
  KindCounts c;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.phase[i] != Phase::Complete) continue;
    const NameFact& n = f.names[t.events.name[i]];
    if (is_gpu_work(t.events.kind[i])) c.backward_kernels += n.has(kNameBackwardKernel);
    if (!is_host_op_kind(t.events.kind[i])) continue;
    c.backward += n.stage == StageHint::Backward;
    c.optimizer += n.has(kNameOptimizerStep);
    c.loader += n.role == HostRole::Loader;
    c.serving += n.has(kNameServing);
    c.harness += n.has(kNameHarness);
    c.event_timing += n.has(kNameEventTiming);
    c.graph_launches += n.has(kNameGraphLaunch);
    c.profiler_steps += n.has(kNameProfilerStep);
    c.grad_collectives += n.has(kNameGradCollective);
    if (n.has(kNameProfilerStep)) c.last_step_number = std::max(c.last_step_number, profiler_step_number(t.name_of(i)));
    c.launches += n.has(kNameLaunchCall);
  }
  return c;
}

// A timing harness synchronises once per repetition and times with events: at least one device
// sync per few launches, and event timing calls beside them.
bool harness_shape(const KindCounts& c, std::size_t syncs) {
  return c.event_timing >= 4 && syncs * 4 >= c.launches && c.launches > 0;
}

// One op, called again and again with nothing else at the top level of the main thread: a replay
// tool's or a micro-benchmark's loop, whatever the op (a backward op replayed is no training).
//   tops: convolution_backward x10 -> {"aten::convolution_backward", 10};  tops: mm, add, mm -> none
constexpr std::size_t kMinReplays = 3;

std::optional<std::pair<std::string, std::size_t>> single_op_replay(const RankTrace& t, const RankFacts& f) {
  if (f.main_track < 0) return std::nullopt;
  StrId only = kNoStr;
  std::size_t n = 0;
  ns_t covered = INT64_MIN;
  for (auto i : t.host_tracks[static_cast<std::size_t>(f.main_track)].events) {
    const Kind k = t.events.kind[i];
    if (t.events.phase[i] != Phase::Complete || (k != Kind::CpuOp && k != Kind::UserAnnotation)) continue;
    if (t.events.ts[i] < covered) continue;  // nested in the previous top-level call
    covered = t.events.end(i);
    if (only != kNoStr && t.events.name[i] != only) return std::nullopt;
    only = t.events.name[i], ++n;
  }
  if (n < kMinReplays) return std::nullopt;
  return std::make_pair(std::string(t.str(only)), n);
}

void classify_run(const RankTrace& t, RankFacts& f) {
  const KindCounts c = kind_counts(t, f);
  f.cuda_graphs = c.graph_launches > 0;
  auto set = [&](RunKind k, std::string why) { f.run_kind = k, f.run_kind_evidence = std::move(why); };
  if (c.profiler_steps == 0 && c.optimizer == 0 && c.serving == 0 && c.harness == 0)
    if (const auto replay = single_op_replay(t, f))
      return set(RunKind::Benchmark, fmt::format("{} calls of one op ({}) and nothing else at the top level: a replay "
                                                 "or micro-benchmark of that op",
                                                 replay->second, replay->first));
  if (c.backward > 0 || c.optimizer > 0)
    return set(RunKind::Training, fmt::format("{} backward ops and {} optimizer steps", c.backward, c.optimizer));
  if (c.harness > 0 || harness_shape(c, f.device_syncs.size()))
    return set(RunKind::Benchmark,
               c.harness > 0 ? fmt::format("{} benchmark harness ranges (warmup / measure), no backward", c.harness)
                             : fmt::format("{} device syncs for {} launches with event timing: a timing loop",
                                           f.device_syncs.size(), c.launches));
  // A step replayed from a CUDA graph (or run by a runtime that records no ops) leaves no
  // backward op on the host, but its gradient kernels still name themselves on the GPU.
  if (c.backward_kernels > 0 && c.serving == 0)
    return set(RunKind::Training, fmt::format("{} gradient kernels on the GPU and no backward op on the host{}",
                                              c.backward_kernels, f.cuda_graphs ? " (CUDA graph replays)" : ""));
  if (c.serving > 0 && !f.pytorch && c.launches == 0 && !f.gpu_records)
    return set(RunKind::Inference, fmt::format("{} serving frontend calls and no model work: a serving process that "
                                               "only routes requests",
                                               c.serving));
  if (c.serving > 0)
    return set(RunKind::Inference, fmt::format("{} serving-engine iterations or requests, no backward{}", c.serving,
                                               f.cuda_graphs ? ", CUDA graph replays" : ""));
  if (!f.pytorch && c.launches == 0 && !f.gpu_records) return set(RunKind::Unknown, "no PyTorch ops and no GPU work");
  if (c.grad_collectives > 0)
    return set(RunKind::Training, fmt::format("{} gradient all-reduces on the host (the trace holds no backward ops)",
                                              c.grad_collectives));
  if (c.profiler_steps >= 2 || c.last_step_number >= 2 || c.loader >= 2 || f.cuda_graphs)
    return set(RunKind::Inference, fmt::format("{} profiler step(s) of a loop (up to #{}) without backward or optimizer",
                                               c.profiler_steps, c.last_step_number));
  set(RunKind::OneShot, "no backward, no optimizer and no repeated step: a single pass");
}

// ---- trust -------------------------------------------------------------------------------------

// Shares of launches (or GPU records) without their partner above which figures built on the
// pairing are unreliable: a few are lost at the edges of any capture.
constexpr double kLostShare = 0.2;

void add_warning(int rank, RankFacts& f, TrustCode code, TrustSeverity sev, std::string text, std::string advice,
                 std::map<std::string, double> figures) {
  f.trust.warnings.push_back({code, sev, rank, std::move(text), std::move(advice), std::move(figures)});
}

// Why a trace with no GPU activity at all was still a GPU job, or "" when nothing says so (the
// inventory's evidence: device properties, GPU library or runtime names, NCCL collectives).
std::string gpu_job_evidence(const RankFacts& f) {
  if (f.gpu_records || f.launch_calls > 0) return "";
  return f.inventory.device_evidence;
}

// The preconditions on the inventory that every claim rests on (kClaimPreconditions): a file of
// several ranks, a filtered export, a capture of start-up alone.
void inventory_warnings(const RankTrace& t, RankFacts& f) {
  const InputInventory& inv = f.inventory;
  const Recorder rec = inv.recorder;
  if (inv.ranks_in_file > 1)
    add_warning(t.rank, f, TrustCode::SeveralRanksInFile, TrustSeverity::Blocks,
                fmt::format("the file holds {} ranks ({}): read as one rank, their GPUs' busy time would be unioned "
                            "and no rank compared with another",
                            inv.ranks_in_file, inv.ranks_evidence),
                recording_advice(rec, "ranks"), {{"ranks_in_file", inv.ranks_in_file}});
  if (inv.gpu_side() && !inv.host_side())
    add_warning(t.rank, f, TrustCode::NoHostActivity, TrustSeverity::Blocks,
                "the input holds GPU records but no host op, annotation or runtime call (a filtered or GPU-only "
                "export): a bound compares the host's time with the GPU's, and one side is missing",
                recording_advice(rec, "host"), {});
  if (inv.has(Activity::CommKernels) && !inv.has(Activity::ComputeKernels))
    add_warning(t.rank, f, TrustCode::FilteredExport, TrustSeverity::Blocks,
                fmt::format("the input holds {} communication kernels and no compute kernel: an export cut down to "
                            "communication, so how much of it compute hides cannot be told",
                            inv.count(Activity::CommKernels)),
                recording_advice(rec, "gpu"), {{"comm_kernels", static_cast<double>(inv.count(Activity::CommKernels))}});
  if (inv.startup_only)
    add_warning(t.rank, f, TrustCode::StartupOnly, TrustSeverity::Blocks,
                "the input holds only the program's start-up: " + inv.startup_evidence +
                    "; one-time costs say nothing of the steady step",
                recording_advice(rec, "warm"), {{"window_ns", static_cast<double>(inv.window_ns)}});
}

void record_warnings(const RankTrace& t, RankFacts& f) {
  const double launches = static_cast<double>(f.launch_calls);
  if (f.launch_calls > 0 && !f.gpu_records)
    add_warning(t.rank, f, TrustCode::IncompleteGpuRecords, TrustSeverity::Blocks,
                fmt::format("{} kernel launches and async copies on the host but no GPU records at all: the "
                            "profiler's GPU activity was not recorded (ProfilerActivity.CUDA not asked for) or was lost "
                            "(CUPTI buffers dropped, or the profiler stopped before they were flushed); the GPU side "
                            "of this trace is unknown",
                            f.launch_calls),
                recording_advice(f.inventory.recorder, "gpu"),
                {{"launches", launches}, {"gpu_records", 0}});
  else if (const std::string gpu_job = gpu_job_evidence(f); !gpu_job.empty())
    add_warning(t.rank, f, TrustCode::IncompleteGpuRecords, TrustSeverity::Blocks,
                fmt::format("the job ran on a GPU ({}) but the trace holds no GPU records and no launches: its "
                            "GPU side was not recorded or was cut out, and host op times are only dispatch times",
                            gpu_job),
                recording_advice(f.inventory.recorder, "gpu"),
                {{"launches", 0}, {"gpu_records", 0}});
  else if (f.launch_calls >= 10 && static_cast<double>(f.launches_without_gpu) > kLostShare * launches)
    add_warning(t.rank, f, TrustCode::IncompleteGpuRecords, TrustSeverity::Limits,
                fmt::format("{} of {} launches have no GPU record: part of the GPU activity was lost",
                            f.launches_without_gpu, f.launch_calls),
                "record a shorter window, or raise the CUPTI activity buffer size",
                {{"launches", launches}, {"launches_without_gpu", static_cast<double>(f.launches_without_gpu)}});
  if (const ns_t waited = syncs_waiting_on_nothing(t, f);
      static_cast<double>(waited) >= 0.25 * static_cast<double>(std::max<ns_t>(t.last_end() - t.first_ts(), 1)))
    add_warning(t.rank, f, TrustCode::UntracedGpuWork, TrustSeverity::Blocks,
                fmt::format("the host waited {:.1f} ms in device syncs while the traced GPU did nothing: it waited "
                            "on work the trace does not hold{}",
                            static_cast<double>(waited) / 1e6,
                            f.graph_launches ? " (the run replays CUDA graphs, whose kernels this profiler may not record)"
                                             : " (another stream, process or untraced graph)"),
                "record with a profiler that traces graph kernels, or with CUDA graphs off",
                {{"waited_ns", static_cast<double>(waited)}});
  // Older CUPTI versions record no kernels of a replayed CUDA graph: the GPU looks idle while it
  // runs the graph, and a sync waiting on it looks like a stall.
  if (f.graph_launches > 0 && f.gpu_records && 2 * f.graph_launches_without_gpu > f.graph_launches)
    add_warning(t.rank, f, TrustCode::UntracedGraphReplays, TrustSeverity::Blocks,
                fmt::format("{} of {} CUDA graph replays have no GPU record: the graphs' kernels are missing from "
                            "the GPU timeline, so idle time and syncs cannot be judged",
                            f.graph_launches_without_gpu, f.graph_launches),
                "record with a PyTorch/CUPTI version that traces graph kernels (CUDA 12.3+ with "
                "torch.profiler), or profile with CUDA graphs off to see the per-kernel timeline",
                {{"graph_launches", static_cast<double>(f.graph_launches)},
                 {"graph_launches_without_gpu", static_cast<double>(f.graph_launches_without_gpu)}});
  if (f.gpu_without_launch >= 10)
    add_warning(t.rank, f, TrustCode::OrphanGpuRecords, TrustSeverity::Info,
                fmt::format("{} GPU records carry a correlation id no host call has: their launching stage "
                            "is unknown",
                            f.gpu_without_launch),
                "", {{"gpu_records_without_launch", static_cast<double>(f.gpu_without_launch)}});
  if (!f.pytorch && f.launch_calls == 0 && !f.gpu_records && t.events.size() > 0)
    add_warning(t.rank, f, TrustCode::NoModelWork, TrustSeverity::Blocks,
                "no PyTorch ops, no kernel launches and no GPU records: this process ran Python only (a serving "
                "frontend, a launcher, an idle worker); nothing in it for a training or GPU lever to act on",
                "profile the process that runs the model (the engine's worker, the training rank)", {});
  inventory_warnings(t, f);
  if (t.truncated)
    add_warning(t.rank, f, TrustCode::Truncated, TrustSeverity::Limits,
                fmt::format("the trace file is cut off ({} bytes after the last complete event): the last step "
                            "may be incomplete",
                            t.bytes_lost),
                "let the job finish writing the trace", {{"bytes_lost", static_cast<double>(t.bytes_lost)}});
  if (!f.startup.empty()) {
    ns_t total = 0;
    for (const auto& s : f.startup) total += s.end - s.start;
    const auto& first = f.startup.front();
    add_warning(t.rank, f, TrustCode::ColdStart, TrustSeverity::Limits,
                fmt::format("{} one-time start-up call{} ({:.1f} ms in all; the longest, {}, took {:.1f} ms where "
                            "its other calls take {:.1f} us): lazy module loading, library handles or autotuning, "
                            "not steady-state cost; left out of the steady-state partition",
                            f.startup.size(), f.startup.size() == 1 ? "" : "s", static_cast<double>(total) / 1e6,
                            t.name_of(first.event), static_cast<double>(first.end - first.start) / 1e6,
                            static_cast<double>(first.peer_median_ns) / 1e3),
                recording_advice(f.inventory.recorder, "warm"),
                {{"startup_ns", static_cast<double>(total)}, {"calls", static_cast<double>(f.startup.size())}});
  }
}

}  // namespace

RankFacts compute_facts(const RankTrace& t) {
  RankFacts f;
  f.names = name_facts(t);
  gemm_types_from_ops(t, f.names);
  std::vector<TrackCounts> counts;
  for (const auto& tr : t.host_tracks) counts.push_back(count_track(t, tr, f.names));
  f.main_track = find_main_track(t, counts);
  bool explicit_forward = false;
  for (const auto& c : counts) explicit_forward = explicit_forward || c.forward > 0;
  bool any_backward = false;
  for (const auto& c : counts) any_backward = any_backward || c.backward > 0;
  f.event_stage.assign(t.events.size(), StageHint::None);
  f.event_parent.assign(t.events.size(), kNoParent);
  for (std::size_t k = 0; k < t.host_tracks.size(); ++k) {
    f.track_role.push_back(track_role(t, k, f.main_track, counts[k]));
    const bool main = static_cast<int>(k) == f.main_track;
    link_parents(t, t.host_tracks[k], f.event_parent);
    inherit_stages(t, t.host_tracks[k], f.names, main, any_backward && !explicit_forward, f.event_parent,
                   f.event_stage);
    device_syncs(t, t.host_tracks[k], f.names, f);
  }
  std::sort(f.device_syncs.begin(), f.device_syncs.end());
  std::sort(f.scalar_reads_without_wait.begin(), f.scalar_reads_without_wait.end());
  host_roles(t, f);
  facts_detail::gpu_stages(t, f.event_stage);
  comm_roles(t, explicit_forward, f);
  f.device = device_model(t);
  count_records(t, f);
  std::vector<std::pair<ns_t, ns_t>> syncs;
  for (auto i : f.device_syncs) syncs.emplace_back(t.events.ts[i], t.events.end(i));
  f.device_sync_busy = gpu_busy_within(t, syncs);
  f.startup = startup_outliers(t, f.names);
  classify_run(t, f);
  f.inventory = take_inventory(t, f);
  record_warnings(t, f);
  return f;
}


CommRole RankFacts::comm_role(std::uint32_t event) const {
  auto it = std::lower_bound(comm_roles.begin(), comm_roles.end(), std::make_pair(event, CommRole::GradientSync));
  return it != comm_roles.end() && it->first == event ? it->second : CommRole::GradientSync;
}

const TrustWarning* Trust::find(TrustCode code) const {
  for (const auto& w : warnings)
    if (w.code == code) return &w;
  return nullptr;
}

const TrustWarning* Trust::find(std::string_view code) const {
  const std::optional<TrustCode> c = find_trust_code(code);
  return c ? find(*c) : nullptr;
}

bool Trust::blocks() const {
  return std::any_of(warnings.begin(), warnings.end(), [](const auto& w) { return w.severity == TrustSeverity::Blocks; });
}

const char* trust_severity_name(TrustSeverity s) {
  switch (s) {
    case TrustSeverity::Info: return "info";
    case TrustSeverity::Limits: return "limits";
    case TrustSeverity::Blocks: return "blocks";
  }
  return "info";
}

const char* run_kind_name(RunKind k) {
  switch (k) {
    case RunKind::Training: return "training";
    case RunKind::Inference: return "inference";
    case RunKind::Benchmark: return "benchmark";
    case RunKind::OneShot: return "one-shot";
    case RunKind::Unknown: break;
  }
  return "unknown";
}

const char* thread_role_name(ThreadRole r) {
  switch (r) {
    case ThreadRole::Main: return "main";
    case ThreadRole::Autograd: return "autograd";
    case ThreadRole::Loader: return "loader";
    case ThreadRole::Other: return "other";
  }
  return "other";
}

}  // namespace stepscope
