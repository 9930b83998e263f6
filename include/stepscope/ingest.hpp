// Reading traces from disk into the trace model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "stepscope/trace.hpp"

namespace stepscope {

struct IngestOptions {
  int jobs = 0;  // threads for reading ranks and parsing large files; 0 = number of cores
  // Called from the reading threads with bytes consumed so far (compressed, all inputs) and the
  // total to read; used for a progress bar. May be empty.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

struct FoundFile {
  std::string path;
  bool listed = false;  // found by listing a directory, not named by the user
  std::uint64_t bytes = 0;  // its size; 0 for standard input or a file that cannot be sized
};

// The files to read, and the directory entries left out because they cannot be read, each
// warning naming the entry and the reason.
struct FileListing {
  std::vector<FoundFile> files;
  std::vector<IngestWarning> warnings;
  // One process's share of a listing that others read the rest of: a share without a trace (only
  // files that hold none, or only empty ones) is then no error here; the whole decides.
  bool share = false;
};

// The files behind the user's paths, as expand_trace_paths finds them, with what read_traces
// needs to know of each (a directory's JSON file that holds no trace is skipped, a named one is
// refused). Throws as expand_trace_paths.
FileListing list_trace_files(const std::vector<std::string>& paths);

// Expands the user's paths: a trace file, or a directory holding one trace per rank
// (*.json, *.json.gz, *.sqlite). Throws InputError for a named path that is missing or cannot be
// read (with the system's reason) and for a directory with no readable traces; a directory's
// entries that cannot be read (a symlink loop, no permission) are left out while others remain.
std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths);

// Reads one Kineto / legacy autograd-profiler JSON trace (plain or gzipped).
// Throws InputError on bad input; a truncated file yields what was complete plus a warning.
RankTrace read_kineto_file(const std::string& path, const IngestOptions& opts = {});

// Same, from bytes already in memory (plain JSON). `name` labels errors.
RankTrace read_kineto_buffer(std::string_view json, const std::string& name,
                             const IngestOptions& opts = {});

// Reads every path (after expansion), files in parallel: one rank per Kineto file, one per
// process with CUDA work in an nsys export. Assigns ranks (distributedInfo, else rank-N in the
// file name, else file order with a warning; file then pid order once an export was split) and
// refuses duplicate ranks. Directory entries left out and Kineto files cut before their first
// event (left out of the ranks while another rank holds events) are warnings of the Trace.
Trace read_traces(const std::vector<std::string>& paths, const IngestOptions& opts = {});

// read_traces over a listing (list_trace_files, or a part of one: ranks are then assigned within
// that part). The listing's warnings become the Trace's first warnings.
Trace read_trace_files(FileListing listing, const IngestOptions& opts = {});

// Where a rank read from a listing ends up, decided once every file is read, as read_trace_files
// decides: left out (a file cut before its first event, beside files that hold events), or kept
// with its number and where the number came from.
struct RankPlace {
  bool kept = true;
  int rank = 0;
  RankTrace::RankSource source = RankTrace::RankSource::FileOrder;
};
struct ListingPlan {
  std::vector<IngestWarning> warnings;        // the listing's, then the reading's
  std::vector<std::vector<RankPlace>> files;  // per file of the listing, per rank it held in read order
};

// read_trace_files for a caller that keeps no trace: each rank goes to take(file, index, rank) as
// soon as its file is read, on the thread that read it (files in parallel, up to opts.jobs), so a
// caller that analyses it there and lets it go holds at most opts.jobs files' traces at once (an
// nsys export's ranks are handed on together). A rank is
// numbered when taken if it names its own number (distributedInfo, else rank-N in the file name);
// the plan returned numbers every rank as read_trace_files would, and says which are left out.
// Throws as read_trace_files; a file that fails may do so after other files' ranks were taken.
ListingPlan read_trace_files_each(FileListing listing, const IngestOptions& opts,
                                  const std::function<void(std::size_t, std::size_t, RankTrace&&)>& take);

// The bytes of a trace file as the readers see them (gzip decoded, sniffed by its magic rather
// than its extension), passed to `sink` in order in pieces of at most `chunk` bytes. Returns
// false when the data ended early (a gzip stream cut off mid-member). Throws InputError when the
// file cannot be opened or read.
bool read_trace_bytes(const std::string& path, const std::function<void(std::string_view)>& sink,
                      std::size_t chunk = std::size_t{1} << 20);

}  // namespace stepscope
