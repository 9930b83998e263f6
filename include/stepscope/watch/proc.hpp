// Host counters of a process tree, read from /proc and the cgroup file system.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stepscope/watch.hpp"

namespace stepscope::watch {

// The process `root` and all its descendants (DataLoader workers are child processes), root
// first. Empty when `root` does not exist.
std::vector<int> process_tree(int root, const std::string& proc_root = "/proc");

// Static facts about a process: command line, CPU limits, thread-pool variables.
// Throws InputError when the process does not exist.
TargetInfo describe_process(int pid, const std::string& proc_root = "/proc");

// Samples a process tree. Each call to sample() snapshots the counters and returns the rates
// since the previous call; the first call only sets the baseline and returns nothing.
class ProcSampler {
 public:
  explicit ProcSampler(int root_pid, std::string proc_root = "/proc");
  ~ProcSampler();
  ProcSampler(const ProcSampler&) = delete;
  ProcSampler& operator=(const ProcSampler&) = delete;

  std::optional<HostReading> sample();
  std::optional<HostReading> sample(std::chrono::steady_clock::time_point now);

  // Whether the root process still exists (a zombie counts as gone).
  bool root_alive() const;
  // The pids seen in the latest snapshot, root first.
  const std::vector<int>& tree() const;

 private:
  struct Snapshot;
  int root_;
  std::string proc_;
  std::unique_ptr<Snapshot> previous_;
  std::vector<int> tree_;
};

// Parsers for the /proc text formats, exposed so they can be tested on fixed text.
namespace procfs {
struct Stat {
  int pid = 0;
  std::string comm;
  char state = '?';
  int ppid = 0;
  unsigned long long utime = 0;  // clock ticks
  unsigned long long stime = 0;
  int num_threads = 0;
  long long rss_pages = 0;
};
// Parses /proc/PID/stat; the command name may itself hold spaces and parentheses.
std::optional<Stat> parse_stat(const std::string& text);

struct CpuTimes {
  unsigned long long total = 0;
  unsigned long long idle = 0;
  unsigned long long iowait = 0;
};
// The aggregate "cpu " line of /proc/stat.
std::optional<CpuTimes> parse_proc_stat(const std::string& text);

struct DiskCounters {
  std::string name;
  unsigned long long sectors_read = 0;
  unsigned long long sectors_written = 0;
  unsigned long long io_ticks_ms = 0;  // wall time with at least one I/O in flight
};
// Whole disks only: partitions, loop, RAM and device-mapper devices would count bytes twice or
// count memory as disk.
std::vector<DiskCounters> parse_diskstats(const std::string& text);

struct NetCounters {
  unsigned long long rx_bytes = 0;
  unsigned long long tx_bytes = 0;
};
// All interfaces but loopback, summed.
NetCounters parse_net_dev(const std::string& text);

// "key: value" files (/proc/PID/status, /proc/PID/io); the first number after the key.
std::optional<unsigned long long> field(const std::string& text, const std::string& key);

// cgroup v2 "cpu.max" ("max 100000" or "200000 100000") or v1 quota/period; cores or empty.
std::optional<double> parse_cpu_max(const std::string& text);

// Looks up one variable in a NUL-separated /proc/PID/environ.
std::optional<std::string> environ_value(const std::string& environ, const std::string& name);
}  // namespace procfs

}  // namespace stepscope::watch
