#include "stepscope/ingest_warning.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace stepscope {

namespace {

const char* plural(std::uint64_t n, const char* one, const char* many) { return n == 1 ? one : many; }

// ExportRowsLeftOut: counts {rows of processes without CUDA work, GPU rows of no known process},
// names: those processes ("pid 7000 mpirun"). Either half may be absent.
std::string rows_left_out_text(std::uint64_t rows, std::uint64_t unknown, const std::vector<std::string>& processes) {
  std::string out;
  if (rows)
    out = fmt::format("{} row{} of processes without CUDA work ({}) left out", rows, plural(rows, "", "s"),
                      fmt::join(processes, ", "));
  if (unknown)
    out += fmt::format("{}{} GPU row{} of no known process left out", out.empty() ? "" : "; ", unknown,
                       plural(unknown, "", "s"));
  return out;
}

}  // namespace

std::string ingest_warning_text(const IngestWarning& w) {
  const auto count = [&](std::size_t i) { return w.counts.at(i); };
  const auto name = [&](std::size_t i) -> const std::string& { return w.names.at(i); };
  switch (w.id) {
    case WarningId::UnreadableEntry:  // names {entry, the system's reason}
      return fmt::format("{}: cannot read: {}; skipped", name(0), name(1));
    case WarningId::NotTracesSkipped: {  // names: the files
      const std::uint64_t n = w.names.size();
      return fmt::format("skipped {} JSON file{} that hold{} no trace: {}", n, plural(n, "", "s"), plural(n, "s", ""),
                         fmt::join(w.names, ", "));
    }
    case WarningId::FileCutOff:  // counts {complete events kept, bytes lost}
      return fmt::format("file is cut off (job killed while writing?): kept {} complete events, lost {} bytes after the "
                         "last one",
                         count(0), count(1));
    case WarningId::EventsWithoutTs:  // counts {events}
      return fmt::format("{} events without \"ts\" were skipped", count(0));
    case WarningId::TimeOutOfRange:  // counts {events}
      return fmt::format("{} events with a \"ts\" or \"dur\" beyond 146 years were skipped", count(0));
    case WarningId::UnpairedBeginEnd:  // counts {events}
      return fmt::format("{} begin/end events without a partner were kept with zero duration", count(0));
    case WarningId::CutBeforeFirstEvent:  // names {file}
      return fmt::format("{}: no events before the file ends; left out of the ranks", name(0));
    case WarningId::EventlessFile:  // names {file}
      return fmt::format("{}: the trace holds no events; left out of the ranks", name(0));
    case WarningId::RanksSplit:  // counts {ranks, the first, the last}
      return fmt::format("the file holds the {} ranks {}-{} (its processes are named after them): read as one trace "
                         "per rank",
                         count(0), count(1), count(2));
    case WarningId::RanksNotSplit:  // counts {processes without a rank in their names}
      return fmt::format("the file holds several ranks and was not split: {} of its processes carry no rank in their "
                         "names, so their events cannot be placed",
                         count(0));
    case WarningId::RanksInFileOrder:
      return "some traces name no rank (no distributedInfo.rank, no rank-N in the file name): numbered them in file order";
    case WarningId::ExportRanksInFileOrder:  // names: the exports
      return fmt::format("{} holds several processes with CUDA work, one rank each; the export names no rank: "
                         "numbered the ranks in file order, and by pid within a file",
                         fmt::join(w.names, ", "));
    case WarningId::ExportReadAsOneRank:  // counts {processes with CUDA calls}
      return fmt::format("{} processes made CUDA calls, but GPU rows name no process and correlation ids repeat "
                         "across processes: read as one rank",
                         count(0));
    case WarningId::ExportRowsSkipped:  // counts {rows}, names {table}
      return fmt::format("{} row{} of {} with a missing or out-of-range start/end {} skipped", count(0),
                         plural(count(0), "", "s"), name(0), plural(count(0), "was", "were"));
    case WarningId::ExportRowsLeftOut:
      return rows_left_out_text(count(0), count(1), w.names);
    default:  // another channel's warning: its registered words
      return std::string(warning_info(w.id).when);
  }
}

std::vector<std::string> ingest_warning_texts(const std::vector<IngestWarning>& ws) {
  return warning_texts(ws, ingest_warning_text);
}

}  // namespace stepscope
