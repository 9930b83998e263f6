// The real CPU-only traces recorded by cpu/generate.py: each planted pathology (stated in the
// fixtures' ground_truth.json and CATALOG.md) must be what the verdict names.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "partition/support.hpp"

namespace stepscope {
namespace {

DiagnosedResult cpu_fixture(const std::string& name) {
  return test::analyze_files({std::string(STEPSCOPE_FIXTURES_DIR) + "/cpu/" + name + ".pt.trace.json.gz"});
}

bool evidence_mentions(const Diagnosis& d, const std::string& word) {
  for (const auto& e : d.verdict.evidence)
    if (e.find(word) != std::string::npos) return true;
  return false;
}

const Lever& lever(const Diagnosis& d, const std::string& id) {
  for (const auto& l : d.levers)
    if (lever_name(l.id) == id) return l;
  throw std::runtime_error("no lever " + id);
}

TEST(CpuFixtures, DataLoaderWithoutWorkersIsInputBound) {
  const DiagnosedResult r = cpu_fixture("a_dataloader_w0_slow_transform");
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::InputPipeline);
  // Ground truth: __next__ holds 36-37 ms of each 38-41 ms step (~92%).
  EXPECT_GT(r.diagnosis.verdict.share, 0.85);
  EXPECT_EQ(lever_name(r.diagnosis.levers.front().id), "num_workers");
  EXPECT_FALSE(r.ranks[0].partition.gpu);
}

// The headline quotes the replay's prediction per worker count, not the Amdahl bound: the same
// program with two workers (b_dataloader_w2_persistent) ran 2.10x faster.
TEST(CpuFixtures, HeadlineQuotesThePredictionForTwoWorkers) {
  const DiagnosedResult r = cpu_fixture("a_dataloader_w0_slow_transform");
  const Lever& l = lever(r.diagnosis, "num_workers");
  ASSERT_FALSE(l.predicted_by_setting.empty());
  EXPECT_EQ(l.predicted_by_setting.front().first, "2");
  EXPECT_NEAR(l.predicted_by_setting.front().second, 2.10, 0.15 * 2.10);
  const std::string quoted = fmt::format("predicted {:.2f}x faster at 2", l.predicted_by_setting.front().second);
  EXPECT_NE(r.diagnosis.verdict.headline.find(quoted), std::string::npos) << r.diagnosis.verdict.headline;
  EXPECT_EQ(r.diagnosis.verdict.headline.find("up to"), std::string::npos) << r.diagnosis.verdict.headline;
}

TEST(CpuFixtures, TwoWorkersStallEveryOtherStep) {
  const DiagnosedResult r = cpu_fixture("b_dataloader_w2_persistent");
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::InputPipeline);
  // Ground truth: wait alternates ~2 ms / ~25-28 ms.
  const Stability& s = r.ranks.at(0).stability;
  EXPECT_TRUE(s.bursty);
  EXPECT_EQ(s.period.every, 2);
  EXPECT_EQ(s.period.kind, PeriodKind::LoaderWorkers);
  EXPECT_EQ(s.period.category, Category::BatchWait);
}

TEST(CpuFixtures, PerStepItemOnACpuTensorIsNoSync) {
  const DiagnosedResult r = cpu_fixture("c_item_print_every_step");
  // One aten::item per step (ground truth aten_item_calls = 1) on a CPU tensor: no copy, no device
  // wait. It is host work, not a queue drain, and no sync lever applies.
  EXPECT_EQ(r.ranks[0].partition.item_calls, 0u);
  EXPECT_EQ(r.ranks[0].partition.sync_calls, 0u);
  EXPECT_FALSE(evidence_mentions(r.diagnosis, "drains"));
  EXPECT_FALSE(lever(r.diagnosis, "remove_item").applies);
}

TEST(CpuFixtures, CheckpointEveryThirdStepIsPeriodicSideWork) {
  const DiagnosedResult r = cpu_fixture("d_checkpoint_every_3rd_step");
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::SideWork);
  const Stability& s = r.ranks.at(0).stability;
  // Ground truth: torch.save at ProfilerStep#2 and #5 (128-129 ms vs 4-5 ms): two of the four
  // steady steps, too many to be spikes (at most a quarter can be); the period names them.
  EXPECT_TRUE(s.bursty);
  EXPECT_TRUE(s.spikes.empty());
  EXPECT_EQ(s.period.occurrences, 2u);
  EXPECT_EQ(s.period.every, 3);
  EXPECT_EQ(s.period.kind, PeriodKind::Checkpoint);
  EXPECT_EQ(lever_name(r.diagnosis.levers.front().id), "async_checkpoint");
  EXPECT_NE(r.diagnosis.verdict.scope.find("every 3 steps"), std::string::npos) << r.diagnosis.verdict.scope;
}

TEST(CpuFixtures, LargeMlpIsComputeBound) {
  const DiagnosedResult r = cpu_fixture("e_compute_bound_large_model");
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::GpuCompute);
  EXPECT_FALSE(r.diagnosis.verdict.gpu);
  EXPECT_GT(r.diagnosis.verdict.share, 0.95);
  EXPECT_STREQ(bound_label(r.diagnosis.verdict.bound, r.diagnosis.verdict.gpu), "compute (host CPU)");
}

TEST(CpuFixtures, InstrumentedStagesAreAttributed) {
  const DiagnosedResult r = cpu_fixture("f_instrumented_stages");
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::GpuCompute);
  const RankPartition& p = r.ranks.at(0).partition;
  ASSERT_EQ(p.steps.size(), 5u);
  // Ground truth per ProfilerStep: forward 145-160 ms, backward 161-286 ms, optimizer 7-8 ms.
  const char* names[] = {"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"};
  const double fwd[] = {148.421, 160.471, 148.245, 154.977, 144.670};
  const double bwd[] = {286.263, 160.939, 162.161, 162.207, 182.225};
  const double opt[] = {8.129, 7.119, 7.234, 7.096, 7.330};
  for (int i = 0; i < 5; ++i) {
    const StepPartition& s = p.steps[static_cast<std::size_t>(i)];
    EXPECT_EQ(s.name, names[i]);
    // Stage annotations enclose a few untimed gaps and the ops they contain: within 1 ms.
    EXPECT_NEAR(static_cast<double>(s.ns[0]) / 1e6, fwd[i], 1.0) << s.name;
    EXPECT_NEAR(static_cast<double>(s.ns[1]) / 1e6, bwd[i], 1.0) << s.name;
    EXPECT_NEAR(static_cast<double>(s.ns[2]) / 1e6, opt[i], 1.0) << s.name;
  }
}

TEST(Example, RecordedCpuTrainingStepIsInputBound) {
  const DiagnosedResult r =
      test::analyze_files({std::string(STEPSCOPE_SOURCE_DIR) + "/examples/cpu_training_step.pt.trace.json.gz"});
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::InputPipeline);
}

}  // namespace
}  // namespace stepscope
