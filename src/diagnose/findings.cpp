// Findings' ids and sentences, from their typed fields.
#include <fmt/core.h>

#include "stepscope/verdict.hpp"

namespace stepscope {

std::string_view finding_kind_name(FindingKind k) {
  switch (k) {
#define STEPSCOPE_FINDING_KIND_NAME(id, name) \
  case FindingKind::id: return name;
    STEPSCOPE_FINDING_KINDS(STEPSCOPE_FINDING_KIND_NAME)
#undef STEPSCOPE_FINDING_KIND_NAME
  }
  return "";
}

std::string_view finding_id(const Finding& f) {
  return f.footgun ? footgun_name(*f.footgun) : finding_kind_name(f.kind);
}

std::string finding_text(const Finding& f) {
  if (!f.rank) return f.text;
  // An arrival's sentence goes on from the rank: "rank 3 reaches ...".
  if (f.kind == FindingKind::Arrival) return fmt::format("rank {} {}", *f.rank, f.text);
  return fmt::format("rank {}: {}", *f.rank, f.text);
}

Finding footgun_finding(FootgunId id, std::string text, std::optional<int> rank) {
  Finding f(FindingKind::Footgun, std::move(text), rank);
  f.footgun = id;
  f.lever = footgun_info(id).lever;
  return f;
}

}  // namespace stepscope
