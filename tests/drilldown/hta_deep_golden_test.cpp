// Golden tests: queue length, memory bandwidth and frequent kernel sequences against HTA's own
// outputs on the same real traces (../shared/oracles/hta-deep/, whose README states HTA's
// definitions). Summaries are pandas describe() over HTA's rows; HTA sorts with an unstable
// quicksort, so rows with equal times may be summed in another order than ours: the summaries
// are compared within HTA's rounding and a small tolerance, counts exactly.
#include <gtest/gtest.h>

#include "oracle_files.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stepscope/drilldown.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path oracle_dir() { return fs::path(STEPSCOPE_ORACLES_DIR) / "hta-deep"; }

std::vector<std::string> oracle_files() { return testing_support::oracle_files("hta-deep"); }

json read_oracle(const std::string& name) {
  std::ifstream in(oracle_dir() / name);
  return json::parse(in);
}

// The rank's trace: the oracle names rank files by base name among its fixtures.
std::optional<RankTrace> rank_trace(const json& oracle, int rank) {
  const json& files = oracle["load"]["rank_files"];
  if (!files.contains(std::to_string(rank))) return std::nullopt;
  const std::string base = files[std::to_string(rank)].get<std::string>();
  for (const json& f : oracle["fixtures"]) {
    fs::path p = fs::path(STEPSCOPE_FIXTURES_DIR) / f.get<std::string>();
    if (p.filename() == base || oracle["fixtures"].size() == 1) {
      Trace t = read_traces({p.string()});
      return std::move(t.ranks.at(0));
    }
  }
  return std::nullopt;
}

bool loads(const json& oracle) { return oracle["load"].contains("rank_files") && !oracle["load"]["rank_files"].empty(); }

// `exact_order`: numpy's quicksort is an insertion sort below 17 rows, so HTA's order of equal
// times is the concatenation's, which we keep; past that its order of equal times is arbitrary and
// the running values may differ by a launch here and there (counts never do).
void expect_summary(const SampleStats& s, const json& o, const std::string& what, bool exact_order) {
  EXPECT_EQ(s.count, o["count"].get<double>()) << what;
  auto near = [&](double ours, const char* key) {
    if (o[key].is_null()) return;  // NaN in HTA's table (std of one row)
    const double theirs = o[key].get<double>();
    const double tolerance = exact_order ? 1e-9 + 1e-9 * std::fabs(theirs) : 1.0 + 0.03 * std::fabs(theirs);
    EXPECT_NEAR(ours, theirs, tolerance) << what << " " << key;
  };
  near(s.mean, "mean");
  near(s.std, "std");
  near(s.min, "min");
  near(s.p25, "25%");
  near(s.median, "50%");
  near(s.p75, "75%");
  near(s.max, "max");
}

class HtaDeep : public ::testing::TestWithParam<std::string> {};

TEST_P(HtaDeep, QueueLengthSummaryPerStream) {
  const json oracle = read_oracle(GetParam());
  if (!loads(oracle) || !oracle["results"].contains("queue_length")) GTEST_SKIP() << "HTA could not load the trace";
  // The old-dialect trace_file_list trace gives HTA duplicate event indices (its critical path
  // fails on them with a TypeError); HTA's launch pairing loses the first launch there, we keep it.
  if (GetParam().find("trace_file_list") != std::string::npos) {
    const QueueLength q = hta_queue_length(*rank_trace(oracle, 1));
    ASSERT_EQ(q.streams.size(), 1u);
    EXPECT_EQ(q.streams[0].summary.count, oracle["results"]["queue_length"]["summary"][0]["count"].get<std::int64_t>() + 2)
        << "the known deviation is gone: drop this branch";
    GTEST_SKIP() << "HTA loses a launch to duplicate event indices in this trace";
  }
  const json& summary = oracle["results"]["queue_length"]["summary"];
  for (const auto& [rank_text, file] : oracle["load"]["rank_files"].items()) {
    const int rank = std::stoi(rank_text);
    auto trace = rank_trace(oracle, rank);
    ASSERT_TRUE(trace) << rank_text;
    const QueueLength q = hta_queue_length(*trace);
    std::vector<const json*> theirs;
    for (const json& row : summary)
      if (row["rank"].get<int>() == rank) theirs.push_back(&row);
    ASSERT_EQ(q.streams.size(), theirs.size()) << "streams of rank " << rank;
    for (std::size_t k = 0; k < theirs.size(); ++k) {
      EXPECT_EQ(q.streams[k].stream, (*theirs[k])["stream"].get<std::int64_t>());
      std::int64_t rows = 0;
      for (const StreamQueue& sq : q.streams) rows += sq.summary.count;
      expect_summary(q.streams[k].summary, *theirs[k], "rank " + rank_text + " stream " + std::to_string(q.streams[k].stream),
                     rows <= 16);
      EXPECT_EQ(q.streams[k].time_at_max, 0);  // no stream of these traces reaches 1024 launches
    }
  }
}

TEST_P(HtaDeep, MemoryBandwidthSummaryPerCopyType) {
  const json oracle = read_oracle(GetParam());
  if (!loads(oracle) || !oracle["results"].contains("memory_bw")) GTEST_SKIP() << "HTA could not load the trace";
  const json& summary = oracle["results"]["memory_bw"]["summary"];
  for (const auto& [rank_text, file] : oracle["load"]["rank_files"].items()) {
    const int rank = std::stoi(rank_text);
    auto trace = rank_trace(oracle, rank);
    ASSERT_TRUE(trace) << rank_text;
    const MemoryBandwidth bw = hta_memory_bandwidth(*trace);
    std::vector<const CopyBandwidth*> ours;
    for (const CopyBandwidth& c : bw.types)
      if (c.summary.count > 0) ours.push_back(&c);  // HTA lists a type only with a positive row
    std::vector<const json*> theirs;
    for (const json& row : summary)
      if (row["rank"].get<int>() == rank) theirs.push_back(&row);
    ASSERT_EQ(ours.size(), theirs.size()) << "copy types of rank " << rank;
    for (std::size_t k = 0; k < theirs.size(); ++k) {
      EXPECT_EQ(ours[k]->name, (*theirs[k])["name"].get<std::string>());
      // Float residues of the running sum (~1e-14 GB/s) may fall either side of 0 with another
      // order of equal-time rows: the count may differ by those, the values may not.
      const double count = (*theirs[k])["count"].get<double>();
      EXPECT_NEAR(static_cast<double>(ours[k]->summary.count), count, std::max(1.0, 0.02 * count)) << ours[k]->name;
      EXPECT_NEAR(ours[k]->summary.max, (*theirs[k])["max"].get<double>(), 1e-6) << ours[k]->name;
    }
  }
}

TEST_P(HtaDeep, FrequentKernelSequencesInOrderAndCount) {
  const json oracle = read_oracle(GetParam());
  if (!loads(oracle) || !oracle["results"].contains("get_frequent_cuda_kernel_sequences"))
    GTEST_SKIP() << "HTA could not load the trace";
  const json& result = oracle["results"]["get_frequent_cuda_kernel_sequences"];
  if (!result.contains("cases") || result["cases"].empty()) GTEST_SKIP() << "no case: " << result.value("note", "");
  for (const json& c : result["cases"]) {
    const std::string op = c["args"]["operator_name"].get<std::string>();
    const int rank = c["args"].value("rank", 0);
    auto trace = rank_trace(oracle, rank);
    ASSERT_TRUE(trace);
    const KernelSequences ours = hta_kernel_sequences(*trace, op, c["args"].value("min_pattern_len", 3));
    if (c.contains("error") && !c["error"].is_null()) {
      EXPECT_FALSE(ours.note.empty()) << op << ": HTA failed (" << c["error"] << "), we should say why";
      continue;
    }
    const json& patterns = c["patterns"];
    ASSERT_EQ(ours.sequences.size(), c.value("patterns_total", patterns.size())) << op;  // rows stored: up to 500
    for (std::size_t k = 0; k < patterns.size(); ++k) {
      std::string joined;
      for (const auto& p : ours.sequences[k].pattern) joined += (joined.empty() ? "" : "|") + p;
      EXPECT_EQ(joined, patterns[k]["pattern"].get<std::string>()) << op << " #" << k;
      EXPECT_EQ(ours.sequences[k].count, patterns[k]["count"].get<std::int64_t>()) << op << " #" << k;
      EXPECT_NEAR(static_cast<double>(ours.sequences[k].gpu_time) / 1000.0, patterns[k]["GPU kernel duration (us)"].get<double>(), 0.5)
          << op << " #" << k;
      EXPECT_NEAR(static_cast<double>(ours.sequences[k].cpu_time) / 1000.0, patterns[k]["CPU op duration (us)"].get<double>(), 0.5)
          << op << " #" << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Oracles, HtaDeep, ::testing::ValuesIn(oracle_files()),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.size() - 5);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace stepscope
