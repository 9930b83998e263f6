// Stability, rank comparison, verdict rules and lever arithmetic on partitions built by hand:
// the expected numbers follow from the step times written in each test.
#include <gtest/gtest.h>

#include <set>

#include "partition/support.hpp"

namespace stepscope {
namespace {

constexpr ns_t ms(double v) { return static_cast<ns_t>(v * 1e6); }

// A step of `compute` ms of forward compute plus `extra` ms of category `c`.
StepPartition step(std::int64_t n, double compute, Category c = Category::Idle, double extra = 0) {
  StepPartition s;
  s.number = n;
  s.name = "ProfilerStep#" + std::to_string(n);
  s.start = ms(100.0 * static_cast<double>(n));
  s.ns[static_cast<std::size_t>(Category::ComputeForward)] = ms(compute);
  s.ns[static_cast<std::size_t>(c)] += ms(extra);
  s.end = s.host_end = s.start + total_ns(s.ns);
  return s;
}

// The ranks numbered by their place.
std::vector<RankPartitionOf> side_by_side(const std::vector<RankPartition>& ranks) {
  std::vector<RankPartitionOf> out;
  for (const auto& p : ranks) out.push_back({static_cast<int>(out.size()), &p});
  return out;
}

RankPartition rank_of(std::vector<StepPartition> steps) {
  RankPartition p;
  p.gpu = true;
  p.source = StepSource::ProfilerStep;
  p.steps = std::move(steps);
  p.steps.front().warmup = true;
  std::size_t n = 0;
  for (const auto& s : p.steps) {
    if (s.warmup) continue;
    ++n;
    p.steady_mean_ns += static_cast<double>(s.duration());
    for (int c = 0; c < kCategoryCount; ++c)
      p.steady_mean_category[static_cast<std::size_t>(c)] += static_cast<double>(s.ns[static_cast<std::size_t>(c)]);
  }
  p.steady_steps = n;
  p.steady_mean_ns /= static_cast<double>(n);
  for (auto& v : p.steady_mean_category) v /= static_cast<double>(n);
  return p;
}

TEST(Stability, PercentilesAndCvOfAStableRun) {
  // Steady steps 40, 41, 42, 43 ms (step 0 is warm-up).
  RankPartition p = rank_of({step(0, 90), step(1, 40), step(2, 41), step(3, 42), step(4, 43)});
  const Stability s = compute_stability(p);
  EXPECT_EQ(s.steps, 4u);
  EXPECT_DOUBLE_EQ(s.p50_ns, static_cast<double>(ms(41)));  // nearest rank: 2nd of 4
  EXPECT_DOUBLE_EQ(s.p90_ns, static_cast<double>(ms(43)));
  EXPECT_DOUBLE_EQ(s.max_ns, static_cast<double>(ms(43)));
  // mean 41.5, population sd sqrt(1.25) = 1.118 -> CV 2.69%
  EXPECT_NEAR(s.cv, 1.118034 / 41.5, 1e-5);
  EXPECT_FALSE(s.bursty);
  EXPECT_TRUE(s.spikes.empty());
  EXPECT_EQ(s.period.kind, PeriodKind::None);
}

TEST(Stability, SpikeEveryFourthStepNamesTheCategoryThatGrew) {
  std::vector<StepPartition> steps{step(0, 40)};
  for (int n = 1; n <= 12; ++n) steps.push_back(n % 4 == 0 ? step(n, 40, Category::BatchWait, 30) : step(n, 40));
  const Stability s = compute_stability(rank_of(steps));
  ASSERT_EQ(s.spikes.size(), 3u);  // steps 4, 8, 12
  EXPECT_EQ(s.spikes[0].step, 4);
  EXPECT_EQ(s.spikes[0].grew, Category::BatchWait);
  EXPECT_EQ(s.spikes[0].excess, ms(30));
  EXPECT_EQ(s.period.every, 4);
  EXPECT_EQ(s.period.kind, PeriodKind::LoaderWorkers);  // 30 ms < 4 quiet steps of 40 ms
  EXPECT_TRUE(s.bursty);
}

// Spikes are robust outliers over the median and the upper quartile: a run whose steps spread out
// evenly has none, and however the durations fall, at most a quarter of the steps can be spikes.
TEST(Stability, SpreadOutStepsAreNoSpikesAndAtMostAMinoritySpikes) {
  std::vector<StepPartition> spread{step(0, 400)};
  for (int n = 1; n <= 29; ++n) spread.push_back(step(n, 160 + (n * 37 % 29) * 2.5));  // 160..230 ms
  const Stability even = compute_stability(rank_of(spread));
  EXPECT_TRUE(even.spikes.empty()) << even.spikes.size() << " spikes";
  // Durations drawn every way round: never more than a quarter of the steps spike.
  for (int levels : {2, 3, 5}) {
    for (int steps : {4, 7, 29}) {
      std::vector<StepPartition> mixed{step(0, 400)};
      for (int n = 1; n <= steps; ++n) mixed.push_back(step(n, 100.0 * (1 + (n * 7 % levels))));
      const Stability st = compute_stability(rank_of(mixed));
      EXPECT_LE(4 * st.spikes.size(), st.steps) << levels << " levels, " << steps << " steps";
    }
  }
  // One outlier among steady steps is still a spike, with its excess over the quiet step.
  std::vector<StepPartition> one{step(0, 400)};
  for (int n = 1; n <= 12; ++n) one.push_back(n == 7 ? step(n, 40, Category::SideWork, 30) : step(n, 40 + (n % 3)));
  const Stability s = compute_stability(rank_of(one));
  ASSERT_EQ(s.spikes.size(), 1u);
  EXPECT_EQ(s.spikes[0].step, 7);
  EXPECT_EQ(s.spikes[0].grew, Category::SideWork);
}

// The ResNet run of 29 steady steps: half of them wait on the loader (150-171 ms, then 279-827
// ms). A slow mode, bursty, not 14 spikes; the few far above the slow steps are still named.
TEST(Stability, ASlowModeIsNoListOfSpikes) {
  PipelineOptions o;
  o.ingest.jobs = 1;
  const DiagnosedResult r = analyze_paths({std::string(STEPSCOPE_FIXTURES_DIR) + "/param/resnet_kineto.json.gz"}, o).result;
  const Stability& s = r.ranks.at(0).stability;
  ASSERT_EQ(s.steps, 29u);
  EXPECT_TRUE(s.bursty);
  EXPECT_LE(4 * s.spikes.size(), s.steps) << s.spikes.size() << " spikes";
  for (const Spike& k : s.spikes) EXPECT_GT(static_cast<double>(k.duration), 1.25 * s.p50_ns);
}

// Generated runs of 30 steps whose durations jitter 10% (per step and per kernel): steady runs
// with no planted stall, of which no more than a small minority of steps may be spikes.
TEST(Stability, JitteredGeneratedRunsHaveFewSpikes) {
  for (const char* scenario : {"healthy", "launch-bound", "input-bound"}) {
    for (int seed : {1, 2, 3}) {
      const auto run = test::analyze_generated(scenario, fmt::format("--steps 30 --jitter 0.10 --seed {}", seed));
      for (const Stability& st : each_rank(run.result, &RankAnalysis::stability)) {
        ASSERT_GE(st.steps, 20u) << scenario;
        EXPECT_LE(st.spikes.size(), 2u) << scenario << " seed " << seed << ": " << st.spikes.size() << " of " << st.steps;
      }
    }
  }
}

TEST(Stability, LongRecurringWaitIsAnEpochBoundary) {
  std::vector<StepPartition> steps{step(0, 40)};
  for (int n = 1; n <= 15; ++n) steps.push_back(n % 5 == 0 ? step(n, 40, Category::BatchWait, 400) : step(n, 40));
  const Stability s = compute_stability(rank_of(steps));
  EXPECT_EQ(s.period.every, 5);
  EXPECT_EQ(s.period.kind, PeriodKind::EpochBoundary);
}

// The same long wait every fifth step, with the batch fetches each step holds: an epoch starts in
// a step with one fetch more than the usual step (the ended iterator's last call); one fetch in
// the stalled step is loader workers falling behind, however long the wait.
TEST(Stability, FetchesTellAnEpochStartFromWorkersBehind) {
  std::vector<StepPartition> steps{step(0, 40)};
  for (int n = 1; n <= 15; ++n) steps.push_back(n % 5 == 0 ? step(n, 40, Category::BatchWait, 400) : step(n, 40));
  const RankPartition p = rank_of(steps);
  std::vector<int> epoch(steps.size(), 1), rounds(steps.size(), 1);
  for (std::size_t i = 5; i < steps.size(); i += 5) epoch[i] = 2;
  EXPECT_EQ(compute_stability(p, epoch).period.kind, PeriodKind::EpochBoundary);
  EXPECT_EQ(compute_stability(p, rounds).period.kind, PeriodKind::LoaderWorkers);
}

// The recorded loaders: four persistent workers a batch behind wait every fourth step, one fetch
// in the stalled step; workers respawned every three-batch epoch wait at each epoch's start.
TEST(Stability, RecordedLoaderRoundsAreNoEpochBoundary) {
  const auto stability_of = [](const char* trace) {
    PipelineOptions o;
    o.ingest.jobs = 1;
    const std::string path = std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/pairs/" + trace;
    return analyze_paths({path}, o).result.ranks.at(0).stability.period;
  };
  const Periodicity rounds = stability_of("loader_w4.pt.trace.json.gz");
  EXPECT_EQ(rounds.every, 4);
  EXPECT_EQ(rounds.kind, PeriodKind::LoaderWorkers);
  EXPECT_EQ(stability_of("epoch_w2_respawn.pt.trace.json.gz").kind, PeriodKind::EpochBoundary);
}

TEST(Ranks, SlowComputeRankIsTheStraggler) {
  // Ranks 0, 1, 3: 40 ms compute + 12 ms waiting in the all-reduce; rank 2: 52 ms compute, 0 wait.
  std::vector<RankPartition> ranks;
  for (int r = 0; r < 4; ++r) {
    std::vector<StepPartition> steps;
    for (int n = 0; n < 4; ++n)
      steps.push_back(r == 2 ? step(n, 52) : step(n, 40, Category::GradSyncExposed, 12));
    ranks.push_back(rank_of(steps));
  }
  const RankComparison rc = compare_ranks(side_by_side(ranks));
  ASSERT_TRUE(rc.straggler.has_value());
  EXPECT_EQ(*rc.straggler, 2);
  EXPECT_NEAR(rc.straggler_excess, 0.30, 1e-9);
  EXPECT_NEAR(rc.balanced_saving_ns, static_cast<double>(ms(12)), 1);
  ASSERT_EQ(rc.skew.size(), 3u);  // steady steps 1..3 present on every rank
  EXPECT_EQ(rc.skew[0].skew_ns, ms(12));
}

TEST(Ranks, EqualRanksHaveNoStraggler) {
  std::vector<RankPartition> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.push_back(rank_of({step(0, 40, Category::GradSyncExposed, 12), step(1, 40, Category::GradSyncExposed, 12)}));
  const RankComparison rc = compare_ranks(side_by_side(ranks));
  EXPECT_FALSE(rc.straggler.has_value());
  EXPECT_FALSE(rc.local);
}

TEST(Verdict, GroupRuleQuarterOfTheStepOrMoreThanCompute) {
  std::array<double, kCategoryCount> c{};
  c[static_cast<std::size_t>(Category::ComputeForward)] = 70;
  c[static_cast<std::size_t>(Category::BatchWait)] = 24;
  c[static_cast<std::size_t>(Category::SyncStall)] = 6;
  EXPECT_EQ(step_bound(c, 100), Bound::GpuCompute);  // 24% < 25% and < compute
  c[static_cast<std::size_t>(Category::BatchWait)] = 25;
  c[static_cast<std::size_t>(Category::ComputeForward)] = 69;
  EXPECT_EQ(step_bound(c, 100), Bound::InputPipeline);
  // Launch overhead and host compute count together.
  std::array<double, kCategoryCount> h{};
  h[static_cast<std::size_t>(Category::ComputeBackward)] = 40;
  h[static_cast<std::size_t>(Category::LaunchOverhead)] = 21;
  h[static_cast<std::size_t>(Category::HostCompute)] = 21;
  h[static_cast<std::size_t>(Category::H2DCopy)] = 18;
  EXPECT_EQ(step_bound(h, 100), Bound::HostLaunch);
}

TEST(Levers, GainIsTheAmdahlBoundOfTheTracesOwnNumbers) {
  // Steady steps: 60 ms compute + 40 ms batch wait -> removing the wait gives 100/60 = 1.667x.
  DiagnosedResult r;
  r.ranks.emplace_back().partition = rank_of({step(0, 60, Category::BatchWait, 40), step(1, 60, Category::BatchWait, 40),
                                     step(2, 60, Category::BatchWait, 40)});
  r.ranks[0].stability = compute_stability(r.ranks[0].partition);
  r.diagnosis = diagnose(r);
  ASSERT_TRUE(r.diagnosis.present);
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::InputPipeline);
  EXPECT_NEAR(r.diagnosis.verdict.share, 0.40, 1e-9);
  EXPECT_EQ(r.diagnosis.verdict.runner_up, Bound::GpuCompute);
  const Lever& top = r.diagnosis.levers.front();
  EXPECT_EQ(lever_name(top.id), "num_workers");
  EXPECT_NEAR(top.speedup, 100.0 / 60.0, 1e-9);
  EXPECT_NEAR(top.removable_ns, static_cast<double>(ms(40)), 1);
  // Levers on time this trace does not have do not apply.
  for (const auto& l : r.diagnosis.levers) {
    if (l.id == LeverId::DdpBuckets || l.id == LeverId::RemoveItem) {
      EXPECT_FALSE(l.applies) << lever_name(l.id);
    }
  }
  // Levers that can change numerics or comparability say so.
  for (const auto& l : r.diagnosis.levers) {
    if (l.id == LeverId::AmpBf16 || l.id == LeverId::Tf32 || l.id == LeverId::TorchCompile) {
      EXPECT_FALSE(l.numerics.empty()) << lever_name(l.id);
    }
    if (l.id == LeverId::MicroBatch || l.id == LeverId::AccumulateAllreduce) {
      EXPECT_FALSE(l.comparability.empty()) << lever_name(l.id);
    }
  }
}

const Lever& lever(const DiagnosedResult& r, const std::string& id) {
  for (const auto& l : r.diagnosis.levers)
    if (lever_name(l.id) == id) return l;
  throw std::runtime_error("no lever " + id);
}

TEST(Levers, RemovingSyncsSavesTheWaitNotTheHostsOwnWork) {
  // 20 ms of GPU work and 80 ms of sync stall a step, most of it the host's own unrecorded work
  // after the sync; the host waited 15 ms of the GPU's 20. Without the sync the host still
  // spends its 85 ms: the step shrinks by the 15 ms wait, 100/85, not by the 80 ms stall.
  DiagnosedResult r;
  r.ranks.emplace_back().partition = rank_of({step(0, 20, Category::SyncStall, 80), step(1, 20, Category::SyncStall, 80),
                                     step(2, 20, Category::SyncStall, 80)});
  r.ranks[0].partition.sync_wait_ns = static_cast<double>(ms(15));
  r.ranks[0].partition.sync_calls = 2;
  r.ranks[0].stability = compute_stability(r.ranks[0].partition);
  r.diagnosis = diagnose(r);
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::SyncStall);
  const Lever& l = lever(r, "remove_item");
  EXPECT_TRUE(l.applies);
  EXPECT_NEAR(l.removable_ns, static_cast<double>(ms(15)), 1);
  EXPECT_NEAR(l.speedup, 100.0 / 85.0, 1e-9);

  // A sync that waits on nothing (the GPU idle through it): its own cost is not removable.
  r.ranks[0].partition.sync_wait_ns = 0;
  r.diagnosis = diagnose(r);
  EXPECT_FALSE(lever(r, "remove_item").applies);
}

// A 100 ms step: 50 ms of compute (20 forward + 30 backward) and 50 ms of exposed communication
// whose kernels are 60% all-to-all, 20% pipeline send/recv and 20% gradient all-reduce.
DiagnosedResult comm_job() {
  auto with_comm = [](std::int64_t n) {
    StepPartition s = step(n, 20, Category::ComputeBackward, 30);
    s.ns[static_cast<std::size_t>(Category::GradSyncExposed)] = ms(50);
    s.end = s.host_end = s.start + total_ns(s.ns);
    return s;
  };
  DiagnosedResult r;
  r.ranks.emplace_back().partition = rank_of({with_comm(0), with_comm(1), with_comm(2)});
  auto& roles = r.ranks[0].partition.mix.comm_ns_by_role;
  roles[static_cast<std::size_t>(CommRole::Exchange)] = ms(60);
  roles[static_cast<std::size_t>(CommRole::PointToPoint)] = ms(20);
  roles[static_cast<std::size_t>(CommRole::GradientSync)] = ms(20);
  r.ranks[0].stability = compute_stability(r.ranks[0].partition);
  RankFacts& f = r.ranks[0].facts;  // a PyTorch training job: every lever's knob exists
  f.pytorch = true;
  f.run_kind = RunKind::Training;
  return r;
}

TEST(Levers, ExposedCommunicationSplitsByWhatItIsFor) {
  DiagnosedResult r = comm_job();
  r.diagnosis = diagnose(r);
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::Communication);
  EXPECT_NE(r.diagnosis.verdict.headline.find("mostly all-to-all exchange"), std::string::npos)
      << r.diagnosis.verdict.headline;
  // Exchange: 80% of its 30 ms, under the 50 ms of compute.
  EXPECT_NEAR(lever(r, "ep_overlap").removable_ns, static_cast<double>(ms(24)), 1);
  EXPECT_EQ(lever_name(r.diagnosis.levers.front().id), "ep_overlap");
  EXPECT_TRUE(lever(r, "pipeline_schedule").applies);
  // The bubble: half of the 10 ms of pipeline send/recv.
  EXPECT_NEAR(lever(r, "pipeline_schedule").removable_ns, static_cast<double>(ms(5)), 1);
  // Gradients: 10 ms; no_sync skips 3 of 4 all-reduces, buckets hide 80% under 30 ms of backward.
  EXPECT_NEAR(lever(r, "accumulate_allreduce").removable_ns, static_cast<double>(ms(7.5)), 1);
  EXPECT_NEAR(lever(r, "ddp_buckets").removable_ns, static_cast<double>(ms(8)), 1);
  EXPECT_FALSE(lever(r, "tp_overlap").applies);
}

// Host-side communication (gloo, MPI) runs no kernel: all of it is gradient sync.
TEST(Levers, CommunicationWithoutKernelsIsGradientSync) {
  DiagnosedResult r = comm_job();
  r.ranks[0].partition.mix.comm_ns_by_role = {};
  r.diagnosis = diagnose(r);
  EXPECT_NEAR(lever(r, "accumulate_allreduce").removable_ns, static_cast<double>(ms(37.5)), 1);
  EXPECT_FALSE(lever(r, "ep_overlap").applies);
}

// Sharded parameters reduce their gradients with FSDP's reduce-scatter: its prefetch is the
// lever, DDP's buckets are not.
TEST(Levers, ShardedJobsGetFsdpPrefetchNotDdpBuckets) {
  DiagnosedResult r = comm_job();
  r.ranks[0].partition.mix.comm_ns_by_role = {};
  r.diagnosis = diagnose(r);
  EXPECT_TRUE(lever(r, "ddp_buckets").applies);
  EXPECT_FALSE(lever(r, "fsdp_prefetch").applies);
  DrillDown d;
  KernelRow k;
  k.name = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  d.kernels.rows.push_back(k);
  for (auto& a : r.ranks) a.drilldown = d;
  r.diagnosis = diagnose(r);
  EXPECT_FALSE(lever(r, "ddp_buckets").applies);
  EXPECT_NE(lever(r, "ddp_buckets").basis.find("sharded"), std::string::npos);
  EXPECT_TRUE(lever(r, "fsdp_prefetch").applies);
}

TEST(Levers, CatalogueCoversEveryRequiredLever) {
  DiagnosedResult r;
  r.ranks.emplace_back().partition = rank_of({step(0, 60), step(1, 60)});
  r.ranks[0].stability = compute_stability(r.ranks[0].partition);
  r.diagnosis = diagnose(r);
  std::set<std::string> ids;
  for (const auto& l : r.diagnosis.levers) ids.insert(std::string(lever_name(l.id)));
  for (const char* id : {"num_workers", "persistent_workers", "pin_memory", "d2h_readback", "prefetch_factor", "preprocess_cache",
                         "remove_item", "micro_batch", "amp_bf16", "tf32", "channels_last", "torch_compile",
                         "cuda_graphs", "fused_optimizer", "sdpa", "ddp_buckets", "accumulate_allreduce",
                         "fsdp_prefetch", "ep_overlap", "pipeline_schedule", "tp_overlap", "async_checkpoint",
                         "fix_straggler", "no_activation_checkpointing"})
    EXPECT_TRUE(ids.count(id)) << id;
}

}  // namespace
}  // namespace stepscope
