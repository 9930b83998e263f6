// The per-rank summary file: what one rank's analysis produced (stepscope/analysis.hpp's
// RankAnalysis), without its events, so that the ranks of a job can be analysed apart (a job
// array, MPI processes) and put side by side later by `stepscope merge` with the same result as
// one run over every file. docs/summary.md describes the format.
//
// Layout: the JSON document {"schema": kSummarySchema, "warnings": [...], "ranks": [...]} encoded
// as CBOR (RFC 8949). Each rank's object has one key per field of RankAnalysis and of the structs
// inside it, named as the field; enums are their integer values. Left out, because they are per
// event or per name of the rank's trace and nothing after the analysis reads them: a rank's name
// facts (RankFacts::names), its per-event stages (event_stage) and its GPU busy intervals
// (gpu_busy). A reader refuses a file whose schema differs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stepscope/analysis.hpp"

namespace stepscope {

inline constexpr const char* kSummarySchema = "stepscope.summary/12";

// The ranks one run analysed and its warnings about the set of ranks (Trace::warnings).
struct SummaryFile {
  std::vector<RankAnalysis> ranks;
  std::vector<IngestWarning> warnings;
};

// The bytes of a summary file. Never throws for a well-formed SummaryFile.
std::string encode_summary(const SummaryFile& s);

// Reads the bytes of a summary file; `name` labels errors. Throws InputError when the bytes are
// not CBOR, name another schema, or lack a field or hold one of the wrong type (the message names
// the file and the field).
SummaryFile decode_summary(std::string_view bytes, const std::string& name);

}  // namespace stepscope
