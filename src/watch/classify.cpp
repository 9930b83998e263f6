// The rules that turn a sample series into a verdict. Order matters: the GPU's own readings say
// whether it is fed; when it is not, the host readings say what starves it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stepscope/watch.hpp"

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

GpuPicture gpu_picture(const std::vector<GpuStats>& all) {
  std::vector<const GpuStats*> chosen;
  for (const auto& g : all)
    if (g.used_by_target && g.util_mean) chosen.push_back(&g);
  if (chosen.empty())
    for (const auto& g : all)
      if (g.util_mean) chosen.push_back(&g);
  GpuPicture p;
  if (chosen.empty()) return p;
  p.present = true;
  p.devices = int(chosen.size());
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

LiveFinding input_bound(const HostStats& h, const GpuPicture* g) {
  LiveFinding f;
  f.rule = "input-bound";
  if (g) {
    f.title = "Input-bound: the GPU waits while one CPU thread is pegged preparing data";
    f.confidence = sawtooth(*g) ? Confidence::High : Confidence::Medium;
    gpu_util_evidence(f, *g);
  } else {
    f.title =
        "CPU-pegged: one thread saturates a core (a data-loading bottleneck if a GPU waits on it)";
    f.confidence = Confidence::Medium;
  }
  pegged_evidence(f, h);
  cpu_evidence(f, h);
  f.next_step = fmt::format(
      "Load data in parallel: DataLoader(num_workers={} (usable cores - 1), "
      "persistent_workers=True, "
      "pin_memory=True). If the pegged thread is already a worker, move the heavy transform to "
      "the GPU or cache decoded samples. See what the thread runs first.",
      std::max(1, suggested_threads(h) - 1));
  f.command = fmt::format("py-spy top --pid {}", h.top_process_pid);
  return f;
}

LiveFinding oversubscribed(const HostStats& h, const HostSignals& s, const TargetInfo& target,
                       const GpuPicture* g) {
  LiveFinding f;
  f.rule = "oversubscribed";
  f.title = "Thread oversubscription: many threads fight over few cores";
  f.confidence = (s.invol_per_core || s.cgroup_throttled) ? Confidence::High : Confidence::Medium;
  if (g) gpu_util_evidence(f, *g);
  oversubscription_evidence(f, h, s, target);
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

LiveFinding io_bound(const HostStats& h, const GpuPicture* g) {
  LiveFinding f;
  f.rule = "io-bound";
  f.title = g ? "I/O-bound: GPU and CPU both low while the job waits on storage"
              : "I/O-bound: the CPU is low while the job waits on storage";
  f.confidence = g ? Confidence::High : Confidence::Medium;
  if (g) gpu_util_evidence(f, *g);
  io_evidence(f, h);
  cpu_evidence(f, h);
  f.next_step =
      "Storage delivers too slowly: stage the data set on local NVMe, pack many small files into "
      "shards (tar/WebDataset), and raise prefetch_factor so bursts hide. More CPU workers will "
      "not help until the bytes arrive faster.";
  f.command = h.top_process_pid ? fmt::format("pidstat -d -p {} 1 5", h.top_process_pid)
                                : std::string("iostat -x 1 5");
  return f;
}

LiveFinding host_saturated(const HostStats& h, const GpuPicture* g) {
  LiveFinding f;
  f.rule = "host-cpu-bound";
  f.title = "Host CPU-bound: the job uses every core it may use";
  f.confidence = g ? Confidence::High : Confidence::Medium;
  if (g) gpu_util_evidence(f, *g);
  cpu_evidence(f, h);
  f.next_step =
      "The CPU side is saturated: move per-sample transforms to the GPU (DALI, "
      "torchvision.transforms.v2 on tensors), cache decoded data, or give the job more cores.";
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
  f.confidence = Confidence::Medium;
  cpu_evidence(f, h);
  io_evidence(f, h);
  f.next_step =
      "The job is not working. See where each thread waits: a lock, the network, another rank "
      "in a collective, or a finished loop.";
  f.command = fmt::format("py-spy dump --pid {}", h.top_process_pid);
  return f;
}

LiveFinding no_host_bottleneck(const HostStats& h) {
  LiveFinding f;
  f.rule = "no-host-bottleneck";
  f.title = "No host-side bottleneck; without GPU readings the GPU side cannot be judged";
  f.confidence = Confidence::Low;
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
  if (h && s && s->cgroup_throttled && !already("oversubscribed")) {
    LiveFinding f;
    f.rule = "cgroup-throttled";
    f.title = "The cgroup CPU quota throttles the job";
    f.confidence = Confidence::High;
    f.evidence.push_back({"cgroup.throttled", h->cgroup_throttled_pct.value_or(0), "%",
                          "quota periods in which the cgroup was throttled"});
    f.next_step = "Size thread pools and workers to the quota, or raise the quota.";
    c.others.push_back(f);
  }
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
    if (s->pegged) return input_bound(*h, gp);
    if (s->quiet && (s->io_own || s->io_machine)) return io_bound(*h, gp);
    if (s->saturated) return host_saturated(*h, gp);
  }
  if (g.mem_used_ratio.value_or(0) >= t::kMemoryFullRatio && g.util_mean < t::kGpuStarvedUtilPct)
    return memory_full(g);
  return gpu_underfed(g, h);
}

LiveFinding host_only_verdict(const HostStats& h, const HostSignals& s, const Series& series) {
  if (s.oversubscribed) return oversubscribed(h, s, series.target, nullptr);
  if (s.pegged) return input_bound(h, nullptr);
  // Without a GPU to confirm starvation, only the target's own I/O counts: busy disks on a
  // shared machine may belong to someone else.
  if (s.quiet && s.io_own) return io_bound(h, nullptr);
  if (s.saturated) return host_saturated(h, nullptr);
  if (s.idle) return idle(h);
  return no_host_bottleneck(h);
}

}  // namespace

Classification classify(const Series& series) {
  Classification c;
  c.gpus = gpu_stats(series);
  c.host = host_stats(series);
  std::optional<HostSignals> signals;
  if (c.host) signals = host_signals(*c.host);
  GpuPicture g = gpu_picture(c.gpus);
  if (g.present)
    c.verdict = gpu_verdict(g, c.host, signals, series);
  else if (c.host)
    c.verdict = host_only_verdict(*c.host, *signals, series);
  else
    c.verdict = nothing_to_judge();
  add_others(c, g, c.host, signals, series);
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
