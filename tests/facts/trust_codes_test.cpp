// The trust codes are one registry: docs/facts.md lists exactly its codes, every claim's
// precondition names one of them, and no analysis raises a code the registry does not hold.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "doc_tables.hpp"
#include "partition/support.hpp"
#include "stepscope/trust_codes.hpp"

namespace stepscope {
namespace {

std::set<std::string> registry() {
  std::set<std::string> out;
  for (const auto& row : kTrustCodes) out.insert(std::string(row.name));
  return out;
}

// The codes in the first column of docs/facts.md's trust table ("| code | severity | when |"); a
// row may name several ("`one_step`, `few_steps`").
std::set<std::string> documented() {
  std::set<std::string> out;
  for (const auto& row : test::doc_table("facts.md", "| code | severity | when |"))
    if (!row.empty()) out.merge(test::codes_in(row[0]));
  return out;
}

TEST(TrustCodes, DocsListExactlyTheRegistry) {
  const std::set<std::string> docs = documented();
  ASSERT_FALSE(docs.empty());
  EXPECT_EQ(docs, registry());
}

TEST(TrustCodes, RegistryIdsAndStringsAreOneToOne) {
  std::set<std::string> names;
  for (std::size_t k = 0; k < std::size(kTrustCodes); ++k) {
    EXPECT_EQ(static_cast<std::size_t>(kTrustCodes[k].code), k);  // trust_code_info indexes by id
    EXPECT_TRUE(names.insert(std::string(kTrustCodes[k].name)).second) << kTrustCodes[k].name;
    EXPECT_FALSE(kTrustCodes[k].when.empty());
  }
  EXPECT_EQ(find_trust_code("cold_start"), TrustCode::ColdStart);
  EXPECT_EQ(find_trust_code("cold start"), std::nullopt);
  EXPECT_EQ(trust_code_name(TrustCode::FewSteps), "few_steps");
}

TEST(TrustCodes, EveryClaimPreconditionIsRegistered) {
  for (const auto& p : kClaimPreconditions) EXPECT_TRUE(find_trust_code(p.code).has_value()) << p.code;
}

// The recorded traces raise most codes (cold start, few steps, missing GPU records, profiler
// overhead, ...): each one they raise is registered.
TEST(TrustCodes, EveryCodeRaisedOnTheRecordedTracesIsRegistered) {
  const std::filesystem::path dir = std::filesystem::path(STEPSCOPE_SOURCE_DIR) / "tests/data/recorded";
  std::set<std::string> raised;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".gz") continue;
    const DiagnosedResult r = test::analyze_files({e.path().string()});
    for (const auto& w : r.job.trust.warnings) {
      raised.insert(w.code);
      EXPECT_TRUE(find_trust_code(w.code).has_value()) << w.code << " raised on " << e.path().filename();
    }
  }
  EXPECT_GE(raised.size(), 3u);
}

}  // namespace
}  // namespace stepscope
