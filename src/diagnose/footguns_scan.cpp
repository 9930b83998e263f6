#include "diagnose/footguns_scan.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>

#include "analysis/partition_rules.hpp"
#include "stepscope/kernel_class.hpp"

namespace stepscope::footgun_detail {
namespace {

using partition_detail::is_compilation;
using partition_detail::is_recompute;
using partition_detail::kBackward;
using partition_detail::kOptimizer;
using partition_detail::stage_by_name;

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

std::string lower(std::string_view s) {
  std::string l(s);
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l;
}

// What a host event sits inside, inherited from its enclosing events on the same thread.
struct Context {
  bool zero_grad = false;
  bool optimizer = false;
  bool backward = false;
  bool checkpoint = false;          // under an activation-checkpointing marker
  std::int64_t conv_op = -1;        // outermost aten convolution op
};

bool is_conv_op(std::string_view n) {
  return starts(n, "aten::") && (has(n, "conv") || has(n, "cudnn_convolution") || has(n, "miopen_convolution"));
}

Context child(const Context& parent, std::string_view n, std::uint32_t i) {
  Context c = parent;
  if (has(n, "zero_grad")) c.zero_grad = true;
  const int stage = stage_by_name(n);
  if (stage == kOptimizer) c.optimizer = true;
  if (stage == kBackward) c.backward = true;
  if (is_recompute(n)) c.checkpoint = true;
  if (c.conv_op < 0 && is_conv_op(n)) c.conv_op = i;
  return c;
}

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

void add(ByName& m, std::string_view name, ns_t dur) {
  auto& e = m[std::string(name)];
  ++e.count;
  e.time += dur;
}

bool is_softmax_kernel(std::string_view n) {
  const std::string l = lower(n);
  return has(l, "softmax") && !has(l, "logsoftmax") && !has(l, "log_softmax");
}

bool is_layout_kernel(std::string_view n) {
  const std::string l = lower(n);
  return has(l, "nchwtonhwc") || has(l, "nhwctonchw");
}

bool is_fused_optimizer_name(std::string_view n) {
  const std::string l = lower(n);
  return has(l, "multi_tensor_apply") || has(l, "_foreach_") || has(l, "_fused_") || has(l, "fusedadam") ||
         has(l, "fused_adam") || has(l, "fusedsgd");
}

// A GEMM in fp32 arithmetic: SIMT names carry no lower-precision tag. GEMVs are bandwidth-bound
// whatever the precision, so TF32 would not speed them up.
bool is_fp32_gemm(std::string_view n) {
  const std::string l = lower(n);
  for (const char* tag : {"bf16", "bfloat16", "f16", "fp16", "half", "h884", "hgemm", "e4m3", "e5m2", "fp8",
                          "int8", "i8", "s8", "gemv", "tf32"})
    if (has(l, tag)) return false;
  return true;
}

bool is_anomaly_op(std::string_view n) {
  return n == "aten::isnan" || n == "aten::any" || n == "aten::item" || n == "aten::_local_scalar_dense";
}

// Compilation events (torch.compile): dynamo's timed phases and the inductor entry points.
bool is_compile_event(std::string_view n) { return is_compilation(n) || has(n, "(dynamo_timed)"); }

class Scanner {
 public:
  Scanner(const RankTrace& t, const RankPartition& p) : t_(t), p_(p) {
    s_.rank = p.rank;
    s_.gpu = p.gpu;
    s_.steady_steps = p.steady_steps;
    s_.step_ns = p.steady_mean_ns;
  }

  RankScan run() {
    for (const auto& track : t_.host_tracks) host_track(track);
    finish_compile();
    for (const auto& track : t_.gpu_tracks) gpu_track(track);
    finish_reads();
    finish_ddp();
    for (auto op : syncing_convs_)
      if (auto it = conv_index_.find(op); it != conv_index_.end()) s_.convs[it->second].synchronises = true;
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
      const std::string_view n = t_.name_of(i);
      const Context parent = stack.empty() ? Context{} : stack.back().ctx;
      const Context ctx = child(parent, n, i);
      host_event(i, n, parent, ctx);
      if (t_.events.dur[i] > 0) stack.push_back({t_.events.end(i), ctx});
    }
  }

  void host_event(std::uint32_t i, std::string_view n, const Context& parent, const Context& ctx) {
    const Kind k = t_.events.kind[i];
    const ns_t ts = t_.events.ts[i], dur = t_.events.dur[i];
    if (k == Kind::Runtime || k == Kind::Driver) {
      launch_ctx_[i] = ctx;
      if (ctx.conv_op >= 0 && has(n, "Synchronize")) syncing_convs_.push_back(ctx.conv_op);
    }
    if (has(n, "cudnnFind") || has(n, "miopenFind")) add_if_steady(s_.autotune_calls, n, ts, dur);
    if (starts(n, "Torch-Compiled Region") || n == "CompiledFunction" || has(n, "CompiledFxGraph")) {
      const auto step = any_step(p_, ts);
      if (step >= 0) compiled_.push_back(step);
    }
    if (is_compile_event(n)) compile_events_.push_back(i);
    if (partition_detail::role_by_name(n) == partition_detail::kLoader) loader_starts_.push_back(ts);
    if (k != Kind::CpuOp && k != Kind::UserAnnotation) return;
    const std::int64_t step = steady_step(p_, ts);
    if (step < 0) return;
    if (starts(n, "Optimizer.step#")) s_.opt_host_time += dur;
    if (ctx.zero_grad && !parent.zero_grad) s_.zero_grad_host_time += dur;
    if (ctx.optimizer) {
      if (is_fused_optimizer_name(n)) s_.opt_fused = true;
      if (k == Kind::CpuOp) add(s_.opt_ops, n, dur);
    }
    if (n == "aten::bmm" || n == "aten::baddbmm") add(s_.score_ops, n, dur);
    if (n == "aten::item" && !ctx.backward) {
      ++s_.items;
      s_.item_host_time += dur;
      item_ends_.emplace_back(ts + dur, dur);
    }
    if (ctx.backward && is_anomaly_op(n) && !ctx.optimizer) {
      add(s_.anomaly_ops, n, dur);
      if (n == "aten::item") {
        ++s_.anomaly_items;
        s_.anomaly_item_time += dur;
        anomaly_item_ends_.emplace_back(ts + dur, dur);
      }
      if (n == "aten::isnan") ++s_.anomaly_isnan;
    }
  }

  void add_if_steady(ByName& m, std::string_view n, ns_t ts, ns_t dur) {
    if (steady_step(p_, ts) >= 0) add(m, n, dur);
  }

  // Compilation after the steady state began: steps marked "compilation" (or holding compile
  // events) that come after a steady step.
  void finish_compile() {
    std::sort(compiled_.begin(), compiled_.end());
    compiled_.erase(std::unique(compiled_.begin(), compiled_.end()), compiled_.end());
    s_.compiled_steps = static_cast<std::int64_t>(compiled_.size());
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
      const std::int64_t step = any_step(p_, ts);
      if (step <= first_steady || ts < covered_until) continue;
      covered_until = t_.events.end(i);
      late[static_cast<std::size_t>(step)] = true;
      add(s_.late_compile, t_.name_of(i), t_.events.dur[i]);
      s_.late_compile_time += t_.events.dur[i];
    }
    s_.late_compile_steps = std::count(late.begin(), late.end(), true);
  }

  const Context* launch_of(std::uint32_t g) const {
    const std::int64_t corr = t_.events.correlation[g];
    if (corr == kNone) return nullptr;
    auto it = t_.launch_by_correlation.find(corr);
    if (it == t_.launch_by_correlation.end()) return nullptr;
    auto c = launch_ctx_.find(it->second);
    return c == launch_ctx_.end() ? nullptr : &c->second;
  }

  ns_t launch_ts(std::uint32_t g) const {
    auto it = t_.launch_by_correlation.find(t_.events.correlation[g]);
    return it == t_.launch_by_correlation.end() ? t_.events.ts[g] : t_.events.ts[it->second];
  }

  void gpu_track(const Track& track) {
    for (auto g : track.events) {
      const Kind k = t_.events.kind[g];
      if (k != Kind::Kernel && k != Kind::Memset && k != Kind::Memcpy) continue;
      const std::int64_t step = steady_step(p_, t_.events.ts[g]);
      if (step < 0) continue;
      const std::string_view n = t_.name_of(g);
      const ns_t dur = t_.events.dur[g];
      const Context* ctx = launch_of(g);
      if (k == Kind::Kernel && starts(t_.str(t_.events.category[g]), "mtia")) s_.mtia = true;
      if (k == Kind::Memcpy) {
        if (t_.events.copy_kind[g] == CopyKind::HtoD && t_.events.host_mem[g] == HostMem::Pageable) {
          ++s_.pageable_h2d;
          s_.pageable_h2d_time += dur;
          if (auto b = t_.bytes_of(g); b > 0) s_.pageable_h2d_bytes += b;
        }
        continue;
      }
      const KernelClass cls = classify_kernel(n);
      if (ctx && ctx->zero_grad && (k == Kind::Memset || has(lower(n), "fill")))
        add(s_.zero_grad_gpu, k == Kind::Memset ? std::string_view("Memset (Device)") : n, dur);
      if (k == Kind::Memset) continue;
      if (cls == KernelClass::Communication) {
        communication(g, step, dur);
        continue;
      }
      if (!is_compute_class(cls)) continue;
      s_.compute_kernel_time += dur;
      if (cls == KernelClass::Gemm && is_fp32_gemm(n)) s_.gemm_simt_time += dur, add(s_.simt_gemms, n, dur);
      if (cls == KernelClass::GemmTensorCore) s_.gemm_tc_time += dur;
      if (cls == KernelClass::Attention) ++s_.attention_kernels;
      if (is_softmax_kernel(n)) add(s_.softmax_kernels, n, dur);
      if (cls == KernelClass::Convolution) convolution(g, n, dur, step, ctx);
      if (is_layout_kernel(n)) {
        if (ctx && ctx->conv_op >= 0) add(s_.layout_kernels, n, dur);
        else ++s_.layout_outside_conv;
      }
      if (ctx && ctx->optimizer) {
        ++s_.opt_kernels;
        s_.opt_kernel_time += dur;
        if (is_fused_optimizer_name(n) || has(lower(n), "fused")) s_.opt_fused = true;
      }
      if (ctx && ctx->backward && ctx->checkpoint) {
        ++s_.recompute_kernels;
        s_.recompute_time += dur;
      }
      if (ctx && ctx->backward && !ctx->optimizer) anomaly_kernel(g, n, dur);
    }
  }

  // What a scalar read costs: while the host blocks, the GPU drains its queue; afterwards it idles
  // until the host queues work again. Without the read the host would have done that later work
  // while the GPU drained, so a read costs min(host blocked, GPU idle after it).
  void finish_reads() {
    if (anomaly_item_ends_.empty() && item_ends_.empty()) return;
    std::vector<ns_t> starts;
    for (const auto& track : t_.gpu_tracks)
      for (auto g : track.events)
        if (t_.events.kind[g] == Kind::Kernel || t_.events.kind[g] == Kind::Memcpy || t_.events.kind[g] == Kind::Memset)
          starts.push_back(t_.events.ts[g]);
    std::sort(starts.begin(), starts.end());
    // Idle spent waiting for the next batch is the loader's, not the read's.
    std::sort(loader_starts_.begin(), loader_starts_.end());
    auto cost = [&](std::pair<ns_t, ns_t> read) -> ns_t {
      auto it = std::lower_bound(starts.begin(), starts.end(), read.first);
      if (it == starts.end()) return 0;
      ns_t until = *it;
      auto l = std::lower_bound(loader_starts_.begin(), loader_starts_.end(), read.first);
      if (l != loader_starts_.end()) until = std::min(until, *l);
      return std::min(read.second, until - read.first);
    };
    for (const auto& r : anomaly_item_ends_) s_.anomaly_gpu_idle += cost(r);
    for (const auto& r : item_ends_) s_.item_gpu_idle += cost(r);
  }

  void anomaly_kernel(std::uint32_t g, std::string_view n, ns_t dur) {
    // Only the NaN check's own kernels count (isnan, any); the op that launched them is the proof.
    auto it = t_.launch_by_correlation.find(t_.events.correlation[g]);
    if (it == t_.launch_by_correlation.end()) return;
    const std::string l = lower(n);
    if (has(l, "isnan") || has(l, "or_kernel")) s_.anomaly_kernel_time += dur;
  }

  void convolution(std::uint32_t, std::string_view n, ns_t dur, std::int64_t step, const Context* ctx) {
    ++s_.conv_kernels;
    s_.conv_time += dur;
    add(s_.conv_names, n, dur);
    if (!ctx || ctx->conv_op < 0) return;
    auto [it, fresh] = conv_index_.try_emplace(ctx->conv_op, s_.convs.size());
    if (fresh) s_.convs.push_back({step, false, {}, 0, 0, 0});
    ConvCall& c = s_.convs[it->second];
    ++c.conv_kernels;
    c.conv_time += dur;
    c.last_conv_time = dur;
    if (std::find(c.kernels.begin(), c.kernels.end(), n) == c.kernels.end()) c.kernels.emplace_back(n);
  }

  void communication(std::uint32_t g, std::int64_t step, ns_t dur) {
    if (collective_of(t_.name_of(g)) != Collective::AllReduce) return;
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
        if (stage_by_name(t_.name_of(i)) != kBackward) continue;
        const std::int64_t step = steady_step(p_, t_.events.ts[i]);
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

  const RankTrace& t_;
  const RankPartition& p_;
  RankScan s_;
  std::unordered_map<std::uint32_t, Context> launch_ctx_;
  std::unordered_map<std::int64_t, std::size_t> conv_index_;
  std::vector<std::int64_t> compiled_;
  std::vector<std::uint32_t> compile_events_;
  std::map<std::int64_t, ns_t> first_allreduce_launch_;
  std::vector<std::pair<ns_t, ns_t>> anomaly_item_ends_, item_ends_;  // (end, duration)
  std::vector<ns_t> loader_starts_;
  std::vector<std::int64_t> syncing_convs_;
};

}  // namespace

RankScan scan_rank(const RankTrace& t, const RankPartition& p) { return Scanner(t, p).run(); }

}  // namespace stepscope::footgun_detail
