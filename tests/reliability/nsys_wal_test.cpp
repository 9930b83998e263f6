// An Nsight export left in WAL mode is read without writing beside it: no -shm, no -wal change.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "harness.hpp"

namespace reliability {
namespace {

TEST(NsysWal, AnExportInWalModeIsReadWithoutWritingBesideIt) {
  const std::string fixture = std::string(STEPSCOPE_FIXTURES_DIR) + "/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite";
  if (!fs::exists(fixture)) GTEST_SKIP() << "no " << fixture;
  Scratch s;
  fs::create_directory(s / "work");
  fs::create_directory(s / "run");
  fs::copy_file(fixture, s / "work/export.sqlite");
  // Rows written in WAL mode and left in the -wal file: copied while the writer still holds them.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((s / "work/export.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE extra(x); INSERT INTO extra VALUES (1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_TRUE(fs::exists(s / "work/export.sqlite-wal"));
  fs::copy_file(s / "work/export.sqlite", s / "run/export.sqlite");
  fs::copy_file(s / "work/export.sqlite-wal", s / "run/export.sqlite-wal");
  sqlite3_close(db);
  const std::string db_bytes = slurp(s / "run/export.sqlite"), wal_bytes = slurp(s / "run/export.sqlite-wal");
  const Result r = run({"analyze", "run/export.sqlite", "-q"}, s.limits());
  EXPECT_LT(r.rc, 2) << r.err;
  EXPECT_FALSE(fs::exists(s / "run/export.sqlite-shm"));
  EXPECT_EQ(slurp(s / "run/export.sqlite"), db_bytes);
  EXPECT_EQ(slurp(s / "run/export.sqlite-wal"), wal_bytes);
}

}  // namespace
}  // namespace reliability
