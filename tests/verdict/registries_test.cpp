// Levers, footguns, warnings and finding kinds are registries: ids and stable strings one to one,
// and the docs list exactly what the registries hold (docs/levers.md, docs/footguns.md,
// docs/warnings.md).
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "doc_tables.hpp"
#include "stepscope/verdict.hpp"
#include "stepscope/warning_ids.hpp"

namespace stepscope {
namespace {

// Each row of a registry at the index of its id (the *_info lookups index so), its stable string
// once and found again, its line not empty.
template <auto Id, auto Line, class Row, std::size_t N, class Find>
void expect_one_to_one(const Row (&rows)[N], Find find) {
  std::set<std::string_view> names;
  for (std::size_t k = 0; k < N; ++k) {
    EXPECT_EQ(static_cast<std::size_t>(rows[k].*Id), k) << rows[k].name;
    EXPECT_TRUE(names.insert(rows[k].name).second) << rows[k].name;
    EXPECT_FALSE((rows[k].*Line).empty()) << rows[k].name;
    EXPECT_EQ(find(rows[k].name), rows[k].*Id) << rows[k].name;
  }
}

// The registered id a row of a docs table names: one code in its first cell, each code in one row
// only (seen collects them); nullopt, with a failure, otherwise.
template <class Id>
std::optional<Id> documented_id(const std::vector<std::string>& row, std::size_t columns,
                                std::optional<Id> (*find)(std::string_view), std::set<std::string>& seen) {
  if (row.size() < columns) {
    ADD_FAILURE() << "a row of " << row.size() << " cells: " << (row.empty() ? "" : row[0]);
    return std::nullopt;
  }
  const std::set<std::string> codes = test::codes_in(row[0]);
  if (codes.size() != 1) {
    ADD_FAILURE() << row[0] << ": not one code";
    return std::nullopt;
  }
  EXPECT_TRUE(seen.insert(*codes.begin()).second) << row[0] << " in two rows";
  const std::optional<Id> id = find(*codes.begin());
  EXPECT_TRUE(id) << row[0] << " is not registered";
  return id;
}

TEST(Registries, LeverIdsAndStringsAreOneToOne) {
  expect_one_to_one<&LeverInfo::id, &LeverInfo::what>(kLevers, find_lever);
  EXPECT_EQ(find_lever("num workers"), std::nullopt);
}

TEST(Registries, FootgunIdsAndStringsAreOneToOne) {
  expect_one_to_one<&FootgunInfo::id, &FootgunInfo::what>(kFootguns, find_footgun);
}

// docs/levers.md's table: each lever once, with the registry's words for what it changes and the
// time it acts on.
TEST(Registries, LeverDocsListExactlyTheRegistry) {
  std::set<std::string> documented;
  for (const auto& row : test::doc_table("levers.md", "| lever | what it changes |"))
    if (const std::optional<LeverId> id = documented_id(row, 3, find_lever, documented)) {
      EXPECT_EQ(row[1], lever_info(*id).what) << row[0];
      EXPECT_EQ(row[2], lever_time_label(lever_info(*id).acts_on)) << row[0];
    }
  EXPECT_EQ(documented.size(), std::size(kLevers));
}

// docs/footguns.md's detector table: each footgun once, with the lever the registry gives it
// first in its lever column.
TEST(Registries, FootgunDocsListExactlyTheRegistry) {
  std::set<std::string> documented;
  for (const auto& row : test::doc_table("footguns.md", "| id | signature in the trace | gain | lever |"))
    if (const std::optional<FootgunId> id = documented_id(row, 4, find_footgun, documented)) {
      const std::string lever(lever_name(footgun_info(*id).lever));
      EXPECT_EQ(row[3].rfind("`" + lever + "`", 0), 0u) << row[0] << ": the registry's lever is " << lever;
    }
  EXPECT_EQ(documented.size(), std::size(kFootguns));
}

TEST(Registries, WarningIdsAndStringsAreOneToOne) {
  expect_one_to_one<&WarningInfo::id, &WarningInfo::when>(kWarnings, find_warning);
  EXPECT_EQ(find_warning("gpu models differ"), std::nullopt);
}

// docs/warnings.md's table: each warning once, with the registry's severity and words.
TEST(Registries, WarningDocsListExactlyTheRegistry) {
  std::set<std::string> documented;
  for (const auto& row : test::doc_table("warnings.md", "| warning | severity | when |"))
    if (const std::optional<WarningId> id = documented_id(row, 3, find_warning, documented)) {
      EXPECT_EQ(row[1], warning_severity_name(warning_info(*id).severity)) << row[0];
      EXPECT_EQ(row[2], warning_info(*id).when) << row[0];
    }
  EXPECT_EQ(documented.size(), std::size(kWarnings));
}

// A finding renders its id and sentence from its typed fields: the footgun's name, the rank
// before the sentence.
TEST(Registries, FindingsRenderTheirTypedFields) {
  const Finding straggler(FindingKind::Straggler, "3.1 ms slower per step", 5);
  EXPECT_EQ(finding_id(straggler), "straggler");
  EXPECT_EQ(finding_text(straggler), "rank 5: 3.1 ms slower per step");
  const Finding arrival(FindingKind::Arrival, "reaches 90% of collectives last", 2);
  EXPECT_EQ(finding_text(arrival), "rank 2 reaches 90% of collectives last");
  const Finding f = footgun_finding(FootgunId::PageableCopy, "pageable copies");
  EXPECT_EQ(finding_id(f), "pageable_copy");
  EXPECT_EQ(f.lever, LeverId::PinMemory);
  EXPECT_EQ(finding_text(f), "pageable copies");
}

}  // namespace
}  // namespace stepscope
