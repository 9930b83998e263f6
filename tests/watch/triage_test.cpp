// Offline triage: the log readers on every layout the tools write, and the verdicts on them.
#include "stepscope/watch/triage.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stepscope/error.hpp"
#include "stepscope/watch/render.hpp"

using namespace stepscope::watch;

namespace {

TriageResult triage(std::vector<std::pair<std::string, std::string>> logs, TriageOptions o = {}) {
  return triage_logs(logs, o);
}

std::vector<double> utils(const Series& s, int index) {
  std::vector<double> out;
  for (const auto& x : s.samples)
    for (const auto& g : x.gpus)
      if (g.index == index) out.push_back(g.util_pct.value_or(-1));
  return out;
}

// `nvidia-smi dmon` with no options (recent drivers add jpg/ofa columns).
const char* kDmonDefault =
    "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk\n"
    "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz\n"
    "    0    312     65      -     98     45      0      0      0      0   1593   1410\n"
    "    1    305     63      -     97     44      0      0      0      0   1593   1410\n"
    "    0    318     66      -     99     46      0      0      0      0   1593   1410\n"
    "    1    301     63      -     96     43      0      0      0      0   1593   1410\n"
    "    0    315     66      -     98     45      0      0      0      0   1593   1410\n"
    "    1    309     64      -     98     44      0      0      0      0   1593   1410\n";

// `nvidia-smi dmon -s pucvmet -o DT` from an older driver (no jpg/ofa), with a header repeat
// and a last line cut off when the job was killed.
const char* kDmonDatedSawtooth =
    "#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk pviol tviol "
    "   fb  bar1 sbecc dbecc   pci rxpci txpci\n"
    "#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz     %  bool "
    "   MB    MB  errs  errs  errs  MB/s  MB/s\n"
    " 20240102   23:59:58      0    90    40     -     5     1     0     0  1593  1410     0     0 "
    "30000     5     0     0     0    10     1\n"
    " 20240102   23:59:59      0   310    45     -    92    40     0     0  1593  1410     0     0 "
    "30000     5     0     0     0  2500     1\n"
    " 20240103   00:00:00      0    95    41     -     8     2     0     0  1593  1410     0     0 "
    "30000     5     0     0     0    12     1\n"
    "#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk pviol tviol "
    "   fb  bar1 sbecc dbecc   pci rxpci txpci\n"
    "#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz     %  bool "
    "   MB    MB  errs  errs  errs  MB/s  MB/s\n"
    " 20240103   00:00:01      0   305    46     -    90    39     0     0  1593  1410     0     0 "
    "30000     5     0     0     0  2400     1\n"
    " 20240103   00:00:02      0    92    41     -     6     1     0     0  1593  1410     0     0 "
    "30000     5     0     0     0    11     1\n"
    " 20240103   00:00:03      0   300    45     -    88    38     0     0  1593  1410     0     0 "
    "30000     5     0     0     0  2450     1\n"
    " 20240103   00:00:04      0    9";

// The classic 30-second check, `nvidia-smi dmon -s pu -d 1 -o T`, in the CSV form newer drivers
// write with `--format csv`.
const char* kDmonCsvTimed =
    "#Time, gpu, pwr, gtemp, mtemp, sm, mem, enc, dec, jpg, ofa\n"
    "#HH:MM:SS, Idx, W, C, C, %, %, %, %, %, %\n"
    "10:15:00, 0, 650, 80, 85, 99, 60, 0, 0, 0, 0\n"
    "10:15:01, 0, 655, 81, 85, 100, 61, 0, 0, 0, 0\n"
    "10:15:02, 0, 640, 81, 85, 98, 60, 0, 0, 0, 0\n";

// `nvidia-smi --query-gpu=... --format=csv -l 1`: units in the header and the values, N/A.
const char* kQueryCsvUnits =
    "timestamp, name, index, utilization.gpu [%], utilization.memory [%], clocks.sm [MHz], "
    "clocks.max.sm [MHz], power.draw [W], power.limit [W], memory.used [MiB], memory.total [MiB], "
    "temperature.gpu, clocks_throttle_reasons.active\n"
    "2024/01/02 10:15:00.123, NVIDIA A100-SXM4-80GB, 0, 100 %, 3 %, 1410 MHz, 1410 MHz, 95.12 W, "
    "400.00 W, 10240 MiB, 81920 MiB, 45, 0x0000000000000000\n"
    "2024/01/02 10:15:01.124, NVIDIA A100-SXM4-80GB, 0, 100 %, 2 %, 1410 MHz, 1410 MHz, 96.40 W, "
    "400.00 W, 10240 MiB, 81920 MiB, 45, 0x0000000000000000\n"
    "2024/01/02 10:15:02.125, NVIDIA A100-SXM4-80GB, 0, 99 %, 3 %, 1410 MHz, 1410 MHz, [N/A], "
    "400.00 W, 10240 MiB, 81920 MiB, 45, 0x0000000000000000\n"
    "timestamp, name, index, utilization.gpu [%], utilization.memory [%], clocks.sm [MHz], "
    "clocks.max.sm [MHz], power.draw [W], power.limit [W], memory.used [MiB], memory.total [MiB], "
    "temperature.gpu, clocks_throttle_reasons.active\n"
    "2024/01/02 10:15:03.125, NVIDIA A100-SXM4-80GB, 0, 100 %, 3 %, 1410 MHz, 1410 MHz, 94.00 W, "
    "400.00 W, 10240 MiB, 81920 MiB, 45, 0x0000000000000000\n"
    "2024/01/02 10:15:04.125, NVIDIA A100-SXM4-80GB, 0, 10";

// `--format=csv,nounits` with the newer clocks_event_reasons names and per-reason columns.
const char* kQueryCsvNoUnitsThrottled =
    "index, utilization.gpu, clocks.current.sm, clocks.max.sm, power.draw, enforced.power.limit, "
    "clocks_event_reasons.hw_thermal_slowdown, clocks_event_reasons.sw_power_cap\n"
    "0, 99, 1005, 1980, 690.5, 700.00, Active, Not Active\n"
    "0, 98, 990, 1980, 689.0, 700.00, Active, Not Active\n"
    "0, 99, 1010, 1980, 695.1, 700.00, Active, Active\n";

// `top -b -d 1` with the job's Python main process pegged and two idle loader workers.
const char* kTopPegged =
    "top - 10:15:00 up 1 day,  2:03,  1 user,  load average: 1.20, 1.10, 1.00\n"
    "Tasks: 210 total,   2 running, 208 sleeping,   0 stopped,   0 zombie\n"
    "%Cpu(s): 13.0 us,  0.5 sy,  0.0 ni, 86.0 id,  0.2 wa,  0.0 hi,  0.3 si,  0.0 st\n"
    "MiB Mem : 515000.0 total, 400000.0 free,  50000.0 used,  65000.0 buff/cache\n"
    "MiB Swap:      0.0 total,      0.0 free,      0.0 used. 460000.0 avail Mem\n"
    "\n"
    "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"
    "   4242 alice     20   0   30.1g   5.2g 200000 R 100.0   1.0  10:00.01 python\n"
    "   4250 alice     20   0   20.0g   1.1g 100000 S   2.0   0.2   0:10.00 python\n"
    "    812 root      20   0   10000   5000   4000 S   0.3   0.0   1:00.00 sshd\n"
    "\n"
    "top - 10:15:01 up 1 day,  2:03,  1 user,  load average: 1.20, 1.10, 1.00\n"
    "Tasks: 210 total,   2 running, 208 sleeping,   0 stopped,   0 zombie\n"
    "%Cpu(s): 12.8 us,  0.6 sy,  0.0 ni, 86.1 id,  0.1 wa,  0.0 hi,  0.4 si,  0.0 st\n"
    "\n"
    "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"
    "   4242 alice     20   0   30.1g   5.2g 200000 R  99.3   1.0  10:01.00 python\n"
    "   4250 alice     20   0   20.0g   1.1g 100000 S   1.0   0.2   0:10.01 python\n";

// `pidstat -u -d -w -p 4242 1` (12-hour clock): a loader that reads at a trickle and mostly waits.
const char* kPidstatIo =
    "Linux 5.15.0-91-generic (gpu-node-7) \t01/02/2024 \t_x86_64_\t(32 CPU)\n"
    "\n"
    "10:15:01 AM   UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command\n"
    "10:15:02 AM  1000      4242    3.00    4.00    0.00    0.00    7.00     3  python\n"
    "\n"
    "10:15:01 AM   UID       PID   kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command\n"
    "10:15:02 AM  1000      4242  51200.00      0.00      0.00      95  python\n"
    "\n"
    "10:15:01 AM   UID       PID   cswch/s nvcswch/s  Command\n"
    "10:15:02 AM  1000      4242    800.00      2.00  python\n"
    "\n"
    "10:15:02 AM   UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command\n"
    "10:15:03 AM  1000      4242    2.00    5.00    0.00    0.00    7.00     3  python\n"
    "\n"
    "10:15:02 AM   UID       PID   kB_rd/s   kB_wr/s kB_ccwr/s iodelay  Command\n"
    "10:15:03 AM  1000      4242  48000.00      0.00      0.00      97  python\n"
    "\n"
    "Average:      UID       PID    %usr %system  %guest   %wait    %CPU   CPU  Command\n"
    "Average:     1000      4242    2.50    4.50    0.00    0.00    7.00     -  python\n";

}  // namespace

TEST(TriageDetect, RecognisesEachFormat) {
  EXPECT_EQ(detect_log_kind(kDmonDefault), LogKind::Dmon);
  EXPECT_EQ(detect_log_kind(kDmonDatedSawtooth), LogKind::Dmon);
  EXPECT_EQ(detect_log_kind(kDmonCsvTimed), LogKind::Dmon);
  EXPECT_EQ(detect_log_kind(kQueryCsvUnits), LogKind::QueryGpu);
  EXPECT_EQ(detect_log_kind(kQueryCsvNoUnitsThrottled), LogKind::QueryGpu);
  EXPECT_EQ(detect_log_kind("0, 99, 1410\n1, 98, 1410\n"), LogKind::QueryGpu);
  EXPECT_EQ(detect_log_kind(kTopPegged), LogKind::Top);
  EXPECT_EQ(detect_log_kind(kPidstatIo), LogKind::Pidstat);
  EXPECT_EQ(detect_log_kind("hello world\n"), LogKind::Unknown);
}

TEST(TriageDmon, DefaultLayoutTwoGpus) {
  std::vector<Sample> out;
  auto r = parse_dmon(kDmonDefault, out, {});
  EXPECT_EQ(r.records, 6);
  EXPECT_EQ(r.malformed, 0);
  ASSERT_EQ(out.size(), 6u);
  const auto& g = out[1].gpus[0];
  EXPECT_EQ(g.index, 1);
  EXPECT_EQ(g.util_pct, 97);
  EXPECT_EQ(g.power_w, 305);
  EXPECT_EQ(g.sm_clock_mhz, 1410);
  EXPECT_FALSE(g.sm_clock_max_mhz);  // dmon does not print it
  // Without timestamps, a tick ends when GPU 0 comes round again.
  EXPECT_DOUBLE_EQ(out[0].t_s, out[1].t_s);
  EXPECT_DOUBLE_EQ(out[2].t_s, out[0].t_s + 1);
}

TEST(TriageDmon, DatedLayoutWithRepeatTruncationAndMidnight) {
  std::vector<Sample> out;
  auto r = parse_dmon(kDmonDatedSawtooth, out, {});
  EXPECT_EQ(r.records, 6);
  EXPECT_EQ(r.malformed, 1);  // the cut-off last line
  ASSERT_EQ(out.size(), 6u);
  // Times rise by one second across midnight and the date change.
  for (size_t i = 1; i < out.size(); ++i) EXPECT_DOUBLE_EQ(out[i].t_s - out[i - 1].t_s, 1.0);
  EXPECT_EQ(out[1].gpus[0].mem_used_mib, 30000);
  EXPECT_EQ(out[1].gpus[0].pcie_rx_mbps, 2500);
  EXPECT_EQ(out[1].gpus[0].throttle_reasons, 0u);  // pviol/tviol present and zero
  EXPECT_FALSE(out[0].gpus[0].temp_c.has_value() && out[0].gpus[0].index != 0);
  EXPECT_FALSE(out[0].gpus[0].mem_util_pct == std::nullopt);
}

TEST(TriageDmon, SawtoothAloneIsUnderfed) {
  auto t = triage({{"dmon.log", kDmonDatedSawtooth}});
  EXPECT_EQ(t.classification.verdict.rule, "gpu-underfed");
  ASSERT_EQ(t.classification.gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(*t.classification.gpus[0].swing_share, 1.0);
  // The truncated line is reported, not fatal.
  ASSERT_FALSE(t.series.notes.empty());
  EXPECT_EQ(t.series.notes[0].id, stepscope::WarningId::MalformedLogLines);
  EXPECT_NE(t.series.notes[0].text.find("1 malformed"), std::string::npos) << t.series.notes[0].text;
}

TEST(TriageDmon, CsvFormWithTimeColumnIsGpuBound) {
  auto t = triage({{"dmon.csv", kDmonCsvTimed}});
  EXPECT_EQ(t.logs[0].records, 3);
  EXPECT_EQ(t.classification.verdict.rule, "gpu-bound");
  EXPECT_NEAR(*t.classification.gpus[0].util_mean, 99, 1e-9);
  EXPECT_DOUBLE_EQ(t.series.samples[2].t_s - t.series.samples[0].t_s, 2);
}

TEST(TriageDmon, DataBeforeHeaderIsMalformed) {
  std::vector<Sample> out;
  auto r = parse_dmon("    0    312     65      -     98\n", out, {});
  EXPECT_EQ(r.records, 0);
  EXPECT_EQ(r.malformed, 1);
}

TEST(TriageQuery, UnitsNaHeaderRepeatAndTruncation) {
  std::vector<Sample> out;
  auto r = parse_query_gpu(kQueryCsvUnits, out, {});
  EXPECT_EQ(r.records, 4);
  EXPECT_EQ(r.malformed, 1);
  ASSERT_EQ(out.size(), 4u);
  const auto& g = out[0].gpus[0];
  EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.util_pct, 100);
  EXPECT_DOUBLE_EQ(*g.power_w, 95.12);
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 400);
  EXPECT_EQ(g.sm_clock_max_mhz, 1410);
  EXPECT_EQ(g.mem_total_mib, 81920);
  EXPECT_EQ(g.throttle_reasons, 0u);
  EXPECT_FALSE(out[2].gpus[0].power_w);  // [N/A]
  EXPECT_NEAR(out[3].t_s - out[0].t_s, 3.002, 1e-6);
}

TEST(TriageQuery, FullClocksTinyPowerIsUtilisationLies) {
  auto t = triage({{"smi.csv", kQueryCsvUnits}});
  EXPECT_EQ(t.classification.verdict.rule, "utilisation-lies");
  EXPECT_LT(*t.classification.gpus[0].power_ratio, thresholds::kLowPowerRatio);
}

TEST(TriageQuery, NoUnitsAndPerReasonColumnsShowThrottling) {
  std::vector<Sample> out;
  auto r = parse_query_gpu(kQueryCsvNoUnitsThrottled, out, {});
  ASSERT_EQ(r.records, 3);
  EXPECT_EQ(out[0].gpus[0].throttle_reasons, throttle::kHwThermal);
  EXPECT_EQ(out[2].gpus[0].throttle_reasons, throttle::kHwThermal | throttle::kSwPowerCap);
  EXPECT_DOUBLE_EQ(*out[0].gpus[0].power_limit_w, 700);
  auto t = triage({{"smi.csv", kQueryCsvNoUnitsThrottled}});
  EXPECT_EQ(t.classification.verdict.rule, "throttled");
}

TEST(TriageQuery, NoHeaderNeedsColumns) {
  const char* log = "0, 12, 79000, 81920\n0, 15, 79500, 81920\n0, 9, 79800, 81920\n";
  EXPECT_THROW(triage({{"noheader.csv", log}}), stepscope::InputError);
  try {
    triage({{"noheader.csv", log}});
  } catch (const stepscope::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--columns"), std::string::npos) << e.what();
  }
  TriageOptions o;
  o.columns = {"index", "utilization.gpu", "memory.used", "memory.total"};
  auto t = triage({{"noheader.csv", log}}, o);
  EXPECT_EQ(t.logs[0].records, 3);
  EXPECT_EQ(t.classification.verdict.rule, "memory-full-low-util");
}

TEST(TriageQuery, GarbageValueIsCountedNotFatal) {
  const char* log =
      "index, utilization.gpu [%]\n"
      "0, 50 %\n"
      "0, lots\n"
      "0, 60 %\n";
  std::vector<Sample> out;
  auto r = parse_query_gpu(log, out, {});
  EXPECT_EQ(r.records, 2);
  EXPECT_EQ(r.malformed, 1);
  ASSERT_FALSE(r.problems.empty());
  EXPECT_NE(r.problems[0].find("line 3"), std::string::npos);
}

TEST(TriageQuery, GpusWithoutIndexAreTellApartByBusId) {
  const char* log =
      "timestamp, pci.bus_id, utilization.gpu [%]\n"
      "2024/01/02 10:15:00.100, 00000000:07:00.0, 90 %\n"
      "2024/01/02 10:15:00.100, 00000000:0F:00.0, 20 %\n"
      "2024/01/02 10:15:01.100, 00000000:07:00.0, 91 %\n"
      "2024/01/02 10:15:01.100, 00000000:0F:00.0, 25 %\n";
  auto t = triage({{"two.csv", log}});
  EXPECT_EQ(utils(t.series, 0), (std::vector<double>{90, 91}));
  EXPECT_EQ(utils(t.series, 1), (std::vector<double>{20, 25}));
  bool imbalance = false;
  for (const auto& f : t.classification.others) imbalance |= f.rule == "gpu-imbalance";
  EXPECT_TRUE(imbalance);
}

TEST(TriageTop, ParsesFramesAndFiltersTheJob) {
  std::vector<Sample> out;
  std::optional<int> cpus;
  auto r = parse_top(kTopPegged, out, {}, &cpus);
  EXPECT_EQ(r.malformed, 0);
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out[0].host);
  const auto& h = *out[0].host;
  ASSERT_EQ(h.processes.size(), 2u);  // sshd is not the job
  EXPECT_EQ(h.processes[0].pid, 4242);
  EXPECT_DOUBLE_EQ(h.processes[0].cpu_pct, 100);
  EXPECT_NEAR(*h.processes[0].rss_mib, 5.2 * 1024, 1e-9);
  EXPECT_NEAR(*h.system_iowait_pct, 0.2, 1e-9);
  EXPECT_NEAR(*h.system_busy_pct, 13.8, 1e-9);
  EXPECT_DOUBLE_EQ(out[1].t_s - out[0].t_s, 1);
  EXPECT_FALSE(cpus);
}

TEST(TriageTop, SawtoothGpuAndPeggedPythonIsInputBound) {
  auto t = triage({{"dmon.log", kDmonDatedSawtooth}, {"top.log", kTopPegged}});
  const auto& v = t.classification.verdict;
  EXPECT_EQ(v.rule, "input-bound");
  EXPECT_TRUE(t.classification.gpu_in_view);
  // Two top frames beside separate GPU log rows: too thin for high, and it says why.
  EXPECT_EQ(v.confidence, Confidence::Low);
  EXPECT_EQ(v.basis.samples, 2);
  EXPECT_NE(v.basis.to_raise.find("more samples"), std::string::npos) << v.basis.to_raise;
  EXPECT_NE(v.basis.ceiling_reason.find("separate logs"), std::string::npos);
  // The GPU's idle samples are named.
  EXPECT_EQ(v.shown_at_s.size(), 3u);
  EXPECT_EQ(t.classification.host->top_process_pid, 4242);
  EXPECT_NE(t.classification.verdict.command.find("4242"), std::string::npos);
}

TEST(TriageTop, ThreadModeRowsBecomeThreads) {
  const char* log =
      "top - 10:15:00 up 1 day,  2:03,  1 user,  load average: 4.0, 4.0, 4.0\n"
      "Threads:  40 total,   4 running,  36 sleeping,   0 stopped,   0 zombie\n"
      "%Cpu0  :  99.0 us,  1.0 sy,  0.0 ni,  0.0 id,  0.0 wa\n"
      "%Cpu1  :  98.0 us,  2.0 sy,  0.0 ni,  0.0 id,  0.0 wa\n"
      "\n"
      "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n"
      "   4242 alice     20   0   30.1g   5.2g 200000 R  97.0   1.0  10:00.01 pt_main_thread\n"
      "   4243 alice     20   0   30.1g   5.2g 200000 R  50.0   1.0   1:00.01 python\n"
      "   4244 alice     20   0   30.1g   5.2g 200000 S  48.0   1.0   1:00.01 python\n";
  std::vector<Sample> out;
  std::optional<int> cpus;
  parse_top(log, out, {}, &cpus);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].host->threads.size(), 3u);
  EXPECT_EQ(cpus, 2);
  auto t = triage({{"top.log", log}});
  EXPECT_EQ(t.classification.host->top_thread_tid, 4242);
  // A host log alone: host-side verdicts only. Three busy threads fill both cores.
  EXPECT_EQ(t.classification.verdict.rule, "host-cpu-bound");
  EXPECT_FALSE(t.classification.gpu_in_view);
}

TEST(TriagePidstat, MergesReportsOfOneInterval) {
  std::vector<Sample> out;
  std::optional<int> cpus;
  auto r = parse_pidstat(kPidstatIo, out, {}, &cpus);
  EXPECT_EQ(r.malformed, 0);
  EXPECT_EQ(cpus, 32);
  ASSERT_EQ(out.size(), 2u);
  const auto& p = out[0].host->processes.at(0);
  EXPECT_EQ(p.pid, 4242);
  EXPECT_DOUBLE_EQ(p.cpu_pct, 7);
  EXPECT_NEAR(*p.read_mbps, 51200 * 1024 / 1e6, 1e-9);
  EXPECT_DOUBLE_EQ(*p.voluntary_cs_per_s, 800);
  EXPECT_DOUBLE_EQ(*p.involuntary_cs_per_s, 2);
  EXPECT_DOUBLE_EQ(out[1].t_s - out[0].t_s, 1);
}

TEST(TriagePidstat, LowGpuAndReadingLoaderIsIoBound) {
  const char* dmon =
      "# gpu    pwr  gtemp  mtemp     sm    mem\n"
      "# Idx      W      C      C      %      %\n"
      "    0     70     35      -      4      1\n"
      "    0     72     35      -      6      1\n"
      "    0     71     35      -      3      1\n";
  auto t = triage({{"dmon.log", dmon}, {"pidstat.log", kPidstatIo}});
  EXPECT_EQ(t.classification.verdict.rule, "io-bound") << t.classification.verdict.title;
}

TEST(TriagePidstat, ThreadRowsAndPreemptionShowOversubscription) {
  // `pidstat -t -u -w -p 4242 1`: 8 busy intra-op threads on a 2-core slice.
  std::string log =
      "Linux 6.1.0 (box) \t01/02/2024 \t_x86_64_\t(2 CPU)\n\n"
      "10:15:01      UID      TGID       TID    %usr %system  %guest   %wait    %CPU   CPU  "
      "Command\n"
      "10:15:02     1000      4242         -  190.00   10.00    0.00  600.00  200.00     1  "
      "python\n";
  for (int i = 0; i < 8; ++i)
    log += fmt::format(
        "10:15:02     1000         -      {}   24.00    1.00    0.00   75.00   25.00     {}  "
        "|__python\n",
        4242 + i, i % 2);
  log +=
      "\n10:15:01      UID      TGID       TID   cswch/s nvcswch/s  Command\n"
      "10:15:02     1000      4242         -     10.00    900.00  python\n";
  std::vector<Sample> out;
  auto r = parse_pidstat(log, out, {});
  EXPECT_EQ(r.malformed, 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].host->threads.size(), 8u);
  EXPECT_EQ(out[0].host->threads[3].pid, 4242);
  // pidstat's %wait is the time a thread waited for a core: 25% on CPU + 75% waiting each.
  EXPECT_DOUBLE_EQ(*out[0].host->threads[0].wait_pct, 75);
  TriageOptions o;
  o.cpus = 2;
  auto t = triage({{"pidstat.log", log}}, o);
  EXPECT_DOUBLE_EQ(*t.classification.host->involuntary_cs_per_s, 900);
  EXPECT_DOUBLE_EQ(t.classification.host->demand_cores, 8);
  EXPECT_EQ(t.classification.verdict.rule, "oversubscribed") << t.classification.verdict.title;
  // The "(2 CPU)" preamble says the core count too; without it (and without --cpus) the same
  // rows cannot be called oversubscribed.
  EXPECT_EQ(triage({{"pidstat.log", log}}).classification.verdict.rule, "oversubscribed");
  std::string headless = log.substr(log.find("\n\n") + 2);
  auto unknown = triage({{"pidstat.log", headless}});
  EXPECT_NE(unknown.classification.verdict.rule, "oversubscribed");
  EXPECT_FALSE(unknown.classification.host->cpus_known);
}

TEST(Triage, NothingParsableIsAnInputError) {
  EXPECT_THROW(triage({{"notes.txt", "hello\nworld\n"}}), stepscope::InputError);
  EXPECT_THROW(triage({}), stepscope::InputError);
  EXPECT_THROW(triage_files({"/nonexistent/dmon.log"}, {}), stepscope::InputError);
}

// A top log kept gzipped reads as the same log, not as a malformed CSV or a binary file; a gzip
// file that decodes to no text is still refused.
TEST(Triage, GzippedLogReadsAsItsText) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("stepscope-triage-gz-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto gzip_to = [&](const std::string& name, std::string_view text) {
    const std::string path = (dir / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
    return path;
  };
  const std::string top = gzip_to("top.log.gz", kTopPegged);
  auto from_gz = triage_files({gzip_to("dmon.log.gz", kDmonDatedSawtooth), top}, {});
  auto from_text = triage({{"dmon.log", kDmonDatedSawtooth}, {"top.log", kTopPegged}});
  ASSERT_EQ(from_gz.logs.size(), 2u);
  EXPECT_EQ(from_gz.logs[1].kind, LogKind::Top);
  EXPECT_EQ(from_gz.logs[1].malformed, 0);
  EXPECT_EQ(from_gz.logs[1].records, from_text.logs[1].records);
  EXPECT_EQ(from_gz.classification.verdict.rule, from_text.classification.verdict.rule);
  EXPECT_THROW(triage_files({gzip_to("zeros.gz", std::string(64, '\0'))}, {}), stepscope::InputError);
  std::filesystem::remove_all(dir);
}

TEST(Triage, UnknownExtraLogIsNotedNotFatal) {
  auto t = triage({{"dmon.csv", kDmonCsvTimed}, {"notes.txt", "hello\n"}});
  EXPECT_EQ(t.classification.verdict.rule, "gpu-bound");
  bool noted = false;
  for (const auto& n : t.series.notes) noted |= n.id == stepscope::WarningId::UnknownLog && n.text.find("notes.txt") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(TriagePidstat, OneLinePerProcessLayoutWithEpochTimes) {
  // `pidstat -h -u -r -p 4242 1`: one line per interval, epoch seconds, '#' header.
  const char* log =
      "Linux 6.1.0 (box) \t01/02/2024 \t_x86_64_\t(8 CPU)\n\n"
      "#      Time   UID       PID    %usr %system  %guest   %wait    %CPU   CPU  minflt/s  "
      "majflt/s     VSZ     RSS   %MEM  Command\n"
      " 1704190502  1000      4242   97.00    2.00    0.00    1.00   99.00     5      0.00      "
      "0.00 3000000 2097152   3.20  python\n"
      " 1704190503  1000      4242   98.00    1.00    0.00    0.00   99.00     5      0.00      "
      "0.00 3000000 2097152   3.20  python\n";
  std::vector<Sample> out;
  std::optional<int> cpus;
  auto r = parse_pidstat(log, out, {}, &cpus);
  EXPECT_EQ(r.records, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(cpus, 8);
  EXPECT_DOUBLE_EQ(out[1].t_s - out[0].t_s, 1);
  EXPECT_DOUBLE_EQ(*out[0].host->processes[0].rss_mib, 2048);
  EXPECT_DOUBLE_EQ(*out[0].host->processes[0].wait_pct, 1);
}

namespace {

std::string read_recorded(const std::string& name) {
  std::ifstream in(std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/monitor/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// Real logs of ~8 s of back-to-back GEMMs on an H200: the query log was started before the job
// and ran on ~3 s after it. Those idle edges are not the job's: without them it is GPU-bound.
TEST(TriageRecorded, IdleSamplesAtTheWindowsEdgesAreLeftOut) {
  auto t = triage({{"dmon.log", read_recorded("dmon.log")}, {"query.log", read_recorded("query.log")}});
  ASSERT_EQ(t.classification.gpus.size(), 1u);
  const GpuStats& g = t.classification.gpus[0];
  EXPECT_GE(g.edge_idle_samples, 5);
  EXPECT_GT(*g.util_mean, 90);
  EXPECT_EQ(t.classification.verdict.rule, "gpu-bound");
}

// The reports carry the count: the JSON's field and the summary's line.
TEST(TriageRecorded, ReportsCountTheEdgeSamplesLeftOut) {
  auto t = triage({{"dmon.log", read_recorded("dmon.log")}, {"query.log", read_recorded("query.log")}});
  const int left_out = t.classification.gpus.at(0).edge_idle_samples;
  ASSERT_GT(left_out, 0);
  const auto doc = nlohmann::json::parse(render_json(t.series, t.classification, "triage"));
  bool found = false;
  for (const auto& g : doc["gpu_stats"]) found = found || g["edge_idle_samples"].get<int>() == left_out;
  EXPECT_TRUE(found) << doc.dump(1).substr(0, 2000);
  EXPECT_NE(render_summary(t.series, t.classification, "triage").find(fmt::format(
                "{} idle sample(s) before the job's first GPU work or after its last left out", left_out)),
            std::string::npos);
}
