// The what-if replay on real traces: the replay gives back the recorded steps, each lever's
// prediction against a real before/after pair, and each `whatif --set` change.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "stepscope/error.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/whatif.hpp"

namespace stepscope {
namespace {

const std::string kFixtures = STEPSCOPE_FIXTURES_DIR;
const std::string kBefore = kFixtures + "/cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz";
const std::string kAfter = kFixtures + "/cpu/b_dataloader_w2_persistent.pt.trace.json.gz";
const std::string kLaunchBound = kFixtures + "/wild/tutorial_transformer_launch_bound.pt.trace.json.gz";

DiagnosedResult run(const std::string& path, const std::vector<std::string>& sets = {}) {
  PipelineOptions po;
  po.keep_trace = false;
  for (const auto& s : sets) po.analyze.whatif.changes.push_back(whatif::parse_change(s));
  return analyze_paths({path}, po).result;
}

const Lever& lever(const DiagnosedResult& r, const std::string& id) {
  for (const auto& l : r.diagnosis.levers)
    if (lever_name(l.id) == id) return l;
  throw std::runtime_error("no lever " + id);
}

double setting(const Lever& l, const std::string& value) {
  for (const auto& [v, s] : l.predicted_by_setting)
    if (v == value) return s;
  return -1;
}

double custom_speedup(const DiagnosedResult& r) {
  EXPECT_TRUE(r.ranks.at(0).whatif.custom.has_value());
  return r.ranks.at(0).whatif.custom ? r.ranks.at(0).whatif.custom->speedup : -1;
}

TEST(WhatIf, HostOnlyStepsReplayExactly) {
  const DiagnosedResult r = run(kBefore);
  ASSERT_EQ(r.ranks.size(), 1u);
  const auto& w = r.ranks[0].whatif;
  ASSERT_TRUE(w.present);
  EXPECT_GE(w.steps.size(), 3u);
  EXPECT_LT(w.replay_error_max, 1e-9);
  for (const auto& s : w.steps) EXPECT_EQ(s.replayed_ns, s.measured_ns) << "step " << s.number;
}

// The real pair: DataLoader num_workers 0 -> 2 on the same program, 2.10x measured. The bound
// said 13.2x; two workers halve the loading time, they do not remove it.
TEST(WhatIf, TwoWorkersPredictTheMeasuredPair) {
  const DiagnosedResult before = run(kBefore), after = run(kAfter);
  const double measured = before.ranks[0].partition.steady_mean_ns / after.ranks[0].partition.steady_mean_ns;
  const Lever& l = lever(before, "num_workers");
  ASSERT_TRUE(l.applies);
  const double two = setting(l, "2");
  EXPECT_NEAR(two / measured, 1.0, 0.15) << "predicted " << two << " measured " << measured;
  EXPECT_LT(two, l.speedup / 3) << "the prediction is far below the Amdahl bound";
  EXPECT_GT(setting(l, "4"), two);
  EXPECT_LE(l.predicted_speedup_lo, l.predicted_speedup);
  EXPECT_GE(l.predicted_speedup_hi, l.predicted_speedup);
  // The same change asked as workers=2 is the same replay.
  EXPECT_DOUBLE_EQ(custom_speedup(run(kBefore, {"workers=2"})), two);
}

TEST(WhatIf, LoaderWithWorkersReadsItsCountFromItsBursts) {
  const DiagnosedResult after = run(kAfter);
  const Lever& l = lever(after, "num_workers");
  ASSERT_FALSE(l.predicted_by_setting.empty());
  EXPECT_EQ(l.predicted_by_setting.front().first[0] == 'x' || std::stoi(l.predicted_by_setting.front().first) >= 4, true);
}

TEST(WhatIf, BatchWaitZeroRemovesTheLoadersTime) {
  const DiagnosedResult r = run(kBefore, {"batch_wait=0"});
  const auto& p = r.ranks[0].partition;
  const double wait = p.steady_mean_category[static_cast<std::size_t>(Category::BatchWait)];
  const double expected = p.steady_mean_ns / (p.steady_mean_ns - wait);
  EXPECT_NEAR(custom_speedup(r) / expected, 1.0, 0.05) << custom_speedup(r) << " vs " << expected;
}

TEST(WhatIf, KernelsScaleOnlyTheirClass) {
  EXPECT_DOUBLE_EQ(custom_speedup(run(kLaunchBound, {"kernels:all=1x"})), 1.0);
  const double gemm = custom_speedup(run(kLaunchBound, {"kernels:gemm=0.5x"}));
  const double all = custom_speedup(run(kLaunchBound, {"kernels:all=0.5x"}));
  EXPECT_GE(gemm, 1.0);
  EXPECT_LE(gemm, all + 1e-9);
  EXPECT_LE(all, 2.0 + 1e-9);
}

TEST(WhatIf, LaunchGraphFreesALaunchBoundStep) {
  EXPECT_GT(custom_speedup(run(kLaunchBound, {"launch=graph"})), 1.05);
}

// The tutorial's forward passes: 16 kernels, 130 us of GPU work in a 775 us step, each launched
// 30-60 us of host dispatch after the last. Captured as a graph, one launch starts them back to
// back: the step falls toward the host work outside the region plus the kernels, never below
// the kernels alone. torch.compile fuses half the pointwise launches with their dispatch: less.
TEST(WhatIf, LaunchesHoldTheLaunchBoundStep) {
  const auto r = run(kLaunchBound);
  const auto& p = r.ranks[0].partition;
  const double gpu = p.steady_mean_category[static_cast<std::size_t>(Category::ComputeForward)];
  const Lever& graphs = lever(r, "cuda_graphs");
  const Lever& compile = lever(r, "torch_compile");
  ASSERT_TRUE(graphs.predicted_replayed);
  EXPECT_GT(graphs.predicted_speedup, 2.0);
  EXPECT_LT(graphs.predicted_speedup, p.steady_mean_ns / gpu);
  EXPECT_GT(compile.predicted_speedup, 1.05);
  EXPECT_LT(compile.predicted_speedup, graphs.predicted_speedup);
}

// SGLang's decode on MI300X: its first kernel starts 463 ms after its launch, behind CUDA graph
// replays whose kernels the trace does not hold. The replay keeps that wait as recorded (its error
// stays near 0), so the wait itself is what the trust warning reports.
TEST(WhatIf, WaitsTheGraphCannotExplainAreATrustWarning) {
  const auto r = run(kFixtures + "/tracelens/mi300/sglang_Qwen3-8B_decode.json.gz");
  ASSERT_FALSE(r.ranks.empty());
  ASSERT_TRUE(r.ranks[0].whatif.present);
  EXPECT_LT(r.ranks[0].whatif.replay_error_max, 0.01);
  const std::optional<TrustWarning> t = whatif::replay_trust(r.ranks[0].whatif, 0);
  ASSERT_TRUE(t.has_value());
  EXPECT_GT(t->figures.at("unexplained_wait_share"), 0.9);
  ASSERT_FALSE(r.ranks[0].whatif.disagreements.empty());
  EXPECT_NE(r.ranks[0].whatif.disagreements[0].edge.find("resolve_future_token_ids"), std::string::npos);
  // The tutorial's launch-bound steps: every kernel explained, no warning.
  EXPECT_FALSE(whatif::replay_trust(run(kLaunchBound).ranks.at(0).whatif, 0).has_value());
}

TEST(WhatIf, SyncsCopiesAndCommChangesNeverSlowTheStep) {


  for (const char* set : {"syncs=none", "copies=pinned", "copies=side-stream", "comm=overlap"})
    EXPECT_GE(custom_speedup(run(kLaunchBound, {set})), 0.999) << set;
}

TEST(WhatIf, BadChangesAreRefused) {
  for (const char* bad : {"kernels:gemm=fast", "kernels:magic=0.5x", "comm=yes", "bogus=1", "workers=0",
                          "batch_wait=-1", "launch", "copies=fast"})
    EXPECT_THROW(whatif::parse_change(bad), InputError) << bad;
  EXPECT_EQ(whatif::parse_change("kernels:gemm=0.5x").value, 0.5);
  EXPECT_EQ(whatif::parse_change("workers=4").kind, whatif::ChangeKind::LoaderWorkers);
}

TEST(WhatIf, CommandRefusesABadChangeInOneLine) {
  const std::string cmd = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope whatif " + kBefore + " --set nope=1 2>&1 >/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("nope=1"), std::string::npos) << out;
}

}  // namespace
}  // namespace stepscope
