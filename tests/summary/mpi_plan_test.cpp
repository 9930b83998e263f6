// The listing process 0 sends the other MPI processes (src/pipeline/mpi_plan.hpp): the files and
// the listing's warnings come back as listed, and a warning this binary's registry lacks (process
// 0 running another version) is the summary reader's one-line refusal.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ingest/test_util.hpp"
#include "pipeline/mpi_plan.hpp"
#include "stepscope/error.hpp"

namespace stepscope {
namespace {

// A directory of one rank file and a symlink loop: listed, the loop is an unreadable_entry warning.
mpi::Plan listing_with_a_skipped_entry(const TempDir& d) {
  d.file("rank0.json", R"({"traceEvents": []})");
  const std::filesystem::path loop = std::filesystem::path(d.path()) / "rank1.json";
  std::filesystem::create_symlink(loop, loop);
  return {true, "", list_trace_files({d.path()})};
}

TEST(MpiPlan, TheListingTravelsWhole) {
  TempDir d;
  const mpi::Plan p = listing_with_a_skipped_entry(d);
  ASSERT_EQ(p.listing.files.size(), 1u);
  ASSERT_EQ(p.listing.warnings.size(), 1u);
  ASSERT_EQ(p.listing.warnings[0].id, WarningId::UnreadableEntry);
  const mpi::Plan back = mpi::decode_plan(mpi::encode_plan(p));
  EXPECT_TRUE(back.ok);
  ASSERT_EQ(back.listing.files.size(), 1u);
  EXPECT_EQ(back.listing.files[0].path, p.listing.files[0].path);
  EXPECT_TRUE(back.listing.files[0].listed);
  EXPECT_EQ(back.listing.files[0].bytes, p.listing.files[0].bytes);
  EXPECT_EQ(back.listing.warnings, p.listing.warnings);

  const mpi::Plan refused = mpi::decode_plan(mpi::encode_plan({false, "mixed inputs: pass one kind", {}}));
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.error, "mixed inputs: pass one kind");
}

TEST(MpiPlan, AWarningThisBinaryDoesNotKnowIsOneLineRefusal) {
  TempDir d;
  std::string bytes = mpi::encode_plan(listing_with_a_skipped_entry(d));
  // The warning's stable string stands in the bytes as written; one of the same length keeps the
  // encoding valid.
  const std::string known = "unreadable_entry";
  const std::size_t at = bytes.find(known);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, known.size(), "unreadable_entrz");
  try {
    mpi::decode_plan(bytes);
    FAIL() << "read a warning no registry row names";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "the listing of MPI process 0: field 'warnings[0].id': an unknown warning id");
  }
}

}  // namespace
}  // namespace stepscope
