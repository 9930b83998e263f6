// Clock alignment across ranks: the offsets fitted to matched collective ends, the residual, the
// arrival skew, and the keys that match a collective across ranks (sequence number or order).
#include <gtest/gtest.h>

#include <limits>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepscope/analysis.hpp"
#include "stepscope/clock_alignment.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

// Marks of collectives 0..ends.size()-1 on one rank.
CollectiveMarks marks(const std::vector<ns_t>& starts, const std::vector<ns_t>& ends) {
  CollectiveMarks m;
  for (std::size_t k = 0; k < ends.size(); ++k) m.marks.push_back({1000 + k, starts[k], ends[k]});
  m.kernels = static_cast<std::int64_t>(ends.size());
  return m;
}

ClockAlignment align(const std::vector<CollectiveMarks>& ranks) {
  std::vector<RankMarks> in;
  for (std::size_t r = 0; r < ranks.size(); ++r) in.push_back({static_cast<int>(r), &ranks[r]});
  return align_clocks(in);
}

TEST(ClockAlignment, TheWorkedExampleOfTheHeader) {
  const auto c = align({marks({100'000, 1'100'000}, {1'000'000, 2'000'000}),
                        marks({5'400'000, 6'900'000}, {6'000'010, 7'000'000})});
  ASSERT_EQ(c.method, ClockMethod::CollectiveEnds);
  EXPECT_EQ(c.collectives, 2);
  EXPECT_EQ(c.ranks[0].offset_ns, 0);
  EXPECT_EQ(c.ranks[1].offset_ns, 5'000'005);
  EXPECT_EQ(c.ranks[1].residual_ns, 2);  // each end 2.5 ns from the pair's midpoint, in whole ns
  EXPECT_DOUBLE_EQ(c.arrival_skew_mean_ns, (299'995.0 + 799'995.0) / 2);
  ASSERT_TRUE(c.last_rank.has_value());
  EXPECT_EQ(*c.last_rank, 1);
  EXPECT_DOUBLE_EQ(c.last_share, 1.0);
  EXPECT_EQ(c.ranks[0].arrival_wait_ns, 299'995 + 799'995);
  EXPECT_EQ(c.ranks[1].arrival_wait_ns, 0);
}

TEST(ClockAlignment, OffsetsOfManyRanksAreRecoveredExactlyWhenEndsAgree) {
  const std::vector<ns_t> truth = {0, 3'000'000, -2'500'000, 40'000'000'000};  // the last a host 40 s off
  std::vector<CollectiveMarks> ranks;
  for (ns_t off : truth) {
    std::vector<ns_t> s, e;
    for (int k = 0; k < 20; ++k) s.push_back(k * 10'000'000 + off), e.push_back(k * 10'000'000 + 2'000'000 + off);
    ranks.push_back(marks(s, e));
  }
  const auto c = align(ranks);
  for (std::size_t r = 0; r < truth.size(); ++r) EXPECT_EQ(c.ranks[r].offset_ns, truth[r]) << r;
  EXPECT_EQ(c.residual_p99_ns, 0);
  EXPECT_EQ(c.arrival_skew_p90_ns, 0);
  EXPECT_EQ(c.unaligned_ranks, 0);
}

TEST(ClockAlignment, APairEndingFarApartIsLeftOutAsMismatchedNotFitted) {
  // Rank 1's trace lost the 7th collective, so by order its 7th (the 8th) pairs with rank 0's 7th.
  const std::vector<ns_t> e0 = {1'000'000, 2'000'000, 3'000'000, 4'000'000, 5'000'000, 6'000'000, 7'000'000, 8'000'000};
  const std::vector<ns_t> e1 = {1'000'000, 2'000'000, 3'000'000, 4'000'000, 5'000'000, 6'000'000, 8'000'000};
  const auto c = align({marks(e0, e0), marks(e1, e1)});
  EXPECT_EQ(c.mismatched, 1);
  EXPECT_EQ(c.collectives, 6);
  EXPECT_EQ(c.ranks[1].offset_ns, 0);
  EXPECT_EQ(c.residual_p99_ns, 0);
}

TEST(ClockAlignment, RanksSharingNoCollectiveStayOnBaseTimeAndAreCounted) {
  auto a = marks({0, 10}, {100, 200});
  auto b = marks({0, 10}, {100, 200});
  CollectiveMarks lone;
  lone.marks.push_back({999, 5, 50});
  const auto c = align({a, b, lone});
  EXPECT_EQ(c.unaligned_ranks, 1);
  EXPECT_FALSE(c.ranks[2].aligned);
  EXPECT_TRUE(c.ranks[1].aligned);
  EXPECT_EQ(c.ranks[2].offset_ns, 0);
}

TEST(ClockAlignment, OneRankOrNoSharedCollectiveSaysSo) {
  EXPECT_EQ(align({marks({0}, {1})}).method, ClockMethod::None);
  CollectiveMarks x, y;
  x.marks.push_back({1, 0, 1});
  y.marks.push_back({2, 0, 1});
  const auto c = align({x, y});
  EXPECT_EQ(c.method, ClockMethod::BaseTime);
  EXPECT_EQ(c.collectives, 0);
  EXPECT_FALSE(c.last_rank.has_value());
}

// A Kineto trace of one rank: two NCCL kernels launched by record_param_comms ops that carry the
// collective's group and sequence number (the kernels carry neither, as older releases wrote).
std::string seq_trace(int rank, ns_t shift_us, std::int64_t base_ns) {
  std::string ev;
  for (int k = 0; k < 2; ++k) {
    const long t = 1000 + 100 * k + shift_us;
    ev += fmt::format(
        R"j({{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":{},"dur":5,)j"
        R"j("args":{{"External id":{},"Process Group Name":"0","Seq":{}}}}},)j"
        R"j({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":3,)j"
        R"j("args":{{"External id":{},"correlation":{}}}}},)j"
        R"j({{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",)j"
        R"j("pid":0,"tid":7,"ts":{},"dur":{},"args":{{"External id":{},"correlation":{},"stream":7,"device":0}}}},)j",
        t, 10 + k, 40 + k, t + 1, 10 + k, 500 + k, t + 10 + rank * 30, 50 - rank * 30, 10 + k, 500 + k);
  }
  ev.pop_back();
  return fmt::format(R"j({{"schemaVersion":1,"distributedInfo":{{"backend":"nccl","rank":{},"world_size":2}},)j"
                     R"j("baseTimeNanoseconds":{},"traceEvents":[{}]}})j",
                     rank, base_ns, ev);
}

TEST(CollectiveMarks, SequenceNumbersOnTheLaunchingOpKeyTheKernelsAlikeOnEveryRank) {
  // Rank 1 writes a base time one Kineto period earlier and times larger by as much, and its
  // host clock is 7 ms ahead; its kernels start 30 µs later and end with rank 0's.
  constexpr std::int64_t kBase = 1767189312000000000LL, kPeriod = 7'889'238'000'000'000LL;
  std::vector<RankAnalysis> ranks;
  for (int r = 0; r < 2; ++r) {
    const ns_t shift_us = r ? kPeriod / 1000 + 7000 : 0;
    RankTrace t = read_kineto_buffer(seq_trace(r, shift_us, r ? kBase - kPeriod : kBase), fmt::format("rank{}", r));
    t.rank = r;  // numbered by the job's reader, which this test skips
    ranks.push_back(analyze_rank(t));
    const CollectiveMarks& m = ranks.back().collectives;
    ASSERT_EQ(m.marks.size(), 2u);
    EXPECT_TRUE(m.by_sequence);
    EXPECT_FALSE(m.marks[0].point_to_point);
  }
  EXPECT_EQ(ranks[0].collectives.marks[0].key, ranks[1].collectives.marks[0].key);
  EXPECT_NE(ranks[0].collectives.marks[0].key, ranks[0].collectives.marks[1].key);
  const AnalysisResult r = combine_ranks(std::move(ranks), {});
  const ClockAlignment& c = r.job.rank_comparison.clocks;
  EXPECT_EQ(c.keyed_by, "sequence number");
  EXPECT_EQ(c.collectives, 2);
  EXPECT_EQ(c.ranks[1].offset_ns, 7'000'000);
  EXPECT_EQ(c.residual_p99_ns, 0);
  EXPECT_DOUBLE_EQ(c.arrival_skew_mean_ns, 30'000);
  EXPECT_EQ(c.last_rank, 1);
}

// A base time that puts the kernels past 2^61 ns, or past int64 itself, is no clock: their marks
// are dropped (the fit takes differences of two marks, which must stay within int64).
TEST(CollectiveMarks, KernelsOffAnyClockGiveNoMarks) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 61;
  const auto marks_with_base = [](std::int64_t base) {
    RankTrace t = read_kineto_buffer(seq_trace(0, 0, base), "rank0");
    return analyze_rank(t).collectives.marks.size();
  };
  EXPECT_EQ(marks_with_base(kLimit - 2'000'000), 2u);  // kernels end about 1.16 ms later: on the clock
  EXPECT_EQ(marks_with_base(kLimit - 1'000'000), 0u);  // they start 1.01 ms later: past 2^61
  EXPECT_EQ(marks_with_base(-kLimit - 2'000'000), 0u);  // 0.99 ms before -2^61
  EXPECT_EQ(marks_with_base(std::numeric_limits<std::int64_t>::max() - 1000), 0u);  // the sum overflows
}

// A generated job on hosts whose clocks disagree by up to 3 ms, odd ranks on the previous base
// period, one straggler: the fitted offsets are the generator's, and the straggler arrives last.
TEST(ClockAlignment, GeneratedJobOnSkewedClocksIsAlignedToTheGeneratorsOffsets) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("stepscope-clocks-{}", ::getpid());
  std::filesystem::remove_all(dir);
  const std::string cmd = fmt::format(
      "'{}/tools/tracegen/stepscope-tracegen' -s straggler --ranks 6 --steps 4 --straggler-rank 3 "
      "--clock-skew-us 3000 --base-time-split 1 -o '{}' >/dev/null 2>&1",
      STEPSCOPE_BINARY_DIR, dir.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  PipelineOptions po;
  po.analyze.with_drilldown = false;
  const Analysis a = analyze_paths({dir.string()}, po);
  nlohmann::json truth;
  std::ifstream(dir / "ground_truth.json") >> truth;
  const ClockAlignment& c = a.result.job.rank_comparison.clocks;
  ASSERT_EQ(c.method, ClockMethod::CollectiveEnds);
  EXPECT_EQ(c.keyed_by, "order within step");
  const auto offsets = truth["clock_offsets_ns"].get<std::vector<ns_t>>();
  for (std::size_t r = 0; r < offsets.size(); ++r)
    EXPECT_NEAR(static_cast<double>(c.ranks[r].offset_ns), static_cast<double>(offsets[r] - offsets[0]), 1000) << r;
  EXPECT_LE(c.residual_p99_ns, 1000);
  EXPECT_EQ(c.mismatched, 0);
  ASSERT_TRUE(c.last_rank.has_value());
  EXPECT_EQ(*c.last_rank, 3);
  EXPECT_GE(c.last_share, 0.9);
  // The reports say it: the JSON's figures, the text's ranks line and the diagnosis's evidence.
  const nlohmann::json j = to_json(a.result)["rank_comparison"]["clock_alignment"];
  EXPECT_EQ(j["method"], "collective ends");
  EXPECT_EQ(j["last_rank"], 3);
  EXPECT_EQ(j["ranks"].size(), offsets.size());
  EXPECT_EQ(j["ranks"][1]["offset_ns"], c.ranks[1].offset_ns);
  const std::string text = render_text(a.result);
  EXPECT_NE(text.find(fmt::format("clocks aligned on {} collectives (order within step)", c.collectives)), std::string::npos);
  EXPECT_NE(text.find("rank 3 reaches"), std::string::npos);
  EXPECT_NE(text.find(fmt::format("rank 3 reaches {:.1f}% of {} matched collectives last", 100 * c.last_share, c.collectives)),
            std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stepscope
