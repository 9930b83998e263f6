// The job replay: ranks joined at their collectives (stepscope/whatif_job.hpp), held to the trace
// generator's straggler, whose slow rank's extra time the ground truth knows, and to the real
// 8-rank DLRM job.
#include <gtest/gtest.h>

#include <cmath>

#include "partition/support.hpp"

namespace stepscope {
namespace {

const Lever* find_lever(const DiagnosedResult& r, const std::string& id) {
  for (const auto& l : r.diagnosis.levers)
    if (lever_name(l.id) == id) return &l;
  return nullptr;
}

// The speedup fixing the straggler brings by construction: the generator writes the same job with
// every rank at the median speed.
double truth_of_fix(const std::string& options) {
  const auto dir = test::generate("straggler", options + " --apply fix_straggler");
  const double s = test::read_json(dir / "ground_truth.json").at("applied").at("expected_speedup").get<double>();
  std::filesystem::remove_all(dir);
  return s;
}

void expect_straggler_predicted(const std::string& options) {
  SCOPED_TRACE("straggler " + options);
  const test::GeneratedRun run = test::analyze_generated("straggler", options);
  const whatif::JobWhatIf& job = run.result.job.whatif;
  ASSERT_TRUE(job.present);
  EXPECT_EQ(job.ranks, static_cast<int>(run.result.ranks.size()));
  EXPECT_GT(job.collectives, 0);
  EXPECT_LT(job.replay_error, 0.01) << "the joined replay gives back the recorded span";
  const Lever* l = find_lever(run.result, "fix_straggler");
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->applies);
  EXPECT_TRUE(l->predicted_replayed);
  const double truth = truth_of_fix(options);
  EXPECT_NEAR(l->predicted_speedup / truth, 1.0, 0.05) << "predicted " << l->predicted_speedup << " truth " << truth;
  EXPECT_NEAR(l->predicted_step_ns * l->predicted_speedup, l->step_ns, 1e-6 * l->step_ns);
  EXPECT_LE(l->predicted_speedup_lo, l->predicted_speedup);
  EXPECT_GE(l->predicted_speedup_hi, l->predicted_speedup);
}

TEST(JobWhatIf, StragglerFixedPredictsTheGeneratedGain) { expect_straggler_predicted(""); }

TEST(JobWhatIf, StragglerFixedOnALargerJobWithASlowerRank) {
  expect_straggler_predicted("--ranks 8 --straggler-rank 5 --straggler-factor 1.6");
}

// A rank that waits for the straggler sees its waits inside its collectives: alone, its replay
// counts them as communication a quarter as many all-reduces would cut. Joined, the job goes no
// faster than the straggler, whose transfer is all the accumulation saves.
TEST(JobWhatIf, WaitsForTheLastRankAreNoCommunicationToCut) {
  const test::GeneratedRun run = test::analyze_generated("straggler");
  const whatif::JobLever* job = whatif::find_job_lever(run.result.job.whatif, LeverId::AccumulateAllreduce);
  ASSERT_NE(job, nullptr);
  const int slow = run.truth.at("straggler_rank").get<int>();
  for (std::size_t i = 0; i < run.result.ranks.size(); ++i) {
    for (const auto& p : run.result.ranks[i].whatif.levers) {
      if (p.id != LeverId::AccumulateAllreduce || run.result.ranks[i].rank() == slow) continue;
      EXPECT_LT(job->speedup, p.speedup) << "rank " << run.result.ranks[i].rank();
    }
  }
  EXPECT_GE(job->speedup, 1.0);
  EXPECT_LT(job->speedup, 1.1);
}

// The fixed job has no straggler: nothing to re-time.
TEST(JobWhatIf, NoStragglerNoStragglerLever) {
  const test::GeneratedRun run = test::analyze_generated("straggler", "--apply fix_straggler");
  ASSERT_TRUE(run.result.job.whatif.present);
  EXPECT_EQ(whatif::find_job_lever(run.result.job.whatif, LeverId::FixStraggler), nullptr);
}

// The real 8-rank DLRM step: its all-to-alls and all-reduces joined across the ranks replay the
// recorded span.
TEST(JobWhatIf, RealEightRankJobReplaysItsCollectives) {
  const std::string dir = std::string(STEPSCOPE_FIXTURES_DIR) + "/param/dlrm_8rank/kineto";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  const DiagnosedResult r = test::analyze_files(files);
  ASSERT_EQ(r.ranks.size(), 8u);
  const whatif::JobWhatIf& job = r.job.whatif;
  ASSERT_TRUE(job.present);
  EXPECT_EQ(job.ranks, 8);
  EXPECT_GT(job.recorded_span_ns, 0);
  EXPECT_LT(job.replay_error, 0.05);
}

// One rank has no one to join; two ranks of 128 cannot say when the last one arrives.
TEST(JobWhatIf, NotPresentWithoutTheJobsRanks) {
  const std::string f = std::string(STEPSCOPE_FIXTURES_DIR) + "/hta/sampled_world128/";
  EXPECT_FALSE(test::analyze_files({f + "sampled_rank-0.json.gz"}).job.whatif.present);
  EXPECT_FALSE(test::analyze_files({f + "sampled_rank-0.json.gz", f + "sampled_rank-1.json.gz"}).job.whatif.present);
}

}  // namespace
}  // namespace stepscope
