// The rules on constructed series: each case builds the readings a real job of that kind shows.
#include <gtest/gtest.h>

#include <functional>

#include "stepscope/watch.hpp"

using namespace stepscope::watch;

namespace {

GpuReading gpu(double util, double clock = 1410, double power = 350, double mem_used = 20000) {
  GpuReading g;
  g.index = 0;
  g.name = "A100";
  g.util_pct = util;
  g.sm_clock_mhz = clock;
  g.sm_clock_max_mhz = 1410;
  g.power_w = power;
  g.power_limit_w = 400;
  g.mem_used_mib = mem_used;
  g.mem_total_mib = 81920;
  g.throttle_reasons = 0;
  return g;
}

// A host reading with one process and the given threads (cpu%, wait%, state).
struct T {
  double cpu;
  double wait;
  char state = 'S';
};
HostReading host(std::vector<T> threads, double invol_per_s = 10, double io_mbps = 0) {
  HostReading h;
  ProcessReading p;
  p.pid = 100;
  p.comm = "python";
  p.threads = int(threads.size());
  p.involuntary_cs_per_s = invol_per_s;
  p.voluntary_cs_per_s = 100;
  p.read_mbps = io_mbps;
  p.write_mbps = 0;
  int tid = 100;
  for (const auto& t : threads) {
    ThreadReading r;
    r.pid = 100;
    r.tid = tid++;
    r.comm = "python";
    r.cpu_pct = t.cpu;
    r.wait_pct = t.wait;
    r.state = t.state;
    p.cpu_pct += t.cpu;
    h.threads.push_back(r);
  }
  h.processes.push_back(p);
  h.system_iowait_pct = 1;
  h.disk_busy_pct = 2;
  return h;
}

Series series_of(int n, const std::function<Sample(int)>& make, int cpus = 8) {
  Series s;
  s.target.pid = 100;
  s.target.online_cpus = cpus;
  for (int i = 0; i < n; ++i) {
    Sample x = make(i);
    x.t_s = i;
    s.samples.push_back(x);
  }
  return s;
}

}  // namespace

TEST(Classify, SteadyHighUtilWithHighClocksIsGpuBound) {
  auto s = series_of(10, [](int i) {
    Sample x;
    x.gpus.push_back(gpu(96 + i % 3));
    x.host = host({{60, 0}});
    return x;
  });
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "gpu-bound");
  EXPECT_EQ(c.verdict.confidence, Confidence::High);
  ASSERT_EQ(c.gpus.size(), 1u);
  EXPECT_NEAR(*c.gpus[0].util_mean, 97, 0.5);
}

TEST(Classify, SawtoothGpuWithPeggedThreadIsInputBound) {
  auto s = series_of(10, [](int i) {
    Sample x;
    x.gpus.push_back(gpu(i % 2 ? 90 : 10, 1410, 200));
    x.host = host({{98, 1, 'R'}, {3, 0}});
    return x;
  });
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "input-bound");
  EXPECT_EQ(c.verdict.confidence, Confidence::High);
  EXPECT_NEAR(c.host->top_thread_demand_pct, 99, 0.01);
  EXPECT_NE(c.verdict.command.find("py-spy"), std::string::npos);
}

TEST(Classify, LowGpuLowCpuWithBlockedThreadsIsIoBound) {
  auto s = series_of(10, [](int i) {
    Sample x;
    x.gpus.push_back(gpu(5, 1410, 80));
    x.host = host({{4, 0, i % 2 ? 'D' : 'S'}, {2, 0}}, 10, 40);
    x.host->system_iowait_pct = 25;
    return x;
  });
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "io-bound");
  EXPECT_NEAR(c.host->io_blocked_threads, 0.5, 1e-9);
}

TEST(Classify, ManyThreadsOnFewCoresIsOversubscribed) {
  auto s = series_of(
      10,
      [](int) {
        Sample x;
        x.gpus.push_back(gpu(30, 1410, 150));
        // 16 threads on 2 usable cores: each gets 1/8 of a core and waits the rest.
        x.host = host(std::vector<T>(16, T{12.5, 87.5, 'R'}), 800);
        return x;
      },
      2);
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "oversubscribed");
  EXPECT_NEAR(c.host->demand_cores, 16, 1e-9);
  EXPECT_NE(c.verdict.command.find("OMP_NUM_THREADS=2"), std::string::npos);
}

TEST(Classify, ManyThreadsWithoutPreemptionAreNotOversubscribed) {
  // The same demand but no involuntary switches and no cgroup throttling: the readings are
  // contradictory, so the rule must not fire on demand alone.
  auto s = series_of(
      10,
      [](int) {
        Sample x;
        x.host = host(std::vector<T>(16, T{12.5, 87.5, 'R'}), 0);
        return x;
      },
      2);
  EXPECT_NE(classify(s).verdict.rule, "oversubscribed");
}

TEST(Classify, HighUtilWithLowPowerIsUtilisationLies) {
  auto s = series_of(10, [](int) {
    Sample x;
    x.gpus.push_back(gpu(100, 1410, 90));
    return x;
  });
  EXPECT_EQ(classify(s).verdict.rule, "utilisation-lies");
}

TEST(Classify, HighUtilWithThermalSlowdownIsThrottled) {
  auto s = series_of(10, [](int) {
    Sample x;
    auto g = gpu(99, 900, 300);
    g.throttle_reasons = throttle::kHwThermal | throttle::kSwThermal;
    x.gpus.push_back(g);
    return x;
  });
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "throttled");
  EXPECT_NE(c.verdict.title.find("hw-thermal"), std::string::npos);
  EXPECT_DOUBLE_EQ(c.gpus[0].throttled_share, 1.0);
}

TEST(Classify, FullMemoryAndIdleGpuWithQuietHost) {
  auto s = series_of(10, [](int) {
    Sample x;
    x.gpus.push_back(gpu(12, 1410, 100, 80000));
    x.host = host({{20, 0}});
    return x;
  });
  EXPECT_EQ(classify(s).verdict.rule, "memory-full-low-util");
}

TEST(Classify, StarvedGpuWithQuietHostPointsAtSynchronisation) {
  auto s = series_of(10, [](int) {
    Sample x;
    x.gpus.push_back(gpu(30, 1410, 150));
    x.host = host({{30, 0}});
    return x;
  });
  EXPECT_EQ(classify(s).verdict.rule, "gpu-underfed");
}

TEST(Classify, HostOnlyIdleProcess) {
  auto s = series_of(10, [](int) {
    Sample x;
    x.host = host({{0.2, 0}});
    return x;
  });
  EXPECT_EQ(classify(s).verdict.rule, "idle");
}

TEST(Classify, PeggedProcessWithoutThreadReadingsCountsAsPegged) {
  // Offline logs (top without -H) carry only per-process CPU.
  auto s = series_of(5, [](int) {
    Sample x;
    HostReading h;
    ProcessReading p;
    p.pid = 7;
    p.comm = "python";
    p.cpu_pct = 99;
    h.processes.push_back(p);
    x.host = h;
    x.gpus.push_back(gpu(20, 1410, 120));
    return x;
  });
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "input-bound");
  EXPECT_EQ(c.host->top_process_pid, 7);
}

TEST(Classify, ImbalancedGpusAreReported) {
  auto s = series_of(10, [](int) {
    Sample x;
    auto a = gpu(97);
    auto b = gpu(40);
    b.index = 1;
    x.gpus = {a, b};
    return x;
  });
  auto c = classify(s);
  bool found = false;
  for (const auto& f : c.others) found |= f.rule == "gpu-imbalance";
  EXPECT_TRUE(found);
}

TEST(Classify, EmptySeriesSaysSo) { EXPECT_EQ(classify(Series{}).verdict.rule, "no-data"); }

TEST(Classify, EffectiveCpusTakesTheSmallestLimit) {
  TargetInfo t;
  t.online_cpus = 64;
  t.affinity_cpus = 16;
  t.cgroup_quota_cpus = 2.5;
  EXPECT_DOUBLE_EQ(t.effective_cpus(), 2.5);
  t.cgroup_quota_cpus.reset();
  EXPECT_DOUBLE_EQ(t.effective_cpus(), 16);
}

TEST(Throttle, DescribesReasonBits) {
  EXPECT_EQ(throttle::describe(throttle::kSwPowerCap | throttle::kHwThermal),
            "sw-power-cap, hw-thermal");
  EXPECT_EQ(throttle::describe(0), "none");
}

TEST(Classify, ThreadOftenBlockedInIoIsNotPegged) {
  // On an overloaded host an I/O thread queues for a core after each completion, so its demand
  // is high; being seen in state D says it waits on storage.
  auto s = series_of(10, [](int i) {
    Sample x;
    x.host = host({{10, 80, i % 2 ? 'D' : 'R'}}, 10, 200);
    return x;
  });
  auto c = classify(s);
  EXPECT_DOUBLE_EQ(c.host->top_thread_io_share, 0.5);
  EXPECT_EQ(c.verdict.rule, "io-bound");
}

TEST(Classify, QueuedJobOnSaturatedHostIsFlaggedContended) {
  auto s = series_of(
      5,
      [](int) {
        Sample x;
        x.host = host({{38, 62, 'R'}});
        x.host->system_busy_pct = 100;
        return x;
      },
      2);
  auto c = classify(s);
  EXPECT_EQ(c.verdict.rule, "cpu-bound-thread");  // the thread still wants a whole core
  bool contended = false;
  for (const auto& f : c.others) contended |= f.rule == "host-contended";
  EXPECT_TRUE(contended);
  // The same demand on an idle machine is not contention.
  s.samples[0].host->system_busy_pct = 20;
  for (auto& x : s.samples) x.host->system_busy_pct = 20;
  c = classify(s);
  for (const auto& f : c.others) EXPECT_NE(f.rule, "host-contended");
}

TEST(Classify, InputBoundNamesTheSamplesThatShowedIt) {
  auto s = series_of(10, [](int i) {
    Sample x;
    x.gpus.push_back(gpu(i % 2 ? 90 : 10, 1410, 200));
    x.host = host({{98, 1, 'R'}, {3, 0}});
    return x;
  });
  auto c = classify(s);
  ASSERT_EQ(c.verdict.rule, "input-bound");
  EXPECT_EQ(c.verdict.shown_at_s, (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(c.verdict.basis.samples, 10);
  EXPECT_TRUE(c.verdict.basis.to_raise.empty());
}

TEST(Classify, PeggedThreadWithAFedGpuIsNotInputBound) {
  // The GPU is steadily three-quarters busy: it never waits, so the busy thread is not what
  // holds it back.
  auto s = series_of(10, [](int i) {
    Sample x;
    x.gpus.push_back(gpu(74 + i % 3));
    x.host = host({{98, 1, 'R'}});
    return x;
  });
  EXPECT_NE(classify(s).verdict.rule, "input-bound");
}

TEST(Classify, PeggedThreadAndIdleGpuInDifferentSamplesIsNotInputBound) {
  // The thread is busy only while the GPU is busy: the two sides never coincide.
  auto s = series_of(10, [](int i) {
    Sample x;
    bool busy = i % 2;
    x.gpus.push_back(gpu(busy ? 95 : 5, 1410, 200));
    x.host = host({{busy ? 100.0 : 80.0, 0, 'R'}});
    return x;
  });
  auto c = classify(s);
  EXPECT_NE(c.verdict.rule, "input-bound") << c.verdict.title;
}

TEST(Classify, HostOnlyVerdictsNeverClaimTheGpuSide) {
  auto pegged = series_of(6, [](int) {
    Sample x;
    x.host = host({{99, 0, 'R'}});
    return x;
  });
  auto c = classify(pegged);
  EXPECT_EQ(c.verdict.rule, "cpu-bound-thread");
  EXPECT_FALSE(c.gpu_in_view);
  EXPECT_EQ(c.verdict.next_step.find("GPU"), std::string::npos) << c.verdict.next_step;
  EXPECT_EQ(c.verdict.next_step.find("num_workers"), std::string::npos);
  EXPECT_EQ(c.verdict.confidence, Confidence::High);

  auto spread = series_of(6, [](int) {
    Sample x;
    x.host = host({{95, 5, 'R'}, {90, 10, 'R'}, {2, 0}});
    return x;
  });
  c = classify(spread);
  EXPECT_EQ(c.verdict.rule, "host-cpu-bound");
  EXPECT_EQ(c.host->busy_threads, 2);
  EXPECT_EQ(c.verdict.next_step.find("GPU"), std::string::npos) << c.verdict.next_step;

  auto napping = series_of(6, [](int) {
    Sample x;
    x.host = host({{20, 0}});
    return x;
  });
  EXPECT_EQ(classify(napping).verdict.rule, "waiting");

  auto quota = series_of(6, [](int) {
    Sample x;
    x.host = host({{60, 0, 'R'}});
    x.host->cgroup_throttled_pct = 70;
    return x;
  });
  EXPECT_EQ(classify(quota).verdict.rule, "cgroup-throttled");
}

TEST(Classify, GpuHeldByOtherProcessesIsNotThisJobs) {
  // The source can match contexts to pids and none is the job's: the GPU is someone else's.
  auto s = series_of(6, [](int i) {
    Sample x;
    x.gpus.push_back(gpu(i % 2 ? 90 : 5, 1410, 200));
    x.gpus.back().target_pids.clear();
    x.host = host({{99, 0, 'R'}});
    return x;
  });
  s.gpu_observed = true;
  s.gpu_pids_matchable = true;
  auto c = classify(s);
  EXPECT_FALSE(c.gpu_in_view);
  EXPECT_EQ(c.verdict.rule, "cpu-bound-thread");
  EXPECT_NE(c.gpu_unknown_reason.find("not in use by the watched"), std::string::npos);
  ASSERT_EQ(c.gpus.size(), 1u);  // still reported, just not judged
}

TEST(Classify, ConfidenceFollowsSamplesAndMargins) {
  auto few = series_of(2, [](int) {
    Sample x;
    x.host = host({{99, 0, 'R'}});
    return x;
  });
  auto c = classify(few);
  EXPECT_EQ(c.verdict.confidence, Confidence::Low);
  EXPECT_NE(c.verdict.basis.text.find("2 sample(s)"), std::string::npos);
  EXPECT_NE(c.verdict.basis.to_raise.find("more samples"), std::string::npos);

  auto close = series_of(10, [](int) {
    Sample x;
    x.host = host({{87, 0, 'R'}});  // 2% above the pegged threshold of 85
    return x;
  });
  c = classify(close);
  EXPECT_EQ(c.verdict.rule, "cpu-bound-thread");
  EXPECT_EQ(c.verdict.confidence, Confidence::Low);
  EXPECT_NE(c.verdict.basis.to_raise.find("host.top_thread.demand"), std::string::npos);
}
