// Host sampling from /proc. Counters are cumulative; rates come from the difference between two
// snapshots. Processes and threads come and go between snapshots, so every lookup tolerates a
// missing file and a counter that went backwards (a thread that exited took its count with it).
#include "stepscope/watch/proc.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <set>
#include <sstream>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::watch {

namespace {

// /proc files report size 0, so they are read until EOF rather than by size.
std::optional<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) {
        ::close(fd);
        return std::nullopt;
      }
      break;
    }
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

std::vector<int> numeric_entries(const std::string& dir) {
  std::vector<int> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d))
    if (auto v = parse_int<int>(e->d_name)) out.push_back(*v);
  ::closedir(d);
  return out;
}

unsigned long long delta(unsigned long long now, unsigned long long before) {
  return now >= before ? now - before : 0;
}

double ticks_per_second() {
  static const double hz = [] {
    long v = ::sysconf(_SC_CLK_TCK);
    return v > 0 ? double(v) : 100.0;
  }();
  return hz;
}

constexpr double kMB = 1e6;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Parsers

namespace procfs {

std::optional<Stat> parse_stat(const std::string& text) {
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  Stat s;
  s.pid = std::atoi(text.c_str());
  s.comm = text.substr(open + 1, close - open - 1);
  std::istringstream in(text.substr(close + 1));
  // Fields from 3 (state) on; see proc(5).
  std::vector<std::string> f;
  std::string word;
  while (in >> word) f.push_back(word);
  if (f.size() < 22) return std::nullopt;
  s.state = f[0].empty() ? '?' : f[0][0];
  s.ppid = std::atoi(f[1].c_str());
  s.utime = std::strtoull(f[11].c_str(), nullptr, 10);
  s.stime = std::strtoull(f[12].c_str(), nullptr, 10);
  s.num_threads = std::atoi(f[17].c_str());
  s.rss_pages = std::atoll(f[21].c_str());
  return s;
}

std::optional<CpuTimes> parse_proc_stat(const std::string& text) {
  std::istringstream in(text);
  std::string label;
  if (!(in >> label) || label != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal; guest time is already inside user/nice.
  unsigned long long v[8] = {};
  int n = 0;
  while (n < 8 && in >> v[n]) ++n;
  if (n < 5) return std::nullopt;
  CpuTimes t;
  for (int i = 0; i < n; ++i) t.total += v[i];
  t.idle = v[3];
  t.iowait = v[4];
  return t;
}

std::vector<DiskCounters> parse_diskstats(const std::string& text) {
  std::vector<DiskCounters> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    unsigned major = 0, minor = 0;
    std::string name;
    unsigned long long f[11] = {};
    if (!(in >> major >> minor >> name)) continue;
    int n = 0;
    while (n < 11 && in >> f[n]) ++n;
    if (n < 10) continue;
    static const char* kSkip[] = {"loop", "ram", "zram", "dm-", "md", "sr", "fd"};
    if (std::any_of(std::begin(kSkip), std::end(kSkip),
                    [&](const char* p) { return name.rfind(p, 0) == 0; }))
      continue;
    // A partition has a /sys/class/block/NAME/partition file; whole disks do not. Without
    // /sys, fall back to the naming rule: a trailing digit after a letter-only disk name.
    std::string part = "/sys/class/block/" + name + "/partition";
    if (::access(("/sys/class/block/" + name).c_str(), F_OK) == 0) {
      if (::access(part.c_str(), F_OK) == 0) continue;
    } else if (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back())) &&
               name.rfind("nvme", 0) != 0) {
      continue;
    }
    DiskCounters d;
    d.name = name;
    d.sectors_read = f[2];
    d.sectors_written = f[6];
    d.io_ticks_ms = f[9];
    out.push_back(d);
  }
  return out;
}

NetCounters parse_net_dev(const std::string& text) {
  NetCounters c;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo" || name.find('|') != std::string::npos) continue;
    std::istringstream in(line.substr(colon + 1));
    unsigned long long v[9] = {};
    int n = 0;
    while (n < 9 && in >> v[n]) ++n;
    if (n < 9) continue;
    c.rx_bytes += v[0];
    c.tx_bytes += v[8];
  }
  return c;
}

std::optional<unsigned long long> field(const std::string& text, const std::string& key) {
  size_t pos = 0;
  while ((pos = text.find(key, pos)) != std::string::npos) {
    bool at_line_start = pos == 0 || text[pos - 1] == '\n';
    size_t after = pos + key.size();
    if (at_line_start && after < text.size() && (text[after] == ':' || text[after] == ' ')) {
      const char* p = text.c_str() + after;
      while (*p == ':' || *p == ' ' || *p == '\t') ++p;
      if (!std::isdigit(static_cast<unsigned char>(*p))) return std::nullopt;
      return std::strtoull(p, nullptr, 10);
    }
    pos = after;
  }
  return std::nullopt;
}

std::optional<double> parse_cpu_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  double q = std::atof(quota.c_str());
  if (q <= 0) return std::nullopt;  // v1 writes -1 for "no limit"
  return q / period;
}

std::optional<std::string> environ_value(const std::string& environ, const std::string& name) {
  std::string prefix = name + "=";
  size_t start = 0;
  while (start < environ.size()) {
    size_t end = environ.find('\0', start);
    if (end == std::string::npos) end = environ.size();
    if (environ.compare(start, prefix.size(), prefix) == 0)
      return environ.substr(start + prefix.size(), end - start - prefix.size());
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace procfs

// ---------------------------------------------------------------------------------------------
// cgroup CPU limits

namespace {

// The CPU controller's directory for a process, under either cgroup version. Container
// runtimes often show the host-side path in /proc/PID/cgroup while mounting the cgroup at the
// root, so the root of the mount is tried when the path does not exist.
struct CgroupCpu {
  std::string dir;
  bool v2 = false;
};

std::optional<CgroupCpu> find_cgroup_cpu(int pid, const std::string& proc) {
  auto text = read_file(fmt::format("{}/{}/cgroup", proc, pid));
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  std::optional<std::string> v1_path, v2_path;
  while (std::getline(lines, line)) {
    auto c1 = line.find(':');
    auto c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    if (line.compare(0, c1, "0") == 0 && controllers.empty()) v2_path = path;
    std::istringstream cs(controllers);
    std::string c;
    while (std::getline(cs, c, ','))
      if (c == "cpu") v1_path = path;
  }
  auto exists = [](const std::string& p) { return ::access(p.c_str(), F_OK) == 0; };
  if (v1_path) {
    for (const char* mount : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
      for (const std::string& p : {std::string(mount) + *v1_path, std::string(mount)})
        if (exists(p + "/cpu.cfs_quota_us")) return CgroupCpu{p, false};
    }
  }
  if (v2_path) {
    for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
      for (const std::string& p : {std::string(mount) + *v2_path, std::string(mount)})
        if (exists(p + "/cpu.max") || exists(p + "/cpu.stat")) return CgroupCpu{p, true};
    }
  }
  return std::nullopt;
}

// The tightest quota on the way from the cgroup up to the root of its mount: a parent's limit
// binds its children.
std::optional<double> cgroup_quota(const CgroupCpu& cg) {
  std::optional<double> best;
  std::string dir = cg.dir;
  for (int depth = 0; depth < 64; ++depth) {
    std::optional<double> q;
    if (cg.v2) {
      if (auto t = read_file(dir + "/cpu.max")) q = procfs::parse_cpu_max(*t);
    } else {
      auto quota = read_file(dir + "/cpu.cfs_quota_us");
      auto period = read_file(dir + "/cpu.cfs_period_us");
      if (quota && period) q = procfs::parse_cpu_max(*quota + " " + *period);
    }
    if (q && (!best || *q < *best)) best = q;
    auto slash = dir.rfind('/');
    if (slash == std::string::npos || dir.rfind("/sys/fs/cgroup", 0) != 0 || slash <= 14) break;
    std::string parent = dir.substr(0, slash);
    if (parent.size() < std::string("/sys/fs/cgroup").size()) break;
    dir = parent;
  }
  return best;
}

}  // namespace

namespace proc_counters {  // see the sampler's snapshot below
struct ThrottleCounters {
  unsigned long long periods = 0;
  unsigned long long throttled = 0;
};
}  // namespace proc_counters

namespace {

using proc_counters::ThrottleCounters;

std::optional<ThrottleCounters> cgroup_throttling(const CgroupCpu& cg) {
  auto text = read_file(cg.dir + "/cpu.stat");
  if (!text) return std::nullopt;
  auto periods = procfs::field(*text, "nr_periods");
  auto throttled = procfs::field(*text, "nr_throttled");
  if (!periods || !throttled) return std::nullopt;
  return ThrottleCounters{*periods, *throttled};
}

std::string join_cmdline(const std::string& raw) {
  std::string out = raw;
  while (!out.empty() && out.back() == '\0') out.pop_back();
  std::replace(out.begin(), out.end(), '\0', ' ');
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Process tree and target description

std::vector<int> process_tree(int root, const std::string& proc) {
  std::map<int, std::vector<int>> children;
  bool root_seen = false;
  for (int pid : numeric_entries(proc)) {
    auto text = read_file(fmt::format("{}/{}/stat", proc, pid));
    if (!text) continue;
    auto st = procfs::parse_stat(*text);
    if (!st) continue;
    if (pid == root) root_seen = true;
    children[st->ppid].push_back(pid);
  }
  std::vector<int> out;
  if (!root_seen) return out;
  std::deque<int> queue{root};
  std::set<int> seen;
  while (!queue.empty()) {
    int pid = queue.front();
    queue.pop_front();
    if (!seen.insert(pid).second) continue;
    out.push_back(pid);
    for (int c : children[pid]) queue.push_back(c);
  }
  return out;
}

TargetInfo describe_process(int pid, const std::string& proc) {
  if (pid <= 0) throw InputError(fmt::format("--pid {}: a process id must be positive", pid));
  auto stat = read_file(fmt::format("{}/{}/stat", proc, pid));
  if (!stat) throw InputError(fmt::format("--pid {}: no such process", pid));
  TargetInfo t;
  t.pid = pid;
  if (auto cmd = read_file(fmt::format("{}/{}/cmdline", proc, pid))) t.command = join_cmdline(*cmd);
  if (t.command.empty())
    if (auto st = procfs::parse_stat(*stat)) t.command = "[" + st->comm + "]";
  t.online_cpus = int(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(pid, sizeof set, &set) == 0) t.affinity_cpus = CPU_COUNT(&set);
  if (auto cg = find_cgroup_cpu(pid, proc)) {
    t.cgroup_path = cg->dir;
    t.cgroup_quota_cpus = cgroup_quota(*cg);
  }
  // Another user's environment is unreadable without privileges; the variables then stay empty.
  if (auto env = read_file(fmt::format("{}/{}/environ", proc, pid))) {
    t.omp_num_threads = procfs::environ_value(*env, "OMP_NUM_THREADS");
    t.mkl_num_threads = procfs::environ_value(*env, "MKL_NUM_THREADS");
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// Sampler

// The snapshot's types live in a named namespace: ProcSampler::Snapshot derives from
// TreeCounters, and a class with external linkage may not have a base only this source can name
// (GCC's -Wsubobject-linkage, raised once the source is part of a unity file).
namespace proc_counters {

struct ThreadCounters {
  int pid = 0;
  std::string comm;
  char state = '?';
  unsigned long long ticks = 0;
  std::optional<unsigned long long> run_ns, wait_ns;  // schedstat, when the kernel keeps it
};

struct ProcessCounters {
  int ppid = 0;
  std::string comm;
  unsigned long long ticks = 0;  // includes threads that already exited
  int threads = 0;
  long long rss_pages = 0;
  std::optional<unsigned long long> read_bytes, write_bytes;
  std::optional<unsigned long long> vcs, ivcs;  // summed over live threads
};

struct TreeCounters {
  std::chrono::steady_clock::time_point at;
  std::vector<int> order;
  std::map<int, ProcessCounters> processes;
  std::map<int, ThreadCounters> threads;
  std::optional<procfs::CpuTimes> cpu;
  std::vector<procfs::DiskCounters> disks;
  std::optional<procfs::NetCounters> net;
  std::optional<ThrottleCounters> cgroup;
};

}  // namespace proc_counters

namespace {

using proc_counters::ProcessCounters;
using proc_counters::ThreadCounters;
using proc_counters::TreeCounters;

// Reads one thread's counters; adds its context switches to its process.
std::optional<ThreadCounters> read_thread(const std::string& tdir, int pid, ProcessCounters& p) {
  auto stat_text = read_file(tdir + "/stat");
  if (!stat_text) return std::nullopt;
  auto ts = procfs::parse_stat(*stat_text);
  if (!ts) return std::nullopt;
  ThreadCounters t;
  t.pid = pid;
  t.comm = ts->comm;
  t.state = ts->state;
  t.ticks = ts->utime + ts->stime;
  if (auto sched = read_file(tdir + "/schedstat")) {
    unsigned long long run = 0, wait = 0;
    if (std::sscanf(sched->c_str(), "%llu %llu", &run, &wait) == 2) {
      t.run_ns = run;
      t.wait_ns = wait;
    }
  }
  if (auto status = read_file(tdir + "/status")) {
    auto v = procfs::field(*status, "voluntary_ctxt_switches");
    auto iv = procfs::field(*status, "nonvoluntary_ctxt_switches");
    if (v) p.vcs = p.vcs.value_or(0) + *v;
    if (iv) p.ivcs = p.ivcs.value_or(0) + *iv;
  }
  return t;
}

// Reads one process and its threads into `snap`; a process that vanished is skipped.
void read_process(const std::string& proc, int pid, TreeCounters& snap) {
  std::string dir = fmt::format("{}/{}", proc, pid);
  auto stat_text = read_file(dir + "/stat");
  if (!stat_text) return;
  auto st = procfs::parse_stat(*stat_text);
  if (!st) return;
  ProcessCounters p;
  p.ppid = st->ppid;
  p.comm = st->comm;
  p.ticks = st->utime + st->stime;
  p.rss_pages = st->rss_pages;
  // Another user's /proc/PID/io is unreadable without privileges; the rates then stay empty.
  if (auto io = read_file(dir + "/io")) {
    p.read_bytes = procfs::field(*io, "read_bytes");
    p.write_bytes = procfs::field(*io, "write_bytes");
  }
  for (int tid : numeric_entries(dir + "/task")) {
    if (auto t = read_thread(fmt::format("{}/task/{}", dir, tid), pid, p)) {
      ++p.threads;
      snap.threads[tid] = std::move(*t);
    }
  }
  snap.processes[pid] = std::move(p);
}

double per_second(unsigned long long now, unsigned long long before, double dt) {
  return double(delta(now, before)) / dt;
}

std::vector<ProcessReading> process_rates(const TreeCounters& a, const TreeCounters& b, double dt) {
  static const double page_mib = double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
  const double hz = ticks_per_second();
  std::vector<ProcessReading> out;
  for (int pid : b.order) {
    auto it = b.processes.find(pid);
    if (it == b.processes.end()) continue;
    const auto& p = it->second;
    ProcessReading pr;
    pr.pid = pid;
    pr.ppid = p.ppid;
    pr.comm = p.comm;
    pr.threads = p.threads;
    pr.rss_mib = double(p.rss_pages) * page_mib;
    // A process new since the last snapshot gets no rates yet: its counters started before it
    // joined the tree, so a difference against zero would overstate them.
    auto old = a.processes.find(pid);
    if (old != a.processes.end()) {
      const auto& q = old->second;
      pr.cpu_pct = per_second(p.ticks, q.ticks, dt) / hz * 100.0;
      if (p.read_bytes && q.read_bytes)
        pr.read_mbps = per_second(*p.read_bytes, *q.read_bytes, dt) / kMB;
      if (p.write_bytes && q.write_bytes)
        pr.write_mbps = per_second(*p.write_bytes, *q.write_bytes, dt) / kMB;
      if (p.vcs && q.vcs) pr.voluntary_cs_per_s = per_second(*p.vcs, *q.vcs, dt);
      if (p.ivcs && q.ivcs) pr.involuntary_cs_per_s = per_second(*p.ivcs, *q.ivcs, dt);
    }
    out.push_back(pr);
  }
  return out;
}

std::vector<ThreadReading> thread_rates(const TreeCounters& a, const TreeCounters& b, double dt) {
  const double hz = ticks_per_second();
  std::vector<ThreadReading> out;
  for (const auto& [tid, t] : b.threads) {
    ThreadReading tr;
    tr.pid = t.pid;
    tr.tid = tid;
    tr.comm = t.comm;
    tr.state = t.state;
    auto old = a.threads.find(tid);
    if (old != a.threads.end()) {
      const auto& u = old->second;
      // schedstat counts nanoseconds; the tick counters are only 10 ms coarse.
      if (t.run_ns && u.run_ns) {
        tr.cpu_pct = per_second(*t.run_ns, *u.run_ns, dt) / 1e9 * 100.0;
        tr.wait_pct = per_second(*t.wait_ns, *u.wait_ns, dt) / 1e9 * 100.0;
      } else {
        tr.cpu_pct = per_second(t.ticks, u.ticks, dt) / hz * 100.0;
      }
    }
    out.push_back(tr);
  }
  return out;
}

void system_rates(const TreeCounters& a, const TreeCounters& b, double dt, HostReading& r) {
  if (a.cpu && b.cpu) {
    double total = double(delta(b.cpu->total, a.cpu->total));
    if (total > 0) {
      double idle = double(delta(b.cpu->idle, a.cpu->idle));
      double iowait = double(delta(b.cpu->iowait, a.cpu->iowait));
      r.system_iowait_pct = iowait / total * 100.0;
      r.system_busy_pct = std::max(0.0, total - idle - iowait) / total * 100.0;
    }
  }
  if (!a.disks.empty() && !b.disks.empty()) {
    double rd = 0, wr = 0, busy = 0;
    for (const auto& d : b.disks) {
      auto old = std::find_if(a.disks.begin(), a.disks.end(),
                              [&](const procfs::DiskCounters& x) { return x.name == d.name; });
      if (old == a.disks.end()) continue;
      // /proc/diskstats counts 512-byte sectors whatever the device's sector size.
      rd += per_second(d.sectors_read, old->sectors_read, dt) * 512.0;
      wr += per_second(d.sectors_written, old->sectors_written, dt) * 512.0;
      busy = std::max(busy, per_second(d.io_ticks_ms, old->io_ticks_ms, dt) / 1000.0 * 100.0);
    }
    r.disk_read_mbps = rd / kMB;
    r.disk_write_mbps = wr / kMB;
    r.disk_busy_pct = std::min(100.0, busy);
  }
  if (a.net && b.net) {
    r.net_rx_mbps = per_second(b.net->rx_bytes, a.net->rx_bytes, dt) / kMB;
    r.net_tx_mbps = per_second(b.net->tx_bytes, a.net->tx_bytes, dt) / kMB;
  }
  if (a.cgroup && b.cgroup) {
    auto periods = delta(b.cgroup->periods, a.cgroup->periods);
    r.cgroup_throttled_pct =
        periods ? double(delta(b.cgroup->throttled, a.cgroup->throttled)) / double(periods) * 100.0
                : 0.0;
  }
}

}  // namespace

struct ProcSampler::Snapshot : proc_counters::TreeCounters {};

ProcSampler::ProcSampler(int root_pid, std::string proc_root)
    : root_(root_pid), proc_(std::move(proc_root)) {}
ProcSampler::~ProcSampler() = default;

const std::vector<int>& ProcSampler::tree() const { return tree_; }

bool ProcSampler::root_alive() const {
  auto text = read_file(fmt::format("{}/{}/stat", proc_, root_));
  if (!text) return false;
  auto st = procfs::parse_stat(*text);
  return st && st->state != 'Z' && st->state != 'X';
}

std::optional<HostReading> ProcSampler::sample() {
  return sample(std::chrono::steady_clock::now());
}

std::optional<HostReading> ProcSampler::sample(std::chrono::steady_clock::time_point now) {
  auto snap = std::make_unique<Snapshot>();
  snap->at = now;
  snap->order = process_tree(root_, proc_);
  for (int pid : snap->order) read_process(proc_, pid, *snap);
  if (auto t = read_file(proc_ + "/stat")) snap->cpu = procfs::parse_proc_stat(*t);
  if (auto t = read_file(proc_ + "/diskstats")) snap->disks = procfs::parse_diskstats(*t);
  if (auto t = read_file(proc_ + "/net/dev")) snap->net = procfs::parse_net_dev(*t);
  if (auto cg = find_cgroup_cpu(root_, proc_)) snap->cgroup = cgroup_throttling(*cg);

  tree_ = snap->order;
  std::unique_ptr<Snapshot> before = std::move(previous_);
  previous_ = std::move(snap);
  if (!before) return std::nullopt;
  double dt = std::chrono::duration<double>(previous_->at - before->at).count();
  if (dt <= 0) return std::nullopt;
  HostReading r;
  r.processes = process_rates(*before, *previous_, dt);
  r.threads = thread_rates(*before, *previous_, dt);
  system_rates(*before, *previous_, dt, r);
  return r;
}

}  // namespace stepscope::watch
