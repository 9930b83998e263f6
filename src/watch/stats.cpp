// Aggregates of a sample series: the numbers the classification rules read.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

#include "stepscope/watch.hpp"

namespace stepscope::watch {

namespace {

struct Accumulator {
  double sum = 0;
  double sum_sq = 0;
  double min = 0;
  double max = 0;
  int n = 0;

  void add(double v) {
    if (n == 0 || v < min) min = v;
    if (n == 0 || v > max) max = v;
    sum += v;
    sum_sq += v * v;
    ++n;
  }
  void add(const std::optional<double>& v) {
    if (v) add(*v);
  }
  std::optional<double> mean() const {
    if (n == 0) return std::nullopt;
    return sum / n;
  }
  std::optional<double> stddev() const {
    if (n == 0) return std::nullopt;
    double m = sum / n;
    return std::sqrt(std::max(0.0, sum_sq / n - m * m));
  }
  std::optional<double> maximum() const { return n ? std::optional<double>(max) : std::nullopt; }
  std::optional<double> minimum() const { return n ? std::optional<double>(min) : std::nullopt; }
};

std::optional<double> ratio(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

// The positions (in series order) of the first and last sample of GPU `index` busier than
// kEdgeIdleUtilPct; nullopt when none is.
// Example: utils 4, 1, 99, 100, 100, 0, 0 -> (2, 4): two idle samples lead, two trail.
// One GPU's readings, with the position of the sample each is in, in series order.
using Readings = std::vector<std::pair<std::size_t, const GpuReading*>>;

std::optional<std::pair<std::size_t, std::size_t>> busy_span(const Readings& readings) {
  std::optional<std::pair<std::size_t, std::size_t>> span;
  for (const auto& [k, g] : readings)
    if (g->util_pct && *g->util_pct > thresholds::kEdgeIdleUtilPct)
      span = span ? std::make_pair(span->first, k) : std::make_pair(k, k);
  return span;
}

GpuStats stats_for_device(const Readings& readings, int index) {
  GpuStats s;
  s.index = index;
  const auto span = busy_span(readings);
  Accumulator util, clock_ratio, power, limit, mem_ratio, mem_util, rx;
  std::optional<double> previous_util;
  int transitions = 0;
  int swings = 0;
  int throttle_known = 0;
  int throttled = 0;
  for (const auto& [k, reading] : readings) {
    {
      const GpuReading& g = *reading;
      if (span && (k < span->first || k > span->second)) {
        ++s.edge_idle_samples;
        continue;
      }
      ++s.samples;
      if (s.name.empty()) s.name = g.name;
      if (!g.target_pids.empty()) s.used_by_target = true;
      util.add(g.util_pct);
      if (g.util_pct && previous_util) {
        ++transitions;
        if (std::abs(*g.util_pct - *previous_util) >= thresholds::kSawtoothSwingPct) ++swings;
      }
      if (g.util_pct) previous_util = g.util_pct;
      clock_ratio.add(ratio(g.sm_clock_mhz, g.sm_clock_max_mhz));
      power.add(g.power_w);
      limit.add(g.power_limit_w);
      mem_ratio.add(ratio(g.mem_used_mib, g.mem_total_mib));
      mem_util.add(g.mem_util_pct);
      rx.add(g.pcie_rx_mbps);
      if (g.throttle_reasons) {
        ++throttle_known;
        std::uint64_t slow = *g.throttle_reasons & throttle::kSlowdownMask;
        s.throttle_reasons_seen |= slow;
        if (slow) ++throttled;
      }
    }
  }
  s.util_mean = util.mean();
  s.util_std = util.stddev();
  s.util_min = util.minimum();
  s.util_max = util.maximum();
  if (transitions > 0) s.swing_share = double(swings) / transitions;
  s.sm_clock_ratio = clock_ratio.mean();
  s.power_ratio = ratio(power.mean(), limit.mean());
  s.mem_used_ratio = mem_ratio.maximum();
  s.mem_util_mean = mem_util.mean();
  s.pcie_rx_mbps_mean = rx.mean();
  if (throttle_known > 0) s.throttled_share = double(throttled) / throttle_known;
  return s;
}

// Per-thread and per-process running totals; a thread absent from a sample counts as zero, so
// "pegged" has to be sustained over the window, not one busy instant.
struct ThreadTotals {
  std::string comm;
  double cpu = 0;
  double demand = 0;
  int in_io = 0;
};
struct ProcessTotals {
  std::string comm;
  double cpu = 0;
};

void pick_top_thread(const std::map<int, ThreadTotals>& threads, int samples, HostStats& h) {
  for (const auto& [tid, t] : threads) {
    double demand = t.demand / samples;
    if (demand >= thresholds::kBusyThreadDemandPct) ++h.busy_threads;
    if (demand > h.top_thread_demand_pct) {
      h.second_thread_demand_pct = h.top_thread_demand_pct;
      h.top_thread_demand_pct = demand;
      h.top_thread_cpu_pct = t.cpu / samples;
      h.top_thread_tid = tid;
      h.top_thread_comm = t.comm;
      h.top_thread_io_share = double(t.in_io) / samples;
    } else {
      h.second_thread_demand_pct = std::max(h.second_thread_demand_pct, demand);
    }
  }
}

// Without per-thread readings (offline logs) a process's CPU beyond one core can only come from
// several threads, so it counts as that many busy threads.
int busy_threads_of_process(double cpu_pct) {
  if (cpu_pct < thresholds::kBusyThreadDemandPct) return 0;
  if (cpu_pct <= thresholds::kPeggedProcessCeilingPct) return 1;
  return std::max(2, int(std::round(cpu_pct / 100.0)));
}

void pick_top_process(const std::map<int, ProcessTotals>& processes, int samples, HostStats& h,
                      bool threads_known) {
  for (const auto& [pid, p] : processes) {
    double cpu = p.cpu / samples;
    if (!threads_known) h.busy_threads += busy_threads_of_process(cpu);
    if (cpu > h.top_process_cpu_pct || h.top_process_pid == 0) {
      h.top_process_cpu_pct = cpu;
      h.top_process_pid = pid;
      h.top_process_comm = p.comm;
    }
  }
}

}  // namespace

std::vector<GpuStats> gpu_stats(const Series& series) {
  // Each GPU's readings gathered in one pass: a pass per GPU grows with GPUs x readings (a log
  // of 60k GPU indices took a minute).
  std::map<int, Readings> by_index;
  for (std::size_t k = 0; k < series.samples.size(); ++k)
    for (const auto& g : series.samples[k].gpus) by_index[g.index].emplace_back(k, &g);
  std::vector<GpuStats> out;
  for (const auto& [index, readings] : by_index) out.push_back(stats_for_device(readings, index));
  return out;
}

std::optional<HostStats> host_stats(const Series& series) {
  HostStats h;
  h.effective_cpus = series.target.effective_cpus();
  h.cpus_known = series.target.online_cpus > 0 || series.target.affinity_cpus ||
                 series.target.cgroup_quota_cpus;
  std::map<int, ThreadTotals> threads;
  std::map<int, ProcessTotals> processes;
  Accumulator cpu, demand, runnable, blocked, invol, vol, rd, wr, iowait, busy, disk, drd, dwr, rxn,
      txn, cg, rss;
  for (const auto& sample : series.samples) {
    if (!sample.host) continue;
    const HostReading& r = *sample.host;
    ++h.samples;
    double total_cpu = 0;
    double rss_total = 0;
    bool rss_known = false;
    Accumulator sample_invol, sample_vol, sample_rd, sample_wr;
    for (const auto& p : r.processes) {
      total_cpu += p.cpu_pct;
      auto& totals = processes[p.pid];
      totals.cpu += p.cpu_pct;
      if (totals.comm.empty()) totals.comm = p.comm;
      if (p.rss_mib) {
        rss_total += *p.rss_mib;
        rss_known = true;
      }
      sample_invol.add(p.involuntary_cs_per_s);
      sample_vol.add(p.voluntary_cs_per_s);
      sample_rd.add(p.read_mbps);
      sample_wr.add(p.write_mbps);
    }
    cpu.add(total_cpu);
    if (rss_known) rss.add(rss_total);
    if (sample_invol.n) invol.add(sample_invol.sum);
    if (sample_vol.n) vol.add(sample_vol.sum);
    if (sample_rd.n) rd.add(sample_rd.sum);
    if (sample_wr.n) wr.add(sample_wr.sum);
    h.max_processes = std::max<int>(h.max_processes, int(r.processes.size()));
    int thread_count = 0;
    for (const auto& p : r.processes) thread_count += p.threads;
    h.max_threads = std::max(h.max_threads, std::max<int>(thread_count, int(r.threads.size())));

    if (!r.threads.empty()) {
      double sample_demand = 0;
      int running = 0;
      int in_io = 0;
      for (const auto& t : r.threads) {
        double d = t.cpu_pct + t.wait_pct.value_or(0);
        sample_demand += d;
        auto& totals = threads[t.tid];
        totals.cpu += t.cpu_pct;
        totals.demand += d;
        totals.comm = t.comm;  // the latest name: exec and thread naming change it
        if (t.state == 'D') ++totals.in_io;
        if (t.state == 'R') ++running;
        if (t.state == 'D') ++in_io;
      }
      demand.add(sample_demand / 100.0);
      runnable.add(running);
      blocked.add(in_io);
    } else {
      double total_wait = 0;
      for (const auto& p : r.processes) total_wait += p.wait_pct.value_or(0);
      demand.add((total_cpu + total_wait) / 100.0);
    }
    iowait.add(r.system_iowait_pct);
    busy.add(r.system_busy_pct);
    disk.add(r.disk_busy_pct);
    drd.add(r.disk_read_mbps);
    dwr.add(r.disk_write_mbps);
    rxn.add(r.net_rx_mbps);
    txn.add(r.net_tx_mbps);
    cg.add(r.cgroup_throttled_pct);
  }
  if (h.samples == 0) return std::nullopt;
  h.cpu_mean_pct = cpu.mean().value_or(0);
  h.cpu_max_pct = cpu.maximum().value_or(0);
  h.demand_cores = demand.mean().value_or(0);
  h.runnable_threads = runnable.mean().value_or(0);
  h.io_blocked_threads = blocked.mean().value_or(0);
  h.involuntary_cs_per_s = invol.mean();
  h.voluntary_cs_per_s = vol.mean();
  h.read_mbps = rd.mean();
  h.write_mbps = wr.mean();
  h.system_iowait_pct = iowait.mean();
  h.system_busy_pct = busy.mean();
  h.disk_busy_pct = disk.mean();
  h.disk_read_mbps = drd.mean();
  h.disk_write_mbps = dwr.mean();
  h.net_rx_mbps = rxn.mean();
  h.net_tx_mbps = txn.mean();
  h.cgroup_throttled_pct = cg.mean();
  h.rss_max_mib = rss.maximum();
  pick_top_thread(threads, h.samples, h);
  pick_top_process(processes, h.samples, h, !threads.empty());
  return h;
}

double TargetInfo::effective_cpus() const {
  double cpus = online_cpus > 0 ? online_cpus : 1;
  if (affinity_cpus && *affinity_cpus > 0) cpus = std::min<double>(cpus, *affinity_cpus);
  if (cgroup_quota_cpus && *cgroup_quota_cpus > 0) cpus = std::min(cpus, *cgroup_quota_cpus);
  return cpus;
}

namespace throttle {
std::string describe(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {kGpuIdle, "gpu-idle"},        {kApplicationsClocks, "applications-clocks"},
      {kSwPowerCap, "sw-power-cap"}, {kHwSlowdown, "hw-slowdown"},
      {kSyncBoost, "sync-boost"},    {kSwThermal, "sw-thermal"},
      {kHwThermal, "hw-thermal"},    {kHwPowerBrake, "hw-power-brake"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(mask & bit)) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out.empty() ? "none" : out;
}
}  // namespace throttle

}  // namespace stepscope::watch
