// The rules that turn a sample series into a verdict. Order matters: the GPU's own readings say
// whether it is fed; when it is not, the host readings say what starves it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stepscope/watch.hpp"
#include "stepscope/watch/confidence.hpp"

namespace stepscope::watch {

namespace t = thresholds;

namespace {

// The GPU picture, averaged over the devices the target uses (all devices when the target's
// processes could not be matched, e.g. in containers without PID visibility or offline logs).
struct GpuPicture {
  bool present = false;
  double util_mean = 0;
  double util_std = 0;
  std::optional<double> swing_share;
  std::optional<double> clock_ratio;
  std::optional<double> power_ratio;
  std::optional<double> mem_used_ratio;
  double throttled_share = 0;
  std::uint64_t throttle_reasons = 0;
  int devices = 0;
  std::vector<int> indices;  // the devices the picture averages
};

std::optional<double> mean_of(const std::vector<const GpuStats*>& gs,
                              std::optional<double> GpuStats::*field) {
  double sum = 0;
  int n = 0;
  for (const auto* g : gs)
    if (g->*field) {
      sum += *(g->*field);
      ++n;
    }
  if (n == 0) return std::nullopt;
  return sum / n;
}

// When the source can attribute GPU contexts to processes and none of the watched ones holds
// any, the devices on the machine belong to other work: judging them would blame this job for
// another job's GPU.
bool devices_belong_to_others(const std::vector<GpuStats>& all, const Series& series) {
  if (!series.gpu_pids_matchable) return false;
  return std::none_of(all.begin(), all.end(), [](const GpuStats& g) { return g.used_by_target; });
}

GpuPicture gpu_picture(const std::vector<GpuStats>& all, const Series& series) {
  GpuPicture p;
  if (devices_belong_to_others(all, series)) return p;
  std::vector<const GpuStats*> chosen;
  for (const auto& g : all)
    if (g.used_by_target && g.util_mean) chosen.push_back(&g);
  if (chosen.empty())
    for (const auto& g : all)
      if (g.util_mean) chosen.push_back(&g);
  if (chosen.empty()) return p;
  p.present = true;
  p.devices = int(chosen.size());
  for (const auto* g : chosen) p.indices.push_back(g->index);
  p.util_mean = *mean_of(chosen, &GpuStats::util_mean);
  p.util_std = mean_of(chosen, &GpuStats::util_std).value_or(0);
  p.swing_share = mean_of(chosen, &GpuStats::swing_share);
  p.clock_ratio = mean_of(chosen, &GpuStats::sm_clock_ratio);
  p.power_ratio = mean_of(chosen, &GpuStats::power_ratio);
  for (const auto* g : chosen) {
    if (g->mem_used_ratio)
      p.mem_used_ratio = std::max(p.mem_used_ratio.value_or(0), *g->mem_used_ratio);
    p.throttled_share = std::max(p.throttled_share, g->throttled_share);
    p.throttle_reasons |= g->throttle_reasons_seen;
  }
  return p;
}

bool sawtooth(const GpuPicture& g) { return g.swing_share.value_or(0) >= t::kSawtoothSwingShare; }

// The host signals, each a yes/no with the numbers kept for the evidence.
struct HostSignals {
  bool pegged = false;
  bool oversubscribed = false;
  bool saturated = false;
  bool io_own = false;      // the target itself waits on or moves storage
  bool io_machine = false;  // the machine's storage is busy (may be someone else)
  bool quiet = false;
  bool idle = false;
  bool waiting = false;         // some CPU, no storage: the job sleeps between short bursts
  bool multi_threaded = false;  // the CPU load is spread over several busy threads
  bool cgroup_throttled = false;
  double demand_ratio = 0;
  std::optional<double> invol_per_core;
};

HostSignals host_signals(const HostStats& h) {
  HostSignals s;
  double cores = std::max(h.effective_cpus, 1.0);
  s.demand_ratio = h.demand_cores / cores;
  if (h.involuntary_cs_per_s) s.invol_per_core = *h.involuntary_cs_per_s / cores;
  s.cgroup_throttled = h.cgroup_throttled_pct.value_or(0) >= t::kCgroupThrottledPct;
  bool preempted = s.invol_per_core.value_or(0) >= t::kOversubscribedInvolPerCore;
  s.oversubscribed = h.cpus_known && s.demand_ratio >= t::kOversubscribedDemandRatio &&
                     h.max_threads >= t::kOversubscribedMinThreads &&
                     (preempted || s.cgroup_throttled);
  // On a crowded machine a thread that blocks on storage also queues for a core after every
  // completion; one that is often seen blocked in I/O is not a CPU-bound thread.
  bool thread_pegged = h.top_thread_demand_pct >= t::kPeggedDemandPct &&
                       h.top_thread_io_share < t::kPeggedMaxIoShare;
  bool process_pegged = h.top_process_cpu_pct >= t::kPeggedDemandPct &&
                        h.top_process_cpu_pct <= t::kPeggedProcessCeilingPct;
  s.pegged = thread_pegged || process_pegged;
  s.saturated = h.cpus_known && h.cpu_mean_pct / 100.0 >= t::kHostSaturatedRatio * cores;
  double own_io = h.read_mbps.value_or(0) + h.write_mbps.value_or(0);
  s.io_own = h.io_blocked_threads >= t::kIoBlockedThreads || own_io >= t::kTargetIoMbps;
  s.io_machine = h.system_iowait_pct.value_or(0) >= t::kIowaitPct ||
                 h.disk_busy_pct.value_or(0) >= t::kDiskBusyPct;
  s.quiet = h.cpu_mean_pct < t::kQuietCpuPct;
  s.idle = h.cpu_mean_pct < t::kIdleCpuPct && !s.io_own;
  s.waiting = s.quiet && !s.idle && !s.io_own && !s.pegged;
  s.multi_threaded = h.busy_threads >= 2;
  return s;
}

std::string cores_text(double cores) {
  return std::abs(cores - std::round(cores)) < 0.05 ? fmt::format("{:.0f}", cores)
                                                    : fmt::format("{:.1f}", cores);
}

int suggested_threads(const HostStats& h) { return std::max(1, int(std::floor(h.effective_cpus))); }

// --- evidence ---------------------------------------------------------------------------------

void gpu_util_evidence(LiveFinding& f, const GpuPicture& g) {
  f.evidence.push_back({"gpu.util.mean", g.util_mean, "%", "share of time a kernel was running"});
  f.evidence.push_back({"gpu.util.std", g.util_std, "pp", "spread of GPU-Util between samples"});
  if (g.swing_share)
    f.evidence.push_back(
        {"gpu.util.swing_share", *g.swing_share * 100, "%",
         fmt::format("transitions swinging by >= {:.0f} points", t::kSawtoothSwingPct)});
}

void gpu_power_evidence(LiveFinding& f, const GpuPicture& g) {
  if (g.clock_ratio)
    f.evidence.push_back(
        {"gpu.sm_clock.ratio", *g.clock_ratio * 100, "%", "SM clock vs its maximum"});
  if (g.power_ratio)
    f.evidence.push_back(
        {"gpu.power.ratio", *g.power_ratio * 100, "%", "board power vs its limit"});
}

void pegged_evidence(LiveFinding& f, const HostStats& h) {
  if (h.top_thread_tid != 0)
    f.evidence.push_back({"host.top_thread.demand", h.top_thread_demand_pct, "% of a core",
                          fmt::format("thread {} '{}' (on CPU {:.0f}%, rest waiting for a core)",
                                      h.top_thread_tid, h.top_thread_comm, h.top_thread_cpu_pct)});
  f.evidence.push_back({"host.top_process.cpu", h.top_process_cpu_pct, "% of a core",
                        fmt::format("process {} '{}'", h.top_process_pid, h.top_process_comm)});
}

void cpu_evidence(LiveFinding& f, const HostStats& h) {
  f.evidence.push_back({"host.cpu.mean", h.cpu_mean_pct, "% of a core", "the whole process tree"});
  f.evidence.push_back({"host.cpus.usable", h.effective_cpus, "cores",
                        "online, affinity and cgroup quota, whichever is smallest"});
}

void io_evidence(LiveFinding& f, const HostStats& h) {
  f.evidence.push_back({"host.threads.in_io", h.io_blocked_threads, "threads",
                        "mean threads blocked in uninterruptible I/O (state D)"});
  if (h.read_mbps || h.write_mbps)
    f.evidence.push_back({"host.target_io", h.read_mbps.value_or(0) + h.write_mbps.value_or(0),
                          "MB/s", "the tree's own storage reads + writes"});
  if (h.system_iowait_pct)
    f.evidence.push_back({"system.iowait", *h.system_iowait_pct, "%", "CPU idle with I/O pending"});
  if (h.disk_busy_pct)
    f.evidence.push_back({"system.disk.busy", *h.disk_busy_pct, "%", "busiest disk's busy time"});
}

void oversubscription_evidence(LiveFinding& f, const HostStats& h, const HostSignals& s,
                               const TargetInfo& target) {
  f.evidence.push_back(
      {"host.demand_ratio", s.demand_ratio, "x",
       fmt::format("threads wanting a core vs {} usable cores", cores_text(h.effective_cpus))});
  f.evidence.push_back({"host.threads.max", double(h.max_threads), "threads", "in the tree"});
  if (s.invol_per_core)
    f.evidence.push_back({"host.involuntary_cs", *s.invol_per_core, "/s per core",
                          "preemptions: the scheduler takes the core away"});
  if (h.cgroup_throttled_pct)
    f.evidence.push_back({"cgroup.throttled", *h.cgroup_throttled_pct, "%",
                          "quota periods in which the cgroup was throttled"});
  if (target.omp_num_threads)
    f.evidence.push_back({"env.OMP_NUM_THREADS", std::atof(target.omp_num_threads->c_str()),
                          "threads", "set in the target's environment"});
}

std::string profile_command() {
  return "record 5 steps with torch.profiler(schedule=schedule(wait=1, warmup=1, active=3), "
         "on_trace_ready=tensorboard_trace_handler('./tb_trace')), then: stepscope analyze "
         "./tb_trace";
}

// --- findings --------------------------------------------------------------------------------

LiveFinding gpu_bound(const GpuPicture& g) {
  LiveFinding f;
  f.rule = "gpu-bound";
  bool steady = g.util_std <= t::kSteadyUtilStdPct;
  bool clocks_known = g.clock_ratio || g.power_ratio;
  f.title = "GPU-bound: the GPU is busy and fed; only faster GPU work speeds this up";
  f.basis.margins.push_back(
      {"gpu.util.mean", g.util_mean, t::kGpuBusyUtilPct, 100 - t::kGpuBusyUtilPct});
  if (!steady || !clocks_known)
    f.basis.ceiling_reason = !clocks_known ? "no SM clock or power readings to confirm real work"
                                           : "GPU-Util varies between samples";
  f.confidence = (steady && clocks_known)   ? Confidence::High
                 : (steady || clocks_known) ? Confidence::Medium
                                            : Confidence::Low;
  gpu_util_evidence(f, g);
  gpu_power_evidence(f, g);
  f.next_step =
      "Adding loader workers will not help. Levers left: bf16 autocast, fused attention (SDPA), "
      "torch.compile, a larger card. Record a profile and sort kernels by GPU time to pick one.";
  f.command = profile_command();
  return f;
}

LiveFinding utilisation_lies(const GpuPicture& g) {
  LiveFinding f;
  f.rule = "utilisation-lies";
  f.title =
      "GPU-Util is high but clocks/power say the SMs are mostly idle: a trickle of small kernels";
  f.confidence = Confidence::Medium;
  gpu_util_evidence(f, g);
  gpu_power_evidence(f, g);
  f.next_step =
      "GPU-Util only says some kernel was running. Feed bigger kernels: raise the micro-batch, "
      "torch.compile (mode='reduce-overhead' uses CUDA graphs to cut launch overhead). Confirm "
      "launch overhead in a trace first.";
  f.command = "nvidia-smi dmon -s pucvmet -d 1 -c 10; then " + profile_command();
  return f;
}

LiveFinding throttled(const GpuPicture& g) {
  LiveFinding f;
  f.rule = "throttled";
  f.title = fmt::format("GPU clocks held down by {}", throttle::describe(g.throttle_reasons));
  f.confidence = Confidence::High;
  f.evidence.push_back({"gpu.throttled_share", g.throttled_share * 100, "%",
                        "samples with a power or thermal slowdown reason"});
  gpu_power_evidence(f, g);
  f.next_step =
      "The card runs below its rated clocks: check cooling and the power cap before tuning code; "
      "results measured on a throttled card are not comparable with a healthy one.";
  f.command = "nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE";
  return f;
}

LiveFinding memory_full(const GpuPicture& g) {
  LiveFinding f;
  f.rule = "memory-full-low-util";
  f.title = "GPU memory is nearly full while the GPU is mostly idle";
  f.confidence = Confidence::Medium;
  f.evidence.push_back({"gpu.memory.used_ratio", g.mem_used_ratio.value_or(0) * 100, "%",
                        "peak memory used vs total"});
  gpu_util_evidence(f, g);
  f.next_step =
      "A full card with idle SMs points at the caching allocator retrying or fragmenting, or at "
      "another process holding memory. Check num_alloc_retries in torch.cuda.memory_summary(); "
      "try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True or a smaller micro-batch.";
  f.command = "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv";
  return f;
}

// --- input-bound: both sides over the same window ---------------------------------------------

// Which samples show a busy host thread and an idle GPU at once.
struct Coincidence {
  bool aligned = false;       // host and GPU readings share samples (a live watch)
  int window_samples = 0;     // samples that carry both sides (or the thinner side of two logs)
  std::vector<double> times;  // t_s of the samples that showed it
};

// The busiest single thread of one sample (a process stands in for it when threads are unknown
// and its CPU fits in one core).
double sample_top_demand(const HostReading& h) {
  double top = 0;
  for (const auto& th : h.threads) top = std::max(top, th.cpu_pct + th.wait_pct.value_or(0));
  if (h.threads.empty())
    for (const auto& p : h.processes)
      if (p.cpu_pct <= t::kPeggedProcessCeilingPct)
        top = std::max(top, p.cpu_pct + p.wait_pct.value_or(0));
  return top;
}

std::optional<double> sample_gpu_util(const Sample& x, const std::vector<int>& indices) {
  double sum = 0;
  int n = 0;
  for (const auto& r : x.gpus)
    if (r.util_pct && std::find(indices.begin(), indices.end(), r.index) != indices.end()) {
      sum += *r.util_pct;
      ++n;
    }
  if (n == 0) return std::nullopt;
  return sum / n;
}

Coincidence coincidence(const Series& series, const GpuPicture& g) {
  Coincidence c;
  int host_samples = 0, gpu_samples = 0;
  std::vector<double> gpu_idle_times;
  for (const auto& x : series.samples) {
    auto util = sample_gpu_util(x, g.indices);
    bool gpu_idle = util && *util <= t::kGpuIdleSampleUtilPct;
    host_samples += x.host.has_value();
    gpu_samples += util.has_value();
    if (gpu_idle) gpu_idle_times.push_back(x.t_s);
    if (!util || !x.host) continue;
    c.aligned = true;
    ++c.window_samples;
    if (gpu_idle && sample_top_demand(*x.host) >= t::kPeggedDemandPct) c.times.push_back(x.t_s);
  }
  // Separate logs (a GPU log beside a host log) share no sample: only the window can be
  // compared, so the GPU's idle samples stand for the coincidence.
  if (!c.aligned) {
    c.window_samples = std::min(host_samples, gpu_samples);
    c.times = gpu_idle_times;
  }
  return c;
}

bool shows_input_bound(const HostSignals& s, const GpuPicture& g, const Coincidence& c) {
  bool gpu_waits = g.util_mean < t::kGpuStarvedUtilPct || sawtooth(g);
  int needed = std::min(t::kInputBoundMinCoincident, std::max(1, c.window_samples));
  return s.pegged && gpu_waits && int(c.times.size()) >= needed;
}

std::string times_text(const std::vector<double>& times) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < times.size() && i < kShown; ++i)
    out += fmt::format("{}{:.1f}", i ? ", " : "", times[i]);
  if (times.size() > kShown) out += fmt::format(", ... ({} in all)", times.size());
  return out;
}

void pegged_margin(LiveFinding& f, const HostStats& h) {
  if (h.top_thread_tid != 0)
    f.basis.margins.push_back(
        {"host.top_thread.demand", h.top_thread_demand_pct, t::kPeggedDemandPct});
  else
    f.basis.margins.push_back(
        {"host.top_process.cpu", h.top_process_cpu_pct, t::kPeggedDemandPct});
}

LiveFinding input_bound(const HostStats& h, const GpuPicture& g, const Coincidence& c) {
  LiveFinding f;
  f.rule = "input-bound";
  f.title = "Input-bound: the GPU waits while one CPU thread is pegged preparing data";
  f.confidence = sawtooth(g) ? Confidence::High : Confidence::Medium;
  if (!sawtooth(g))
    f.basis.ceiling_reason =
        "the GPU is low but not saw-toothed, and a steadily low GPU may also wait on "
        "synchronisation or other ranks; a profiler trace separates them";
  if (!c.aligned) {
    f.confidence = std::min(f.confidence, Confidence::Medium);
    f.basis.ceiling_reason =
        "host and GPU readings come from separate logs, taken to cover the same window; a live "
        "watch on the GPU node pairs them sample by sample";
  }
  gpu_util_evidence(f, g);
  pegged_evidence(f, h);
  cpu_evidence(f, h);
  f.evidence.push_back(
      {"window.coincident_samples", double(c.times.size()), "samples",
       c.aligned ? fmt::format("of {}: busy host thread and GPU at or below {:.0f}% at once "
                               "(t = {} s)",
                               c.window_samples, t::kGpuIdleSampleUtilPct, times_text(c.times))
                 : fmt::format("GPU samples at or below {:.0f}% (t = {} s, GPU log clock) while "
                               "the host log shows the thread pegged",
                               t::kGpuIdleSampleUtilPct, times_text(c.times))});
  f.shown_at_s = c.times;
  f.basis.samples = c.window_samples;
  pegged_margin(f, h);
  if (sawtooth(g))
    f.basis.margins.push_back(
        {"gpu.util.swing_share", g.swing_share.value_or(0), t::kSawtoothSwingShare});
  else
    f.basis.margins.push_back({"gpu.util.mean", g.util_mean, t::kGpuStarvedUtilPct});
  f.next_step = fmt::format(
      "Load data in parallel: DataLoader(num_workers={} (usable cores - 1), "
      "persistent_workers=True, "
      "pin_memory=True). If the pegged thread is already a worker, move the heavy transform to "
      "the GPU or cache decoded samples. See what the thread runs first.",
      std::max(1, suggested_threads(h) - 1));
  f.command = fmt::format("py-spy top --pid {}", h.top_process_pid);
  return f;
}

// --- host-side findings ------------------------------------------------------------------------

LiveFinding cpu_bound_thread(const HostStats& h) {
  LiveFinding f;
  f.rule = "cpu-bound-thread";
  f.title = h.top_thread_tid
                ? fmt::format("CPU-bound in one thread: thread {} '{}' keeps a core busy",
                              h.top_thread_tid, h.top_thread_comm)
                : fmt::format("CPU-bound in one thread: process {} '{}' keeps one core busy",
                              h.top_process_pid, h.top_process_comm);
  f.confidence = Confidence::High;
  pegged_evidence(f, h);
  cpu_evidence(f, h);
  pegged_margin(f, h);
  f.next_step =
      "Only this thread's work speeds the job up, and more cores will not: see what it runs, "
      "then vectorise or compile the hot loop, or split it across processes.";
  f.command = fmt::format("py-spy top --pid {}", h.top_process_pid);
  return f;
}

LiveFinding oversubscribed(const HostStats& h, const HostSignals& s, const TargetInfo& target,
                       const GpuPicture* g) {
  LiveFinding f;
  f.rule = "oversubscribed";
  f.title = "Thread oversubscription: many threads fight over few cores";
  f.confidence = (s.invol_per_core || s.cgroup_throttled) ? Confidence::High : Confidence::Medium;
  if (f.confidence != Confidence::High)
    f.basis.ceiling_reason = "no preemption counts (involuntary context switches) were read";
  if (g) gpu_util_evidence(f, *g);
  oversubscription_evidence(f, h, s, target);
  f.basis.margins.push_back({"host.demand_ratio", s.demand_ratio, t::kOversubscribedDemandRatio});
  if (s.invol_per_core.value_or(0) >= t::kOversubscribedInvolPerCore)
    f.basis.margins.push_back(
        {"host.involuntary_cs", *s.invol_per_core, t::kOversubscribedInvolPerCore});
  else if (s.cgroup_throttled)
    f.basis.margins.push_back(
        {"cgroup.throttled", h.cgroup_throttled_pct.value_or(0), t::kCgroupThrottledPct});
  int n = suggested_threads(h);
  f.next_step = fmt::format(
      "Cap the intra-op thread pools to the {} usable core(s): OMP_NUM_THREADS={} "
      "MKL_NUM_THREADS={} (or torch.set_num_threads({})), and one thread per DataLoader worker. "
      "Do not add workers: that adds threads.{}",
      cores_text(h.effective_cpus), n, n, n,
      target.omp_num_threads ? ""
                             : " OMP_NUM_THREADS is unset, so each pool sizes itself to every "
                               "core the machine has, not to the job's share.");
  f.command = fmt::format("OMP_NUM_THREADS={} MKL_NUM_THREADS={} {}", n, n,
                          target.command.empty() ? "<your training command>" : target.command);
  return f;
}

LiveFinding cgroup_throttled(const HostStats& h) {
  LiveFinding f;
  f.rule = "cgroup-throttled";
  f.title = "The cgroup CPU quota throttles the job";
  f.confidence = Confidence::High;
  f.evidence.push_back({"cgroup.throttled", h.cgroup_throttled_pct.value_or(0), "%",
                        "quota periods in which the cgroup was throttled"});
  cpu_evidence(f, h);
  f.basis.margins.push_back(
      {"cgroup.throttled", h.cgroup_throttled_pct.value_or(0), t::kCgroupThrottledPct});
  f.next_step = "Size thread pools and workers to the quota, or raise the quota.";
  f.command = "cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu.stat";
  return f;
}

void io_margin(LiveFinding& f, const HostStats& h) {
  double own_io = h.read_mbps.value_or(0) + h.write_mbps.value_or(0);
  Margin blocked{"host.threads.in_io", h.io_blocked_threads, t::kIoBlockedThreads};
  Margin traffic{"host.target_io", own_io, t::kTargetIoMbps};
  // The signal that fired is the one to grade; the stronger one when both did.
  bool blocked_fired = blocked.value >= blocked.threshold;
  bool traffic_fired = traffic.value >= traffic.threshold;
  if (blocked_fired && traffic_fired)
    f.basis.margins.push_back(blocked.distance() >= traffic.distance() ? blocked : traffic);
  else if (blocked_fired || traffic_fired)
    f.basis.margins.push_back(blocked_fired ? blocked : traffic);
  f.basis.margins.push_back({"host.cpu.mean", h.cpu_mean_pct, t::kQuietCpuPct});
}

LiveFinding io_bound(const HostStats& h, const GpuPicture* g) {
  LiveFinding f;
  f.rule = "io-bound";
  f.title = g ? "I/O-bound: GPU and CPU both low while the job waits on storage"
              : "I/O-bound: the CPU is low while the job waits on storage";
  f.confidence = Confidence::High;
  if (g) gpu_util_evidence(f, *g);
  io_evidence(f, h);
  cpu_evidence(f, h);
  io_margin(f, h);
  f.next_step =
      "Storage delivers too slowly: stage the data set on local NVMe, pack many small files into "
      "shards (tar/WebDataset), and raise prefetch_factor so bursts hide. More CPU workers will "
      "not help until the bytes arrive faster.";
  f.command = h.top_process_pid ? fmt::format("pidstat -d -p {} 1 5", h.top_process_pid)
                                : std::string("iostat -x 1 5");
  return f;
}

void host_cpu_margin(LiveFinding& f, const HostStats& h, const HostSignals& s) {
  Margin saturated{"host.cpu.mean", h.cpu_mean_pct,
                   t::kHostSaturatedRatio * std::max(h.effective_cpus, 1.0) * 100};
  Margin spread{"host.second_thread.demand", h.second_thread_demand_pct,
                t::kBusyThreadDemandPct};
  if (s.saturated && s.multi_threaded)
    f.basis.margins.push_back(saturated.distance() >= spread.distance() ? saturated : spread);
  else
    f.basis.margins.push_back(s.saturated ? saturated : spread);
}

LiveFinding host_cpu_bound(const HostStats& h, const HostSignals& s, const GpuPicture* g) {
  LiveFinding f;
  f.rule = "host-cpu-bound";
  f.title = s.saturated ? "Host CPU-bound: the job uses every core it may use"
                        : fmt::format("CPU-bound across threads: {} threads each keep a core busy",
                                      h.busy_threads);
  f.confidence = Confidence::High;
  if (g) gpu_util_evidence(f, *g);
  cpu_evidence(f, h);
  f.evidence.push_back({"host.threads.busy", double(h.busy_threads), "threads",
                        fmt::format("wanting at least {:.0f}% of a core each",
                                    t::kBusyThreadDemandPct)});
  host_cpu_margin(f, h, s);
  f.next_step =
      g ? "The CPU side is saturated: move per-sample transforms to the GPU (DALI, "
          "torchvision.transforms.v2 on tensors), cache decoded data, or give the job more cores."
        : "The CPU is the limit and the work is already spread over threads: profile where they "
          "spend it and cut per-item work, or give the job more cores.";
  f.command = h.top_process_pid ? fmt::format("py-spy top --pid {}", h.top_process_pid) : "";
  return f;
}

LiveFinding gpu_underfed(const GpuPicture& g, const std::optional<HostStats>& h) {
  LiveFinding f;
  f.rule = "gpu-underfed";
  bool starved = g.util_mean < t::kGpuStarvedUtilPct;
  gpu_util_evidence(f, g);
  if (!h) {
    f.title = starved ? "GPU starved; the host side was not recorded, so the cause is open"
                      : "GPU partly fed; the host side was not recorded, so the cause is open";
    f.confidence = Confidence::Low;
    f.basis.ceiling_reason = "the host side was not recorded";
    f.next_step = fmt::format(
        "{}Record the host next to the GPU: a pegged loader, busy disks or too many threads each "
        "call for a different fix.",
        sawtooth(g) ? "A saw-tooth GPU most often waits on the input pipeline. " : "");
    f.command =
        "top -b -d 1 -n 30 > top.log  (with the GPU log), then: stepscope triage dmon.log top.log";
    return f;
  }
  f.title = starved ? "GPU starved, yet the host is not busy: stalls between GPU work"
                    : "GPU partly fed: gaps between GPU work, no host resource saturated";
  f.confidence = Confidence::Medium;
  f.basis.ceiling_reason =
      "no host resource explains the gaps; only a trace shows which synchronisation it is";
  f.basis.margins.push_back({"gpu.util.mean", g.util_mean, t::kGpuBusyUtilPct});
  cpu_evidence(f, *h);
  f.next_step =
      "Nothing on the host is saturated, so look for synchronisation: .item()/.cpu()/print of a "
      "tensor each step, blocking copies without pin_memory, kernel-launch overhead, or waiting "
      "for other ranks. A trace shows which.";
  f.command = profile_command();
  return f;
}

LiveFinding idle(const HostStats& h) {
  LiveFinding f;
  f.rule = "idle";
  f.title = "Idle: the job barely uses CPU and does no I/O (waiting, sleeping or hung)";
  f.confidence = Confidence::High;
  cpu_evidence(f, h);
  io_evidence(f, h);
  f.basis.margins.push_back({"host.cpu.mean", h.cpu_mean_pct, t::kIdleCpuPct});
  f.next_step =
      "The job is not working. See where each thread waits: a lock, the network, another rank "
      "in a collective, or a finished loop.";
  f.command = fmt::format("py-spy dump --pid {}", h.top_process_pid);
  return f;
}

LiveFinding waiting(const HostStats& h) {
  LiveFinding f;
  f.rule = "waiting";
  f.title = "Waiting: the job works in short bursts and mostly sleeps, not on storage";
  f.confidence = Confidence::High;
  cpu_evidence(f, h);
  pegged_evidence(f, h);
  io_evidence(f, h);
  // Both edges matter: near the idle line it is idle, near the quiet line it is busy.
  f.basis.margins.push_back({"host.cpu.mean", h.cpu_mean_pct, t::kQuietCpuPct});
  f.basis.margins.push_back({"host.cpu.mean", h.cpu_mean_pct, t::kIdleCpuPct});
  f.next_step =
      "No host resource is saturated: the job waits on something else (a lock, the network, a "
      "timer, another process). See where its threads sleep.";
  f.command = fmt::format("py-spy dump --pid {}", h.top_process_pid);
  return f;
}

LiveFinding no_host_bottleneck(const HostStats& h) {
  LiveFinding f;
  f.rule = "no-host-bottleneck";
  f.title = "No host-side bottleneck; without GPU readings the GPU side cannot be judged";
  f.confidence = Confidence::Low;
  f.basis.ceiling_reason = "no host rule fired, so nothing here names the bottleneck";
  cpu_evidence(f, h);
  pegged_evidence(f, h);
  f.next_step =
      "The CPU is neither pegged, oversubscribed nor waiting on storage. Record GPU readings on "
      "the GPU host and triage them.";
  f.command = "nvidia-smi dmon -s pucvmet -o T -d 1 -c 30 > dmon.log; stepscope triage dmon.log";
  return f;
}

LiveFinding nothing_to_judge() {
  LiveFinding f;
  f.rule = "no-data";
  f.title = "No readings to judge";
  f.confidence = Confidence::Low;
  f.next_step = "Watch longer (--seconds) or give a log with GPU or host readings.";
  return f;
}

// --- further findings ------------------------------------------------------------------------

// Devices of one job that disagree: a straggler rank or uneven placement. Only the devices the
// target uses count when it is known to use any.
std::optional<LiveFinding> gpu_imbalance(const std::vector<GpuStats>& gpus) {
  bool any_used =
      std::any_of(gpus.begin(), gpus.end(), [](const GpuStats& g) { return g.used_by_target; });
  const GpuStats* lo = nullptr;
  const GpuStats* hi = nullptr;
  for (const auto& d : gpus) {
    if (!d.util_mean || (any_used && !d.used_by_target)) continue;
    if (!lo || *d.util_mean < *lo->util_mean) lo = &d;
    if (!hi || *d.util_mean > *hi->util_mean) hi = &d;
  }
  if (!lo || !hi || *hi->util_mean - *lo->util_mean <= t::kGpuImbalancePct) return std::nullopt;
  LiveFinding f;
  f.rule = "gpu-imbalance";
  f.title = fmt::format("GPUs disagree: GPU {} at {:.0f}% vs GPU {} at {:.0f}%", hi->index,
                        *hi->util_mean, lo->index, *lo->util_mean);
  f.confidence = Confidence::Medium;
  f.evidence.push_back(
      {"gpu.util.spread", *hi->util_mean - *lo->util_mean, "pp", "busiest minus idlest GPU"});
  f.next_step = "One rank lags or work is unevenly placed; compare per-rank traces.";
  f.command = "stepscope analyze <trace dir with one trace per rank>";
  return f;
}

// The job queues for cores on a machine that is busy with other work: its numbers understate it.
std::optional<LiveFinding> host_contended(const HostStats& h) {
  double wait_cores = std::max(0.0, h.demand_cores - h.cpu_mean_pct / 100.0);
  double wait_share = h.demand_cores > 0 ? wait_cores / h.demand_cores : 0;
  if (wait_share < t::kContendedWaitShare ||
      h.system_busy_pct.value_or(0) < t::kContendedSystemBusyPct)
    return std::nullopt;
  LiveFinding f;
  f.rule = "host-contended";
  f.title = "Other work on the host competes for the cores: the job often waits for one";
  f.confidence = Confidence::Medium;
  f.evidence.push_back({"host.wait_share", wait_share * 100, "%",
                        "of the job's CPU demand spent queued for a core"});
  f.evidence.push_back({"system.busy", *h.system_busy_pct, "%", "all cores of the machine"});
  f.next_step =
      "Readings on a shared, saturated host understate the job; find the other load or move the "
      "job.";
  f.command = "top -b -n 1 -o %CPU | head -20";
  return f;
}

void add_others(Classification& c, const GpuPicture& g, const std::optional<HostStats>& h,
                const std::optional<HostSignals>& s, const Series& series) {
  auto already = [&](const std::string& rule) {
    if (c.verdict.rule == rule) return true;
    return std::any_of(c.others.begin(), c.others.end(),
                       [&](const LiveFinding& f) { return f.rule == rule; });
  };
  if (g.present && g.throttled_share >= t::kThrottledShare && !already("throttled"))
    c.others.push_back(throttled(g));
  if (g.present && g.mem_used_ratio.value_or(0) >= t::kMemoryFullRatio &&
      g.util_mean < t::kGpuStarvedUtilPct && !already("memory-full-low-util"))
    c.others.push_back(memory_full(g));
  if (h && s && s->oversubscribed && !already("oversubscribed"))
    c.others.push_back(oversubscribed(*h, *s, series.target, g.present ? &g : nullptr));
  if (h && s && s->cgroup_throttled && !already("oversubscribed") &&
      !already("cgroup-throttled"))
    c.others.push_back(cgroup_throttled(*h));
  if (h && !already("oversubscribed"))
    if (auto f = host_contended(*h)) c.others.push_back(*f);
  if (auto f = gpu_imbalance(c.gpus)) c.others.push_back(*f);
}

LiveFinding gpu_verdict(const GpuPicture& g, const std::optional<HostStats>& h,
                    const std::optional<HostSignals>& s, const Series& series) {
  if (g.util_mean >= t::kGpuBusyUtilPct) {
    bool slowed =
        g.throttled_share >= t::kThrottledShare && g.clock_ratio.value_or(1) < t::kHighClockRatio;
    if (slowed) return throttled(g);
    bool power_low = g.power_ratio && *g.power_ratio < t::kLowPowerRatio;
    bool clock_low = g.clock_ratio && *g.clock_ratio < t::kHighClockRatio;
    if (power_low || clock_low) return utilisation_lies(g);
    return gpu_bound(g);
  }
  const GpuPicture* gp = &g;
  if (h && s) {
    if (s->oversubscribed) return oversubscribed(*h, *s, series.target, gp);
    Coincidence both = coincidence(series, g);
    if (shows_input_bound(*s, g, both)) return input_bound(*h, g, both);
    if (s->quiet && (s->io_own || s->io_machine)) return io_bound(*h, gp);
    if (s->saturated) return host_cpu_bound(*h, *s, gp);
  }
  if (g.mem_used_ratio.value_or(0) >= t::kMemoryFullRatio && g.util_mean < t::kGpuStarvedUtilPct)
    return memory_full(g);
  return gpu_underfed(g, h);
}

// With no GPU in view only the host can be judged: whether a GPU waits on this job is unknown,
// so no verdict here may claim a GPU side (input-bound, GPU-bound) or pull a GPU lever.
LiveFinding host_only_verdict(const HostStats& h, const HostSignals& s, const Series& series) {
  if (s.oversubscribed) return oversubscribed(h, s, series.target, nullptr);
  if (s.cgroup_throttled) return cgroup_throttled(h);
  if (s.pegged && !s.multi_threaded) return cpu_bound_thread(h);
  if (s.multi_threaded || s.saturated) return host_cpu_bound(h, s, nullptr);
  // Without a GPU to confirm starvation, only the target's own I/O counts: busy disks on a
  // shared machine may belong to someone else.
  if (s.quiet && s.io_own) return io_bound(h, nullptr);
  if (s.idle) return idle(h);
  if (s.waiting) return waiting(h);
  return no_host_bottleneck(h);
}

std::string gpu_unknown_reason(const Series& series, const std::vector<GpuStats>& gpus) {
  if (!series.gpu_observed || gpus.empty())
    return series.gpu_status.empty() ? "no GPU readings" : series.gpu_status;
  if (devices_belong_to_others(gpus, series))
    return "the GPUs on this machine are not in use by the watched process tree";
  return "the GPU readings carry no utilisation";
}

std::string gpu_how_to_find_out(const Series& series) {
  std::string pid = series.target.pid ? std::to_string(series.target.pid) : "<pid>";
  return fmt::format(
      "run `stepscope watch --pid {}` on the node whose GPU the job uses (NVML needs the NVIDIA "
      "driver there); or record `nvidia-smi dmon -s pucvmet -o DT -d 1` there over the same "
      "window and pass it to `stepscope triage` beside the host log; or record a profiler trace "
      "of a few steps and run `stepscope analyze` on it",
      pid);
}

// Each finding is graded on the samples behind it; a builder that knows better sets them.
int samples_behind(const LiveFinding& f, const Classification& c) {
  if (f.basis.samples > 0) return f.basis.samples;
  int n = c.host ? c.host->samples : 0;
  for (const auto& g : c.gpus) n = std::max(n, g.samples);
  return n;
}

void grade_all(Classification& c) {
  grade(c.verdict, samples_behind(c.verdict, c));
  for (auto& f : c.others) grade(f, samples_behind(f, c));
}

}  // namespace

Classification classify(const Series& series) {
  Classification c;
  c.gpus = gpu_stats(series);
  c.host = host_stats(series);
  std::optional<HostSignals> signals;
  if (c.host) signals = host_signals(*c.host);
  GpuPicture g = gpu_picture(c.gpus, series);
  c.gpu_in_view = g.present;
  if (!g.present) {
    c.gpu_unknown_reason = gpu_unknown_reason(series, c.gpus);
    c.gpu_how_to_find_out = gpu_how_to_find_out(series);
  }
  if (g.present)
    c.verdict = gpu_verdict(g, c.host, signals, series);
  else if (c.host)
    c.verdict = host_only_verdict(*c.host, *signals, series);
  else
    c.verdict = nothing_to_judge();
  add_others(c, g, c.host, signals, series);
  grade_all(c);
  return c;
}

const char* to_string(Confidence c) {
  switch (c) {
    case Confidence::Low:
      return "low";
    case Confidence::Medium:
      return "medium";
    case Confidence::High:
      return "high";
  }
  return "?";
}

}  // namespace stepscope::watch
