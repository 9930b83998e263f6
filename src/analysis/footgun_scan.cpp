// The footgun detectors' walk over a rank's events (stepscope/footgun_detector.hpp): which host
// region launched each GPU activity (zero_grad, optimizer step, a backward node, a convolution
// op, recomputation under activation checkpointing), each event shown to the detectors that ask
// for it. It is part of each rank's analysis, so that the judgements read only the analysis
// result: a rank's summary carries the evidence, and a merge of summaries finds the same footguns
// as the direct run.
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>
#include <string_view>

#include "stepscope/analysis.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/footgun_detector.hpp"
#include "stepscope/id_map.hpp"
#include "stepscope/partition.hpp"

namespace stepscope::footgun {
namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Each launch call's context, by the correlation slot of its id: the four flags in a byte per
// slot, and the convolution op only for the launches inside one, numbered among them by a
// counting bitmap. A trace pays a byte per slot and 4 bytes per launch inside a convolution op
// (none in a transformer, about half the launches in a CNN), where a full context per slot took
// 8: at 1 GB, 3.5 MB against 9.2.
//   set(slot 4, Context{zero_grad, conv_op 17}) -> bits[4] = kStored | kZeroGrad; seal():
//   has_conv {4}, convs {17}; find(slot 4) -> Context{zero_grad, conv_op 17}
class LaunchContexts {
 public:
  explicit LaunchContexts(const CorrelationIndex& index) : index_(index), bits_(index.slot_count(), 0) {}

  // `corr` is a launch's id, which the index numbers.
  void set(std::int64_t corr, const Context& c) {
    const std::size_t slot = index_.slot(corr);
    bits_[slot] = static_cast<std::uint8_t>(kStored | (c.zero_grad ? kZeroGrad : 0) | (c.optimizer ? kOptimizer : 0) |
                                            (c.backward ? kBackward : 0) | (c.checkpoint ? kCheckpoint : 0));
    if (c.conv_op >= 0) pending_.emplace_back(static_cast<std::uint32_t>(slot), static_cast<std::uint32_t>(c.conv_op));
  }
  // Once every launch is set, before the first find(): the convolution ops in slot order.
  void seal() {
    std::sort(pending_.begin(), pending_.end());
    has_conv_.build(bits_.size(), [&](auto&& mark) {
      for (const auto& [slot, op] : pending_) mark(slot);
    });
    convs_.reserve(pending_.size());
    for (const auto& [slot, op] : pending_) convs_.push_back(op);
    std::vector<std::pair<std::uint32_t, std::uint32_t>>().swap(pending_);
  }

  std::optional<Context> find(std::int64_t corr) const {
    const std::size_t slot = index_.slot(corr);
    if (slot == CorrelationIndex::kNoSlot || !(bits_[slot] & kStored)) return std::nullopt;
    const std::uint8_t b = bits_[slot];
    Context c{(b & kZeroGrad) != 0, (b & kOptimizer) != 0, (b & kBackward) != 0, (b & kCheckpoint) != 0, -1};
    if (has_conv_.test(slot)) c.conv_op = convs_[has_conv_.rank(slot)];
    return c;
  }

 private:
  enum : std::uint8_t { kStored = 1, kZeroGrad = 2, kOptimizer = 4, kBackward = 8, kCheckpoint = 16 };
  const CorrelationIndex& index_;
  std::vector<std::uint8_t> bits_;  // per slot; 0: nothing stored
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pending_;  // (slot, conv op) until seal()
  RankBitmap has_conv_;             // the slots whose launch sits inside a convolution op
  std::vector<std::uint32_t> convs_;  // their ops, in slot order; event indexes are 32-bit
};

// The facts layer's answers in the scan's own bits (the scan keeps one word per name).
std::uint32_t name_flags(const NameFact& n) {
  std::uint32_t f = kKnown;
  auto set = [&](bool on, std::uint32_t bit) {
    if (on) f |= bit;
  };
  set(n.has(kNameZeroGrad), kZeroGrad);
  set(n.stage == StageHint::Optimizer, kOptimizerStage);
  set(n.stage == StageHint::Backward, kBackwardStage);
  set(n.has(kNameRecompute), kRecompute);
  set(n.has(kNameConvOp), kConvOp);
  set(n.has(kNameSynchronize), kSynchronize);
  set(n.has(kNameAutotune), kFind);
  set(n.has(kNameDeviceAlloc), kDeviceAlloc);
  set(n.has(kNameForwardOnlyOp), kForwardOnly);
  set(n.has(kNameCompiledRegion), kCompiledRegion);
  set(n.has(kNameCompile), kCompile);
  set(n.role == HostRole::Loader, kLoader);
  set(n.has(kNameOptimizerStep), kOptimizerStep);
  set(n.has(kNameFusedOptimizer), kFusedName);
  set(n.has(kNameAnomalyOp), kAnomalyOp);
  set(n.has(kNameItem), kItem);
  set(n.has(kNameIsnan), kIsnan);
  set(n.has(kNameBmm), kBmm);
  set(n.has(kNameSoftmax), kSoftmax);
  set(n.has(kNameLayout), kLayout);
  set(n.has(kNameFill), kFill);
  set(n.dtype == DataType::Fp32 && n.engine != Engine::TensorCore && !n.has(kNameGemv), kFp32);
  set(n.has(kNameFusedKernel), kFusedKernel);
  set(n.has(kNameNanCheck), kNanCheck);
  f |= static_cast<std::uint32_t>(n.cls) << kClassShift;
  return f;
}

Context child(const Context& parent, std::uint32_t f, std::uint32_t i) {
  Context c = parent;
  if (f & kZeroGrad) c.zero_grad = true;
  if (f & kOptimizerStage) c.optimizer = true;
  if (f & kBackwardStage) c.backward = true;
  if ((f & kRecompute) || ((f & kForwardOnly) && parent.backward)) c.checkpoint = true;
  if (c.conv_op < 0 && (f & kConvOp)) c.conv_op = i;
  return c;
}

// The context bits an Interest names: which detectors a host op or a GPU activity is shown to
// for where it runs, whatever its name.
std::uint8_t context_bits(const Context& c) {
  return static_cast<std::uint8_t>((c.zero_grad ? kInZeroGrad : 0) | (c.optimizer ? kInOptimizer : 0) |
                                   (c.backward ? kInBackward : 0) | (c.conv_op >= 0 ? kInConvolution : 0));
}

// The start of the first GPU work (kernel, copy or memset) at or after a time, on any stream,
// for times asked in increasing order: one cursor per stream, so a scan of n records answers
// any number of questions in O(n + questions x streams), with nothing allocated per record.
//   streams {kernel@5, annotation@7, kernel@9}, {memset@8}: at_or_after(6) -> 8, then (9) -> 9
class NextGpuWork {
 public:
  explicit NextGpuWork(const RankTrace& t) : t_(t), at_(t.gpu_tracks.size(), 0) {}

  std::optional<ns_t> at_or_after(ns_t ts) {
    const std::optional<std::uint32_t> e = event_at_or_after(ts);
    return e ? std::optional<ns_t>(t_.events.ts[*e]) : std::nullopt;
  }

  // The record itself (the earliest to start; of two at once, the first stream's).
  std::optional<std::uint32_t> event_at_or_after(ns_t ts) {
    std::optional<std::uint32_t> first;
    for (std::size_t k = 0; k < at_.size(); ++k) {
      const std::vector<std::uint32_t>& events = t_.gpu_tracks[k].events;
      std::size_t& i = at_[k];
      while (i < events.size() && (t_.events.ts[events[i]] < ts || !is_work(t_.events.kind[events[i]]))) ++i;
      if (i < events.size() && (!first || t_.events.ts[events[i]] < t_.events.ts[*first])) first = events[i];
    }
    return first;
  }

 private:
  static bool is_work(Kind k) { return k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset; }

  const RankTrace& t_;
  std::vector<std::size_t> at_;
};

// The latest end of GPU work (kernel, copy or memset) begun before a time, on any stream, for
// times asked in increasing order, by cursors as NextGpuWork's. Collective kernels do not count:
// they spend most of their time waiting for the other ranks, and the compute a read held back
// would have run beside them.
//   streams {kernel [1, 4)}, {copy [3, 9)}: busy_until(2) -> 4, then (5) -> 9
class LastGpuEnd {
 public:
  LastGpuEnd(const RankTrace& t, const RankFacts& f)
      : t_(t), f_(f), at_(t.gpu_tracks.size(), 0), end_(t.gpu_tracks.size(), kNever) {}

  ns_t busy_until(ns_t ts) {
    ns_t last = kNever;
    for (std::size_t k = 0; k < at_.size(); ++k) {
      const std::vector<std::uint32_t>& events = t_.gpu_tracks[k].events;
      for (std::size_t& i = at_[k]; i < events.size() && t_.events.ts[events[i]] < ts; ++i)
        if (busy(events[i])) end_[k] = std::max(end_[k], t_.events.end(events[i]));
      last = std::max(last, end_[k]);
    }
    return last;
  }

 private:
  static constexpr ns_t kNever = std::numeric_limits<ns_t>::min();
  bool busy(std::uint32_t e) const {
    const Kind k = t_.events.kind[e];
    if (k == Kind::Memcpy || k == Kind::Memset) return true;
    return k == Kind::Kernel && f_.of_event(t_, e).cls != KernelClass::Communication;
  }

  const RankTrace& t_;
  const RankFacts& f_;
  std::vector<std::size_t> at_;
  std::vector<ns_t> end_;
};

// Which detectors (a bit each) an event is shown to, by its name (per distinct name, once), its
// context and its kind.
class Dispatch {
 public:
  explicit Dispatch(const std::vector<Detector>& table) {
    for (std::size_t d = 0; d < table.size(); ++d) {
      const Interest& in = table[d].interest;
      const std::uint32_t bit = 1u << d;
      for (std::uint8_t c = 0; c < kContexts; ++c) {
        if (c & in.host_context) host_ctx_[c] |= bit;
        if (c & in.gpu_context) gpu_ctx_[c] |= bit;
      }
      if (in.copies) copies_ |= bit;
      interests_.push_back(in);
    }
  }

  std::uint32_t host_by_name(std::uint32_t flags) const { return by(flags, [](const Interest& in, std::uint32_t f) { return (f & in.host_flags) != 0; }); }
  std::uint32_t gpu_by_name(std::uint32_t flags) const {
    return by(flags, [](const Interest& in, std::uint32_t f) {
      return (f & in.gpu_flags) != 0 || (in.gpu_classes & (1u << static_cast<unsigned>(class_of(f)))) != 0;
    });
  }
  std::uint32_t host_ctx(std::uint8_t c) const { return host_ctx_[c]; }
  std::uint32_t gpu_ctx(std::uint8_t c) const { return gpu_ctx_[c]; }
  std::uint32_t copies() const { return copies_; }

 private:
  static constexpr std::uint8_t kContexts = 16;
  template <class F>
  std::uint32_t by(std::uint32_t flags, F wants) const {
    std::uint32_t out = 0;
    for (std::size_t d = 0; d < interests_.size(); ++d)
      if (wants(interests_[d], flags)) out |= 1u << d;
    return out;
  }
  std::vector<Interest> interests_;
  std::array<std::uint32_t, kContexts> host_ctx_{}, gpu_ctx_{};
  std::uint32_t copies_ = 0;
};

// Calls `f(d)` for each detector bit set in `mask`, lowest first.
template <class F>
void each_bit(std::uint32_t mask, F f) {
  while (mask) {
    f(static_cast<std::size_t>(std::countr_zero(mask)));
    mask &= mask - 1;
  }
}

class Walk {
 public:
  Walk(const RankTrace& t, const RankFacts& facts, const RankPartition& p)
      : scan_(t, facts, p, event_steps_of(t, facts, p, computed_steps_)), table_(detectors()), dispatch_(table_), names_(t.strings.size()),
        launch_ctx_(t.correlations) {
    out_.rank = t.rank;
    out_.gpu = p.gpu;
    out_.steady_steps = static_cast<std::int64_t>(p.steady_steps);
    out_.step_ns = p.steady_mean_ns;
    out_.make_evidence();
  }

  RankFootguns run() {
    for (const auto& track : scan_.t.host_tracks) host_track(track);
    launch_ctx_.seal();
    std::sort(scan_.loader_starts.begin(), scan_.loader_starts.end());
    for (const auto& track : scan_.t.gpu_tracks) gpu_track(track);
    for (auto& e : out_.evidence) e->finish(scan_);
    return std::move(out_);
  }

 private:
  // A distinct name's flags and the detectors that ask for it, on the host and on the GPU.
  struct NameMasks {
    std::uint32_t flags = 0, host = 0, gpu = 0;
  };

  const NameMasks& masks(std::uint32_t event) {
    NameMasks& m = names_[scan_.t.events.name[event]];
    if (!(m.flags & kKnown)) {
      m.flags = name_flags(scan_.facts.of(scan_.t.events.name[event]));
      m.host = dispatch_.host_by_name(m.flags);
      m.gpu = dispatch_.gpu_by_name(m.flags);
    }
    return m;
  }

  void host_track(const Track& track) {
    struct Open {
      ns_t end;
      Context ctx;
    };
    std::vector<Open> stack;
    const RankTrace& t = scan_.t;
    for (auto i : track.events) {
      const ns_t ts = t.events.ts[i];
      while (!stack.empty() && stack.back().end <= ts) stack.pop_back();
      const NameMasks& m = masks(i);
      const Context parent = stack.empty() ? Context{} : stack.back().ctx;
      const Context ctx = child(parent, m.flags, i);
      const Kind k = t.events.kind[i];
      if (k == Kind::Runtime || k == Kind::Driver) {
        // Only the call a GPU record's correlation names as its launch is ever looked up.
        const std::int64_t corr = t.events.correlation[i];
        if (corr != kNone && t.correlations.launch(corr) == i) launch_ctx_.set(corr, ctx);
      }
      if (m.flags & kLoader) scan_.loader_starts.push_back(ts);
      std::uint32_t to = m.host;
      if (k == Kind::CpuOp || k == Kind::UserAnnotation) to |= dispatch_.host_ctx(context_bits(ctx));
      if (to) {
        const HostEvent e{i, m.flags, k, ts, t.events.dur[i], parent, ctx, scan_};
        each_bit(to, [&](std::size_t d) { out_.evidence[d]->host(e); });
      }
      if (t.events.dur[i] > 0) stack.push_back({t.events.end(i), ctx});
    }
  }

  void gpu_track(const Track& track) {
    const RankTrace& t = scan_.t;
    for (auto g : track.events) {
      const Kind k = t.events.kind[g];
      if (k != Kind::Kernel && k != Kind::Memset && k != Kind::Memcpy) continue;
      const std::int64_t step = scan_.steady_step(g);
      if (step < 0) continue;
      if (k == Kind::Kernel && !out_.mtia && starts(t.str(t.events.category[g]), "mtia")) out_.mtia = true;
      const NameMasks& m = masks(g);
      const std::int64_t corr = t.events.correlation[g];
      const std::optional<Context> ctx = corr == kNone ? std::nullopt : launch_ctx_.find(corr);
      std::uint32_t to = k == Kind::Memcpy ? dispatch_.copies() : m.gpu;
      if (ctx) to |= dispatch_.gpu_ctx(context_bits(*ctx));
      if (!to) continue;
      const GpuEvent e{g, m.flags, class_of(m.flags), k, step, t.events.dur[g], ctx ? &*ctx : nullptr, scan_};
      each_bit(to, [&](std::size_t d) { out_.evidence[d]->gpu(e); });
    }
  }

  EventSteps computed_steps_;  // only for facts without the step phase (event_steps_of)
  Scan scan_;
  const std::vector<Detector>& table_;
  Dispatch dispatch_;
  std::vector<NameMasks> names_;
  LaunchContexts launch_ctx_;  // by correlation: the context of its launch call
  RankFootguns out_;
};

}  // namespace

void add(ByName& m, std::string_view name, ns_t dur) {
  auto& e = m[std::string(name)];
  ++e.count;
  e.time += dur;
}

NameTime total(const ByName& m) {
  NameTime t;
  for (const auto& [n, v] : m) t.count += v.count, t.time += v.time;
  return t;
}

std::int64_t HostEvent::steady_step() const { return scan.steady_step(i); }

std::string_view HostEvent::name() const { return scan.t.name_of(i); }
std::string_view GpuEvent::name() const { return scan.t.name_of(g); }

ns_t Scan::launch_ts(std::uint32_t g) const {
  const std::uint32_t call = t.correlations.launch(t.events.correlation[g]);
  return call == CorrelationIndex::kNoEvent ? t.events.ts[g] : t.events.ts[call];
}

// What a scalar read costs: while the host blocks, the GPU drains its queue; afterwards it idles
// until the host queues work again. Without the read the host would have done that later work
// while the GPU drained, so a read costs min(host blocked, GPU idle after it). Idle spent waiting
// for the next batch is the loader's, not the read's. Asked in time order, the next GPU work
// after each read is found by cursors that only move forward.
ns_t Scan::read_costs(std::vector<std::pair<ns_t, ns_t>>& reads) const {
  std::sort(reads.begin(), reads.end());
  NextGpuWork next(t);
  ns_t sum = 0;
  for (const auto& [end, blocked] : reads) {
    const std::optional<ns_t> work = next.at_or_after(end);
    if (!work) continue;
    ns_t until = *work;
    auto l = std::lower_bound(loader_starts.begin(), loader_starts.end(), end);
    if (l != loader_starts.end()) until = std::min(until, *l);
    sum += std::min(blocked, until - end);
  }
  return sum;
}

// Whether GPU record g's launch call is in the trace and began at or after `ts`. A record whose
// launch is not in the trace was queued before the recording began (a GPU far behind its host).
bool Scan::launched_after(std::uint32_t g, ns_t ts) const {
  const std::uint32_t call = t.correlations.launch(t.events.correlation[g]);
  return call != CorrelationIndex::kNoEvent && t.events.ts[call] >= ts;
}

// The GPU idle a scalar read makes: from the read's start, or the end of the GPU work it waited
// for when that is later, until the GPU's next work. Without the read (and the code that used its
// value, which ran while the GPU idled) the host's next launches would have queued ahead of the
// GPU. A read that found the GPU done costs its own call (its copy); one that waited costs the
// time after. A read inside which no GPU work ended waited for nothing: a CPU tensor's value (its
// host call a microsecond), or a value read while the GPU ran on past it.
// Only work launched after the read can have waited for it: a GPU behind a host that runs ahead
// (reads of CPU scalars, an optimizer's step count) idles for its own reasons, its next work
// queued long before (or before the recording began). Idle spent waiting for the next batch is
// the loader's, not the read's. The sum can never exceed the GPU's idle time: each instant of idle is counted once, by the read
// that began it.
// Example: kernel [0, 50), .item() [10, 55), 15 us of Python, next kernel at 80 -> 80 - 50 = 30.
ns_t Scan::read_idle(std::vector<std::pair<ns_t, ns_t>>& reads) const {
  std::sort(reads.begin(), reads.end());
  NextGpuWork next(t);
  LastGpuEnd last(t, facts);
  ns_t sum = 0, counted_to = std::numeric_limits<ns_t>::min();
  for (const auto& [end, start] : reads) {
    const ns_t drained = last.busy_until(end);
    if (drained < start || drained > end) continue;  // no GPU work ended inside the read: it waited for none
    const std::optional<std::uint32_t> work = next.event_at_or_after(end);
    if (!work || !launched_after(*work, end)) continue;
    ns_t until = t.events.ts[*work];
    auto l = std::lower_bound(loader_starts.begin(), loader_starts.end(), end);
    if (l != loader_starts.end()) until = std::min(until, *l);
    const ns_t from = std::max({start, drained, counted_to});
    if (until > from) sum += until - from, counted_to = until;
  }
  return sum;
}

RankFootguns::RankFootguns(const RankFootguns& o)
    : rank(o.rank), gpu(o.gpu), mtia(o.mtia), steady_steps(o.steady_steps), step_ns(o.step_ns) {
  for (const auto& e : o.evidence) evidence.push_back(e->clone());
}

RankFootguns& RankFootguns::operator=(const RankFootguns& o) {
  if (this != &o) *this = RankFootguns(o);
  return *this;
}

void RankFootguns::make_evidence() {
  evidence.clear();
  for (const Detector& d : detectors()) evidence.push_back(d.make());
}

RankFootguns scan_footguns(const RankTrace& t, const RankFacts& facts, const RankPartition& p) {
  return Walk(t, facts, p).run();
}

std::string ms(double ns) {
  if (ns >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.1f} us", ns / 1e3);
}

std::string pct(double share) { return fmt::format("{:.1f}%", share * 100); }

std::string shorten(const std::string& name, std::size_t max) {
  return name.size() <= max ? name : name.substr(0, max - 3) + "...";
}

bool Judge::worth(double gain) const { return gain >= kMinShare * step(); }

bool Judge::found(FootgunId id) const {
  return std::any_of(before->begin(), before->end(), [id](const FootgunJudgement& j) { return j.id == id; });
}

std::string Judge::top_names(const ByName& m, std::size_t n) const {
  std::vector<std::pair<std::string, NameTime>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.time > b.second.time; });
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < n; ++i)
    out += fmt::format("{}'{}' ({:.1f} per step, {} per step)", i ? "; " : "", shorten(v[i].first),
                       per_step(static_cast<double>(v[i].second.count)),
                       ms(per_step(static_cast<double>(v[i].second.time))));
  if (v.size() > n) out += fmt::format("; and {} more", v.size() - n);
  return out;
}

std::vector<FootgunJudgement> judge_footguns(const AnalysisResult& r, const FootgunJob& job) {
  std::vector<FootgunJudgement> out;
  if (job.step_ns <= 0) return out;
  Judge j{r, job, {}, 0, 0, &out};
  for (const RankAnalysis& rank : r.ranks) {
    if (!rank.partition.steady_steps) continue;
    j.ranks.push_back(&rank.footgun_scan);
    j.steady += static_cast<double>(rank.partition.steady_steps);
  }
  if (j.ranks.empty()) return out;
  const std::vector<Detector>& table = detectors();
  for (j.detector = 0; j.detector < table.size(); ++j.detector) {
    if (table[j.detector].gpu_only && !job.gpu) continue;
    for (const RankFootguns* rank : j.ranks)
      if (rank->evidence.size() != table.size()) return out;
    if (auto found = table[j.detector].judge(j)) out.push_back(std::move(*found));
  }
  return out;
}

}  // namespace stepscope::footgun
