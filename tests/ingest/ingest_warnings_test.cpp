// The reading's warnings are records; the reports print the line each renders. The lines are the
// ones users have always seen (the JSON reports of every fixture did not change when they became
// records), so each is held here word for word.
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "stepscope/ingest_warning.hpp"

namespace stepscope {
namespace {

const std::vector<std::pair<IngestWarning, std::string>> kLines = {
    {{WarningId::UnreadableEntry, {}, {"d/rank1.json", "Permission denied"}},
     "d/rank1.json: cannot read: Permission denied; skipped"},
    {{WarningId::NotTracesSkipped, {}, {"notes.json"}}, "skipped 1 JSON file that holds no trace: notes.json"},
    {{WarningId::NotTracesSkipped, {}, {"a.json", "b.json"}}, "skipped 2 JSON files that hold no trace: a.json, b.json"},
    {{WarningId::FileCutOff, {57, 1200}, {}},
     "file is cut off (job killed while writing?): kept 57 complete events, lost 1200 bytes after the last one"},
    {{WarningId::EventsWithoutTs, {12}, {}}, "12 events without \"ts\" were skipped"},
    {{WarningId::TimeOutOfRange, {1}, {}}, "1 events with a \"ts\" or \"dur\" beyond 146 years were skipped"},
    {{WarningId::UnpairedBeginEnd, {3}, {}}, "3 begin/end events without a partner were kept with zero duration"},
    {{WarningId::CutBeforeFirstEvent, {}, {"d/rank1.json"}}, "d/rank1.json: no events before the file ends; left out of the ranks"},
    {{WarningId::EventlessFile, {}, {"d/rank1.json"}}, "d/rank1.json: the trace holds no events; left out of the ranks"},
    {{WarningId::RanksSplit, {4, 0, 3}, {}},
     "the file holds the 4 ranks 0-3 (its processes are named after them): read as one trace per rank"},
    {{WarningId::RanksNotSplit, {2}, {}},
     "the file holds several ranks and was not split: 2 of its processes carry no rank in their names, so their "
     "events cannot be placed"},
    {{WarningId::RanksInFileOrder, {}, {}},
     "some traces name no rank (no distributedInfo.rank, no rank-N in the file name): numbered them in file order"},
    {{WarningId::ExportRanksInFileOrder, {}, {"a.sqlite", "b.sqlite"}},
     "a.sqlite, b.sqlite holds several processes with CUDA work, one rank each; the export names no rank: numbered "
     "the ranks in file order, and by pid within a file"},
    {{WarningId::ExportReadAsOneRank, {2}, {}},
     "2 processes made CUDA calls, but GPU rows name no process and correlation ids repeat across processes: read "
     "as one rank"},
    {{WarningId::ExportRowsSkipped, {1}, {"NVTX_EVENTS"}},
     "1 row of NVTX_EVENTS with a missing or out-of-range start/end was skipped"},
    {{WarningId::ExportRowsSkipped, {2}, {"CUPTI_ACTIVITY_KIND_KERNEL"}},
     "2 rows of CUPTI_ACTIVITY_KIND_KERNEL with a missing or out-of-range start/end were skipped"},
    {{WarningId::ExportRowsLeftOut, {3, 0}, {"pid 7000 mpirun", "pid 7001"}},
     "3 rows of processes without CUDA work (pid 7000 mpirun, pid 7001) left out"},
    {{WarningId::ExportRowsLeftOut, {0, 1}, {}}, "1 GPU row of no known process left out"},
    {{WarningId::ExportRowsLeftOut, {1, 2}, {"pid 9"}},
     "1 row of processes without CUDA work (pid 9) left out; 2 GPU rows of no known process left out"},
};

TEST(IngestWarnings, EachRecordRendersTheLineUsersSee) {
  for (const auto& [w, line] : kLines) EXPECT_EQ(ingest_warning_text(w), line) << warning_name(w.id);
}

// The reading's rows close the registry (from unreadable_entry on): each has a line of its own
// above, so a row added without its case in ingest_warning_text fails here.
TEST(IngestWarnings, EveryReadingWarningOfTheRegistryHasItsLine) {
  const auto first = static_cast<std::size_t>(WarningId::UnreadableEntry);
  for (std::size_t i = first; i < std::size(kWarnings); ++i) {
    const WarningId id = kWarnings[i].id;
    bool rendered = false;
    for (const auto& [w, line] : kLines) rendered = rendered || w.id == id;
    EXPECT_TRUE(rendered) << kWarnings[i].name;
  }
}

TEST(IngestWarnings, ARecordWithoutTheFieldsItsLineStatesThrows) {
  EXPECT_THROW(ingest_warning_text({WarningId::FileCutOff, {57}, {}}), std::out_of_range);
  EXPECT_THROW(ingest_warning_text({WarningId::ExportRowsSkipped, {1}, {}}), std::out_of_range);
}

}  // namespace
}  // namespace stepscope
