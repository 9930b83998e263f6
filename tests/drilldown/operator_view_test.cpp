// The operator view against a recomputation from the raw JSON events of a real trace: per host
// thread, each cpu_op's self time is its duration minus its direct child ops' durations.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "stepscope/drilldown.hpp"
#include "stepscope/gpu_timeline.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_gz_json(const fs::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");
  std::string text;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return json::parse(text);
}

struct RawOp {
  double ts, dur;
  std::string name;
};

// name -> {calls, total µs, self µs}, from the file's cpu_op events alone.
std::map<std::string, std::array<double, 3>> recompute(const json& trace) {
  std::map<std::pair<std::string, std::string>, std::vector<RawOp>> threads;
  for (const json& e : trace["traceEvents"])
    if (e.value("ph", "") == "X" && e.value("cat", "") == "cpu_op")
      threads[{e["pid"].dump(), e["tid"].dump()}].push_back({e["ts"].get<double>(), e["dur"].get<double>(), e["name"].get<std::string>()});
  std::map<std::string, std::array<double, 3>> out;
  for (auto& [thread, ops] : threads) {
    std::stable_sort(ops.begin(), ops.end(), [](const RawOp& a, const RawOp& b) { return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur; });
    std::vector<double> child(ops.size(), 0);
    std::vector<std::size_t> stack;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      while (!stack.empty() && !(ops[k].ts < ops[stack.back()].ts + ops[stack.back()].dur &&
                                 ops[k].ts + ops[k].dur <= ops[stack.back()].ts + ops[stack.back()].dur))
        stack.pop_back();
      if (!stack.empty()) child[stack.back()] += ops[k].dur;
      stack.push_back(k);
    }
    for (std::size_t k = 0; k < ops.size(); ++k) {
      auto& row = out[ops[k].name];
      row[0] += 1, row[1] += ops[k].dur, row[2] += ops[k].dur - child[k];
    }
  }
  return out;
}

TEST(OperatorView, SelfTimeIsTotalMinusChildOpsOnARealTrace) {
  const fs::path p = fs::path(STEPSCOPE_FIXTURES_DIR) / "hta/df_index_resolver/df_index_resolver.json.gz";
  const auto expected = recompute(read_gz_json(p));
  Trace t = read_traces({p.string()});
  const RankTrace& rank = t.ranks.at(0);
  const auto rows = operator_rows(rank, compute_facts(rank), OperatorGrouping::Name);
  ASSERT_EQ(rows.size(), expected.size());
  for (const OperatorRow& r : rows) {
    auto it = expected.find(r.name);
    ASSERT_NE(it, expected.end()) << r.name;
    EXPECT_EQ(r.calls, static_cast<std::int64_t>(it->second[0])) << r.name;
    EXPECT_NEAR(static_cast<double>(r.host_total) / 1000.0, it->second[1], 0.01) << r.name;
    EXPECT_NEAR(static_cast<double>(r.host_self) / 1000.0, it->second[2], 0.01) << r.name;
  }
  // The table is sorted by self time, and GPU time is only counted once per launch.
  for (std::size_t k = 1; k < rows.size(); ++k) EXPECT_GE(rows[k - 1].host_self, rows[k].host_self);
  ns_t gpu_self = 0;
  for (const OperatorRow& r : rows) {
    gpu_self += r.gpu_self;
    EXPECT_LE(r.gpu_self, r.gpu_total) << r.name;
  }
  ns_t gpu_all = 0;
  for (std::size_t i = 0; i < rank.events.size(); ++i)
    if (rank.events.kind[i] == Kind::Kernel || rank.events.kind[i] == Kind::Memcpy || rank.events.kind[i] == Kind::Memset)
      gpu_all += rank.events.dur[i];
  EXPECT_GT(gpu_self, 0);
  EXPECT_LE(gpu_self, gpu_all);
}

TEST(KernelView, RowsAddUpToTheGpuTimeAndCarryTheirLaunchingOp) {
  const fs::path p = fs::path(STEPSCOPE_FIXTURES_DIR) / "hta/df_index_resolver/df_index_resolver.json.gz";
  Trace t = read_traces({p.string()});
  const RankTrace& rank = t.ranks.at(0);
  const RankFacts facts = compute_facts(rank);
  const std::vector<StepWindow> steps = analyze_gpu_timeline(rank, facts).steps;
  const DrillDown d = analyze_drilldown(rank, facts, steps);
  ns_t sum = 0;
  std::int64_t calls = 0;
  for (const KernelRow& r : d.kernels.rows) {
    sum += r.total, calls += r.calls;
    EXPECT_LE(r.min, r.max) << r.name;
    EXPECT_NEAR(r.mean * static_cast<double>(r.calls), static_cast<double>(r.total), 1.0) << r.name;
  }
  EXPECT_EQ(sum, d.kernels.gpu_time);
  EXPECT_GT(calls, 1000);
  // The all-reduce kernels of this DDP trace are launched by c10d's record_param_comms, the
  // innermost op under nccl:all_reduce.
  auto nccl = std::find_if(d.kernels.rows.begin(), d.kernels.rows.end(),
                           [](const KernelRow& r) { return r.name.find("ncclKernel_AllReduce") != std::string::npos; });
  ASSERT_NE(nccl, d.kernels.rows.end());
  EXPECT_EQ(nccl->cls, KernelClass::Communication);
  EXPECT_EQ(nccl->launching_op, "record_param_comms");
  // profile_memory was on: the memory curve has samples and a peak made by a named op, and each
  // step's peak is the largest sample inside the step.
  ASSERT_TRUE(d.memory.available);
  EXPECT_FALSE(d.memory.devices.empty());
  for (const DeviceMemoryTimeline& m : d.memory.devices) {
    std::int64_t top = 0;
    for (const MemorySample& x : m.samples) top = std::max(top, x.allocated);
    EXPECT_EQ(m.peak_allocated, top);
    if (m.device_type != 0) EXPECT_FALSE(m.peak_op.empty());
    for (const StepMemoryPeak& p : m.steps) EXPECT_LE(p.peak_allocated, m.peak_allocated);
  }
  // The operator shares are of the summed step windows and of all GPU record time.
  ASSERT_FALSE(steps.empty());
  const OperatorView& ops = d.operators.at(0);
  ns_t step_time = 0;
  for (const StepWindow& w : steps) step_time += w.end - w.start;
  EXPECT_EQ(ops.step_time, step_time);
  for (const OperatorRow& r : ops.rows) {
    EXPECT_DOUBLE_EQ(r.step_share, static_cast<double>(r.host_total) / static_cast<double>(step_time)) << r.name;
    EXPECT_DOUBLE_EQ(r.gpu_share, static_cast<double>(r.gpu_self) / static_cast<double>(ops.gpu_time)) << r.name;
  }
}

}  // namespace
}  // namespace stepscope
