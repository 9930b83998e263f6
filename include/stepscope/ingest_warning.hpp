// The reading's warnings (a file skipped, events lost, ranks numbered by file order) as records:
// the registered id (stepscope/warning_ids.hpp) and the figures and names the line states, in the
// order it states them. Code compares the id and reads the fields; the reports print
// ingest_warning_text(w), the line as it was written before it was a record; the summary file and
// the MPI listing carry the record. Each id's fields are listed where its line is rendered
// (src/trace/ingest_warning.cpp).
//   {EventsWithoutTs, {12}, {}}                               "12 events without "ts" were skipped"
//   {ExportRowsSkipped, {3}, {"CUPTI_ACTIVITY_KIND_KERNEL"}}  "3 rows of CUPTI_ACTIVITY_KIND_KERNEL with ..."
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/warning_ids.hpp"

namespace stepscope {

struct IngestWarning {
  WarningId id;
  std::vector<std::uint64_t> counts;  // events, rows, bytes, ranks or processes
  std::vector<std::string> names;     // files, tables or processes
  bool operator==(const IngestWarning&) const = default;
};

// The line the reports print. Throws std::out_of_range for a record that lacks a field its id
// states (a bug where it was raised, or a summary file edited by hand).
std::string ingest_warning_text(const IngestWarning& w);
std::vector<std::string> ingest_warning_texts(const std::vector<IngestWarning>& ws);

}  // namespace stepscope
