// Each lever as a transformation of the step graph, with its physics, and the plan that applies
// compatible levers together.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "stepscope/plan/gpus.hpp"
#include "stepscope/whatif_job.hpp"
#include "whatif/transforms.hpp"

namespace stepscope::whatif {
namespace {

// A cached or pre-processed batch is a read of ready tensors: about this per batch.
constexpr ns_t kCachedFetch = 50'000;
// Handing a batch from a worker process to the main one (unpickling, queue): per batch.
constexpr ns_t kWorkerHandoff = 100'000;
// A fetch of a batch a worker had ready takes up to this (its hand-off, unpickled: 0.1-1 ms in
// the recorded loaders); a longer one waited for the worker.
constexpr ns_t kReadyBatchFetch = 1'000'000;
// An epoch's first fetch counts as a respawn stall when it is this many times the median wait.
constexpr double kRespawnFactor = 5;
// A fused optimizer runs one kernel per parameter group, not a few per parameter.
constexpr double kFusedOptimizerCut = 0.3;
// torch.compile fuses pointwise chains: about half of elementwise/norm time.
constexpr double kFusionCut = 0.5;
// channels_last convolutions under autocast: a fifth faster (seed 001 T11).
constexpr double kChannelsLastCut = 0.8;
// An async save keeps only the snapshot to host memory in the loop.
constexpr double kAsyncSaveShare = 0.02;
// A gain smaller than this share of the step is no lever.
constexpr double kMinGain = 0.01;

struct Model {
  LeverId id;
  std::string group;      // levers of one group are alternatives: a plan takes one
  double uncertainty = 0.2;
  std::function<void(Scenario&)> apply;
  std::string basis;
  bool held = false;
  std::vector<std::pair<std::string, std::function<void(Scenario&)>>> settings;
  std::size_t max_headline_setting = 0;  // the lever's own figure comes from settings up to this one
  // The chosen setting in the basis: its value, then its speedup.
  std::string setting_format = "{} workers: {:.2f}x (the trace does not say the host's cores: more workers than "
                               "spare cores gain less)";
  bool in_plan = true;  // false: a change of the experiment itself, priced alone
};

std::size_t count_ops(const Graph& g, const std::function<bool(const Op&)>& pick) {
  return static_cast<std::size_t>(std::count_if(g.ops.begin(), g.ops.end(), pick));
}

std::size_t count_atoms(const Graph& g, AtomKind k) {
  return static_cast<std::size_t>(std::count_if(g.atoms.begin(), g.atoms.end(), [&](const Atom& a) { return a.kind == k; }));
}

// The rates a precision lever moves fp32 matmuls to, from the GPU table; empty where the device is
// not in it. Example: an H200 to bf16 -> 67 TFLOP/s fp32, 989.4 bf16, 4800 GB/s, 2-byte operands.
std::optional<MatmulTarget> matmul_target(const RankFacts& f, plan::Dtype to) {
  const plan::GpuSpec* spec = f.device.present ? plan::match_device_name(f.device.name) : nullptr;
  if (!spec || spec->fp32_tflops <= 0 || spec->memory_bw_gbs <= 0) return std::nullopt;
  const std::optional<double> peak = spec->peak_tflops(to);
  if (!peak || *peak <= 0) return std::nullopt;
  const bool tf32 = to == plan::Dtype::tf32;
  return MatmulTarget{spec->fp32_tflops, *peak, spec->memory_bw_gbs, tf32 ? 4.0 : 2.0, !tf32};
}

// Loader worker settings: 2, 4 and 8 workers for a single-process loader; for one with workers,
// twice and four times the count its bursts show, or "x2", "x4" when they show none.
void add_worker_settings(const Graph& g, Model& w) {
  const int now = g.multiprocess_loader ? burst_workers(g) : 0;
  for (int k : {2, 4, 8}) {
    if (g.multiprocess_loader && k == 8) break;
    const double factor = k;
    const std::string value = !g.multiprocess_loader ? std::to_string(k) : now > 0 ? std::to_string(now * k) : fmt::format("x{}", k);
    w.settings.push_back({value, [&g, factor](Scenario& s) {
                            loader_workers(g, s, factor);
                            s.ipc = kWorkerHandoff;
                          }});
  }
  w.max_headline_setting = g.multiprocess_loader ? 1 : 2;  // 4 workers, or twice as many: the cores are unknown
  w.basis = g.multiprocess_loader
                ? fmt::format("the loader's {} deliver a batch every mean(wait + step); N times as many divide that "
                              "interval, overlapped with the step",
                              now > 0 ? fmt::format("{} workers (read from its bursts)", now) : std::string("workers"))
                : "N worker processes load batches while the step runs: each wait becomes the batch's loading time / N "
                  "less the step's own time";
}

// Whether the loader's workers are slower than the loop on average, rather than late now and
// then: most fetches wait (the queue is empty most of the time), or the waits outlast the loop's
// own work between them. Workers behind deliver a batch every `load / workers`, and the loop
// waits that less its own time; a pool that kept up on average would have refilled its queue
// while the loop worked, so a wait longer than that work is the pool's pace, not a stall a
// deeper queue holds. Example: two workers, 32 ms a batch, a 1.3 ms step: 29 ms waits every
// second step against 2.6 ms of work -> behind; a 60 ms wait every fourth 47 ms step (188 ms of
// work) -> an occasional stall. An epoch's respawn waits are the respawn's, counted in neither.
bool workers_behind(const Graph& g, const std::vector<std::uint8_t>& epoch_start) {
  std::size_t fetches = 0, waited = 0;
  ns_t wait = 0, work = 0, last_end = -1;
  for (std::size_t i = 0; i < g.atoms.size(); ++i) {
    const Atom& a = g.atoms[i];
    if (a.kind != AtomKind::Loader) continue;
    if (!epoch_start[i]) {
      ++fetches, waited += a.dur > kReadyBatchFetch;
      if (last_end >= 0) wait += a.dur, work += a.ts - last_end;
    }
    last_end = a.ts + a.dur;
  }
  return 2 * waited >= fetches || wait >= work;
}

void add_loader_models(const Context& c, std::vector<Model>& out) {
  const Graph& g = c.g;
  if (count_atoms(g, AtomKind::Loader) == 0) return;
  Model w{LeverId::NumWorkers, "loader", 0.15, nullptr, "", false, {}};
  add_worker_settings(g, w);
  out.push_back(std::move(w));
  out.push_back({LeverId::PreprocessCache, "loader", 0.5,
                 [&g](Scenario& s) {
                   for (std::size_t i = 0; i < g.atoms.size(); ++i)
                     if (g.atoms[i].kind == AtomKind::Loader) s.atom_dur[i] = std::min(s.atom_dur[i], kCachedFetch);
                 },
                 "each fetch reads a ready batch (about 50 us) instead of decoding and transforming it", false, {}});
  std::vector<ns_t> waits;
  for (const Atom& a : g.atoms)
    if (a.kind == AtomKind::Loader) waits.push_back(a.dur);
  std::nth_element(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(waits.size() / 2), waits.end());
  const ns_t median = waits[waits.size() / 2];
  // Without an epoch start in the steps the replay has nothing to change: the lever keeps its bound.
  const std::vector<std::size_t> restarts = epoch_restarts(g);
  if (!restarts.empty())
    out.push_back({LeverId::PersistentWorkers, "respawn", 0.3,
                 [&g, median, restarts](Scenario& s) {
                   for (std::size_t i : restarts) {
                     s.atom_dur[i] = std::min(s.atom_dur[i], median);
                     s.atom_gap[i] = 0;
                     if (const std::int32_t p = g.atoms[i].pred; p >= 0 && g.atoms[static_cast<std::size_t>(p)].kind == AtomKind::Loader)
                       s.atom_dur[static_cast<std::size_t>(p)] = std::min(s.atom_dur[static_cast<std::size_t>(p)], median);
                   }
                   settle_host_work(g, s);
                 },
                 "at each epoch start the workers' respawn (the new iterator and its first, longer waits) goes; the "
                 "waits fall to the median wait, and the steps' host work to the quietest quarter's (fresh workers "
                 "starting up share the loop's cores)",
                 false, {}});
  // A deeper queue absorbs waits that come now and then; workers slower than the step on average
  // leave it empty, and it only holds more of nothing.
  // Absorbed, a wait becomes a fetch of a ready batch: the median fetch (most are ready).
  const std::vector<std::uint8_t> epoch_start = epoch_start_waits(g);
  const bool behind = workers_behind(g, epoch_start);
  out.push_back({LeverId::PrefetchFactor, "prefetch", 0.3,
                 [&g, behind, epoch_start, median](Scenario& s) {
                   if (behind) return;
                   for (std::size_t i = 0; i < g.atoms.size(); ++i)
                     if (g.atoms[i].kind == AtomKind::Loader && !epoch_start[i] && s.atom_dur[i] > kReadyBatchFetch)
                       s.atom_dur[i] = std::min(s.atom_dur[i], median);
                 },
                 behind ? "most fetches wait: the workers are slower than the step on average, a deeper queue holds nothing"
                        : "the occasional waits are absorbed by the batches queued ahead",
                 !g.multiprocess_loader, {}});
}

void add_copy_models(const Context& c, std::vector<Model>& out) {
  const Graph& g = c.g;
  auto copy = [](const Op& o) { return o.kind == OpKind::Copy; };
  if (count_ops(g, copy) == 0) return;
  // Copies whose names do not say their host memory may be pageable: only pinned ones are done.
  auto not_pinned = [](const Op& o) { return o.kind == OpKind::Copy && o.mem != HostMem::Pinned; };
  const double bw = pinned_bandwidth_gbs(g, c.facts, c.trace);
  const bool none_pageable = count_ops(g, not_pinned) == 0;
  // Copies that share a stream with compute kernels; a stream of copies alone is a side stream already.
  std::set<std::int32_t> compute_streams;
  for (const Op& o : g.ops)
    if (o.kind == OpKind::Compute) compute_streams.insert(o.stream);
  auto beside_compute = [compute_streams](const Op& o) { return o.kind == OpKind::Copy && compute_streams.count(o.stream) > 0; };
  // A copy from pageable memory is synchronous whatever its stream: only pinned ones can move.
  auto pinned_beside_compute = [beside_compute](const Op& o) { return beside_compute(o) && o.mem == HostMem::Pinned; };
  // The lever is pinned memory and non-blocking copies: both halves, each where it is missing.
  // Where every copy is pinned it is in place: what is left, pinned copies between the kernels of
  // a compute stream, is copy_stream's.
  out.push_back({LeverId::PinMemory, "copy", 0.2,
                 [&g, bw, beside_compute](Scenario& s) {
                   pin_copies(g, s, bw);
                   copies_to_side_stream(g, s, beside_compute);
                 },
                 none_pageable ? std::string("every copy is pinned already; moving them off the compute streams is "
                                             "copy_stream's lever")
                               : fmt::format("copies not known to be pinned at pinned bandwidth ({:.0f} GB/s), without "
                                             "the host waiting for them, and off the compute streams",
                                             bw),
                 none_pageable, {}});
  out.push_back({LeverId::CopyStream, "copy-stream", 0.25,
                 [&g, pinned_beside_compute](Scenario& s) { copies_to_side_stream(g, s, pinned_beside_compute); },
                 "pinned copies move off the compute streams and overlap the kernels queued before them; the kernel "
                 "after an input copy waits for it",
                 count_ops(g, pinned_beside_compute) == 0, {}});
  auto d2h = [](const Op& o) { return o.kind == OpKind::Copy && o.copy == CopyKind::DtoH; };
  out.push_back({LeverId::D2hReadback, "readback", 0.3,
                 [&g, d2h](Scenario& s) {
                   copies_to_side_stream(g, s, d2h);
                   for (std::size_t i = 0; i < g.atoms.size(); ++i)
                     if (g.atoms[i].kind == AtomKind::Sync && g.atoms[i].target >= 0 && d2h(g.ops[static_cast<std::size_t>(g.atoms[i].target)]))
                       s.release[i] = 1;
                 },
                 "device-to-host copies leave the step's way: on a side stream, read without waiting", count_ops(g, d2h) == 0, {}});
}

// The scenario change of a precision lever: fp32 matmuls at the target's roofline, or on a device
// the GPU table lacks, held to kUnknownDeviceMatmulCut.
std::function<void(Scenario&)> narrow(const Context& c, std::optional<MatmulTarget> target) {
  if (target) return [&c, m = *target](Scenario& s) { narrow_matmuls(c.g, c.facts, c.trace, s, m); };
  return [&g = c.g](Scenario& s) {
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      if (fp32_matmul(g.ops[i]))
        s.op_dur[i] = static_cast<ns_t>(static_cast<double>(s.op_dur[i]) * (1.0 / kUnknownDeviceMatmulCut + kUnknownDeviceCastShare));
  };
}

std::string narrow_basis(const char* what, const std::optional<MatmulTarget>& m, std::size_t shaped, std::size_t fp32) {
  if (!m)
    return fmt::format("fp32 GEMM/convolution kernels {}: the device is not in the GPU table, so held to {:.0f}x", what,
                       kUnknownDeviceMatmulCut);
  return fmt::format("fp32 GEMM/convolution kernels {} ({:.0f} against {:.0f} TFLOP/s, {:.0f} GB/s): each the longer of its "
                     "work and its bytes, {} of {} from the recorded shapes{}",
                     what, m->tflops, m->fp32_tflops, m->bandwidth_gbs, shaped, fp32, m->casts ? ", plus autocast's casts" : "");
}

void add_precision_models(const Context& c, std::vector<Model>& out) {
  const Graph& g = c.g;
  const std::size_t fp32 = count_ops(g, fp32_matmul), half = count_ops(g, half_matmul);
  if (fp32 + half == 0) return;
  std::size_t shaped = 0;
  for (const Op& o : g.ops) shaped += fp32_matmul(o) && recorded_gemm_work(c.facts, c.trace, o).has_value();
  const bool bf16 = c.facts.device.bf16() != Capability::No;
  const std::optional<MatmulTarget> t16 = matmul_target(c.facts, bf16 ? plan::Dtype::bf16 : plan::Dtype::fp16);
  const std::string held_words = fp32 == 0 ? "; the matmuls already run in 16 bits" : "";
  out.push_back({bf16 ? LeverId::AmpBf16 : LeverId::AmpFp16, "precision", 0.35, narrow(c, t16),
                 narrow_basis(bf16 ? "at bf16 tensor-core rate" : "at fp16 tensor-core rate", t16, shaped, fp32) + held_words,
                 fp32 == 0, {}});
  if (c.facts.device.tf32() == Capability::Yes) {
    const std::optional<MatmulTarget> t32 = matmul_target(c.facts, plan::Dtype::tf32);
    out.push_back({LeverId::Tf32, "precision", 0.35, narrow(c, t32), narrow_basis("at TF32 tensor-core rate", t32, shaped, fp32),
                   fp32 == 0, {}});
  }
  auto conv = [](const Op& o) { return o.kind == OpKind::Compute && o.cls == KernelClass::Convolution; };
  if (count_ops(g, conv) > 0) {
    // cuDNN runs 16-bit convolutions in NHWC and converts NCHW tensors around them (nchwToNhwc,
    // nhwcToNchw kernels): 16-bit convolutions with no conversion anywhere run on channels_last
    // tensors already.
    auto layout = [&c](const Op& o) { return o.kind == OpKind::Compute && c.facts.of_event(c.trace, o.event).has(kNameLayout); };
    auto half_conv = [conv](const Op& o) { return conv(o) && is_16bit_or_narrower(o.dtype); };
    const bool nhwc = count_ops(g, half_conv) > 0 && count_ops(g, layout) == 0;
    out.push_back({LeverId::ChannelsLast, "layout", 0.5, [&g, conv](Scenario& s) { scale_ops(g, s, conv, kChannelsLastCut); },
                   nhwc ? "the 16-bit convolutions run with no layout conversion around them: the tensors are "
                          "channels_last already"
                        : "convolutions a fifth faster in NHWC",
                   nhwc, {}});
  }
}

void add_launch_models(const Context& c, std::vector<Model>& out) {
  const Graph& g = c.g;
  if (count_atoms(g, AtomKind::Launch) == 0) return;
  const bool captured = c.facts.cuda_graphs && c.facts.graph_launches >= c.facts.launch_calls / 2;
  out.push_back({LeverId::CudaGraphs, "graphs", 0.3, [&c](Scenario& s) { capture_graphs(c.g, c.facts, c.trace, s); },
                 "each run of launches between syncs becomes one graph launch: the host work between them and the "
                 "launch calls go, the kernels run back to back",
                 captured, {}});
  auto eltwise = [](const Op& o) {
    return o.kind == OpKind::Compute && (o.cls == KernelClass::Elementwise || o.cls == KernelClass::ReductionNorm);
  };
  out.push_back({LeverId::TorchCompile, "compile", 0.5,
                 [&g, eltwise](Scenario& s) {
                   scale_ops(g, s, eltwise, kFusionCut);
                   fuse_launches(g, s, eltwise);
                 },
                 "fused pointwise chains: half of the elementwise/norm kernel time, and every second of their "
                 "launches gone with the host's dispatch before it",
                 false, {}});
  auto optimizer = [&c](const Op& o) {
    return o.kind == OpKind::Compute && o.event < c.facts.event_stage.size() && c.facts.event_stage[o.event] == StageHint::Optimizer;
  };
  out.push_back({LeverId::FusedOptimizer, "optimizer", 0.4,
                 [&g, optimizer](Scenario& s) {
                   scale_ops(g, s, optimizer, kFusedOptimizerCut);
                   for (std::size_t i = 0; i < g.ops.size(); ++i)
                     if (optimizer(g.ops[i]) && g.ops[i].launch >= 0) s.atom_dur[static_cast<std::size_t>(g.ops[i].launch)] /= 4;
                 },
                 "the optimizer's kernels and launches as one multi-tensor step makes them", c.partition.mix.fused_optimizer_seen, {}});
}

// Twice and four times the micro-batch, the global batch kept by accumulating fewer micro-batches:
// the per-step host and launch costs are paid once for more samples. Left out of the plan: a
// different batch is a different experiment (and needs the activation memory the trace does not
// show), so it is priced on its own.
void add_batch_models(const Context& c, std::vector<Model>& out) {
  const Graph& g = c.g;
  if (count_atoms(g, AtomKind::Launch) == 0) return;
  Model m{LeverId::MicroBatch, "batch", 0.3, nullptr,
          "each step processes N times the samples: the host's dispatch and launches are paid once for them, "
          "the GPU's work, the batches' loading and side work grow N times (the optimizer's and collectives' "
          "share a sample, which shrinks too, is not counted); the time per sample compared",
          false, {}};
  for (const double factor : {2.0, 4.0})
    m.settings.push_back({fmt::format("x{}", factor), [&g, factor](Scenario& s) { grow_micro_batch(g, s, factor); }});
  m.max_headline_setting = 0;  // twice the micro-batch: more may not fit the memory the trace does not show
  m.setting_format = "{} the micro-batch: {:.2f}x per sample (the activation memory grows with it)";
  m.in_plan = false;
  out.push_back(std::move(m));
}

void add_sync_models(const Context& c, std::vector<Model>& out) {
  const Graph& g = c.g;
  const bool any = std::any_of(g.atoms.begin(), g.atoms.end(), [](const Atom& a) { return a.kind == AtomKind::Sync && a.waited && !a.queue_wait; });
  if (!any) return;
  out.push_back({LeverId::RemoveItem, "sync", 0.25,
                 [&g](Scenario& s) {
                   release_syncs(g, s, KeepLast::WhereSeveral);
                   drop_reads(g, s);
                 },
                 "the reads in the step go (each .item()'s copy and wait) and the host runs ahead of the GPU; a "
                 "step with several keeps its last (the loss read once a step)",

                 false, {}});
  out.push_back({LeverId::SyncOncePerStep, "sync", 0.25, [&g](Scenario& s) { release_syncs(g, s, KeepLast::Always); },
                 "one sync per step, at its end", false, {}});
}

void add_comm_models(const Context& c, std::vector<Model>& out) {
  const Graph& g = c.g;
  auto comm = [](const Op& o) { return o.kind == OpKind::Comm; };
  if (count_ops(g, comm) == 0) return;
  const RankFacts& f = c.facts;
  auto grads = [&f](const Op& o) { return o.kind == OpKind::Comm && f.comm_role(o.event) == CommRole::GradientSync; };
  auto gathers = [&f](const Op& o) { return o.kind == OpKind::Comm && f.comm_role(o.event) == CommRole::ParamGather; };
  out.push_back({LeverId::DdpBuckets, "comm", 0.5, [&c, grads](Scenario& s) { overlap_comm_as_ready(c.g, c.facts, s, grads); },
                 "each gradient all-reduce issued as its bucket's gradients are computed (the j-th of n after "
                 "(j+1)/n of the backward) and run under the rest of the backward",
                 false, {}});
  out.push_back({LeverId::AccumulateAllreduce, "comm-accumulate", 0.3,
                 [&g, grads](Scenario& s) { scale_ops(g, s, grads, 1.0 / kAccumulation); },
                 "one gradient all-reduce every 4 micro-batches", false, {}});
  out.push_back({LeverId::FsdpPrefetch, "comm", 0.5,
                 [&c, gathers](Scenario& s) { overlap_comm(c.g, c.facts, s, gathers); },
                 "parameter all-gathers issued ahead, under the compute before them", count_ops(g, gathers) == 0, {}});
}

void add_side_models(const Context& c, std::vector<Model>& out) {
  const Graph& g = c.g;
  if (count_atoms(g, AtomKind::Side) == 0) return;
  out.push_back({LeverId::AsyncCheckpoint, "side", 0.3,
                 [&g](Scenario& s) {
                   for (std::size_t i = 0; i < g.atoms.size(); ++i)
                     if (g.atoms[i].kind == AtomKind::Side)
                       s.atom_dur[i] = static_cast<ns_t>(static_cast<double>(s.atom_dur[i]) * kAsyncSaveShare);
                 },
                 "the save leaves the loop: only a snapshot to host memory stays in it", false, {}});
}

std::vector<Model> lever_models(const Context& c) {
  std::vector<Model> m;
  add_loader_models(c, m);
  add_copy_models(c, m);
  add_precision_models(c, m);
  add_launch_models(c, m);
  add_batch_models(c, m);
  add_sync_models(c, m);
  add_comm_models(c, m);
  add_side_models(c, m);
  return m;
}

// A lever with settings predicts each; its own figure is the smallest setting within 5% of the
// best gain among those up to Model::max_headline_setting (more workers than that cost memory and
// cores the trace does not show).
constexpr double kNearBest = 0.95;

Prediction predict(const Context& c, const Model& m) {
  Prediction p;
  p.id = m.id;
  p.modelled = true;
  p.held = m.held;
  p.uncertainty = m.uncertainty;
  p.basis = m.basis;
  if (m.held) return p;
  if (m.settings.empty()) {
    Scenario s = c.base;
    m.apply(s);
    p.speedup = speedup_of(c, s);
    return p;
  }
  for (const auto& [value, apply] : m.settings) {
    Scenario s = c.base;
    apply(s);
    p.by_setting.push_back({value, speedup_of(c, s)});
  }
  double best = 1;
  for (std::size_t k = 0; k <= m.max_headline_setting && k < p.by_setting.size(); ++k) best = std::max(best, p.by_setting[k].second);
  for (const auto& [value, speedup] : p.by_setting)
    if (speedup - 1 >= kNearBest * (best - 1)) {
      p.speedup = speedup;
      p.basis += "; " + fmt::format(fmt::runtime(m.setting_format), value, speedup);
      break;
    }
  return p;
}

const Model* device_model_of(const std::vector<Model>& models, LeverId id) {
  for (const Model& m : models)
    if (m.id == id) return &m;
  return nullptr;
}

// The setting a plan uses: the one the lever's prediction chose.
void apply_chosen(const Model& m, const Prediction& p, Scenario& s) {
  if (m.settings.empty()) return m.apply(s);
  for (std::size_t k = 0; k < m.settings.size() && k < p.by_setting.size(); ++k)
    if (p.by_setting[k].second == p.speedup) return m.settings[k].second(s);
  m.settings.back().second(s);
}

}  // namespace

std::vector<Prediction> lever_predictions(const Context& c) {
  std::vector<Prediction> out;
  for (const Model& m : lever_models(c)) out.push_back(predict(c, m));
  return out;
}

Plan make_plan(const Context& c, const std::vector<Prediction>& levers) {
  const std::vector<Model> models = lever_models(c);
  // Candidates by their own gain, best first; each joins the replay of those before it if it
  // still gains, one per group of alternatives: one replay per candidate.
  std::vector<std::pair<const Prediction*, const Model*>> order;
  for (const Prediction& p : levers)
    if (const Model* m = p.id ? device_model_of(models, *p.id) : nullptr; m && m->in_plan && !p.held && p.speedup >= 1 + kMinGain)
      order.push_back({&p, m});
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first->speedup > b.first->speedup; });
  Plan plan;
  plan.applied = c.base;
  std::set<std::string> groups;
  double now = 1;
  for (const auto& [p, m] : order) {
    if (groups.count(m->group)) continue;
    Scenario s = plan.applied;
    apply_chosen(*m, *p, s);
    Replayed r = replay(c.g, s);
    const double v = r.span > 0 ? static_cast<double>(c.base_span) / static_cast<double>(r.span) : 1;
    if (v < now * (1 + kMinGain)) continue;
    plan.applied = std::move(s);
    plan.replayed = std::move(r);
    groups.insert(m->group);
    now = v;
    plan.steps.push_back({m->id, v});
  }
  return plan;
}

}  // namespace stepscope::whatif
