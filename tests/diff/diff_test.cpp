// diff on generated pairs whose ground truth says what changed, on a trace against itself, and
// the comparability checks; plus the CLI's contract.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "diagnose/diff_internal.hpp"
#include "partition/support.hpp"
#include "stepscope/diff.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

// Each generated run gets its own directory (the helper names them by scenario only).
fs::path generate_run(const std::string& tag, const std::string& scenario, const std::string& extra) {
  fs::path out = fs::temp_directory_path() / fmt::format("stepscope-diff-{}-{}", tag, ::getpid());
  fs::remove_all(out);
  fs::path made = test::generate(scenario, extra);
  EXPECT_FALSE(made.empty()) << "tracegen failed for " << scenario << " " << extra;
  fs::rename(made, out);
  return out;
}

Analysis run_of(const fs::path& dir) {
  PipelineOptions po;
  po.ingest.jobs = 1;
  return analyze_paths({dir.string()}, po);
}

// Mean of each ground-truth category over the steps the analysis calls steady (all but each rank's
// first step, which is warm-up), over all ranks.
std::map<std::string, double> truth_means(const fs::path& dir) {
  const auto g = test::read_json(dir / "ground_truth.json");
  std::map<int, std::int64_t> first_step;
  for (const auto& s : g["steps"]) {
    const int rank = s["rank"];
    const std::int64_t n = s["step"];
    if (!first_step.count(rank) || n < first_step[rank]) first_step[rank] = n;
  }
  std::map<std::string, double> sum;
  double steps = 0;
  for (const auto& s : g["steps"]) {
    if (s["step"].get<std::int64_t>() == first_step[s["rank"].get<int>()]) continue;
    ++steps;
    for (const auto& [cat, ns] : s["categories_ns"].items()) sum[cat] += ns.get<double>();
  }
  for (auto& [cat, v] : sum) v /= steps;
  return sum;
}

// The per-category changes equal the ground truth's, and the largest change is `moved`.
void expect_truth(const DiffResult& d, const fs::path& base, const fs::path& test, Category moved) {
  const auto b = truth_means(base), t = truth_means(test);
  for (const auto& c : d.categories) {
    const std::string name = category_name(c.category);
    const double expected = t.at(name) - b.at(name);
    EXPECT_NEAR(c.delta_ns, expected, 1e-6 * d.step.base_ns + 1) << name;
  }
  EXPECT_EQ(d.categories.front().category, moved);
  EXPECT_LT(d.categories.front().delta_ns, 0);
}

struct Pair {
  fs::path base, test;
  DiffResult diff;
};

Pair diff_pair(const std::string& tag, const std::string& base_scenario, const std::string& base_extra,
               const std::string& test_scenario, const std::string& test_extra) {
  Pair p;
  p.base = generate_run(tag + "-base", base_scenario, base_extra);
  p.test = generate_run(tag + "-test", test_scenario, test_extra);
  p.diff = diff_runs(run_of(p.base), run_of(p.test));
  return p;
}

TEST(DiffGenerated, InputBoundFixedByWorkers) {
  auto p = diff_pair("input", "input-bound", "--steps 12", "input-bound", "--steps 12 --seed 2 --num-workers 8 --fetch-us 120");
  const DiffResult& d = p.diff;
  EXPECT_TRUE(d.step.significant);
  EXPECT_GT(d.step.speedup_lo, 2.0);
  EXPECT_LE(d.step.speedup_lo, d.step.speedup);
  EXPECT_GE(d.step.speedup_hi, d.step.speedup);
  expect_truth(d, p.base, p.test, Category::BatchWait);
  ASSERT_TRUE(d.both_diagnosed);
  EXPECT_TRUE(d.bottleneck_moved);
  EXPECT_STREQ(bound_id(d.base_bound), "input-bound");
  EXPECT_STREQ(bound_id(d.test_bound), "gpu-bound");
  EXPECT_NE(d.headline.find("moved from input pipeline to GPU compute"), std::string::npos) << d.headline;
  EXPECT_TRUE(d.comparability.empty()) << d.comparability.front().text;
}

TEST(DiffGenerated, SyncEachStepRemoved) {
  auto p = diff_pair("sync", "sync-stall", "--steps 12", "sync-stall", "--steps 12 --seed 3 --mid-sync 0");
  const DiffResult& d = p.diff;
  EXPECT_TRUE(d.step.significant);
  EXPECT_GT(d.step.speedup, 1.3);
  expect_truth(d, p.base, p.test, Category::SyncStall);
  EXPECT_TRUE(d.bottleneck_moved);
  EXPECT_STREQ(bound_id(d.base_bound), "sync-bound");
  const auto sync = std::find_if(d.counts.begin(), d.counts.end(), [](const auto& c) { return c.what == "sync calls"; });
  ASSERT_NE(sync, d.counts.end());
  EXPECT_LT(sync->test, sync->base);
}

TEST(DiffGenerated, OverlapHidesPartOfTheAllReduce) {
  auto p = diff_pair("overlap", "comms-bound", "--steps 8", "comms-bound", "--steps 8 --seed 4 --overlap 1");
  const DiffResult& d = p.diff;
  EXPECT_TRUE(d.step.significant);
  EXPECT_GT(d.step.speedup, 1.1);
  expect_truth(d, p.base, p.test, Category::GradSyncExposed);
  // 600 MB at 12 GB/s still outlasts backward: the job stays communication-bound.
  EXPECT_FALSE(d.bottleneck_moved);
  EXPECT_STREQ(bound_id(d.test_bound), "comms-bound");
}

TEST(DiffGenerated, TensorCoresReplaceSgemm) {
  auto p = diff_pair("tc", "no-tensor-cores", "--steps 6", "no-tensor-cores", "--steps 6 --tensor-cores 1 --gemm-us 450");
  const DiffResult& d = p.diff;
  auto cls = [&](const std::string& name) {
    return std::find_if(d.kernel_classes.begin(), d.kernel_classes.end(), [&](const auto& k) { return k.name == name; });
  };
  ASSERT_NE(cls("gemm"), d.kernel_classes.end());
  ASSERT_NE(cls("gemm_tensor_core"), d.kernel_classes.end());
  EXPECT_EQ(cls("gemm")->kind, ChangeKind::Removed);
  EXPECT_EQ(cls("gemm_tensor_core")->kind, ChangeKind::Added);
  EXPECT_GT(cls("gemm")->base_count, 0);
  // Every sgemm kernel is gone and tensor-core GEMMs took their place.
  for (const auto& k : d.kernels) {
    if (k.name.find("sgemm") != std::string::npos) {
      EXPECT_EQ(k.kind, ChangeKind::Removed) << k.name;
    }
  }
  EXPECT_TRUE(std::any_of(d.kernels.begin(), d.kernels.end(),
                          [](const auto& k) { return k.kind == ChangeKind::Added && k.kernel_class == "gemm_tensor_core"; }));
  EXPECT_TRUE(d.step.significant);
  EXPECT_GT(d.step.speedup, 1.5);
}

TEST(DiffGenerated, TraceAgainstItselfShowsNoChange) {
  const fs::path dir = generate_run("self", "loader-stall", "--steps 12");
  const DiffResult d = diff_runs(run_of(dir), run_of(dir));
  EXPECT_DOUBLE_EQ(d.step.speedup, 1.0);
  EXPECT_LE(d.step.speedup_lo, 1.0);
  EXPECT_GE(d.step.speedup_hi, 1.0);
  EXPECT_FALSE(d.step.significant);
  EXPECT_FALSE(d.bottleneck_moved);
  EXPECT_TRUE(d.kernels.empty());
  for (const auto& k : d.kernel_classes) EXPECT_EQ(k.kind, ChangeKind::Unchanged) << k.name;
  for (const auto& c : d.categories) EXPECT_EQ(c.delta_ns, 0) << category_name(c.category);
  for (const auto& c : d.counts) EXPECT_EQ(c.base, c.test) << c.what;
  EXPECT_TRUE(d.comparability.empty());
  EXPECT_NE(d.headline.find("within step-to-step noise"), std::string::npos) << d.headline;
}

TEST(DiffGenerated, ReseededRunIsWithinNoise) {
  auto p = diff_pair("reseed", "healthy", "--steps 12 --ranks 1", "healthy", "--steps 12 --ranks 1 --seed 9");
  EXPECT_FALSE(p.diff.step.significant) << p.diff.headline;
  EXPECT_FALSE(p.diff.bottleneck_moved);
}

// The comparability warning `id`, with `what` in its words.
bool warns(const DiffResult& d, WarningId id, const std::string& what = "") {
  return std::any_of(d.comparability.begin(), d.comparability.end(),
                     [&](const Warning& w) { return w.id == id && w.text.find(what) != std::string::npos; });
}

TEST(DiffComparability, GpuModelWorldSizeAndFewSteps) {
  auto gpu = diff_pair("gpu", "healthy", "--steps 6 --ranks 1", "healthy", "--steps 6 --ranks 1 --gpu-name 'NVIDIA H100 80GB HBM3'");
  EXPECT_TRUE(warns(gpu.diff, WarningId::GpuModelsDiffer, "GPU models differ")) << gpu.diff.comparability.size();
  EXPECT_FALSE(warns(gpu.diff, WarningId::WorldSizeDiffers));

  auto world = diff_pair("world", "healthy", "--steps 6 --ranks 2", "healthy", "--steps 6 --ranks 4");
  EXPECT_TRUE(warns(world.diff, WarningId::WorldSizeDiffers, "world size differs: base 2, test 4"));

  auto few = diff_pair("few", "healthy", "--steps 3 --ranks 1", "input-bound", "--steps 3");
  EXPECT_TRUE(warns(few.diff, WarningId::TooFewStepsToCompare, "too few to separate"));
  EXPECT_FALSE(few.diff.step.significant);
  EXPECT_NE(few.diff.headline.find("too few steps"), std::string::npos) << few.diff.headline;
}

TEST(DiffBootstrap, IntervalOfConstantSamplesIsThePoint) {
  const auto [lo, hi] = diff_detail::bootstrap_speedup({2, 2, 2, 2}, {1, 1, 1, 1}, 500, 7);
  EXPECT_DOUBLE_EQ(lo, 2);
  EXPECT_DOUBLE_EQ(hi, 2);
}

TEST(DiffBootstrap, SameSeedSameInterval) {
  const std::vector<double> b{10, 12, 11, 13, 9, 10.5}, t{8, 9, 8.5, 9.5, 7.9, 8.2};
  EXPECT_EQ(diff_detail::bootstrap_speedup(b, t, 1000, 3), diff_detail::bootstrap_speedup(b, t, 1000, 3));
  const auto [lo, hi] = diff_detail::bootstrap_speedup(b, t, 1000, 3);
  const double point = (65.5 / 6) / (51.1 / 6);
  EXPECT_LT(lo, point);
  EXPECT_GT(hi, point);
}

TEST(DiffReport, JsonCarriesBothSidesAndTheChanges) {
  auto p = diff_pair("json", "input-bound", "--steps 6", "input-bound", "--steps 6 --num-workers 8 --fetch-us 120");
  const nlohmann::json j = diff_to_json(p.diff);
  EXPECT_EQ(j["schema"], kDiffSchemaVersion);
  EXPECT_EQ(j["base_bound"], "input-bound");
  EXPECT_EQ(j["test_bound"], "gpu-bound");
  EXPECT_EQ(j["categories"].size(), static_cast<std::size_t>(kCategoryCount));
  EXPECT_EQ(j["categories"][0]["category"], "batch_wait");
  EXPECT_EQ(j["base"]["schema"], kJsonSchemaVersion);
  EXPECT_EQ(j["test"]["verdict"]["bound"], "gpu-bound");
  const std::string text = render_diff_text(p.diff);
  EXPECT_NE(text.find("batch wait"), std::string::npos);
  EXPECT_NE(text.find("moved from input pipeline to GPU compute"), std::string::npos);
}

int run_cli(const std::string& args) {
  const std::string cmd = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope diff -q " + args + " >/dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(DiffCli, ExitCodes) {
  const fs::path slow = generate_run("cli-slow", "input-bound", "--steps 6");
  const fs::path fast = generate_run("cli-fast", "input-bound", "--steps 6 --num-workers 8 --fetch-us 120");
  EXPECT_EQ(run_cli(fast.string()), 2);                                  // one side only
  EXPECT_EQ(run_cli(fast.string() + " /nonexistent/trace.json"), 2);     // missing input
  EXPECT_EQ(run_cli(slow.string() + " " + fast.string()), 0);
  EXPECT_EQ(run_cli(fast.string() + " " + slow.string() + " --fail-if-slower 5"), 3);
  EXPECT_EQ(run_cli(slow.string() + " " + fast.string() + " --fail-if-slower 5"), 0);
  const std::string files = "--base " + (slow / "rank-0.pt.trace.json").string() + " --test " +
                            (fast / "rank-0.pt.trace.json").string();
  EXPECT_EQ(run_cli(files), 0);
  EXPECT_EQ(run_cli(files + " " + slow.string()), 2);  // both forms at once
}

}  // namespace
}  // namespace stepscope

namespace stepscope {
namespace {

// HTA's trace-diff pair: the control ran on an A100 with tensor-core GEMMs, the test on a V100
// with fp32 sgemm kernels; the test steps are about twice as long.
TEST(DiffFixture, HtaTraceDiffPair) {
  const fs::path dir = fs::path(STEPSCOPE_FIXTURES_DIR) / "hta" / "trace_diff";
  const DiffResult d = diff_runs(run_of(dir / "control"), run_of(dir / "test"));
  EXPECT_TRUE(warns(d, WarningId::GpuModelsDiffer, "GPU models differ"));
  EXPECT_TRUE(d.step.significant);
  EXPECT_LT(d.step.speedup_hi, 1.0);
  const auto tc = std::find_if(d.kernel_classes.begin(), d.kernel_classes.end(),
                               [](const auto& k) { return k.name == "gemm_tensor_core"; });
  ASSERT_NE(tc, d.kernel_classes.end());
  EXPECT_EQ(tc->kind, ChangeKind::Removed);
  EXPECT_TRUE(std::any_of(d.kernels.begin(), d.kernels.end(), [](const auto& k) {
    return k.kind == ChangeKind::Added && k.name.rfind("volta_sgemm", 0) == 0;
  }));
  // The per-category changes add up to the step change.
  double sum = 0;
  for (const auto& c : d.categories) sum += c.delta_ns;
  EXPECT_NEAR(sum, d.step.test_ns - d.step.base_ns, 1e-6 * d.step.base_ns);
}

}  // namespace
}  // namespace stepscope
