// Export rows whose start or end cannot be a time (NULL, text, blob, real, at or past 2^62 ns,
// ending before they start) are skipped, counted in one warning per table in the rank they
// belong to; the rows around them are read as usual.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "export_builder.hpp"
#include "ingest/nsys_sqlite.hpp"
#include "stepscope/pipeline.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using nsys_test::ExportBuilder;

const std::string kSchema2 = std::string(STEPSCOPE_FIXTURES_DIR) + "/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite";
const std::string kSchema3 = std::string(STEPSCOPE_FIXTURES_DIR) + "/nsys/perlmutter-cloverleaf-cuda.sqlite";

constexpr std::int64_t kPidA = 4242, kPidB = 5151;
constexpr std::int64_t global_pid(std::int64_t pid) { return (std::int64_t{1} << 48) | (pid << 24); }
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t k2to62 = std::int64_t{1} << 62;

std::string scratch(const std::string& name) {
  fs::path dir = fs::path(STEPSCOPE_BINARY_DIR) / "nsys_test_files";
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string sql(std::int64_t v) { return std::to_string(v); }

// The real tables declare start and end NOT NULL; this one, like a hand-edited or foreign
// export's, does not, so that NULL can be planted too. Raw SQL literals, for blobs and reals.
void create_loose_kernel_table(ExportBuilder& b) {
  b.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
         "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER)");
  b.exec("INSERT INTO StringIds (id, value) VALUES (1, 'void gemm(float*)')");
}

void kernel(ExportBuilder& b, const std::string& start, const std::string& end, std::int64_t pid) {
  b.exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + start + ", " + end + ", 0, 7, 1, " +
         sql(global_pid(pid)) + ", 1, 1)");
}

// Every (start, end) a reader must not take for a span, as SQL literals.
const std::vector<std::pair<std::string, std::string>> kBadTimes = {
    {"'12:00'", "2000000"},              // text
    {"1000000", "'later'"},              // text
    {"x'0102030405060708'", "2000000"},  // blob
    {"1000000", "x'00'"},                // blob
    {"NULL", "2000000"},                 // missing
    {"1000000", "NULL"},                 // missing
    {"1000000.5", "2000000"},            // real
    {sql(kMax - 1000), sql(kMax)},       // near the int64 limit
    {sql(kMin + 1), sql(1000)},          // end - start overflows
    {"1000", sql(kMin + 1)},             // ends before it starts, by most of the range
    {sql(k2to62), sql(k2to62 + 10)},     // at 2^62: out of range, as in the Kineto reader
    {"5000000", "4000000"},              // ends before it starts
};

std::string build_loose_export(const std::string& name, const std::vector<std::int64_t>& bad_rows_per_pid) {
  const std::string out = scratch(name);
  ExportBuilder b(out, kSchema3, {"CUPTI_ACTIVITY_KIND_KERNEL"});
  create_loose_kernel_table(b);
  const std::int64_t pids[] = {kPidA, kPidB};
  std::size_t next_bad = 0;
  for (std::size_t p = 0; p < bad_rows_per_pid.size(); ++p) {
    kernel(b, "1000000", "3000000", pids[p]);  // two good kernels per process around the bad rows
    for (std::int64_t i = 0; i < bad_rows_per_pid[p]; ++i, ++next_bad) {
      const auto& [start, end] = kBadTimes[next_bad % kBadTimes.size()];
      kernel(b, start, end, pids[p]);
    }
    kernel(b, "4000000", "4500000", pids[p]);
  }
  return out;
}

// The rows of `table` its warning says were skipped; 0 without one. One warning per table.
std::uint64_t rows_skipped(const std::vector<IngestWarning>& warnings, const std::string& table) {
  std::uint64_t rows = 0;
  std::size_t found = 0;
  for (const IngestWarning& w : warnings)
    if (w.id == WarningId::ExportRowsSkipped && w.names.at(0) == table) rows = w.counts.at(0), ++found;
  EXPECT_LE(found, 1u) << table;
  return rows;
}

void expect_sane_times(const RankTrace& t) {
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_GE(t.events.ts[i], 0) << i;
    EXPECT_GE(t.events.dur[i], 0) << i;
    EXPECT_LT(t.events.ts[i] + t.events.dur[i], k2to62) << i;
  }
}

TEST(NsysTimeRows, EveryKindOfBadTimeIsSkippedInOneCountedWarning) {
  const auto n = static_cast<std::int64_t>(kBadTimes.size());
  std::vector<RankTrace> ranks = ingest::read_nsys_sqlite(build_loose_export("bad_times.sqlite", {n}));
  ASSERT_EQ(ranks.size(), 1u);
  const RankTrace& t = ranks[0];
  EXPECT_EQ(t.events.size(), 2u);  // the two good kernels
  expect_sane_times(t);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(rows_skipped(t.warnings, "CUPTI_ACTIVITY_KIND_KERNEL"), static_cast<std::uint64_t>(n));
  EXPECT_EQ(ingest_warning_text(t.warnings[0]), std::to_string(n) + " rows of CUPTI_ACTIVITY_KIND_KERNEL with a "
                                                                    "missing or out-of-range start/end were skipped");
}

TEST(NsysTimeRows, EachRankCountsItsOwnRows) {
  std::vector<RankTrace> ranks = ingest::read_nsys_sqlite(build_loose_export("bad_times_split.sqlite", {1, 3}));
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(rows_skipped(ranks[0].warnings, "CUPTI_ACTIVITY_KIND_KERNEL"), 1u);
  EXPECT_EQ(ingest_warning_text(ranks[0].warnings.at(0)),
            "1 row of CUPTI_ACTIVITY_KIND_KERNEL with a missing or out-of-range start/end was skipped");
  EXPECT_EQ(rows_skipped(ranks[1].warnings, "CUPTI_ACTIVITY_KIND_KERNEL"), 3u);
  for (const RankTrace& t : ranks) {
    EXPECT_EQ(t.events.size(), 2u);
    expect_sane_times(t);
  }
}

TEST(NsysTimeRows, TheLastTimeBelowTheBoundIsKept) {
  const std::string out = scratch("bound_times.sqlite");
  {
    ExportBuilder b(out, kSchema3, {"CUPTI_ACTIVITY_KIND_KERNEL"});
    create_loose_kernel_table(b);
    kernel(b, sql(k2to62 - 10), sql(k2to62 - 1), kPidA);
  }
  std::vector<RankTrace> ranks = ingest::read_nsys_sqlite(out);
  ASSERT_EQ(ranks.size(), 1u);
  ASSERT_EQ(ranks[0].events.size(), 1u);
  EXPECT_EQ(ranks[0].events.dur[0], 9);
  EXPECT_TRUE(ranks[0].warnings.empty());
}

// In the real schema: text in a NOT NULL column of the runtime and copy tables, and an NVTX
// range left open (its end NULL), each counted in its own table's warning.
TEST(NsysTimeRows, RuntimeCopyAndNvtxRowsAreCountedPerTable) {
  const std::string out = scratch("bad_times_tables.sqlite");
  constexpr std::int64_t kGlobalTid = global_pid(kPidA) | kPidA;
  {
    ExportBuilder b(out, kSchema3, {}, kSchema2, {"NVTX_EVENTS"});
    b.insert("StringIds", {{"id", std::int64_t{1}}, {"value", std::string("cudaLaunchKernel_v7000")}});
    b.insert("StringIds", {{"id", std::int64_t{2}}, {"value", std::string("train_step")}});
    auto api = [&](nsys_test::SqlValue start, nsys_test::SqlValue end) {
      b.insert("CUPTI_ACTIVITY_KIND_RUNTIME", {{"start", start}, {"end", end}, {"globalTid", kGlobalTid},
                                               {"correlationId", std::int64_t{1}}, {"nameId", std::int64_t{1}}});
    };
    api(std::int64_t{1000}, std::int64_t{2000});
    api(std::string("soon"), std::int64_t{2000});
    api(std::int64_t{1000}, kMax);
    auto copy = [&](nsys_test::SqlValue start, nsys_test::SqlValue end) {
      b.insert("CUPTI_ACTIVITY_KIND_MEMCPY", {{"start", start}, {"end", end}, {"deviceId", std::int64_t{0}},
                                              {"streamId", std::int64_t{7}}, {"correlationId", std::int64_t{1}},
                                              {"globalPid", global_pid(kPidA)}, {"bytes", std::int64_t{64}},
                                              {"copyKind", std::int64_t{1}}});
    };
    copy(std::int64_t{3000}, std::int64_t{4000});
    copy(std::int64_t{3000}, std::string(""));
    auto range = [&](nsys_test::SqlValue start, nsys_test::SqlValue end) {
      b.insert("NVTX_EVENTS", {{"start", start}, {"end", end}, {"eventType", std::int64_t{59}},
                               {"textId", std::int64_t{2}}, {"globalTid", kGlobalTid}});
    };
    range(std::int64_t{500}, std::int64_t{5000});
    range(std::int64_t{6000}, nullptr);
  }
  std::vector<RankTrace> ranks = ingest::read_nsys_sqlite(out);
  ASSERT_EQ(ranks.size(), 1u);
  const RankTrace& t = ranks[0];
  EXPECT_EQ(t.events.size(), 3u);  // one call, one copy, one range
  expect_sane_times(t);
  EXPECT_EQ(rows_skipped(t.warnings, "CUPTI_ACTIVITY_KIND_RUNTIME"), 2u);
  EXPECT_EQ(rows_skipped(t.warnings, "CUPTI_ACTIVITY_KIND_MEMCPY"), 1u);
  EXPECT_EQ(rows_skipped(t.warnings, "NVTX_EVENTS"), 1u);
}

// Through the whole pipeline: the analysis sees only the good rows and its figures stay finite.
TEST(NsysTimeRows, AnalysisOfAnExportWithExtremeRowsStaysSane) {
  const auto n = static_cast<std::int64_t>(kBadTimes.size());
  const Analysis a = analyze_paths({build_loose_export("bad_times_pipeline.sqlite", {n})});
  ASSERT_EQ(a.result.ranks.size(), 1u);
  const IngestSummary& s = a.result.ranks[0].ingest;
  EXPECT_EQ(s.events, 2u);
  EXPECT_EQ(s.first_ts, 1'000'000);
  EXPECT_EQ(s.last_end, 4'500'000);
  EXPECT_EQ(rows_skipped(s.warnings, "CUPTI_ACTIVITY_KIND_KERNEL"), static_cast<std::uint64_t>(n));
}

}  // namespace
}  // namespace stepscope
