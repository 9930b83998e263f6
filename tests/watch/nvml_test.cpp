// The NVML path through the real dlopen code, against a test double of libnvidia-ml that replays
// scripted readings (tests/watch/fake_nvml.c, compiled here into a shared library).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "children.hpp"
#include "stepscope/error.hpp"
#include "stepscope/watch/gpu.hpp"
#include "stepscope/watch/live.hpp"

using namespace stepscope::watch;
using namespace watch_test;

namespace {

// Builds the double once per test process with the system C compiler, and removes it at exit.
class FakeLibrary {
 public:
  FakeLibrary() {
    // Per process: ctest runs the tests of this binary as parallel processes.
    path_ = ::testing::TempDir() + fmt::format("libstepscope_fake_nvml_{}.so", ::getpid());
    const char* cc = std::getenv("CC");
    std::string cmd = fmt::format("{} -shared -fPIC -O1 -o '{}' '{}/tests/watch/fake_nvml.c'",
                                  cc && *cc ? cc : "cc", path_, STEPSCOPE_SOURCE_DIR);
    if (std::system(cmd.c_str()) != 0) path_.clear();
  }
  ~FakeLibrary() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string& fake_library() {
  static const FakeLibrary library;
  return library.path();
}

// Writes a script and points the double at it for the lifetime of the object.
class Script {
 public:
  explicit Script(const std::string& text) {
    path_ = ::testing::TempDir() + fmt::format("fake_nvml_{}.txt", ::getpid());
    std::ofstream(path_) << text;
    ::setenv("STEPSCOPE_FAKE_NVML_SCRIPT", path_.c_str(), 1);
  }
  ~Script() {
    ::unsetenv("STEPSCOPE_FAKE_NVML_SCRIPT");
    std::remove(path_.c_str());
  }

 private:
  std::string path_;
};

}  // namespace

TEST(Nvml, MissingLibraryIsReportedNotFatal) {
  auto gpu = open_nvml("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(gpu->available());
  EXPECT_NE(gpu->status().find("no NVIDIA driver"), std::string::npos) << gpu->status();
  EXPECT_NE(gpu->status().find("host side only"), std::string::npos);
  EXPECT_TRUE(gpu->sample({}).empty());
}

TEST(Nvml, LibraryPathFromEnvironment) {
  ::setenv(kNvmlLibraryEnv, "/nonexistent/from-env.so", 1);
  auto gpu = open_nvml();
  ::unsetenv(kNvmlLibraryEnv);
  EXPECT_NE(gpu->status().find("/nonexistent/from-env.so"), std::string::npos) << gpu->status();
}

TEST(Nvml, DefaultLibraryOnThisMachine) {
  // Without a driver this must degrade to a clear status; with one it must list the GPUs.
  auto gpu = open_nvml(kNvmlDefaultLibrary);
  if (gpu->available()) {
    auto readings = gpu->sample({});
    ASSERT_FALSE(readings.empty());
    EXPECT_TRUE(readings[0].util_pct);
  } else {
    EXPECT_NE(gpu->status().find("host side only"), std::string::npos) << gpu->status();
  }
}

TEST(Nvml, InitFailureIsReported) {
  ASSERT_FALSE(fake_library().empty()) << "could not compile the NVML double";
  Script script("init_error 9\n");
  auto gpu = open_nvml(fake_library());
  EXPECT_FALSE(gpu->available());
  EXPECT_NE(gpu->status().find("Driver Not Loaded"), std::string::npos) << gpu->status();
}

TEST(Nvml, ReadsEveryFieldAndConvertsUnits) {
  ASSERT_FALSE(fake_library().empty());
  Script script(
      "device A100-SXM4-80GB 1410 400 81920\n"
      "tick 0 97 41 1395 1593 352 66 40960 2048 512 0x4 4242,77\n");
  auto gpu = open_nvml(fake_library());
  ASSERT_TRUE(gpu->available()) << gpu->status();
  EXPECT_NE(gpu->status().find("1 GPU"), std::string::npos);
  auto r = gpu->sample({4242});
  ASSERT_EQ(r.size(), 1u);
  const auto& g = r[0];
  EXPECT_EQ(g.name, "A100-SXM4-80GB");
  EXPECT_EQ(g.util_pct, 97);
  EXPECT_EQ(g.mem_util_pct, 41);
  EXPECT_EQ(g.sm_clock_mhz, 1395);
  EXPECT_EQ(g.sm_clock_max_mhz, 1410);
  EXPECT_EQ(g.mem_clock_mhz, 1593);
  EXPECT_DOUBLE_EQ(*g.power_w, 352);  // from milliwatts
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 400);
  EXPECT_EQ(g.temp_c, 66);
  EXPECT_DOUBLE_EQ(*g.mem_used_mib, 40960);  // from bytes
  EXPECT_DOUBLE_EQ(*g.mem_total_mib, 81920);
  EXPECT_NEAR(*g.pcie_rx_mbps, 2048 * 1024 / 1e6, 1e-9);  // from KB/s
  EXPECT_EQ(g.throttle_reasons, throttle::kSwPowerCap);
  // Only the watched pid counts, not the other process on the card.
  ASSERT_EQ(g.target_pids, std::vector<int>{4242});
  EXPECT_DOUBLE_EQ(g.target_mem_mib, 1024);
}

TEST(Nvml, UnsupportedReadingStaysEmpty) {
  ASSERT_FALSE(fake_library().empty());
  Script script(
      "device T4 1590 70 15360\n"
      "unsupported power\n"
      "tick 0 50 10 1590 5001 0 50 1000 0 0 0x0 -\n");
  auto gpu = open_nvml(fake_library());
  auto r = gpu->sample({});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].power_w);
  EXPECT_EQ(r[0].util_pct, 50);
}

TEST(Nvml, WatchReplaysSawtoothAgainstAPeggedChildAsInputBound) {
  // The real loop: a busy child on the host, and a GPU that saw-tooths while serving it.
  ASSERT_FALSE(fake_library().empty());
  Child child(pegged_busy_loop);
  settle();
  std::string script = "device A100 1410 400 81920\n";
  for (int i = 0; i < 12; ++i)
    script += fmt::format("tick 0 {} 20 1410 1593 {} 50 30000 100 10 0x0 {}\n", i % 2 ? 85 : 5,
                          i % 2 ? 300 : 90, child.pid());
  Script s(script);
  auto gpu = open_nvml(fake_library());
  ASSERT_TRUE(gpu->available()) << gpu->status();
  WatchOptions o;
  o.pid = child.pid();
  o.seconds = 1.2;
  o.interval_ms = 200;
  std::atomic<bool> stop{false};
  int callbacks = 0;
  auto result = run_watch(o, *gpu, stop, [&](const Series&) { ++callbacks; });
  ASSERT_GE(result.series.samples.size(), 5u);
  EXPECT_EQ(callbacks, int(result.series.samples.size()));
  const auto& c = result.classification;
  ASSERT_EQ(c.gpus.size(), 1u);
  EXPECT_TRUE(c.gpus[0].used_by_target);
  EXPECT_GE(*c.gpus[0].swing_share, 0.99);
  EXPECT_EQ(c.verdict.rule, "input-bound") << c.verdict.title;
  // High, unless the busy machine (the other tests beside this one) held the child's measured
  // demand near its threshold: then the grade is rightly capped by that margin, and says so.
  if (c.verdict.confidence != Confidence::High) {
    EXPECT_EQ(c.verdict.confidence, Confidence::Medium) << c.verdict.basis.text;
    EXPECT_NE(c.verdict.basis.text.find("closest call: host.top_thread.demand"), std::string::npos) << c.verdict.basis.text;
  }
}

TEST(Nvml, WatchReplaysThermalThrottling) {
  ASSERT_FALSE(fake_library().empty());
  Child child({"sleep", "10"}, {});
  settle();
  Script s(
      fmt::format("device H100 1980 700 81559\n"
                  "tick 0 99 60 1100 2619 690 91 50000 0 0 0x60 {}\n",
                  child.pid()));
  auto gpu = open_nvml(fake_library());
  WatchOptions o;
  o.pid = child.pid();
  o.seconds = 0.6;
  o.interval_ms = 200;
  std::atomic<bool> stop{false};
  auto result = run_watch(o, *gpu, stop);
  EXPECT_EQ(result.classification.verdict.rule, "throttled");
  EXPECT_NE(result.classification.verdict.title.find("hw-thermal"), std::string::npos);
}

TEST(Watch, BadOptionsAreInputErrors) {
  auto gpu = no_gpu_source("off");
  std::atomic<bool> stop{false};
  WatchOptions none;
  EXPECT_THROW(run_watch(none, *gpu, stop), stepscope::InputError);
  WatchOptions both;
  both.pid = 1;
  both.command = {"true"};
  EXPECT_THROW(validate(both), stepscope::InputError);
  WatchOptions fast;
  fast.pid = 1;
  fast.interval_ms = 1;
  EXPECT_THROW(validate(fast), stepscope::InputError);
  WatchOptions short_window;
  short_window.pid = 1;
  short_window.seconds = 0.1;
  EXPECT_THROW(validate(short_window), stepscope::InputError);
  WatchOptions missing;
  missing.command = {"/nonexistent/program"};
  EXPECT_THROW(run_watch(missing, *gpu, stop), stepscope::InputError);
}

TEST(Watch, StartedCommandEndsTheWatchWhenItExits) {
  auto gpu = no_gpu_source("off");
  std::atomic<bool> stop{false};
  WatchOptions o;
  o.command = {"sh", "-c", "sleep 0.5"};
  o.seconds = 5;
  o.interval_ms = 100;
  auto start = std::chrono::steady_clock::now();
  auto result = run_watch(o, *gpu, stop);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(result.target_exited);
  EXPECT_LT(took, 4.0);  // ended with the command, not with the window
  EXPECT_GE(result.series.samples.size(), 2u);
  EXPECT_EQ(result.series.target.command, "sh -c sleep 0.5");
  EXPECT_EQ(wait_for_command(result.launched), 0);
  ASSERT_FALSE(result.series.notes.empty());
  EXPECT_EQ(result.series.notes.front(), (stepscope::Warning{stepscope::WarningId::NoGpuObserved, "off"}));
}

TEST(Watch, StopFlagEndsTheWatchEarly) {
  auto gpu = no_gpu_source("off");
  Child child({"sleep", "10"}, {});
  std::atomic<bool> stop{false};
  WatchOptions o;
  o.pid = child.pid();
  o.seconds = 60;
  o.interval_ms = 100;
  auto result = run_watch(o, *gpu, stop, [&](const Series& s) {
    if (s.samples.size() == 3) stop = true;
  });
  EXPECT_TRUE(result.interrupted);
  EXPECT_EQ(result.series.samples.size(), 3u);
}

namespace {

// Watches `pid` for about a second against the scripted GPU.
WatchResult watch_briefly(int pid) {
  auto gpu = open_nvml(fake_library());
  EXPECT_TRUE(gpu->available()) << gpu->status();
  WatchOptions o;
  o.pid = pid;
  o.seconds = 1.2;
  o.interval_ms = 200;
  std::atomic<bool> stop{false};
  return run_watch(o, *gpu, stop);
}

}  // namespace

TEST(Nvml, GpuOfAnotherProcessLeavesABusyChildHostSide) {
  // The card saw-tooths, but for some other process: the busy child is CPU-bound, not input-bound.
  ASSERT_FALSE(fake_library().empty());
  Child child(pegged_busy_loop);
  settle();
  std::string script = "device A100 1410 400 81920\n";
  for (int i = 0; i < 12; ++i)
    script += fmt::format("tick 0 {} 20 1410 1593 200 50 30000 100 10 0x0 1\n", i % 2 ? 85 : 5);
  Script s(script);
  auto result = watch_briefly(child.pid());
  const auto& c = result.classification;
  EXPECT_FALSE(c.gpu_in_view);
  EXPECT_EQ(c.verdict.rule, "cpu-bound-thread") << c.verdict.title;
  EXPECT_NE(c.gpu_unknown_reason.find("not in use by the watched"), std::string::npos);
}

TEST(Nvml, BusyChildBesideAFedGpuIsNotInputBound) {
  ASSERT_FALSE(fake_library().empty());
  Child child(pegged_busy_loop);
  settle();
  Script s(fmt::format("device A100 1410 400 81920\n"
                       "tick 0 97 60 1400 1593 330 60 30000 100 10 0x0 {}\n",
                       child.pid()));
  auto result = watch_briefly(child.pid());
  const auto& c = result.classification;
  EXPECT_TRUE(c.gpu_in_view);
  EXPECT_EQ(c.verdict.rule, "gpu-bound") << c.verdict.title;
}

TEST(Nvml, InputBoundNamesTheCoincidentSamples) {
  ASSERT_FALSE(fake_library().empty());
  Child child(pegged_busy_loop);
  settle();
  std::string script = "device A100 1410 400 81920\n";
  for (int i = 0; i < 12; ++i)
    script += fmt::format("tick 0 {} 20 1410 1593 {} 50 30000 100 10 0x0 {}\n", i % 2 ? 85 : 5,
                          i % 2 ? 300 : 90, child.pid());
  Script s(script);
  auto result = watch_briefly(child.pid());
  const auto& v = result.classification.verdict;
  ASSERT_EQ(v.rule, "input-bound") << v.title;
  EXPECT_GE(v.shown_at_s.size(), 2u);
  bool named = false;
  for (const auto& e : v.evidence) named |= e.metric == "window.coincident_samples";
  EXPECT_TRUE(named);
}
