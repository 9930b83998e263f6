// The trust codes are one registry: docs/facts.md lists exactly its codes, every claim's
// precondition names one of them, and the reports spell each code raised by its stable string.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "doc_tables.hpp"
#include "partition/support.hpp"
#include "stepscope/report.hpp"
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
// overhead, ...): codes are raised as TrustCode values, so each is registered; the JSON report
// spells each by its stable string, which reads back to the code raised.
TEST(TrustCodes, EveryCodeRaisedOnTheRecordedTracesIsRegistered) {
  const std::filesystem::path dir = std::filesystem::path(STEPSCOPE_SOURCE_DIR) / "tests/data/recorded";
  std::set<TrustCode> raised;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".gz") continue;
    const DiagnosedResult r = test::analyze_files({e.path().string()});
    const nlohmann::json trust = to_json(r)["trust"];
    ASSERT_EQ(trust.size(), r.job.trust.warnings.size()) << e.path().filename();
    for (std::size_t i = 0; i < trust.size(); ++i) {
      const TrustCode code = r.job.trust.warnings[i].code;
      raised.insert(code);
      EXPECT_EQ(find_trust_code(trust[i]["code"].get<std::string>()), code) << trust[i]["code"] << " raised on "
                                                                           << e.path().filename();
    }
  }
  EXPECT_GE(raised.size(), 3u);
}

}  // namespace
}  // namespace stepscope
