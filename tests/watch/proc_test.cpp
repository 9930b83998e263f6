// The /proc sampler and the host-side rules on real child processes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "children.hpp"
#include "stepscope/error.hpp"

using namespace stepscope::watch;
using namespace watch_test;
using namespace std::chrono_literals;

TEST(ProcParsers, StatWithSpacesAndParensInName) {
  auto st = procfs::parse_stat(
      "4242 (py (worker) 1) R 4000 4242 4000 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 7 0 1000 "
      "100000 2560 18446744073709551615");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->comm, "py (worker) 1");
  EXPECT_EQ(st->state, 'R');
  EXPECT_EQ(st->ppid, 4000);
  EXPECT_EQ(st->utime, 250u);
  EXPECT_EQ(st->stime, 50u);
  EXPECT_EQ(st->num_threads, 7);
  EXPECT_EQ(st->rss_pages, 2560);
  EXPECT_FALSE(procfs::parse_stat("garbage"));
}

TEST(ProcParsers, SystemCpuLine) {
  auto t = procfs::parse_proc_stat("cpu  100 5 50 800 40 0 5 0 0 0\ncpu0 1 2 3 4 5\n");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->total, 1000u);
  EXPECT_EQ(t->idle, 800u);
  EXPECT_EQ(t->iowait, 40u);
}

TEST(ProcParsers, DiskstatsSkipsVirtualDevices) {
  auto d = procfs::parse_diskstats(
      "   7       0 loop0 10 0 80 0 0 0 0 0 0 4 4 0 0 0 0\n"
      " 254       0 vda 28577 5331 2099170 6920 38234 14345 2848072 10923 0 7460 18385\n"
      " 253       0 dm-0 1 0 8 0 0 0 0 0 0 0 0\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "vda");
  EXPECT_EQ(d[0].sectors_read, 2099170u);
  EXPECT_EQ(d[0].sectors_written, 2848072u);
  EXPECT_EQ(d[0].io_ticks_ms, 7460u);
}

TEST(ProcParsers, NetDevSkipsLoopback) {
  auto n = procfs::parse_net_dev(
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets\n"
      "    lo:    3267      29    0    0    0     0          0         0     3267      29    0    "
      "0    0     0       0          0\n"
      "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n"
      "  eth1: 500 5 0 0 0 0 0 0 700 7 0 0 0 0 0 0\n");
  EXPECT_EQ(n.rx_bytes, 1500u);
  EXPECT_EQ(n.tx_bytes, 2700u);
}

TEST(ProcParsers, KeyValueFields) {
  std::string status =
      "Name:\tpython\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t34\n";
  EXPECT_EQ(procfs::field(status, "voluntary_ctxt_switches"), 12u);
  EXPECT_EQ(procfs::field(status, "nonvoluntary_ctxt_switches"), 34u);
  EXPECT_FALSE(procfs::field(status, "ctxt_switches"));
  EXPECT_EQ(procfs::field("rchar: 1\nread_bytes: 4096\n", "read_bytes"), 4096u);
}

TEST(ProcParsers, CpuQuota) {
  EXPECT_FALSE(procfs::parse_cpu_max("max 100000\n"));
  EXPECT_DOUBLE_EQ(*procfs::parse_cpu_max("250000 100000\n"), 2.5);
  EXPECT_FALSE(procfs::parse_cpu_max("-1\n 100000\n"));
  EXPECT_DOUBLE_EQ(*procfs::parse_cpu_max("50000\n 100000\n"), 0.5);
}

TEST(ProcParsers, EnvironValue) {
  std::string env("A=1\0OMP_NUM_THREADS=4\0OMP=x\0", 28);
  EXPECT_EQ(procfs::environ_value(env, "OMP_NUM_THREADS"), "4");
  EXPECT_EQ(procfs::environ_value(env, "OMP"), "x");
  EXPECT_FALSE(procfs::environ_value(env, "MKL_NUM_THREADS"));
}

TEST(ProcSampler, UnknownPidIsAnInputError) {
  EXPECT_THROW(describe_process(0), stepscope::InputError);
  // Pids above the kernel's pid_max cannot exist.
  EXPECT_THROW(describe_process(1 << 30), stepscope::InputError);
}

TEST(ProcSampler, DescribesCommandAndThreadVariables) {
  Child child({"sleep", "5"}, {"OMP_NUM_THREADS=3", "MKL_NUM_THREADS=2"});
  ASSERT_GT(child.pid(), 0);
  settle();
  auto t = describe_process(child.pid());
  EXPECT_EQ(t.command, "sleep 5");
  EXPECT_EQ(t.omp_num_threads, "3");
  EXPECT_EQ(t.mkl_num_threads, "2");
  EXPECT_GE(t.online_cpus, 1);
  ASSERT_TRUE(t.affinity_cpus);
  EXPECT_GE(*t.affinity_cpus, 1);
}

TEST(ProcSampler, FollowsChildProcesses) {
  // A parent with two worker children, as a DataLoader with num_workers=2.
  Child child({"sh", "-c", "sleep 5 & sleep 5 & wait"}, {});
  ASSERT_GT(child.pid(), 0);
  settle();
  auto tree = process_tree(child.pid());
  ASSERT_EQ(tree.size(), 3u);
  EXPECT_EQ(tree[0], child.pid());
  EXPECT_TRUE(process_tree(1 << 30).empty());
}

TEST(ProcSampler, FirstSampleIsOnlyTheBaseline) {
  Child child({"sleep", "5"}, {});
  ProcSampler sampler(child.pid());
  EXPECT_FALSE(sampler.sample());
  std::this_thread::sleep_for(100ms);
  auto r = sampler.sample();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->processes.size(), 1u);
  EXPECT_EQ(r->processes[0].comm, "sleep");
  EXPECT_TRUE(r->system_busy_pct);
}

TEST(ProcSampler, BusyChildIsPeggedAndClassifiedCpuBound) {
  Child child(busy_loop);
  settle();
  auto s = sample_for(child.pid(), 6, 200ms);
  ASSERT_EQ(s.samples.size(), 6u);
  auto h = host_stats(s);
  ASSERT_TRUE(h);
  // On CPU plus waiting for a CPU: the loop wants a whole core even on a crowded machine.
  EXPECT_GE(h->top_thread_demand_pct, thresholds::kPeggedDemandPct);
  EXPECT_LE(h->top_thread_demand_pct, 110);
  EXPECT_EQ(h->top_thread_tid, child.pid());
  auto c = classify(s);
  // No GPU in view: one busy thread is CPU-bound, never input-bound.
  EXPECT_EQ(c.verdict.rule, "cpu-bound-thread") << c.verdict.title;
  EXPECT_FALSE(c.gpu_in_view);
  EXPECT_FALSE(c.gpu_unknown_reason.empty());
}

TEST(ProcSampler, SleepingChildIsIdle) {
  Child child({"sleep", "10"}, {});
  settle();
  auto s = sample_for(child.pid(), 5, 200ms);
  auto h = host_stats(s);
  ASSERT_TRUE(h);
  EXPECT_LT(h->cpu_mean_pct, 1.0);
  EXPECT_DOUBLE_EQ(h->runnable_threads, 0);
  EXPECT_EQ(classify(s).verdict.rule, "idle");
}

TEST(ProcSampler, ManyThreadsOnOneCoreAreOversubscribed) {
  Child child([] { many_threads_on_one_core(8); });
  settle();
  auto s = sample_for(child.pid(), 6, 250ms);
  EXPECT_EQ(s.target.affinity_cpus, 1);
  EXPECT_DOUBLE_EQ(s.target.effective_cpus(), 1);
  auto h = host_stats(s);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->max_threads, 9);
  // Eight threads each want a core and share one.
  EXPECT_GE(h->demand_cores, 6);
  EXPECT_LE(h->cpu_mean_pct, 105);
  ASSERT_TRUE(h->involuntary_cs_per_s);
  EXPECT_GE(*h->involuntary_cs_per_s, thresholds::kOversubscribedInvolPerCore);
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "oversubscribed") << c.verdict.title;
  EXPECT_NE(c.verdict.command.find("OMP_NUM_THREADS=1"), std::string::npos);
}

TEST(ProcSampler, SyncWritingChildIsIoBound) {
  std::string path = ::testing::TempDir() + fmt::format("stepscope_io_test_{}.bin", ::getpid());
  Child child([path] { heavy_file_io(path); });
  settle();
  auto s = sample_for(child.pid(), 8, 200ms);
  auto h = host_stats(s);
  ASSERT_TRUE(h);
  ASSERT_TRUE(h->write_mbps);
  EXPECT_GE(*h->write_mbps, thresholds::kTargetIoMbps);
  EXPECT_LT(h->cpu_mean_pct, thresholds::kQuietCpuPct);
  EXPECT_EQ(classify(s).verdict.rule, "io-bound") << classify(s).verdict.title;
}

namespace {

// A CPU cgroup with a quota, created for one test and removed after it. Empty path when this
// machine does not let the tests create one (not root, or a read-only cgroup file system).
class QuotaCgroup {
 public:
  explicit QuotaCgroup(double cpus) {
    std::string name = fmt::format("stepscope_test_{}", ::getpid());
    bool v2 = ::access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
    std::string dir = (v2 ? "/sys/fs/cgroup/" : "/sys/fs/cgroup/cpu/") + name;
    if (::mkdir(dir.c_str(), 0755) != 0) return;
    dir_ = dir;
    const int period = 100000;
    bool ok = v2 ? write(dir + "/cpu.max", fmt::format("{} {}", int(cpus * period), period))
                 : write(dir + "/cpu.cfs_period_us", std::to_string(period)) &&
                       write(dir + "/cpu.cfs_quota_us", std::to_string(int(cpus * period)));
    if (!ok) {
      ::rmdir(dir_.c_str());
      dir_.clear();
    }
  }
  ~QuotaCgroup() {
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }
  bool join(pid_t pid) const { return write(dir_ + "/cgroup.procs", std::to_string(pid)); }

 private:
  static bool write(const std::string& path, const std::string& value) {
    std::ofstream out(path);
    out << value;
    out.flush();
    return bool(out);
  }
  std::string dir_;
};

}  // namespace

TEST(ProcSampler, ThreadsUnderACgroupQuotaAreOversubscribed) {
  QuotaCgroup cg(0.5);
  if (cg.dir().empty()) GTEST_SKIP() << "cannot create a CPU cgroup here";
  // The child joins the cgroup before it starts its threads, so all of them are limited.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  {
    Child child([&] {
      char c;
      ::close(go[1]);
      if (::read(go[0], &c, 1) != 1) ::_exit(2);
      std::vector<std::thread> pool;
      for (int i = 0; i < 4; ++i) pool.emplace_back(busy_loop);
      for (auto& t : pool) t.join();
    });
    ::close(go[0]);
    ASSERT_TRUE(cg.join(child.pid()));
    ASSERT_EQ(::write(go[1], "x", 1), 1);
    ::close(go[1]);
    settle();
    auto s = sample_for(child.pid(), 6, 250ms);
    ASSERT_TRUE(s.target.cgroup_quota_cpus);
    EXPECT_DOUBLE_EQ(*s.target.cgroup_quota_cpus, 0.5);
    EXPECT_DOUBLE_EQ(s.target.effective_cpus(), 0.5);
    auto h = host_stats(s);
    ASSERT_TRUE(h);
    // Four threads share half a core: the quota caps the whole tree.
    EXPECT_LE(h->cpu_mean_pct, 60);
    // Throttled periods are read; how many depends on how much CPU the crowded test machine
    // leaves the job, so only preemption or throttling together must carry the verdict.
    ASSERT_TRUE(h->cgroup_throttled_pct);
    EXPECT_GE(h->demand_cores / s.target.effective_cpus(), thresholds::kOversubscribedDemandRatio);
    auto c = classify(s);
    EXPECT_EQ(c.verdict.rule, "oversubscribed") << c.verdict.title;
  }
}

TEST(ProcSampler, TwoBusyThreadsAreCpuBoundAcrossThreads) {
  // Two spinning threads on a machine with at least two cores: each wants a whole core, so the
  // load is spread, not in one thread. Demand counts run-queue wait, so a loaded machine still
  // shows both threads busy.
  Child child([] {
    std::thread other(busy_loop);
    busy_loop();
  });
  settle();
  auto s = sample_for(child.pid(), 6, 200ms);
  if (s.target.effective_cpus() < 2) GTEST_SKIP() << "needs two usable cores";
  auto h = host_stats(s);
  ASSERT_TRUE(h);
  EXPECT_GE(h->busy_threads, 2);
  auto c = classify(s);
  EXPECT_FALSE(c.gpu_in_view);
  // A cgroup quota below two cores throttles two spinning threads; that verdict is right too.
  if (c.verdict.rule != "cgroup-throttled") {
    EXPECT_EQ(c.verdict.rule, "host-cpu-bound") << c.verdict.title;
  }
  EXPECT_NE(c.verdict.rule, "input-bound");
}

TEST(ProcSampler, SleepingChildIsIdleWithTheGpuSideUnknown) {
  Child child({"sleep", "10"}, {});
  settle();
  auto s = sample_for(child.pid(), 4, 150ms);
  s.gpu_status = "no NVIDIA driver";
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "idle");
  EXPECT_FALSE(c.gpu_in_view);
  EXPECT_EQ(c.gpu_unknown_reason, "no NVIDIA driver");
  EXPECT_NE(c.gpu_how_to_find_out.find("--pid"), std::string::npos);
  EXPECT_EQ(c.verdict.basis.samples, 4);
  EXPECT_EQ(c.verdict.confidence, Confidence::Medium);  // 4 samples; 5 would give high
}
