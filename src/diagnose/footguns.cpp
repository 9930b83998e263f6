// The footgun detectors (docs/footguns.md): each reads its signature from the per-rank scan and
// the analysis figures, fires only when the signature is plain, and states its evidence and the
// gain of the fix computed from this trace.
#include "stepscope/footguns.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "diagnose/diagnose_internal.hpp"
#include "stepscope/footgun_scan.hpp"

namespace stepscope {
namespace {

using namespace diagnose_detail;
using namespace footgun;

// Thresholds. Each is a floor below which the signature is too faint to name.
constexpr double kSimtGemmShare = 0.5;        // SIMT share of GEMM time (seed 001 T9/T13)
constexpr double kSimtComputeShare = 0.05;    // and SIMT GEMMs hold this much of compute kernels
constexpr double kTf32Cut = 0.5;              // same as the tf32 lever: fp32 runs 2-4x slower (T9)
constexpr double kLayoutPerConv = 0.5;        // layout conversions per convolution call
constexpr double kMinShare = 0.01;            // a finding must be worth 1% of the step...
constexpr double kSyncShare = 0.03;           // ...sync stalls 3% (a final loss.item() costs ~0)
constexpr double kExposedShare = 0.05;        // exposed all-reduce share for the overlap check
constexpr double kOverlapHides = 0.8;         // as the ddp_buckets lever (seed 001 T23)
constexpr double kOptKernelsPerStep = 32;     // per-parameter optimizer kernels per step
constexpr double kFusedOptimizerCut = 0.5;    // as the fused_optimizer lever
constexpr double kRecomputeMinHeadroom = 0.2; // free device memory needed to suggest dropping it

struct Job {
  const JobStep* job = nullptr;
  std::vector<RankScan> ranks;
  double steady = 0;  // steady steps over all ranks
  double per_step(double total) const { return steady > 0 ? total / steady : 0; }
  double step() const { return job->step_ns; }
  double cat(Category c) const { return job->category[static_cast<std::size_t>(c)]; }
  template <class F>
  double sum(F f) const {
    double s = 0;
    for (const auto& r : ranks) s += static_cast<double>(f(r));
    return s;
  }
  ByName merged(ByName RankScan::*m) const {
    ByName out;
    for (const auto& r : ranks)
      for (const auto& [n, v] : r.*m) {
        out[n].count += v.count;
        out[n].time += v.time;
      }
    return out;
  }
};

std::string shorten(const std::string& name, std::size_t max = 90) {
  return name.size() <= max ? name : name.substr(0, max - 3) + "...";
}

// "name (12.0 per step, 1.23 ms per step)" for the largest entries by time.
std::string top_names(const Job& j, const ByName& m, std::size_t n = 3) {
  std::vector<std::pair<std::string, NameTime>> v(m.begin(), m.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.time > b.second.time; });
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < n; ++i)
    out += fmt::format("{}'{}' ({:.1f} per step, {} per step)", i ? "; " : "", shorten(v[i].first),
                       j.per_step(static_cast<double>(v[i].second.count)),
                       ms(j.per_step(static_cast<double>(v[i].second.time))));
  if (v.size() > n) out += fmt::format("; and {} more", v.size() - n);
  return out;
}

NameTime total(const ByName& m) {
  NameTime t;
  for (const auto& [n, v] : m) t.count += v.count, t.time += v.time;
  return t;
}

Finding make(const char* id, std::string text, std::vector<std::string> evidence, const char* lever, double gain,
             double step) {
  Finding f;
  f.id = id;
  f.footgun = true;
  f.lever = lever;
  f.step_ns = step;
  f.gain_ns = std::clamp(gain, 0.0, step * 0.999);
  f.speedup = step > 0 ? step / (step - f.gain_ns) : 1;
  f.text = fmt::format("{}; fixing it gains up to {} per step ({:.2f}x)", text, ms(f.gain_ns), f.speedup);
  f.evidence = std::move(evidence);
  return f;
}

bool worth(const Job& j, double gain) { return gain >= kMinShare * j.step(); }

// The first rank's device whose tensor cores can take fp32 GEMMs: TF32 (compute capability 8.0
// and up) or, failing that, fp16 under autocast with a GradScaler (7.x: V100, T4).
const DeviceModel* tensor_core_device(const AnalysisResult& r, bool want_tf32) {
  for (const auto& f : each_rank(r, &RankAnalysis::facts)) {
    const DeviceModel& d = f.device;
    if (want_tf32 ? d.tf32() == Capability::Yes : d.tensor_cores() == Capability::Yes) return &d;
  }
  return nullptr;
}

// 1. fp32 GEMMs on SIMT kernels where the GPU has tensor cores that would take them: TF32 where
// the GPU has it, else fp16 autocast (bf16 and TF32 do not exist before compute capability 8.0).
void fp32_no_tf32(const AnalysisResult& r, const Job& j, std::vector<Finding>& out) {
  const DeviceModel* device = tensor_core_device(r, true);
  const bool tf32 = device != nullptr;
  if (!device) device = tensor_core_device(r, false);
  if (!device) return;
  const double simt = j.sum([](const RankScan& s) { return s.gemm_simt_time; });
  if (simt <= 0) return;
  const double tc = j.sum([](const RankScan& s) { return s.gemm_tc_time; });
  const double compute = j.sum([](const RankScan& s) { return s.compute_kernel_time; });
  if (simt <= 0 || simt / (simt + tc) < kSimtGemmShare || simt < kSimtComputeShare * compute) return;
  const double gain = kTf32Cut * j.per_step(simt);
  if (!worth(j, gain)) return;
  const ByName names = j.merged(&RankScan::simt_gemms);
  const std::string what = tf32 ? "fp32 matmuls on SIMT kernels without TF32 or AMP: {} of GEMM time on a GPU with "
                                  "TF32 tensor cores"
                                : "fp32 matmuls on SIMT kernels without AMP: {} of GEMM time on a GPU whose tensor "
                                  "cores take fp16 (it has neither bf16 nor TF32)";
  out.push_back(make(tf32 ? "fp32_no_tf32" : "fp32_no_amp", fmt::format(fmt::runtime(what), pct(simt / (simt + tc))),
                     {fmt::format("device: {}", device->describe()),
                      fmt::format("SIMT GEMM kernels: {:.1f} per step, {} per step ({} of compute-kernel time; "
                                  "tensor-core GEMMs {} per step)",
                                  j.per_step(static_cast<double>(total(names).count)), ms(j.per_step(simt)),
                                  pct(simt / compute), ms(j.per_step(tc))),
                      "largest: " + top_names(j, names),
                      tf32 ? "gain: half of the SIMT GEMM time (TF32/bf16 tensor cores run fp32 GEMMs 2-4x faster)"
                           : "gain: half of the SIMT GEMM time (fp16 tensor cores run these GEMMs several times faster)"},
                     tf32 ? "tf32" : "amp_fp16", gain, j.step()));
}

// 2. cudnn.benchmark re-tuning in steady steps: one convolution call runs several algorithms.
// What a tuning call costs: its trial kernels, and the GPU idle inside it while cuDNN builds and
// compares its candidates on the host (waiting on queued work is no cost: that work runs anyway).
// Example: a backward convolution of 411 ms holding 9 ms of trials and 15 ms of other GPU work
// -> 9 + (411 - 24) = 396 ms.
void cudnn_autotune(const Job& j, std::vector<Finding>& out) {
  std::int64_t calls = 0;
  double trial_time = 0;
  std::vector<std::int64_t> steps;
  ByName trials;
  for (const auto& r : j.ranks)
    for (const auto& c : r.convs) {
      if (!c.tunes()) continue;
      ++calls;
      trial_time += static_cast<double>(c.conv_time - c.last_conv_time + c.op_gpu_idle);
      steps.push_back(c.step + 1'000'000 * r.rank);
      for (const auto& k : c.kernels) trials[k].count++;
    }
  const ByName finds = j.merged(&RankScan::autotune_calls);
  std::sort(steps.begin(), steps.end());
  const auto distinct_steps = std::unique(steps.begin(), steps.end()) - steps.begin();
  if ((distinct_steps < 2 && finds.empty()) || calls + total(finds).count == 0) return;
  const double gain = j.per_step(trial_time + static_cast<double>(total(finds).time));
  if (!worth(j, gain)) return;
  std::vector<std::string> ev;
  if (calls)
    ev.push_back(fmt::format("{} convolution calls in {} steady steps each ran {} or more different convolution "
                             "kernels (algorithm trials) and waited on the device: {:.1f} per step",
                             calls, distinct_steps, kTuneDistinctKernels, j.per_step(static_cast<double>(calls))));
  if (!finds.empty()) ev.push_back("autotuning calls: " + top_names(j, finds));
  std::string names;
  std::size_t n = 0;
  for (const auto& [k, v] : trials)
    if (n++ < 4) names += fmt::format("{}'{}'", n > 1 ? "; " : "", shorten(k, 70));
  if (!names.empty()) ev.push_back("kernels tried: " + names);
  ev.push_back(fmt::format("gain: per tuning call, the trial kernels' time and the GPU idle inside the call while "
                           "the candidates are built and compared, {} per step",
                           ms(gain)));
  out.push_back(make("cudnn_autotune",
                     "cudnn.benchmark re-tunes convolutions in steady-state steps: input shapes keep changing",
                     std::move(ev), "fixed_shapes", gain, j.step()));
}

// 3. Conv nets under AMP in NCHW: cuDNN converts layouts around every convolution.
void nchw_layout(const Job& j, std::vector<Finding>& out) {
  const ByName layout = j.merged(&RankScan::layout_kernels);
  const NameTime lt = total(layout);
  const double calls = j.sum([](const RankScan& r) { return r.convs.size(); });
  if (lt.count == 0 || calls <= 0 || static_cast<double>(lt.count) < kLayoutPerConv * calls) return;
  const bool half = j.sum([](const RankScan& s) { return s.half_conv_or_layout; }) > 0;
  if (!half) return;
  const double gain = j.per_step(static_cast<double>(lt.time));
  if (!worth(j, gain)) return;
  out.push_back(make("nchw_layout",
                     "conv net under mixed precision in NCHW: cuDNN converts between NCHW and NHWC around the "
                     "convolutions",
                     {fmt::format("{:.1f} layout-conversion kernels per step inside {:.1f} convolution calls per "
                                  "step, {} per step",
                                  j.per_step(static_cast<double>(lt.count)), j.per_step(calls), ms(gain)),
                      "conversions: " + top_names(j, layout, 2),
                      "convolutions: " + top_names(j, j.merged(&RankScan::conv_names), 2),
                      "gain: the conversion kernels' time (model and inputs in channels_last need none)"},
                     "channels_last", gain, j.step()));
}

// 4. Anomaly detection left on: NaN checks and a scalar read inside every backward node.
void anomaly_mode(const Job& j, std::vector<Finding>& out) {
  const double isnan = j.sum([](const RankScan& r) { return r.anomaly_isnan; });
  const double items = j.sum([](const RankScan& r) { return r.anomaly_items; });
  if (j.per_step(isnan) < 1 || j.per_step(items) < 2) return;
  const double idle = j.sum([](const RankScan& r) { return r.anomaly_gpu_idle; });
  const double kernels = j.sum([](const RankScan& r) { return r.anomaly_kernel_time; });
  const double gain = j.per_step(idle + kernels);
  if (!worth(j, gain)) return;
  out.push_back(make("anomaly_mode",
                     "autograd anomaly detection is on: every backward node checks its outputs for NaN and reads "
                     "the answer on the host (torch.autograd.set_detect_anomaly / detect_anomaly)",
                     {"inside backward nodes (autograd::engine::evaluate_function): " +
                          top_names(j, j.merged(&RankScan::anomaly_ops), 4),
                      fmt::format("{:.1f} host reads per step inside backward, costing {} per step (per read the "
                                  "shorter of the host's wait and the GPU idle after it); the NaN-check kernels "
                                  "take {} per step",
                                  j.per_step(items), ms(j.per_step(idle)), ms(j.per_step(kernels))),
                      "gain: the cost of those reads plus the check kernels"},
                     "no_debug_apis", gain, j.step()));
}

// 5. Activation checkpointing where device memory would allow keeping activations.
void activation_recompute(const AnalysisResult& r, const Job& j, std::vector<Finding>& out) {
  const double kernels = j.sum([](const RankScan& s) { return s.recompute_kernels; });
  if (kernels <= 0) return;
  const double time = j.sum([](const RankScan& s) { return s.recompute_time; });
  const double gain = j.per_step(time);
  if (!worth(j, gain)) return;
  std::string memory = "no [memory] events in the trace: the memory headroom is unknown (profile_memory=True "
                       "shows it); drop checkpointing only if activations fit";
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const auto& m = r.ranks[i].gpu_timeline.memory;
    if (!m.available) continue;
    for (const auto& d : m.devices)
      for (const auto& p : r.ranks[i].ingest.devices) {
        if (p.id != d.device_id || p.total_global_mem <= 0 || d.peak_allocated <= 0) continue;
        const double free = 1.0 - static_cast<double>(d.peak_allocated) / static_cast<double>(p.total_global_mem);
        if (free < kRecomputeMinHeadroom) return;  // memory is tight: checkpointing is the right trade
        memory = fmt::format("peak allocated {:.2f} GB of {:.2f} GB on device {} ({} free)", d.peak_allocated / 1e9,
                             static_cast<double>(p.total_global_mem) / 1e9, p.id, pct(free));
      }
  }
  out.push_back(make("activation_recompute",
                     "activation checkpointing recomputes forward ops inside backward",
                     {fmt::format("{:.1f} GPU kernels per step launched inside backward by recomputed forward ops "
                                  "(under a checkpoint marker, or forward-only ops such as aten::linear inside a "
                                  "backward node), {} per step",
                                  j.per_step(kernels), ms(gain)),
                      memory, "gain: the recomputed kernels' time, if the activations fit without checkpointing"},
                     "no_activation_checkpointing", gain, j.step()));
}

// 6. torch.compile recompiling after the steady state began.
void compile_recompile(const Job& j, std::vector<Finding>& out) {
  const double steps = j.sum([](const RankScan& r) { return r.late_compile_steps; });
  if (steps <= 0) return;
  const double time = j.sum([](const RankScan& r) { return r.late_compile_time; });
  // The recompiling steps are warm-up for the partition; over all steps the compile time adds
  // time / (steady + recompiling steps) to the mean step.
  const double all = j.steady + steps;
  const double gain = time / all;
  const double step = j.step() + gain;
  if (gain < kMinShare * step) return;
  out.push_back(make("compile_recompile",
                     "torch.compile recompiles after the first steps (guard failures, e.g. changing shapes)",
                     {fmt::format("{:.0f} steps after the steady state began hold compilation, {} in all", steps,
                                  ms(time)),
                      "compile events: " + top_names(j, j.merged(&RankScan::late_compile), 2),
                      fmt::format("gain: the compile time spread over the window's {:.0f} steps, which holds while "
                                  "recompiles recur as often as here ({:.0f} of {:.0f}); a shape met once is compiled "
                                  "once (mark dynamic dims or pad shapes)",
                                  all, steps, all)},
                     "fixed_shapes", gain, step));
}

// 6b. torch.compile giving up: steady steps ran compiled code, then only eager steps follow.
void compile_fallback(const Job& j, std::vector<Finding>& out) {
  double eager_steps = 0, excess = 0;
  std::vector<std::string> ev;
  for (const auto& r : j.ranks) {
    if (r.fallback_compiled < 2 || r.fallback_eager < 2 || r.eager_mean_ns <= r.compiled_mean_ns) continue;
    eager_steps += static_cast<double>(r.fallback_eager);
    excess += static_cast<double>(r.fallback_eager) * (r.eager_mean_ns - r.compiled_mean_ns);
    ev.push_back(fmt::format("rank {}: {} steady steps ran a compiled region (mean {}), then from step {} on {} "
                             "steps ran none (mean {})",
                             r.rank, r.fallback_compiled, ms(r.compiled_mean_ns), r.first_eager_step, r.fallback_eager,
                             ms(r.eager_mean_ns)));
  }
  if (ev.empty()) return;
  const double gain = j.per_step(excess);
  if (!worth(j, gain)) return;
  ev.push_back("gain: the eager steps' excess over the compiled ones, spread over every steady step (raise "
               "torch._dynamo.config.cache_size_limit or stop the recompiles)");
  out.push_back(make("compile_fallback", "torch.compile fell back to eager mid-run (compiled region gone after the "
                                         "first steps)",
                     std::move(ev), "fixed_shapes", gain, j.step()));
}

// 7. Attention with materialised scores: softmax kernels beside batched matmuls, no fused kernel.
void unfused_attention(const Job& j, std::vector<Finding>& out) {
  if (j.sum([](const RankScan& r) { return r.attention_kernels; }) > 0) return;
  const ByName sm = j.merged(&RankScan::softmax_kernels);
  const ByName bmm = j.merged(&RankScan::score_ops);
  const NameTime s = total(sm), b = total(bmm);
  if (j.per_step(static_cast<double>(s.count)) < 1 || b.count < s.count) return;
  const double gain = j.per_step(static_cast<double>(s.time));
  if (!worth(j, gain)) return;
  out.push_back(make("unfused_attention",
                     "attention without a fused kernel: softmax over materialised scores between batched matmuls",
                     {"softmax kernels: " + top_names(j, sm, 2),
                      fmt::format("{:.1f} aten::bmm/baddbmm ops per step; no flash/memory-efficient attention "
                                  "kernel in the trace",
                                  j.per_step(static_cast<double>(b.count))),
                      "gain: the softmax kernels' time, a lower bound (SDPA also never writes the scores)"},
                     "sdpa", gain, j.step()));
}

// 8. Optimizer step as many small per-parameter kernels.
void unfused_optimizer(const AnalysisResult& r, const Job& j, std::vector<Finding>& out) {
  for (const auto& p : each_rank(r, &RankAnalysis::partition))
    if (p.mix.fused_optimizer_seen) return;
  for (const auto& s : j.ranks)
    if (s.opt_fused || s.mtia) return;
  const double kernels = j.sum([](const RankScan& s) { return s.opt_kernels; });
  if (j.per_step(kernels) < kOptKernelsPerStep) return;
  const double span = j.per_step(j.sum([](const RankScan& s) { return s.opt_host_time; }));
  const double gain = kFusedOptimizerCut * span;
  if (!worth(j, gain)) return;
  out.push_back(make("unfused_optimizer",
                     "the optimizer step runs per-parameter kernels (no foreach/fused implementation)",
                     {fmt::format("{:.0f} kernels per step inside Optimizer.step, {} of GPU time; the step spans {} "
                                  "on the host",
                                  j.per_step(kernels), ms(j.per_step(j.sum([](const RankScan& s) { return s.opt_kernel_time; }))),
                                  ms(span)),
                      "ops: " + top_names(j, j.merged(&RankScan::opt_ops), 4),
                      "gain: half of the optimizer step's span (one multi-tensor kernel replaces hundreds)"},
                     "fused_optimizer", gain, j.step()));
}

// 9. zero_grad() without set_to_none: the gradients are memset every step.
void zero_grad_memset(const Job& j, std::vector<Finding>& out) {
  const ByName m = j.merged(&RankScan::zero_grad_gpu);
  const NameTime t = total(m);
  if (j.per_step(static_cast<double>(t.count)) < 1) return;
  const double kernels = j.per_step(static_cast<double>(t.time));
  const double span = j.per_step(j.sum([](const RankScan& r) { return r.zero_grad_host_time; }));
  // One launch per gradient: the host span is the cost when it exceeds the kernels' own time.
  const double gain = std::max(kernels, span);
  if (!worth(j, gain)) return;
  out.push_back(make("zero_grad_memset",
                     "zero_grad() writes zeros into every gradient (set_to_none=False)",
                     {"launched inside zero_grad: " + top_names(j, m, 2),
                      fmt::format("zero_grad spans {} per step on the host; its kernels take {}", ms(span), ms(kernels)),
                      "gain: the larger of the two; set_to_none=True frees the gradients instead"},
                     "zero_grad_set_to_none", gain, j.step()));
}

// 10. Per-step host syncs from logging: scalar reads (loss.item(), printing a tensor) outside
// backward, each leaving the GPU idle until the host queues work again.
void host_sync_logging(const AnalysisResult& r, const Job& j, bool anomaly, std::vector<Finding>& out) {
  if (anomaly) return;  // the anomaly finding already explains these reads
  const double items = j.sum([](const RankScan& s) { return s.items; });
  if (j.per_step(items) < 1) return;
  const double gain = j.per_step(j.sum([](const RankScan& s) { return s.item_gpu_idle; }));
  if (gain < kSyncShare * j.step()) return;
  ByName by;
  double idle = 0;
  std::int64_t d2h = 0;
  for (const auto& g : each_rank(r, &RankAnalysis::gpu_timeline)) {
    for (const auto& s : g.syncs.by_name) by[s.name].count += s.count, by[s.name].time += s.host_blocked;
    idle += static_cast<double>(g.syncs.gpu_idle_after);
    for (const auto& c : g.copies.groups)
      if (c.direction == CopyKind::DtoH) d2h += c.count;
  }
  std::vector<std::string> ev{fmt::format(
      "{:.1f} aten::item calls per steady step (host blocked {} per step); {} per step of host work after them "
      "could have overlapped the GPU draining its queue; the partition's sync stall is {} per step",
      j.per_step(items), ms(j.per_step(j.sum([](const RankScan& s) { return s.item_host_time; }))), ms(gain),
      ms(j.cat(Category::SyncStall)))};
  if (!by.empty()) {
    std::string s;
    std::size_t n = 0;
    for (const auto& [name, v] : by)
      if (n++ < 4) s += fmt::format("{}'{}' x{} (host blocked {})", n > 1 ? "; " : "", name, v.count, ms(static_cast<double>(v.time)));
    ev.push_back(fmt::format("runtime syncs over the whole trace: {}; the GPU sits idle {} after them; {} "
                             "device-to-host copies",
                             s, ms(idle), d2h));
  }
  ev.push_back("gain: per read, the shorter of the host's wait and the GPU idle after it (log every N steps, "
               "keep metrics on the device)");
  out.push_back(make("host_sync_logging", "per-step host syncs (.item(), printing a tensor) drain the GPU queue",
                     std::move(ev), "remove_item", gain, j.step()));
}

// 11a. Pageable host-to-device copies on the critical path (DataLoader without pin_memory).
void pageable_copy(const Job& j, std::vector<Finding>& out) {
  const double n = j.sum([](const RankScan& r) { return r.pageable_h2d; });
  if (n <= 0) return;
  const double time = j.per_step(j.sum([](const RankScan& r) { return r.pageable_h2d_time; }));
  const double gain = std::min(time, j.cat(Category::H2DCopy));
  if (!worth(j, gain)) return;
  const double bytes = j.per_step(j.sum([](const RankScan& r) { return r.pageable_h2d_bytes; }));
  out.push_back(make("pageable_copy",
                     "host-to-device copies from pageable memory (DataLoader without pin_memory, or unpinned tensors)",
                     {fmt::format("{:.1f} 'Memcpy HtoD (Pageable -> Device)' copies per step, {:.1f} MB, {} per step",
                                  j.per_step(n), bytes / 1e6, ms(time)),
                      fmt::format("H2D copy on the step's critical path: {} per step", ms(j.cat(Category::H2DCopy))),
                      "gain: the pageable copy time the GPU waits on (pinned + non_blocking copies overlap compute)"},
                     "pin_memory", gain, j.step()));
}

// 11b. Loader workers respawned at every epoch (persistent_workers=False).
void loader_respawn(const AnalysisResult& r, const Job& j, std::vector<Finding>& out) {
  double excess = 0;
  std::vector<std::string> ev;
  for (const RankAnalysis& ra : r.ranks) {
    const auto& s = ra.stability;
    if (s.period.kind != PeriodKind::EpochBoundary || !s.steps) continue;
    excess += static_cast<double>(s.period.mean_excess) * static_cast<double>(s.period.occurrences) /
              static_cast<double>(s.steps);
    ev.push_back(fmt::format("rank {}: batch wait jumps by {} every {} steps ({} times): the first fetch of each epoch "
                             "waits for new workers",
                             ra.rank(), ms(static_cast<double>(s.period.mean_excess)), s.period.every, s.period.occurrences));
  }
  if (ev.empty()) return;
  const double gain = excess / static_cast<double>(ev.size());
  if (!worth(j, gain)) return;
  ev.push_back("gain: the epoch-start stall spread over every step");
  out.push_back(make("loader_respawn", "DataLoader workers restart at every epoch (persistent_workers=False)",
                     std::move(ev), "persistent_workers", gain, j.step()));
}

// 11c. The caching allocator emptied every step: cudaMalloc and cudaFree in every steady step,
// which a warm pool never calls (a pool still growing calls them in the first steps only).
// cudaFree waits for the device, and both hold the host.
// Example: 13 calls a step taking 2.3 ms of a 6.5 ms step whose host-side time is 3.3 ms -> 2.3 ms.
constexpr double kMinChurnSteps = 2;

void allocator_churn(const Job& j, std::vector<Finding>& out) {
  const double steps = j.sum([](const RankScan& r) { return r.device_alloc_steps; });
  if (j.steady < kMinChurnSteps || steps < j.steady) return;
  const ByName m = j.merged(&RankScan::device_allocs);
  const NameTime t = total(m);
  const double calls = j.per_step(static_cast<double>(t.time));
  const double host_side = j.cat(Category::HostCompute) + j.cat(Category::LaunchOverhead) +
                           j.cat(Category::SyncStall) + j.cat(Category::Idle);
  const double gain = std::min(calls, host_side);
  if (!worth(j, gain)) return;
  out.push_back(make("allocator_churn",
                     "the caching allocator returns its memory every step and allocates it again "
                     "(torch.cuda.empty_cache() in the loop, caching turned off with "
                     "PYTORCH_NO_CUDA_MEMORY_CACHING=1, or a pool that cannot keep what the step needs)",
                     {fmt::format("{:.1f} device allocator calls per steady step, in every one of the {:.0f} steady "
                                  "steps, {} per step: {}",
                                  j.per_step(static_cast<double>(t.count)), j.steady, ms(calls), top_names(j, m, 4)),
                      fmt::format("once its pool has grown, PyTorch's caching allocator calls neither; the step's "
                                  "host-side time is {} per step",
                                  ms(host_side)),
                      "gain: the calls' time, at most the step's host-side time (host compute, launch overhead, "
                      "sync stall, idle)"},
                     "keep_allocator_cache", gain, j.step()));
}

// 12. DDP all-reduce launched only after backward ends (no overlap). Only the gradients' share of
// the exposed communication (`grad_share`) is the all-reduce's: all-to-all exchange beside it is not.
void ddp_no_overlap(const Job& j, double grad_share, std::vector<Finding>& out) {
  const double steps = j.sum([](const RankScan& r) { return r.allreduce_steps; });
  const double after = j.sum([](const RankScan& r) { return r.allreduce_after_backward_steps; });
  const double exposed = grad_share * j.cat(Category::GradSyncExposed);
  if (steps <= 0 || after < steps || exposed < kExposedShare * j.step()) return;
  const double gain = kOverlapHides * std::min(exposed, j.cat(Category::ComputeBackward));
  if (!worth(j, gain)) return;
  out.push_back(make("ddp_no_overlap", "gradient all-reduce starts only after backward has ended: nothing overlaps it",
                     {fmt::format("in all {:.0f} steady steps with an all-reduce, the first all-reduce launch comes "
                                  "after the last backward op ended ({:.1f} all-reduce kernels per step, {} per step)",
                                  steps, j.per_step(j.sum([](const RankScan& r) { return r.allreduces; })),
                                  ms(j.per_step(j.sum([](const RankScan& r) { return r.allreduce_time; })))),
                      fmt::format("exposed gradient sync {} per step ({} of the step); backward compute {} per step",
                                  ms(exposed), pct(exposed / j.step()), ms(j.cat(Category::ComputeBackward))),
                      "gain: 80% of the exposed all-reduce, at most the backward compute it can hide under"},
                     "ddp_buckets", gain, j.step()));
}

}  // namespace

std::vector<Finding> detect_footguns(const AnalysisResult& r, const JobStep& job) {
  std::vector<Finding> out;
  if (job.step_ns <= 0) return out;
  Job j;
  j.job = &job;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    if (!r.ranks[i].partition.steady_steps) continue;
    j.ranks.push_back(r.ranks[i].footgun_scan);
    j.steady += static_cast<double>(r.ranks[i].partition.steady_steps);
  }
  if (j.ranks.empty()) return out;
  if (job.gpu) {
    fp32_no_tf32(r, j, out);
    cudnn_autotune(j, out);
    nchw_layout(j, out);
  }
  anomaly_mode(j, out);
  const bool anomaly = !out.empty() && out.back().id == "anomaly_mode";
  activation_recompute(r, j, out);
  compile_recompile(j, out);
  compile_fallback(j, out);
  if (job.gpu) {
    unfused_attention(j, out);
    unfused_optimizer(r, j, out);
    zero_grad_memset(j, out);
    host_sync_logging(r, j, anomaly, out);
    pageable_copy(j, out);
    allocator_churn(j, out);
  }
  loader_respawn(r, j, out);
  ddp_no_overlap(j, comm_role_shares(r)[static_cast<std::size_t>(CommRole::GradientSync)], out);
  return out;
}

}  // namespace stepscope
