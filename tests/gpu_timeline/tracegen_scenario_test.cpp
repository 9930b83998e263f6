// GPU timeline figures on synthetic traces whose ground truth implies them. The traces come from
// the stepscope-tracegen tool (built with the project); each test says which part of the
// ground truth (ground_truth.json, the exact partition the generator wrote) or of the scenario's
// parameters fixes the expected value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "stepscope/gpu_timeline.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path tracegen_binary() { return fs::path(STEPSCOPE_BINARY_DIR) / "tools" / "tracegen" / "stepscope-tracegen"; }

struct Generated {
  fs::path dir;
  json truth;
  std::vector<GpuTimeline> ranks;
  ~Generated() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Generates a small run of `scenario` (4 steps, 4 layers) and analyses every rank.
std::unique_ptr<Generated> generate(const std::string& scenario) {
  auto g = std::make_unique<Generated>();
  std::random_device rd;
  g->dir = fs::temp_directory_path() / ("stepscope-gpu-timeline-" + scenario + "-" + std::to_string(rd()));
  std::string cmd = tracegen_binary().string() + " -s " + scenario + " -o " + g->dir.string() +
                    " --steps 4 --layers 4 > /dev/null";
  if (std::system(cmd.c_str()) != 0) return nullptr;
  std::ifstream in(g->dir / "ground_truth.json");
  g->truth = json::parse(in);
  for (const json& f : g->truth["files"]) {
    RankTrace t = read_kineto_file((g->dir / f.get<std::string>()).string());
    g->ranks.push_back(analyze_gpu_timeline(t));
  }
  return g;
}

#define GENERATE_OR_SKIP(var, scenario)                                                   \
  if (!fs::exists(tracegen_binary())) GTEST_SKIP() << "stepscope-tracegen is not built"; \
  auto var = generate(scenario);                                                         \
  ASSERT_NE(var, nullptr) << "stepscope-tracegen failed";                                \
  ASSERT_FALSE(var->ranks.empty())

std::int64_t truth_total(const json& truth, const char* category) {
  return truth["totals"]["categories_ns"][category].get<std::int64_t>();
}

// sync-stall: loss.item() drains the queue and 20 ms of host logging follow with nothing queued.
// The ground truth's sync_stall category is exactly the GPU idle time during and after the
// synchronising calls, which is what gpu_idle_after measures.
TEST(TracegenScenario, SyncStallIdleMatchesGroundTruth) {
  GENERATE_OR_SKIP(g, "sync-stall");
  const SyncPoints& s = g->ranks[0].syncs;
  auto stall = static_cast<double>(truth_total(g->truth, "sync_stall"));
  EXPECT_NEAR(static_cast<double>(s.gpu_idle_after), stall, 0.02 * stall);
  ASSERT_EQ(s.count_per_step.size(), 4u);
  for (auto c : s.count_per_step) EXPECT_GE(c, 1);
  ASSERT_FALSE(s.worst.empty());
  EXPECT_GT(s.worst[0].gpu_idle_after, 15'000'000);  // one 20 ms gap (3 % jitter)
}

// pageable-copy: 96 MB batches from pageable memory at 5 GB/s, on the critical path. The ground
// truth's h2d_copy is the time the GPU does nothing but that copy.
TEST(TracegenScenario, PageableCopiesOnTheCriticalPath) {
  GENERATE_OR_SKIP(g, "pageable-copy");
  const Copies& c = g->ranks[0].copies;
  const CopyGroup* pageable = nullptr;
  for (const CopyGroup& grp : c.groups)
    if (grp.direction == CopyKind::HtoD && grp.host == HostMem::Pageable) pageable = &grp;
  ASSERT_NE(pageable, nullptr);
  auto h2d = static_cast<double>(truth_total(g->truth, "h2d_copy"));
  EXPECT_NEAR(static_cast<double>(pageable->critical_time), h2d, 0.01 * h2d);
  EXPECT_EQ(pageable->critical_count, pageable->count);
  EXPECT_NEAR(pageable->gbps, 5.0, 0.25);  // h2d_gbps of the preset
  EXPECT_GE(pageable->count, 4);
}

// launch-bound: 40 tiny 2 µs kernels per layer: most kernels are under 10 µs.
TEST(TracegenScenario, LaunchBoundKernelsAreShort) {
  GENERATE_OR_SKIP(g, "launch-bound");
  const LaunchOverhead& l = g->ranks[0].launch_overhead;
  EXPECT_GT(l.short_kernel_share, 0.8);
  EXPECT_LT(l.kernel_duration.median, 10'000);
  ASSERT_EQ(l.kernels_per_step.size(), 4u);
  for (auto k : l.kernels_per_step) EXPECT_GE(k, 40 * 4);  // tiny ops alone: 40 per layer
}

// comms-bound: the all-reduce runs after backward, so computation hides none of it.
TEST(TracegenScenario, CommsBoundHasNoOverlap) {
  GENERATE_OR_SKIP(g, "comms-bound");
  EXPECT_EQ(g->ranks.size(), 4u);
  for (const GpuTimeline& t : g->ranks) {
    ASSERT_TRUE(t.hta_overlap.available);
    EXPECT_LT(t.hta_overlap.share, 0.01);
    ASSERT_FALSE(t.classes.collectives.empty());
    EXPECT_EQ(t.classes.collectives[0].collective, Collective::AllReduce);
  }
}

// healthy: DDP launches the all-reduce from backward hooks, so most of it is hidden, and its
// GEMMs are bf16 tensor-core kernels; no-tensor-cores: the same model with fp32 sgemm.
TEST(TracegenScenario, TensorCoresAndOverlap) {
  GENERATE_OR_SKIP(healthy, "healthy");
  for (const GpuTimeline& t : healthy->ranks) {
    EXPECT_DOUBLE_EQ(t.classes.tensor_core_share_of_gemm, 1.0);
    if (t.hta_overlap.available) {
      EXPECT_GT(t.hta_overlap.share, 0.5);
    }
  }
  GENERATE_OR_SKIP(fp32, "no-tensor-cores");
  EXPECT_DOUBLE_EQ(fp32->ranks[0].classes.tensor_core_share_of_gemm, 0.0);
}

// ROCm names: HTA's launch statistics count only CUDA/MTIA launch calls, so none here.
TEST(TracegenScenario, RocmLaunchesAreNotCountedByHta) {
  GENERATE_OR_SKIP(g, "rocm-healthy");
  EXPECT_EQ(g->ranks[0].hta_launches.events, 0);
  EXPECT_GT(g->ranks[0].launch_overhead.kernels, 0);
}

}  // namespace
}  // namespace stepscope
