// Live and offline triage of a training job: "is the GPU the bottleneck, or is it starved?"
//
// A watch produces a series of samples (host counters of the target process tree and GPU
// readings); `classify` turns a series into a verdict. The classifier is a pure function of the
// series, so the live sampler (/proc + NVML) and the offline log readers (nvidia-smi, top,
// pidstat) share one set of rules and the rules can be tested on constructed series.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepscope/warning_ids.hpp"

namespace stepscope::watch {

// ---------------------------------------------------------------------------------------------
// Samples

// One GPU at one instant. Fields a source cannot read stay empty (not zero): a missing power
// reading must not look like an idle GPU.
struct GpuReading {
  int index = 0;
  std::string name;
  std::optional<double> util_pct;      // share of the interval in which any kernel ran
  std::optional<double> mem_util_pct;  // share of the interval the memory controller was busy
  std::optional<double> sm_clock_mhz;
  std::optional<double> sm_clock_max_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<double> temp_c;
  std::optional<double> mem_used_mib;
  std::optional<double> mem_total_mib;
  std::optional<double> pcie_rx_mbps;             // MB/s, host to device
  std::optional<double> pcie_tx_mbps;             // MB/s, device to host
  std::optional<std::uint64_t> throttle_reasons;  // NVML clocks-event bit mask
  std::vector<int> target_pids;                   // watched processes holding a context on this GPU
  double target_mem_mib = 0;                      // GPU memory those processes hold
};

// NVML clocks-event ("throttle") reason bits, as the driver reports them.
namespace throttle {
inline constexpr std::uint64_t kGpuIdle = 0x1;
inline constexpr std::uint64_t kApplicationsClocks = 0x2;
inline constexpr std::uint64_t kSwPowerCap = 0x4;
inline constexpr std::uint64_t kHwSlowdown = 0x8;
inline constexpr std::uint64_t kSyncBoost = 0x10;
inline constexpr std::uint64_t kSwThermal = 0x20;
inline constexpr std::uint64_t kHwThermal = 0x40;
inline constexpr std::uint64_t kHwPowerBrake = 0x80;
// The reasons that mean "the card is slowed against its will" (not idle, not a user setting).
inline constexpr std::uint64_t kSlowdownMask =
    kSwPowerCap | kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake;
std::string describe(std::uint64_t mask);  // "sw-power-cap, hw-thermal"
}  // namespace throttle

struct ThreadReading {
  int pid = 0;
  int tid = 0;
  std::string comm;
  char state = '?';                // R running/runnable, S sleeping, D blocked in I/O, ...
  double cpu_pct = 0;              // 100 = one core for the whole interval
  std::optional<double> wait_pct;  // time runnable but waiting for a core (run-queue delay)
};

struct ProcessReading {
  int pid = 0;
  int ppid = 0;
  std::string comm;
  double cpu_pct = 0;              // all threads, 100 = one core
  std::optional<double> wait_pct;  // run-queue wait, all threads (when only per-process is known)
  int threads = 0;
  std::optional<double> rss_mib;
  std::optional<double> read_mbps;  // storage reads (/proc/PID/io read_bytes), MB/s
  std::optional<double> write_mbps;
  std::optional<double> voluntary_cs_per_s;
  std::optional<double> involuntary_cs_per_s;
};

// The host side at one instant: the target tree and the machine around it. Optional fields are
// those an offline log may lack.
struct HostReading {
  std::vector<ProcessReading> processes;    // the target tree, root first
  std::vector<ThreadReading> threads;       // all threads of the tree (may be empty offline)
  std::optional<double> system_busy_pct;    // all cores, 100 = every core busy
  std::optional<double> system_iowait_pct;  // all cores, share of time idle with I/O pending
  std::optional<double> disk_read_mbps;
  std::optional<double> disk_write_mbps;
  std::optional<double> disk_busy_pct;  // the busiest whole disk
  std::optional<double> net_rx_mbps;
  std::optional<double> net_tx_mbps;
  std::optional<double> cgroup_throttled_pct;  // share of quota periods in which it was throttled
};

struct Sample {
  double t_s = 0;  // seconds since the watch began (or the log's own clock)
  std::optional<HostReading> host;
  std::vector<GpuReading> gpus;
};

// What does not change during a watch.
struct TargetInfo {
  int pid = 0;          // 0 when unknown (offline logs)
  std::string command;  // argv of the root process, space-joined
  int online_cpus = 0;
  std::optional<int> affinity_cpus;         // cores the target may run on
  std::optional<double> cgroup_quota_cpus;  // cpu.max quota / period; empty = unlimited
  std::optional<std::string> cgroup_path;
  std::optional<std::string> omp_num_threads;  // from the target's environment
  std::optional<std::string> mkl_num_threads;
  // Cores the target can really use: the smallest of online, affinity and quota.
  double effective_cpus() const;
};

struct Series {
  TargetInfo target;
  std::vector<Sample> samples;
  double interval_s = 1.0;
  bool gpu_observed = false;       // a GPU source ran (even if the target used no GPU)
  // The GPU source can tell which devices the watched processes hold a context on (live NVML).
  // Then a series in which no device is held has no GPU of this job in view; logs cannot tell.
  bool gpu_pids_matchable = false;
  std::string gpu_status;          // why GPUs are or are not in the samples
  std::vector<Warning> notes;  // from sampling or parsing, one line each (stepscope/warning_ids.hpp)
};

// ---------------------------------------------------------------------------------------------
// Classification

// Thresholds of the rules. Each is a judgement taken from field practice, kept in one place so
// that a verdict can always quote the number it was measured against.
namespace thresholds {
// GPU-Util at or above this on average is "busy" (nvidia-smi rule of thumb: >90% ⇒ GPU-bound).
inline constexpr double kGpuBusyUtilPct = 90;
// Below this average the GPU is starved for a heavy model; something upstream is the bottleneck.
inline constexpr double kGpuStarvedUtilPct = 50;
// Standard deviation of GPU-Util (percentage points) below which the load counts as steady.
inline constexpr double kSteadyUtilStdPct = 10;
// A swing of GPU-Util this large between consecutive samples is one tooth of a saw-tooth.
inline constexpr double kSawtoothSwingPct = 40;
// Samples at or below this GPU-Util before a GPU's first busy sample or after its last are the
// monitor running before the job started or after it ended: left out of the GPU's figures.
inline constexpr double kEdgeIdleUtilPct = 5;
// Share of consecutive-sample transitions that must be swings for the load to be a saw-tooth.
inline constexpr double kSawtoothSwingShare = 0.25;
// SM clock at or above this share of its maximum is "high" (the card is really working).
inline constexpr double kHighClockRatio = 0.80;
// Board power at or above this share of the limit is "high"; a card running big kernels draws
// well over half its limit, a trickle of tiny kernels does not.
inline constexpr double kHighPowerRatio = 0.60;
// Below this share of the limit, power contradicts a high GPU-Util ("utilisation lies").
inline constexpr double kLowPowerRatio = 0.40;
// Share of samples with a slowdown throttle reason before throttling is reported.
inline constexpr double kThrottledShare = 0.30;
// GPU memory used at or above this share of the total is "nearly full".
inline constexpr double kMemoryFullRatio = 0.95;
// GPUs of one job whose mean utilisation differs by more than this are imbalanced.
inline constexpr double kGpuImbalancePct = 30;

// A thread (or a single-threaded-in-effect process such as a GIL-bound Python worker) that
// demands at least this much of one core is "pegged" — the classic CPU-transform-bound loader.
// Demand is CPU time plus run-queue wait, so a pegged loop still counts on a crowded machine.
inline constexpr double kPeggedDemandPct = 85;
// Without per-thread readings (offline logs), a process using between kPeggedDemandPct and this
// much CPU is a single busy thread in effect; above it the process runs truly in parallel.
inline constexpr double kPeggedProcessCeilingPct = 130;
// A thread seen blocked in I/O (state D) in at least this share of samples is waiting on storage,
// however much it queues for a core in between.
inline constexpr double kPeggedMaxIoShare = 0.3;
// The target's total CPU demand divided by the cores it may use; above this the threads wait
// for each other rather than work (thread oversubscription).
inline constexpr double kOversubscribedDemandRatio = 1.5;
// ... and at least this many threads must be runnable-or-running on average.
inline constexpr double kOversubscribedMinThreads = 3;
// ... and the scheduler must be preempting them: involuntary switches per second per usable core.
inline constexpr double kOversubscribedInvolPerCore = 50;
// A cgroup throttled in this share of its quota periods is starved by its quota.
inline constexpr double kCgroupThrottledPct = 20;
// Share of the target's CPU demand spent waiting for a core, with the machine this busy (percent
// of all cores), above which other work on the host competes with the job.
inline constexpr double kContendedWaitShare = 0.30;
inline constexpr double kContendedSystemBusyPct = 90;
// The target's total CPU use at or above this share of its usable cores saturates the host.
inline constexpr double kHostSaturatedRatio = 0.90;
// Below this total CPU (percent of one core) the target is "quiet" on the host side.
inline constexpr double kQuietCpuPct = 50;
// Below this total CPU and without I/O the target is idle (waiting, sleeping or hung).
inline constexpr double kIdleCpuPct = 5;
// Mean number of the target's threads blocked in uninterruptible I/O (state D) that marks the
// job as waiting on storage.
inline constexpr double kIoBlockedThreads = 0.3;
// System iowait (percent of all cores) above which storage is the suspect.
inline constexpr double kIowaitPct = 10;
// Disk busy (percent of wall time with I/O in flight, busiest disk) that marks a saturated disk.
inline constexpr double kDiskBusyPct = 60;
// The target's own storage traffic (MB/s) that counts as "doing I/O" on its own.
inline constexpr double kTargetIoMbps = 5;
// A thread wanting at least this much of a core (CPU + run-queue wait, window average) is busy;
// two or more busy threads make the job CPU-bound across threads rather than in one.
inline constexpr double kBusyThreadDemandPct = 50;
// A GPU sample at or below this utilisation is an idle phase: the device waits for work.
inline constexpr double kGpuIdleSampleUtilPct = kGpuStarvedUtilPct;
// Samples in which a busy host thread and an idle GPU coincide before input-bound is claimed.
inline constexpr int kInputBoundMinCoincident = 2;

// Confidence grading. A verdict drawn from few samples, or from readings sitting close to the
// threshold that decided it, could flip with one more sample; these say how few and how close.
inline constexpr int kSamplesForMedium = 3;
inline constexpr int kSamplesForHigh = 5;
// Relative distance of the deciding reading from its threshold, |value - threshold| / threshold.
inline constexpr double kMarginForMedium = 0.05;
inline constexpr double kMarginForHigh = 0.15;
}  // namespace thresholds

enum class Confidence { Low, Medium, High };

// A measured number behind a finding.
struct Evidence {
  std::string metric;  // "gpu.util.mean"
  double value = 0;
  std::string unit;     // "%", "cores", "MHz", ...
  std::string meaning;  // one short clause: what this number says here
};

// A reading that decided a rule, and the threshold it was held against.
struct Margin {
  std::string metric;
  double value = 0;
  double threshold = 0;
  // What a distance of 1 means. 0 = the threshold itself; a percentage near its ceiling (GPU-Util
  // above 90%) uses the room left instead, or it could never look clear of its threshold.
  double scale = 0;
  double distance() const;  // |value - threshold| / scale
};

// Why a finding has the confidence it has, and what would raise it.
struct ConfidenceBasis {
  int samples = 0;
  std::vector<Margin> margins;
  std::string ceiling_reason;  // why the rule itself cannot be sure (empty when it can)
  std::string text;            // "6 samples; host.top_thread.demand 99 is 16% past 85"
  std::string to_raise;        // empty at high confidence
};

// What a live sample or a monitoring log shows, with the numbers behind it. Named apart from the
// trace diagnosis's Finding (stepscope/verdict.hpp): the two come from different evidence.
struct LiveFinding {
  std::string rule;   // stable id: "gpu-bound", "input-bound", ...
  std::string title;  // one line for humans
  Confidence confidence = Confidence::Medium;
  std::vector<Evidence> evidence;
  std::string next_step;  // the lever to pull or the profile to record
  std::string command;    // an exact command for the next step, when there is one
  ConfidenceBasis basis;
  std::vector<double> shown_at_s;  // sample times (t_s) in which the finding's pattern was seen
};

// Aggregates of a series that the rules read; reported in full so every verdict can be checked.
struct GpuStats {
  int index = 0;
  std::string name;
  int samples = 0;
  std::optional<double> util_mean, util_std, util_min, util_max;
  std::optional<double> swing_share;     // share of transitions that are saw-tooth swings
  std::optional<double> sm_clock_ratio;  // mean SM clock / max SM clock
  std::optional<double> power_ratio;     // mean power / limit
  std::optional<double> mem_used_ratio;  // max memory used / total
  std::optional<double> mem_util_mean;
  std::optional<double> pcie_rx_mbps_mean;
  double throttled_share = 0;  // samples with a slowdown reason
  std::uint64_t throttle_reasons_seen = 0;
  bool used_by_target = false;
  int edge_idle_samples = 0;  // idle samples before the first busy one or after the last, left out
};

struct HostStats {
  int samples = 0;
  double cpu_mean_pct = 0;  // the whole tree, 100 = one core
  double cpu_max_pct = 0;
  double effective_cpus = 0;
  bool cpus_known = false;  // offline logs may not say how many cores the job had
  int max_processes = 0;
  int max_threads = 0;
  // The most demanding single thread (CPU + run-queue wait, averaged over the window).
  double top_thread_demand_pct = 0;
  double top_thread_cpu_pct = 0;
  int top_thread_tid = 0;
  std::string top_thread_comm;
  double top_thread_io_share = 0;  // share of samples it spent blocked in I/O (state D)
  double second_thread_demand_pct = 0;  // the runner-up: says whether the load is in one thread
  // The most demanding process, all its threads together.
  double top_process_cpu_pct = 0;
  int top_process_pid = 0;
  std::string top_process_comm;
  int busy_threads = 0;  // threads wanting >= kBusyThreadDemandPct of a core over the window
  double demand_cores = 0;        // mean total demand of the tree, in cores
  double runnable_threads = 0;    // mean threads in state R
  double io_blocked_threads = 0;  // mean threads in state D
  std::optional<double> involuntary_cs_per_s;
  std::optional<double> voluntary_cs_per_s;
  std::optional<double> read_mbps, write_mbps;  // the tree's storage traffic
  std::optional<double> system_iowait_pct, system_busy_pct;
  std::optional<double> disk_busy_pct, disk_read_mbps, disk_write_mbps;
  std::optional<double> net_rx_mbps, net_tx_mbps;
  std::optional<double> cgroup_throttled_pct;
  std::optional<double> rss_max_mib;
};

struct Classification {
  LiveFinding verdict;              // the one bottleneck to act on first
  std::vector<LiveFinding> others;  // further findings worth knowing (throttling, imbalance, ...)
  std::vector<GpuStats> gpus;
  std::optional<HostStats> host;
  // False when no GPU of this job was in view: verdicts are then host-side only and say so.
  bool gpu_in_view = false;
  std::string gpu_unknown_reason;    // why the GPU side is unknown (empty when in view)
  std::string gpu_how_to_find_out;   // what to run to learn whether a GPU waits on this job
};

// The statistics the rules read. Pure.
std::vector<GpuStats> gpu_stats(const Series& series);
std::optional<HostStats> host_stats(const Series& series);

// The verdict for a series. Pure: same series, same answer.
Classification classify(const Series& series);

const char* to_string(Confidence c);

}  // namespace stepscope::watch
