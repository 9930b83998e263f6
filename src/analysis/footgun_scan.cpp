#include "stepscope/footgun_scan.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "stepscope/facts.hpp"
#include "stepscope/id_map.hpp"

namespace stepscope::footgun {
namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// What a host event sits inside, inherited from its enclosing events on the same thread.
struct Context {
  bool zero_grad = false;
  bool optimizer = false;
  bool backward = false;
  bool checkpoint = false;          // under an activation-checkpointing marker
  std::int64_t conv_op = -1;        // outermost aten convolution op
};

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

// Steady-state step holding `ts`, or -1 (warm-up steps and time outside steps excluded).
std::int64_t steady_step(const RankPartition& p, ns_t ts) {
  const auto& s = p.steps;
  auto it = std::upper_bound(s.begin(), s.end(), ts, [](ns_t v, const StepPartition& x) { return v < x.start; });
  // Windows extended by GPU tails can overlap: look back a little for one that holds ts.
  for (int back = 0; back < 3 && it != s.begin(); ++back) {
    --it;
    if (ts >= it->start && ts < it->end) return it->warmup ? -1 : static_cast<std::int64_t>(it - s.begin());
  }
  return -1;
}

// Any step (warm-up included) holding `ts`.
std::int64_t any_step(const RankPartition& p, ns_t ts) {
  const auto& s = p.steps;
  auto it = std::upper_bound(s.begin(), s.end(), ts, [](ns_t v, const StepPartition& x) { return v < x.start; });
  if (it == s.begin()) return -1;
  --it;
  return ts < it->end ? static_cast<std::int64_t>(it - s.begin()) : -1;
}

// The same two for a host event's time: by host span once the windows are GPU-side.
std::int64_t steady_host_step(const RankPartition& p, ns_t ts) {
  if (!p.host_runs_ahead) return steady_step(p, ts);
  const std::int64_t k = host_span_step(p.steps, ts);
  return k >= 0 && !p.steps[static_cast<std::size_t>(k)].warmup ? k : -1;
}

std::int64_t any_host_step(const RankPartition& p, ns_t ts) {
  return p.host_runs_ahead ? host_span_step(p.steps, ts) : any_step(p, ts);
}

void add(ByName& m, std::string_view name, ns_t dur) {
  auto& e = m[std::string(name)];
  ++e.count;
  e.time += dur;
}

// Everything the scan asks of a name, computed once per distinct name (traces repeat a few
// thousand names millions of times).
enum ScanFlag : std::uint32_t {
  kZeroGrad = 1u << 0,
  kOptimizerStage = 1u << 1,
  kBackwardStage = 1u << 2,
  kRecompute = 1u << 3,
  kConvOp = 1u << 4,
  kSynchronize = 1u << 5,
  kFind = 1u << 6,
  kCompiledRegion = 1u << 7,
  kCompile = 1u << 8,
  kLoader = 1u << 9,
  kOptimizerStep = 1u << 10,
  kFusedName = 1u << 11,
  kAnomalyOp = 1u << 12,
  kItem = 1u << 13,
  kIsnan = 1u << 14,
  kBmm = 1u << 15,
  kSoftmax = 1u << 16,
  kLayout = 1u << 17,
  kFill = 1u << 18,
  kFp32 = 1u << 19,
  kFusedKernel = 1u << 20,
  kNanCheck = 1u << 21,
  kDeviceAlloc = 1u << 22,
  kForwardOnly = 1u << 23,
  kClassShift = 24,  // bits 24..28: KernelClass
  kKnown = 1u << 31,
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

KernelClass class_of(std::uint32_t f) { return static_cast<KernelClass>((f >> kClassShift) & 0x1f); }

Context child(const Context& parent, std::uint32_t f, std::uint32_t i) {
  Context c = parent;
  if (f & kZeroGrad) c.zero_grad = true;
  if (f & kOptimizerStage) c.optimizer = true;
  if (f & kBackwardStage) c.backward = true;
  if ((f & kRecompute) || ((f & kForwardOnly) && parent.backward)) c.checkpoint = true;
  if (c.conv_op < 0 && (f & kConvOp)) c.conv_op = i;
  return c;
}

// The start of the first GPU work (kernel, copy or memset) at or after a time, on any stream,
// for times asked in increasing order: one cursor per stream, so a scan of n records answers
// any number of questions in O(n + questions x streams), with nothing allocated per record.
//   streams {kernel@5, annotation@7, kernel@9}, {memset@8}: at_or_after(6) -> 8, then (9) -> 9
class NextGpuWork {
 public:
  explicit NextGpuWork(const RankTrace& t) : t_(t), at_(t.gpu_tracks.size(), 0) {}

  std::optional<ns_t> at_or_after(ns_t ts) {
    std::optional<ns_t> first;
    for (std::size_t k = 0; k < at_.size(); ++k) {
      const std::vector<std::uint32_t>& events = t_.gpu_tracks[k].events;
      std::size_t& i = at_[k];
      while (i < events.size() && (t_.events.ts[events[i]] < ts || !is_work(t_.events.kind[events[i]]))) ++i;
      if (i < events.size()) first = std::min(first.value_or(t_.events.ts[events[i]]), t_.events.ts[events[i]]);
    }
    return first;
  }

 private:
  static bool is_work(Kind k) { return k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset; }

  const RankTrace& t_;
  std::vector<std::size_t> at_;
};

class Scanner {
 public:
  Scanner(const RankTrace& t, const RankFacts& facts, const RankPartition& p)
      : t_(t), facts_(facts), p_(p), flags_(t.strings.size(), 0), launch_ctx_(t.correlations) {
    s_.rank = t.rank;
    s_.gpu = p.gpu;
    s_.steady_steps = p.steady_steps;
    s_.step_ns = p.steady_mean_ns;
  }

  RankScan run() {
    for (const auto& track : t_.host_tracks) host_track(track);
    launch_ctx_.seal();
    finish_compile();
    for (const auto& track : t_.gpu_tracks) gpu_track(track);
    finish_reads();
    finish_ddp();
    for (auto op : syncing_convs_)
      if (auto it = conv_index_.find(op); it != conv_index_.end()) s_.convs[it->second].synchronises = true;
    finish_tuning_calls();
    return std::move(s_);
  }

 private:
  void host_track(const Track& track) {
    struct Open {
      ns_t end;
      Context ctx;
    };
    std::vector<Open> stack;
    for (auto i : track.events) {
      const ns_t ts = t_.events.ts[i];
      while (!stack.empty() && stack.back().end <= ts) stack.pop_back();
      const std::uint32_t f = flags(i);
      const Context parent = stack.empty() ? Context{} : stack.back().ctx;
      const Context ctx = child(parent, f, i);
      host_event(i, f, parent, ctx);
      if (t_.events.dur[i] > 0) stack.push_back({t_.events.end(i), ctx});
    }
  }

  void host_event(std::uint32_t i, std::uint32_t f, const Context& parent, const Context& ctx) {
    const Kind k = t_.events.kind[i];
    const ns_t ts = t_.events.ts[i], dur = t_.events.dur[i];
    if (k == Kind::Runtime || k == Kind::Driver) {
      // Only the call a GPU record's correlation names as its launch is ever looked up.
      const std::int64_t corr = t_.events.correlation[i];
      if (corr != kNone && t_.correlations.launch(corr) == i) launch_ctx_.set(corr, ctx);
      if (ctx.conv_op >= 0 && (f & kSynchronize)) syncing_convs_.push_back(ctx.conv_op);
    }
    if (f & kFind) add_if_steady(s_.autotune_calls, t_.name_of(i), ts, dur);
    if (f & kDeviceAlloc) device_alloc(t_.name_of(i), ts, dur);
    if (f & kCompiledRegion) {
      const auto step = any_host_step(p_, ts);
      if (step >= 0) compiled_.push_back(step);
    }
    if (f & kCompile) compile_events_.push_back(i);
    if (f & kLoader) loader_starts_.push_back(ts);
    if (k != Kind::CpuOp && k != Kind::UserAnnotation) return;
    const std::int64_t step = steady_host_step(p_, ts);
    if (step < 0) return;
    const std::string_view n = t_.name_of(i);
    if (f & kOptimizerStep) s_.opt_host_time += dur;
    if (ctx.zero_grad && !parent.zero_grad) s_.zero_grad_host_time += dur;
    if (ctx.optimizer) {
      if (f & kFusedName) s_.opt_fused = true;
      if (k == Kind::CpuOp) add(s_.opt_ops, n, dur);
    }
    if (f & kBmm) add(s_.score_ops, n, dur);
    if ((f & kItem) && !ctx.backward) {
      ++s_.items;
      s_.item_host_time += dur;
      item_ends_.emplace_back(ts + dur, dur);
    }
    if (ctx.backward && (f & kAnomalyOp) && !ctx.optimizer) {
      add(s_.anomaly_ops, n, dur);
      if (f & kItem) {
        ++s_.anomaly_items;
        s_.anomaly_item_time += dur;
        anomaly_item_ends_.emplace_back(ts + dur, dur);
      }
      if (f & kIsnan) ++s_.anomaly_isnan;
    }
  }

  void device_alloc(std::string_view n, ns_t ts, ns_t dur) {
    const std::int64_t step = steady_host_step(p_, ts);
    if (step < 0) return;
    add(s_.device_allocs, n, dur);
    if (alloc_steps_.insert(step).second) ++s_.device_alloc_steps;
  }

  void add_if_steady(ByName& m, std::string_view n, ns_t ts, ns_t dur) {
    if (steady_host_step(p_, ts) >= 0) add(m, n, dur);
  }

  // Compilation after the steady state began: steps marked "compilation" (or holding compile
  // events) that come after a steady step.
  void finish_compile() {
    std::sort(compiled_.begin(), compiled_.end());
    compiled_.erase(std::unique(compiled_.begin(), compiled_.end()), compiled_.end());
    s_.compiled_steps = static_cast<std::int64_t>(compiled_.size());
    fallback();
    std::int64_t first_steady = -1;
    for (std::size_t k = 0; k < p_.steps.size(); ++k)
      if (!p_.steps[k].warmup) {
        first_steady = static_cast<std::int64_t>(k);
        break;
      }
    if (first_steady < 0) return;
    std::vector<bool> late(p_.steps.size(), false);
    ns_t covered_until = 0;  // outermost compile events only
    std::sort(compile_events_.begin(), compile_events_.end(),
              [&](std::uint32_t a, std::uint32_t b) { return t_.events.ts[a] < t_.events.ts[b]; });
    for (auto i : compile_events_) {
      const ns_t ts = t_.events.ts[i];
      const std::int64_t step = any_host_step(p_, ts);
      if (step <= first_steady || ts < covered_until) continue;
      covered_until = t_.events.end(i);
      late[static_cast<std::size_t>(step)] = true;
      add(s_.late_compile, t_.name_of(i), t_.events.dur[i]);
      s_.late_compile_time += t_.events.dur[i];
    }
    s_.late_compile_steps = std::count(late.begin(), late.end(), true);
  }

  // Compiled steady steps first, then eager steady steps only: the compiled code was given up.
  void fallback() {
    if (compiled_.empty()) return;
    const std::int64_t last_compiled = compiled_.back();
    double compiled = 0, eager = 0;
    for (std::size_t k = 0; k < p_.steps.size(); ++k) {
      const auto& st = p_.steps[k];
      if (st.warmup) continue;
      const bool has = std::binary_search(compiled_.begin(), compiled_.end(), static_cast<std::int64_t>(k));
      if (has) {
        ++s_.fallback_compiled;
        compiled += static_cast<double>(st.duration());
      } else if (static_cast<std::int64_t>(k) > last_compiled) {
        if (s_.first_eager_step < 0) s_.first_eager_step = st.number;
        ++s_.fallback_eager;
        eager += static_cast<double>(st.duration());
      } else {
        s_.fallback_compiled = s_.fallback_eager = 0;  // uncompiled steps between compiled ones
        return;
      }
    }
    if (s_.fallback_compiled) s_.compiled_mean_ns = compiled / static_cast<double>(s_.fallback_compiled);
    if (s_.fallback_eager) s_.eager_mean_ns = eager / static_cast<double>(s_.fallback_eager);
  }

  std::optional<Context> launch_of(std::uint32_t g) const {
    const std::int64_t corr = t_.events.correlation[g];
    if (corr == kNone) return std::nullopt;
    return launch_ctx_.find(corr);
  }

  ns_t launch_ts(std::uint32_t g) const {
    const std::uint32_t call = t_.correlations.launch(t_.events.correlation[g]);
    return call == CorrelationIndex::kNoEvent ? t_.events.ts[g] : t_.events.ts[call];
  }

  void gpu_track(const Track& track) {
    for (auto g : track.events) {
      const Kind k = t_.events.kind[g];
      if (k != Kind::Kernel && k != Kind::Memset && k != Kind::Memcpy) continue;
      const std::int64_t step = steady_step(p_, t_.events.ts[g]);
      if (step < 0) continue;
      const std::string_view n = t_.name_of(g);
      const ns_t dur = t_.events.dur[g];
      const std::optional<Context> ctx = launch_of(g);
      if (k == Kind::Kernel && !s_.mtia && starts(t_.str(t_.events.category[g]), "mtia")) s_.mtia = true;
      if (k == Kind::Memcpy) {
        if (t_.events.copy_kind[g] == CopyKind::HtoD && t_.events.host_mem[g] == HostMem::Pageable) {
          ++s_.pageable_h2d;
          s_.pageable_h2d_time += dur;
          if (auto b = t_.bytes_of(g); b > 0) s_.pageable_h2d_bytes += b;
        }
        continue;
      }
      const std::uint32_t f = flags(g);
      const KernelClass cls = class_of(f);
      if (ctx && ctx->zero_grad && (k == Kind::Memset || (f & kFill)))
        add(s_.zero_grad_gpu, k == Kind::Memset ? std::string_view("Memset (Device)") : n, dur);
      if (k == Kind::Memset) continue;
      if (cls == KernelClass::Communication) {
        communication(g, step, dur);
        continue;
      }
      if (!is_compute_class(cls)) continue;
      s_.compute_kernel_time += dur;
      if (cls == KernelClass::Gemm && (f & kFp32)) s_.gemm_simt_time += dur, add(s_.simt_gemms, n, dur);
      if (cls == KernelClass::GemmTensorCore) s_.gemm_tc_time += dur;
      if (cls == KernelClass::Attention) ++s_.attention_kernels;
      if (f & kSoftmax) add(s_.softmax_kernels, n, dur);
      if (cls == KernelClass::Convolution) convolution(g, n, dur, step, ctx ? &*ctx : nullptr);
      if ((cls == KernelClass::Convolution || (f & kLayout)) && half_type(g)) ++s_.half_conv_or_layout;
      if (f & kLayout) {
        if (ctx && ctx->conv_op >= 0) add(s_.layout_kernels, n, dur);
        else ++s_.layout_outside_conv;
      }
      if (ctx && ctx->optimizer) {
        ++s_.opt_kernels;
        s_.opt_kernel_time += dur;
        if (f & (kFusedName | kFusedKernel)) s_.opt_fused = true;
      }
      if (ctx && ctx->backward && ctx->checkpoint) {
        ++s_.recompute_kernels;
        s_.recompute_time += dur;
      }
      if (ctx && ctx->backward && !ctx->optimizer && (f & kNanCheck)) s_.anomaly_kernel_time += dur;
    }
  }

  // What a scalar read costs: while the host blocks, the GPU drains its queue; afterwards it idles
  // until the host queues work again. Without the read the host would have done that later work
  // while the GPU drained, so a read costs min(host blocked, GPU idle after it).
  void finish_reads() {
    if (anomaly_item_ends_.empty() && item_ends_.empty()) return;
    // Idle spent waiting for the next batch is the loader's, not the read's.
    std::sort(loader_starts_.begin(), loader_starts_.end());
    s_.anomaly_gpu_idle += read_costs(anomaly_item_ends_);
    s_.item_gpu_idle += read_costs(item_ends_);
  }

  // The summed cost of `reads` (end, host blocked), which it sorts: asked in time order, the
  // next GPU work after each read is found by cursors that only move forward.
  ns_t read_costs(std::vector<std::pair<ns_t, ns_t>>& reads) const {
    std::sort(reads.begin(), reads.end());
    NextGpuWork next(t_);
    ns_t sum = 0;
    for (const auto& [end, blocked] : reads) {
      const std::optional<ns_t> work = next.at_or_after(end);
      if (!work) continue;
      ns_t until = *work;
      auto l = std::lower_bound(loader_starts_.begin(), loader_starts_.end(), end);
      if (l != loader_starts_.end()) until = std::min(until, *l);
      sum += std::min(blocked, until - end);
    }
    return sum;
  }

  void convolution(std::uint32_t, std::string_view n, ns_t dur, std::int64_t step, const Context* ctx) {
    ++s_.conv_kernels;
    s_.conv_time += dur;
    add(s_.conv_names, n, dur);
    if (!ctx || ctx->conv_op < 0) return;
    auto [it, fresh] = conv_index_.try_emplace(ctx->conv_op, s_.convs.size());
    if (fresh) s_.convs.push_back({step, false, {}, 0, 0, 0, 0});
    ConvCall& c = s_.convs[it->second];
    ++c.conv_kernels;
    c.conv_time += dur;
    c.last_conv_time = dur;
    if (std::find(c.kernels.begin(), c.kernels.end(), n) == c.kernels.end()) c.kernels.emplace_back(n);
  }

  // A convolution call that times algorithms holds the GPU idle while cuDNN builds and compares
  // its candidates on the host: that idle time is most of what re-tuning costs a step.
  void finish_tuning_calls() {
    std::vector<std::size_t> tuning;
    std::vector<std::pair<ns_t, ns_t>> spans;
    for (const auto& [op, k] : conv_index_)
      if (s_.convs[k].tunes()) {
        tuning.push_back(k);
        spans.emplace_back(t_.events.ts[static_cast<std::size_t>(op)], t_.events.end(static_cast<std::size_t>(op)));
      }
    if (spans.empty()) return;
    const std::vector<ns_t> busy = gpu_busy_within(t_, spans);
    for (std::size_t i = 0; i < tuning.size(); ++i)
      s_.convs[tuning[i]].op_gpu_idle = spans[i].second - spans[i].first - busy[i];
  }

  void communication(std::uint32_t g, std::int64_t step, ns_t dur) {
    if (facts_.of_event(t_, g).collective != Collective::AllReduce) return;
    ++s_.allreduces;
    s_.allreduce_time += dur;
    auto& first = first_allreduce_launch_[step];
    const ns_t ts = launch_ts(g);
    first = first == 0 ? ts : std::min(first, ts);
  }

  // Backward's end per step: the last backward node on any host thread.
  void finish_ddp() {
    if (first_allreduce_launch_.empty()) return;
    std::map<std::int64_t, ns_t> backward_end;
    for (const auto& track : t_.host_tracks)
      for (auto i : track.events) {
        if (!(flags(i) & kBackwardStage)) continue;
        const std::int64_t step = steady_host_step(p_, t_.events.ts[i]);
        if (step < 0) continue;
        auto& e = backward_end[step];
        e = std::max(e, t_.events.end(i));
      }
    for (const auto& [step, first] : first_allreduce_launch_) {
      ++s_.allreduce_steps;
      auto it = backward_end.find(step);
      if (it != backward_end.end() && first >= it->second) ++s_.allreduce_after_backward_steps;
    }
  }

  // Layout kernels carry their element type in template arguments (__half, BFloat16).
  bool half_type(std::uint32_t g) const {
    const DataType d = facts_.of_event(t_, g).dtype;
    return d == DataType::Fp16 || d == DataType::Bf16;
  }

  std::uint32_t flags(std::uint32_t event) {
    const StrId id = t_.events.name[event];
    if (!(flags_[id] & kKnown)) flags_[id] = name_flags(facts_.of(id));
    return flags_[id];
  }

  const RankTrace& t_;
  const RankFacts& facts_;
  const RankPartition& p_;
  std::vector<std::uint32_t> flags_;
  RankScan s_;
  LaunchContexts launch_ctx_;  // by correlation: the context of its launch call
  std::unordered_map<std::int64_t, std::size_t> conv_index_;
  std::vector<std::int64_t> compiled_;
  std::vector<std::uint32_t> compile_events_;
  std::map<std::int64_t, ns_t> first_allreduce_launch_;
  std::vector<std::pair<ns_t, ns_t>> anomaly_item_ends_, item_ends_;  // (end, duration)
  std::vector<ns_t> loader_starts_;
  std::vector<std::int64_t> syncing_convs_;
  std::set<std::int64_t> alloc_steps_;  // steady steps with a device allocator call
};

}  // namespace

RankScan scan_rank(const RankTrace& t, const RankFacts& facts, const RankPartition& p) {
  return Scanner(t, facts, p).run();
}

}  // namespace stepscope::footgun
