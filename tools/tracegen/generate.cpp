// Drives generation: the cross-rank collective schedule, then each rank's trace streamed to
// disk step by step, with the ground truth of every step written alongside.
#include <algorithm>
#include <deque>
#include <filesystem>
#include <stdexcept>

#include "ground_truth.hpp"
#include "kineto_writer.hpp"
#include "model.hpp"
#include "partition.hpp"
#include "rng.hpp"
#include "tracegen.hpp"

namespace stepscope::tracegen {
namespace {

// The first step starts days after baseTimeNanoseconds, like a long-running job.
constexpr ns_t kFirstStepNs = 1'212'075'529'876'817;

ns_t first_step_start(const Params& p, int rank) {
  Rng rng(p.seed, 0x736b6577ULL, static_cast<std::uint64_t>(rank));
  return kFirstStepNs + static_cast<ns_t>(rng.next() % 40'000);  // ranks start within 40 µs
}

// Host time between one ProfilerStep's end and the next one's start (profiler.step()).
ns_t step_gap(const Params& p, int rank, int index) {
  Rng rng(p.seed, 0x676170ULL, static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(index));
  return rng.vary(35'000, 0.2);
}

ns_t next_step_start(const Params& p, int rank, int index, const StepResult& res) {
  return std::max(res.host_end, res.window_end) + step_gap(p, rank, index);
}

// When each bucket's all-reduce ends, agreed by all ranks: the last rank to arrive plus the
// transfer. Needs a dry run of every rank up to its collectives, step by step.
class CollectiveSchedule {
 public:
  explicit CollectiveSchedule(const Params& p) {
    if (!has_collectives(p) || p.platform == Platform::Cpu) return;
    std::vector<ns_t> starts(static_cast<std::size_t>(p.ranks));
    for (int r = 0; r < p.ranks; ++r) starts[static_cast<std::size_t>(r)] = first_step_start(p, r);
    std::vector<Event> scratch;
    ends_.resize(static_cast<std::size_t>(p.steps));
    for (int s = 0; s < p.steps; ++s) plan_step(p, s, starts, scratch);
  }
  const std::vector<ns_t>* ends(int index) const {
    return ends_.empty() ? nullptr : &ends_[static_cast<std::size_t>(index)];
  }

 private:
  void plan_step(const Params& p, int s, std::vector<ns_t>& starts, std::vector<Event>& scratch) {
    std::vector<ns_t> latest;
    for (int r = 0; r < p.ranks; ++r) {
      Counters ids;
      StepContext ctx{&p, r, s, starts[static_cast<std::size_t>(r)], nullptr};
      const StepResult res = build_step(ctx, scratch, ids);
      latest.resize(std::max(latest.size(), res.arrivals.size()), 0);
      for (std::size_t b = 0; b < res.arrivals.size(); ++b)
        latest[b] = std::max(latest[b], res.arrivals[b]);
    }
    std::vector<ns_t>& e = ends_[static_cast<std::size_t>(s)];
    e.resize(latest.size());
    ns_t prev = 0;
    for (std::size_t b = 0; b < latest.size(); ++b) {
      e[b] = std::max(latest[b], prev) + allreduce_duration(p, s, static_cast<int>(b));
      prev = e[b];
    }
    for (int r = 0; r < p.ranks; ++r) {
      Counters ids;
      StepContext ctx{&p, r, s, starts[static_cast<std::size_t>(r)], &e};
      const StepResult res = build_step(ctx, scratch, ids);
      starts[static_cast<std::size_t>(r)] = next_step_start(p, r, s, res);
    }
  }

  std::vector<std::vector<ns_t>> ends_;
};

// A step must own its window: nothing of it outside, nothing of a neighbour inside.
void check_step_bounds(std::span<const Event> events, ns_t w0, ns_t w1) {
  for (const Event& e : events)
    if (e.ts < w0 || e.end() > w1)
      throw std::logic_error("tracegen: an event of the step lies outside its window");
}

std::string rank_file_name(int rank, bool gzip) {
  return "rank-" + std::to_string(rank) + ".pt.trace.json" + (gzip ? ".gz" : "");
}

ns_t comm_kernel_ns(std::span<const Event> events) {
  ns_t sum = 0;
  for (const Event& e : events)
    if (e.type == EvType::Kernel && e.gclass == GpuClass::Comm) sum += e.dur;
  return sum;
}


// The host runs ahead of the GPU (no per-step sync): ProfilerStep#N on the host overlaps the GPU
// work of earlier steps, so a window is measured on the GPU: from the step's first GPU activity
// to the next step's first (the last step: to its last GPU activity). On one stream no GPU
// activity of another step falls inside; host events of up to host_ahead + 2 later steps can.
class GpuSideWindows {
 public:
  GpuSideWindows(const Params& p, int rank, GroundTruthWriter& truth) : p_(p), rank_(rank), truth_(truth) {}

  void add(std::span<const Event> events, const StepResult& res, int index) {
    steps_.push_back({std::vector<Event>(events.begin(), events.end()), res, index});
    while (steps_.size() > static_cast<std::size_t>(p_.host_ahead) + 3) {
      emit_front(steps_[1].res.gpu_start);
      steps_.pop_front();
    }
  }

  void finish() {
    while (!steps_.empty()) {
      emit_front(steps_.size() > 1 ? steps_[1].res.gpu_start : steps_.front().res.gpu_end);
      steps_.pop_front();
    }
  }

 private:
  struct Built {
    std::vector<Event> events;
    StepResult res;
    int index;
  };

  void emit_front(ns_t w1) {
    const Built& b = steps_.front();
    const ns_t w0 = b.res.gpu_start;
    if (w0 < 0 || w1 <= w0) throw std::logic_error("tracegen: a step has no GPU-side window");
    for (const Event& e : b.events)
      if (e.on_gpu() && e.end() > w1) throw std::logic_error("tracegen: GPU work of a step runs into the next");
    merged_.clear();
    for (const Built& s : steps_) merged_.insert(merged_.end(), s.events.begin(), s.events.end());
    StepTruth st;
    st.rank = rank_;
    st.step = p_.first_step + b.index;
    st.name = step_marker_name(p_, b.index);
    st.start = w0;
    st.end = w1;
    st.host_start = b.events[b.res.profiler_step].ts;
    st.host_end = b.res.host_end;
    st.categories = partition_window(merged_, w0, w1, true);
    st.comm_kernel_ns = comm_kernel_ns(b.events);
    st.verdict = step_verdict(p_, rank_, st.categories, st.end - st.start, &st.dominant);
    truth_.add(st);
  }

  const Params& p_;
  int rank_;
  GroundTruthWriter& truth_;
  std::deque<Built> steps_;
  std::vector<Event> merged_;
};

std::uint64_t write_rank(const Params& p, int rank, const CollectiveSchedule& coll,
                         const std::string& path, GroundTruthWriter& truth) {
  const RankLayout layout = rank_layout(p, rank);
  KinetoWriter w(p, layout, open_sink(path, p.gzip));
  w.write_header();
  Counters ids;
  std::vector<Event> events;
  ns_t t = first_step_start(p, rank);
  const ns_t session_start = t - 1'500'000;
  ns_t last_end = t;
  const bool gpu = p.platform != Platform::Cpu;
  const bool ahead = gpu && p.host_ahead > 0;
  GpuSideWindows gpu_windows(p, rank, truth);
  std::vector<ns_t> gpu_end;  // per step, for the host's queue-depth limit
  ns_t carried_tail = -1;
  for (int s = 0; s < p.steps; ++s) {
    StepContext ctx{&p, rank, s, t, coll.ends(s)};
    if (ahead) {
      ctx.gpu_free = s > 0 ? gpu_end[static_cast<std::size_t>(s - 1)] : 0;
      if (s >= p.host_ahead) ctx.launch_block_until = gpu_end[static_cast<std::size_t>(s - p.host_ahead)];
    }
    const StepResult res = build_step(ctx, events, ids);
    w.write_step(events);
    last_end = std::max(last_end, res.window_end);
    if (ahead) {
      gpu_end.push_back(res.gpu_end);
      gpu_windows.add(events, res, s);
      t = res.host_end + step_gap(p, rank, s);
      continue;
    }
    const ns_t w0 = events[res.profiler_step].ts;
    check_step_bounds(events, w0, res.window_end);
    StepTruth st;
    st.rank = rank;
    st.step = p.first_step + s;
    st.name = step_marker_name(p, s);
    st.start = w0;
    st.end = res.window_end;
    st.host_end = res.host_end;
    st.categories = partition_window(events, w0, res.window_end, gpu, carried_tail);
    st.comm_kernel_ns = comm_kernel_ns(events);
    carried_tail = gpu ? open_sync_tail(events) : -1;
    st.verdict = step_verdict(p, rank, st.categories, st.end - st.start, &st.dominant);
    truth.add(st);
    t = next_step_start(p, rank, s, res);
  }
  gpu_windows.finish();
  w.write_footer(session_start, last_end + 2'000'000);
  return w.bytes();
}

}  // namespace

std::string validate(const Params& p) {
  if (p.ranks < 1) return "--ranks must be at least 1";
  if (p.steps < 1) return "--steps must be at least 1";
  if (p.layers < 1) return "--layers must be at least 1";
  if (p.first_step < 0) return "--first-step must not be negative";
  if (p.jitter < 0 || p.jitter > 0.3) return "--jitter must be within [0, 0.3]";
  if (p.straggler_rank >= p.ranks) return "--straggler-rank must be below --ranks";
  if (p.straggler_factor <= 0) return "--straggler-factor must be positive";
  if (p.h2d_gbps <= 0 || p.busbw_gbps <= 0) return "bandwidths must be positive";
  if (p.buckets < 1) return "--buckets must be at least 1";
  for (double v : {p.gemm_us, p.eltwise_us, p.norm_us, p.tiny_us, p.opt_us, p.op_us, p.launch_us,
                   p.fetch_us, p.stall_us, p.epoch_stall_us, p.batch_mb, p.sync_gap_us, p.grad_mb,
                   p.ckpt_us, p.ckpt_mb, p.conv_us, p.transpose_us, p.attn_gemm_us, p.softmax_us,
                   p.opt_param_us, p.compile_us})
    if (v < 0) return "durations and sizes must not be negative";
  if (p.tiny_ops < 0 || p.extra_eltwise < 0 || p.zero_grad_memsets < 0 || p.opt_kernels < 0 || p.num_workers < 0 ||
      p.stall_every < 0 || p.epoch_steps < 0 || p.ckpt_every < 0 || p.convs < 0 || p.autotune_trials < 0 ||
      p.opt_params < 0 || p.recompile_every < 0 || p.eager_after < 0)
    return "counts must not be negative";
  if (p.bwd_factor <= 0) return "--bwd-factor must be positive";
  if (p.cold_start_us < 0 || p.ep_us < 0 || p.expert_gemm_us < 0) return "durations and sizes must not be negative";
  if (p.item_syncs < 0 || p.item_syncs > 3) return "--item-syncs must be within [0, 3]";
  if (p.host_ahead < 0 || p.host_ahead > 8) return "--host-ahead must be within [0, 8]";
  if (p.host_ahead > 0 && (p.ranks != 1 || p.item_syncs != 0 || p.mid_sync || p.ckpt_every > 0 ||
                           p.autotune_trials > 0 || p.anomaly || p.final_device_sync))
    return "--host-ahead needs one rank and no per-step sync (--item-syncs 0, no mid-step sync, checkpoint, "
           "autotuning, anomaly checks or final device sync)";
  if (p.kineto_dialect != "current" && p.kineto_dialect != "2021") return "--kineto-dialect must be current or 2021";
  if (!p.training && (p.ranks > 1 || p.fp8_moe)) return "--training 0 needs one rank and no MoE blocks";
  if (p.ep_nccl && !p.fp8_moe) return "--ep-nccl changes the MoE blocks' exchange: it needs --fp8-moe 1";
  if (p.host_ahead > 0 && p.readback_us > 0) return "--host-ahead needs no per-step sync (--readback-us 0)";
  if (p.workload != "model" && p.workload != "decode" && p.workload != "frontend" && p.workload != "harness")
    return "--workload must be model, decode, frontend or harness";
  if (p.workload != "model" && (p.ranks > 1 || p.fp8_moe || p.host_ahead > 0))
    return "--workload " + p.workload + " needs one rank, no MoE blocks and no --host-ahead";
  if ((p.workload == "decode" || p.workload == "harness") && p.platform != Platform::Cuda)
    return "--workload " + p.workload + " needs --platform cuda";
  if (p.workload == "frontend" && p.platform != Platform::Cpu)
    return "--workload frontend is a Python-only process: it needs --platform cpu";
  if (p.cuda_graph && p.workload != "decode") return "--cuda-graph needs --workload decode";
  if (p.step_marker.empty()) return "--step-marker must not be empty";
  if (p.warmup_steps < 0 || p.param_moves < 0 || p.requests < 1) return "counts must not be negative (--requests at least 1)";
  if (p.worker_threads < 0 || p.worker_threads > kMaxThreads - 2)
    return "--worker-threads must be within [0, " + std::to_string(kMaxThreads - 2) + "]";
  if (p.py_frames < 1 || p.py_frames > 4) return "--py-frames must be within [1, 4]";
  if (p.attn_us < 0 || p.param_move_mb < 0 || p.readback_us < 0 || p.session_s <= 0)
    return "durations and sizes must not be negative (--session-s positive)";
  if (p.copy_stream_blocking && (p.ranks > 1 || p.fp8_moe))
    return "--copy-stream-blocking needs one rank and no MoE blocks (every stream would serialise)";
  if (p.forward_range.empty()) return "--forward-range must not be empty";
  return {};
}

GenerateResult generate(const Params& p, const std::string& out_dir) {
  if (auto why = validate(p); !why.empty()) throw std::invalid_argument(why);
  std::filesystem::create_directories(out_dir);
  GenerateResult result;
  const CollectiveSchedule coll(p);
  result.ground_truth = (std::filesystem::path(out_dir) / "ground_truth.json").string();
  GroundTruthWriter truth(p, result.ground_truth);
  for (int r = 0; r < p.ranks; ++r) {
    const std::string name = rank_file_name(r, p.gzip);
    const std::string path = (std::filesystem::path(out_dir) / name).string();
    result.bytes_written += write_rank(p, r, coll, path, truth);
    result.files.push_back(path);
    truth.add_file(name);
  }
  truth.finish();
  return result;
}

}  // namespace stepscope::tracegen
