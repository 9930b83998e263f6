// A job analysed in parts (per-file summaries, or shares as MPI processes read them) and merged
// gives the report of one run over every file: the JSON is compared whole.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stepscope/distributed.hpp"
#include "stepscope/error.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

const std::string kFixtures = STEPSCOPE_FIXTURES_DIR;

PipelineOptions one_thread() {
  PipelineOptions po;
  po.ingest.jobs = 1;
  po.analyze.jobs = 1;
  return po;
}

// What `analyze --summary` writes for `paths`.
SummaryFile summary_of(const std::vector<std::string>& paths) {
  PipelineOptions po = one_thread();
  po.keep_summary = true;
  return analyze_paths(paths, po).summary;
}

std::string direct_json(const std::string& dir) {
  return to_json(analyze_paths({dir}, one_thread()).result).dump(1);
}

// Through the file format, as a summary written and read back.
SummaryFile round_trip(const SummaryFile& s, const std::string& name) { return decode_summary(encode_summary(s), name); }

class Job : public ::testing::TestWithParam<const char*> {};

TEST_P(Job, PerFileSummariesMergeToTheDirectReport) {
  const std::string dir = kFixtures + "/" + GetParam();
  std::vector<SummaryFile> parts;
  // The files in reverse order: the merge orders ranks by number, not by argument.
  std::vector<std::string> files = expand_trace_paths({dir});
  ASSERT_GE(files.size(), 2u);
  for (auto it = files.rbegin(); it != files.rend(); ++it) parts.push_back(round_trip(summary_of({*it}), *it));
  EXPECT_EQ(to_json(merge_summaries(std::move(parts))).dump(1), direct_json(dir));
}

TEST_P(Job, SharesByBytesMergeToTheDirectReport) {
  const std::string dir = kFixtures + "/" + GetParam();
  for (int processes : {1, 2, 3, 16}) {
    FileListing listing = list_trace_files({dir});
    std::vector<std::string> order;
    for (const auto& f : listing.files) order.push_back(f.path);
    std::vector<SummaryFile> parts;
    for (FileListing& share : share_by_bytes(std::move(listing), processes)) {
      SummaryFile s;
      if (!share.files.empty()) {
        Trace t = read_trace_files(std::move(share), one_thread().ingest);
        s.ranks = analyze_ranks(t, one_thread().analyze);
        s.warnings = t.warnings;
      }
      parts.push_back(round_trip(s, "share"));
    }
    EXPECT_EQ(to_json(merge_summaries(std::move(parts), order)).dump(1), direct_json(dir)) << processes << " processes";
  }
}

// Each rank analysed as its file is read, its events let go at once: the report of a run that
// kept every trace, with one thread or two.
std::string as_read_json(const std::vector<std::string>& paths, int jobs) {
  PipelineOptions po;
  po.ingest.jobs = po.analyze.jobs = jobs;
  po.keep_trace = false;
  const Analysis a = analyze_paths(paths, po);
  EXPECT_TRUE(a.trace.ranks.empty());
  return to_json(a.result).dump(1);
}

TEST_P(Job, AnalysedAsReadEqualsTheReportOfKeptTraces) {
  const std::string dir = kFixtures + "/" + GetParam();
  for (int jobs : {1, 2}) EXPECT_EQ(as_read_json({dir}, jobs), direct_json(dir)) << jobs << " threads";
}

INSTANTIATE_TEST_SUITE_P(RealJobs, Job, ::testing::Values("param/dlrm_8rank/kineto", "hta/sampled_world128"));

// A directory as jobs leave them: beside three ranks, a JSON file that is no trace, a trace cut
// before its first event, one that recorded nothing, and one that names no rank. The rules that
// need every file (skip, leave out, number in file order) decide alike when each rank is analysed
// as it is read.
TEST(AnalysedAsRead, TheDirectoryRulesDecideAsForKeptTraces) {
  const auto dir = std::filesystem::temp_directory_path() / ("stepscope-as-read-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* f : {"worker1_step_12.1694128201556.pt.trace.json.gz", "worker2_step_12.1694128201554.pt.trace.json.gz",
                        "worker3_step_12.1694128201557.pt.trace.json.gz"})
    std::filesystem::copy_file(kFixtures + "/param/dlrm_8rank/kineto/" + f, dir / f);
  std::filesystem::copy_file(kFixtures + "/hta/edited/rank_not_found.json.gz", dir / "a_rank_not_found.json.gz");
  std::ofstream(dir / "notes.json") << R"({"note": "not a trace"})";
  std::ofstream(dir / "cut.pt.trace.json") << R"({"schemaVersion": 1, "traceEvents": [)";
  std::ofstream(dir / "idle.pt.trace.json") << R"({"schemaVersion": 1, "traceEvents": []})";
  const std::string direct = direct_json(dir.string());
  EXPECT_EQ(as_read_json({dir.string()}, 1), direct);
  EXPECT_EQ(as_read_json({dir.string()}, 2), direct);
  const auto j = nlohmann::json::parse(direct);
  EXPECT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["ranks"][0]["ingest"]["rank_source"], "file order");
  const std::string warnings = j["warnings"].dump();
  for (const char* said : {"skipped 1 JSON file that holds no trace: notes.json", "cut.pt.trace.json: no events",
                           "idle.pt.trace.json", "numbered them in file order"})
    EXPECT_NE(warnings.find(said), std::string::npos) << said << " in " << warnings;
  // A step range the cut file cannot hold: it is left out before it is analysed, as when kept.
  PipelineOptions po = one_thread();
  po.analyze.partition.step_range = "ProfilerStep#10";
  std::filesystem::remove(dir / "a_rank_not_found.json.gz");
  const std::string kept = to_json(analyze_paths({dir.string()}, po).result).dump(1);
  po.keep_trace = false;
  EXPECT_EQ(to_json(analyze_paths({dir.string()}, po).result).dump(1), kept);
  std::filesystem::remove_all(dir);
}

TEST(ShareByBytes, LargestFirstToTheLightestShare) {
  FileListing l;
  const IngestWarning w{WarningId::UnreadableEntry, {}, {"x.json", "Permission denied"}};
  l.warnings = {w};
  const std::pair<const char*, std::uint64_t> files[] = {{"a", 10}, {"b", 50}, {"c", 30}, {"d", 20}, {"e", 40}};
  for (const auto& [p, bytes] : files) l.files.push_back({p, true, bytes});
  const auto shares = share_by_bytes(l, 2);
  ASSERT_EQ(shares.size(), 2u);
  // 50 -> 0, 40 -> 1, 30 -> 1 (40 < 50), 20 -> 0 (50 < 70), 10 -> 0 (70 = 70, the lower share).
  std::vector<std::string> s0, s1;
  for (const auto& f : shares[0].files) s0.push_back(f.path);
  for (const auto& f : shares[1].files) s1.push_back(f.path);
  EXPECT_EQ(s0, (std::vector<std::string>{"b", "d", "a"}));
  EXPECT_EQ(s1, (std::vector<std::string>{"e", "c"}));
  EXPECT_EQ(shares[0].warnings, std::vector<IngestWarning>{w});
  EXPECT_TRUE(shares[1].warnings.empty());
  EXPECT_TRUE(shares[0].share && shares[1].share);
}

TEST(ShareByBytes, MoreProcessesThanFilesLeavesSomeSharesEmpty) {
  FileListing l;
  l.files.push_back({"only", false, 7});
  const auto shares = share_by_bytes(l, 4);
  ASSERT_EQ(shares.size(), 4u);
  EXPECT_EQ(shares[0].files.size(), 1u);
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(shares[static_cast<std::size_t>(i)].files.empty());
}

TEST(Merge, TheSameRankTwiceIsRefusedNamingBothFiles) {
  const std::string f = kFixtures + "/param/dlrm_8rank/kineto/worker0_step_12.1694128201545.pt.trace.json.gz";
  std::vector<SummaryFile> parts{summary_of({f}), summary_of({f})};
  try {
    merge_summaries(std::move(parts));
    FAIL() << "merged a rank twice";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("are both rank 0"), std::string::npos) << e.what();
  }
}

TEST(Merge, NoRankIsAnError) {
  std::vector<SummaryFile> parts(2);
  EXPECT_THROW(merge_summaries(std::move(parts)), InputError);
}

// Two traces that name no rank, summarised apart, are both "rank 0" there; merged, they are
// numbered in the order given, as one run over both numbers them in file order.
TEST(Merge, RanksWithoutANumberAreNumberedInTheOrderGiven) {
  const std::string a = kFixtures + "/hta/edited/rank_not_found.json.gz";
  const std::string b = kFixtures + "/hta/triton_example/triton_example.json.gz";
  std::vector<SummaryFile> parts{summary_of({a}), summary_of({b})};
  ASSERT_EQ(parts[0].ranks.at(0).ingest.rank_source, "file order");
  ASSERT_EQ(parts[1].ranks.at(0).ingest.rank, 0);
  const DiagnosedResult merged = merge_summaries(std::move(parts));
  const DiagnosedResult direct = analyze_paths({a, b}, one_thread()).result;
  ASSERT_EQ(merged.ranks.size(), 2u);
  EXPECT_EQ(merged.ranks[1].ingest.path, b);
  EXPECT_EQ(merged.ranks[1].rank(), 1);
  EXPECT_EQ(to_json(merged).dump(1), to_json(direct).dump(1));
}

TEST(Merge, ASummaryFileThatIsNotOneIsRefusedByName) {
  const std::string f = kFixtures + "/param/dlrm_8rank/kineto/worker0_step_12.1694128201545.pt.trace.json.gz";
  try {
    merge_summary_files({f});
    FAIL() << "read a trace as a summary";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(f, 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace stepscope
