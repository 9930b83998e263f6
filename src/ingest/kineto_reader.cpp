// Reading Kineto / legacy autograd-profiler JSON traces into RankTrace, streaming.
#include <fmt/core.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "ingest/byte_source.hpp"
#include "ingest/json_chunker.hpp"
#include "ingest/input_kind.hpp"
#include "ingest/kineto_events.hpp"
#include "ingest/metadata.hpp"
#include "ingest/nsys_sqlite.hpp"
#include "ingest/thread_pool.hpp"
#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/parse.hpp"
#include "stepscope/threads.hpp"

namespace stepscope {
namespace fs = std::filesystem;
using namespace ingest;

namespace {

// B/E pairs become one complete event on the B row; E rows stay, marked End.
void pair_begin_end(RankTrace& t, std::vector<IngestWarning>& warnings) {
  EventTable& e = t.events;
  std::vector<std::vector<std::uint32_t>> open(e.keys.size());  // per (pid, tid) key: the open B rows
  std::size_t unpaired = 0;
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < e.size(); ++i)
    if (e.phase[i] == Phase::Begin || e.phase[i] == Phase::End) order.push_back(i);
  if (order.empty()) return;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return e.ts[a] < e.ts[b]; });
  for (auto i : order) {
    auto& stack = open[e.track[i]];
    if (e.phase[i] == Phase::Begin) {
      stack.push_back(i);
    } else if (!stack.empty()) {
      auto b = stack.back();
      stack.pop_back();
      e.phase[b] = Phase::Complete;
      e.dur.set(b, e.ts[i] - e.ts[b]);
    } else {
      ++unpaired;
    }
  }
  for (const auto& stack : open) unpaired += stack.size();
  if (unpaired) warnings.push_back({WarningId::UnpairedBeginEnd, {unpaired}, {}});
}

// The order in which the parser's workers merge their parts: part k waits until part k-1 has
// passed. A failed part is still passed, so that the parts after it do not wait forever; they
// see failed() and merge nothing.
class MergeTurns {
 public:
  void take(std::size_t ticket) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return next_ == ticket; });
  }
  bool failed() const { return failed_; }  // read only between take() and pass()
  void pass(std::size_t ticket, bool failed) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      failed_ = failed_ || failed;
      next_ = ticket + 1;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t next_ = 0;
  bool failed_ = false;
};

struct FileReader {
  ByteSource& src;
  std::string name;
  const IngestOptions& opts;
  int jobs;
  std::uint64_t progress_base;
  std::uint64_t progress_total;

  RankTrace read() {
    RankTrace out;
    out.path = name;
    JsonChunker chunker(src, name);
    BatchStats stats;
    if (jobs <= 1) read_serial(chunker, out, stats);
    else read_parallel(chunker, out, stats);
    finish(chunker, out, stats);
    return out;
  }

  void report_progress() const {
    if (opts.progress) opts.progress(progress_base + src.consumed(), progress_total);
  }

  // After the first run of events, its bytes per kept event and the expected decoded size give
  // the event count; reserving it once avoids the doubling that would otherwise cost up to 3x
  // the columns' size at the moment of a reallocation.
  void reserve_after_first_batch(std::size_t batch_bytes, std::size_t kept, RankTrace& out) const {
    std::uint64_t expected = src.expected_output();
    if (expected == 0 || kept == 0) return;
    double per_event = static_cast<double>(batch_bytes) / static_cast<double>(kept);
    auto estimate = static_cast<std::size_t>(static_cast<double>(expected) / per_event * 1.02) + 16;
    out.events.reserve(std::min<std::size_t>(estimate, std::size_t{1} << 32));
  }

  void read_serial(JsonChunker& chunker, RankTrace& out, BatchStats& stats) {
    const std::unique_ptr<EventParser> parser = make_event_parser();
    EventBatch batch;
    bool first = true;
    while (chunker.next(batch) == ChunkState::Found) {
      parser->parse(batch, chunker.layout(), name, out, stats);
      if (first) reserve_after_first_batch(batch.text_size, out.events.size(), out);
      first = false;
      report_progress();
    }
  }

  // The chunker runs on this thread; runs of events are parsed on a pool, each into its own
  // part, and each part is merged into `out` by the worker that parsed it, in file order (a
  // worker waits for the part before its own; the pool takes tasks in order, so that part's
  // worker is never queued behind it). The merge copies the part and touches the model's
  // pages for the first time: on this thread, that and the chunking made it the reader's
  // bottleneck (1 GB trace, 2 threads: 0.6 s of merging beside 0.6 s of chunking).
  void read_parallel(JsonChunker& chunker, RankTrace& out, BatchStats& stats) {
    MergeTurns turns;  // outlives the pool, whose end runs the tasks still queued
    ThreadPool pool(jobs);
    std::deque<std::future<void>> inflight;
    auto wait_front = [&] {
      inflight.front().get();  // rethrows a parse or merge error from the worker
      inflight.pop_front();
      report_progress();
    };
    // The first part is read here: the model's columns are reserved by its merge, and memory
    // a pool thread allocates stays with that thread's heap after it ends (+3 MB at 107 MB).
    {
      EventBatch first;
      if (chunker.next(first) != ChunkState::Found) return;
      thread_local const std::unique_ptr<EventParser> parser = make_event_parser();
      RankTrace part;
      BatchStats part_stats;
      parser->parse(first, chunker.layout(), name, part, part_stats);
      merge_part(std::move(part), part_stats, first.text_size, out, stats);
      turns.pass(0, false);
    }
    for (std::size_t ticket = 1;; ++ticket) {
      auto batch = std::make_shared<EventBatch>();
      if (chunker.next(*batch) != ChunkState::Found) break;
      TraceLayout layout = chunker.layout();
      inflight.push_back(pool.submit([batch, layout, ticket, &turns, &out, &stats, this]() mutable {
        thread_local const std::unique_ptr<EventParser> parser = make_event_parser();
        RankTrace part;
        BatchStats part_stats;
        std::exception_ptr error;
        try {
          parser->parse(*batch, layout, name, part, part_stats);
        } catch (...) {
          error = std::current_exception();
        }
        const std::size_t text_size = batch->text_size;
        batch.reset();  // the text is not needed while the part waits for its turn
        turns.take(ticket);
        if (!error && !turns.failed()) {
          try {
            merge_part(std::move(part), part_stats, text_size, out, stats);
          } catch (...) {
            error = std::current_exception();
          }
        }
        turns.pass(ticket, error != nullptr);
        if (error) std::rethrow_exception(error);
      }));
      if (inflight.size() >= static_cast<std::size_t>(2 * jobs)) wait_front();
    }
    while (!inflight.empty()) wait_front();
  }

  // Runs on the part's turn, so `out` and `stats` have one writer at a time.
  void merge_part(RankTrace&& part, const BatchStats& part_stats, std::size_t text_size, RankTrace& out,
                  BatchStats& stats) const {
    stats.missing_ts += part_stats.missing_ts;
    stats.time_out_of_range += part_stats.time_out_of_range;
    stats.fast_events += part_stats.fast_events;
    if (out.events.size() == 0) reserve_after_first_batch(text_size, part.events.size(), out);
    merge_rank_part(out, std::move(part));
  }

  void finish(JsonChunker& chunker, RankTrace& out, BatchStats& stats) {
    out.layout = chunker.layout();
    apply_top_level(chunker.top_level(), name, out);
    out.bytes_read = chunker.bytes_read();
    if (chunker.truncated() || src.truncated()) {
      out.truncated = true;
      out.bytes_lost = chunker.bytes_lost();
      out.warnings.push_back({WarningId::FileCutOff, {out.events.size(), out.bytes_lost}, {}});
    }
    if (stats.missing_ts) out.warnings.push_back({WarningId::EventsWithoutTs, {stats.missing_ts}, {}});
    if (stats.time_out_of_range) out.warnings.push_back({WarningId::TimeOutOfRange, {stats.time_out_of_range}, {}});
    pair_begin_end(out, out.warnings);
    if (out.events.size() == 0 && !out.truncated)
      throw EmptyTraceError(fmt::format("{}: the trace holds no events", name));
    out.build_indexes();
  }
};

bool looks_like_trace_file(const fs::path& p) {
  std::string n = p.filename().string();
  auto ends = [&](std::string_view s) { return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0; };
  return ends(".json") || ends(".json.gz") || ends(".sqlite");
}

// Nsight Systems exports and Kineto traces come from different tools with different
// definitions: one job's ranks must all be one or the other.
std::vector<bool> classify_sqlite(const std::vector<std::string>& files) {
  std::vector<bool> sqlite;
  for (const auto& f : files) {
    if (is_nsys_report_name(f))
      throw InputError(fmt::format("{}: an Nsight Systems report; export it first: nsys export --type sqlite --output {}.sqlite {}",
                                   f, fs::path(f).replace_extension().string(), f));
    sqlite.push_back(has_sqlite_magic(f));
    if (!sqlite.back() && fs::path(f).extension() == ".sqlite")
      throw InputError(fmt::format("{}: not a SQLite database (no SQLite header): empty or corrupted", f));
  }
  if (std::find(sqlite.begin(), sqlite.end(), true) != sqlite.end() &&
      std::find(sqlite.begin(), sqlite.end(), false) != sqlite.end())
    throw InputError("mixed inputs: Nsight Systems exports (.sqlite) and Kineto traces cannot be analysed together; pass one kind");
  return sqlite;
}

std::optional<int> rank_from_file_name(const std::string& path) {
  static const std::regex re(R"((?:^|[^A-Za-z])rank[-_]?(\d+))", std::regex::icase);
  std::smatch m;
  std::string file = fs::path(path).filename().string();
  if (std::regex_search(file, m, re)) return parse_int<int>(m[1].str());
  return std::nullopt;
}

std::uint64_t size_or_zero(const std::string& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

// Why a regular file cannot be opened for reading, or empty when it can. Checked before reading
// so that an unreadable file is reported for what it is, not as an empty or corrupted trace.
std::string unreadable_reason(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::error_code(errno, std::generic_category()).message();
  ::close(fd);
  return {};
}

// A path the user named: a missing one is "no such file or directory"; any other failure (a
// symlink loop, a directory it cannot enter) gives the system's reason, not a missing file.
fs::file_status named_path_status(const std::string& p) {
  std::error_code ec;
  fs::file_status st = fs::status(p, ec);
  if (!ec && fs::exists(st)) return st;
  if (!ec || ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory)
    throw InputError(fmt::format("{}: no such file or directory", p));
  throw InputError(fmt::format("{}: cannot read: {}", p, ec.message()));
}

// One directory entry that is named like a trace: added to `found`, or to `skipped` with the
// reason it cannot be read (a symlink loop, a dangling link, no permission). Other entries that
// are not regular files (a subdirectory named x.json) are no rank file and pass silently.
void take_entry(const fs::directory_entry& entry, std::vector<std::string>& found,
                std::vector<IngestWarning>& skipped) {
  const fs::path& path = entry.path();
  if (!looks_like_trace_file(path)) return;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows links: a rank file may be one
  std::string why;
  if (ec || !fs::exists(st)) why = ec ? ec.message() : "no such file or directory";
  else if (!fs::is_regular_file(st)) return;
  else why = unreadable_reason(path.string());
  if (why.empty()) found.push_back(path.string());
  else skipped.push_back({WarningId::UnreadableEntry, {}, {path.string(), why}});
}

// Every trace file of a directory, sorted. Entries that cannot be read are left out with a
// warning while others remain; a directory of none but those is refused with the first reason.
// The subfolders of `dir` that hold traces themselves: the runs of a log directory
// (tensorboard_trace_handler writes one folder per run). Sorted; at most `limit` looked at.
std::vector<std::string> runs_below(const std::string& dir, std::size_t limit = 4096) {
  std::vector<std::string> runs;
  std::error_code ec;
  std::size_t seen = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end && seen < limit; it.increment(ec), ++seen) {
    std::error_code sub_ec;
    if (!it->is_directory(sub_ec)) continue;
    std::size_t inside = 0;
    for (fs::directory_iterator f(it->path(), sub_ec), fend; !sub_ec && f != fend && inside < limit; f.increment(sub_ec), ++inside)
      if (looks_like_trace_file(f->path())) {
        runs.push_back(it->path().filename().string());
        break;
      }
  }
  std::sort(runs.begin(), runs.end());
  return runs;
}

// "logs: a log directory of 3 runs (run_a, run_b, run_c): ..." for a folder whose traces are
// all one level down.
std::string log_directory_advice(const std::string& dir, const std::vector<std::string>& runs) {
  std::string names;
  for (std::size_t i = 0; i < runs.size() && i < 3; ++i) names += (i ? ", " : "") + runs[i];
  if (runs.size() > 3) names += ", ...";
  return fmt::format("{}: a log directory of {} run{} in subfolders ({}): pass one run's folder to analyze it, two to "
                     "`stepscope diff` to compare them, or the directory to `stepscope serve`",
                     dir, runs.size(), runs.size() == 1 ? "" : "s", names);
}

void list_directory(const std::string& dir, FileListing& out) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  std::vector<std::string> found;
  std::vector<IngestWarning> skipped;
  // increment(ec) rather than a range-for: the range-for's ++ throws on a failed readdir.
  for (const fs::directory_iterator end{}; !ec && it != end; it.increment(ec)) take_entry(*it, found, skipped);
  if (ec) throw InputError(fmt::format("{}: cannot list directory: {}", dir, ec.message()));
  // In the order of their lines, as the reports print them.
  std::sort(skipped.begin(), skipped.end(),
            [](const auto& a, const auto& b) { return ingest_warning_text(a) < ingest_warning_text(b); });
  if (found.empty() && !skipped.empty())
    throw InputError(fmt::format("{}: no readable trace in the directory ({}{})", dir,
                                 ingest_warning_text(skipped.front()),
                                 skipped.size() > 1 ? fmt::format(", and {} more", skipped.size() - 1) : ""));
  if (found.empty()) {
    if (const std::vector<std::string> runs = runs_below(dir); !runs.empty())
      throw InputError(log_directory_advice(dir, runs));
    throw InputError(fmt::format("{}: directory holds no *.json, *.json.gz or *.sqlite traces", dir));
  }
  std::sort(found.begin(), found.end());
  for (auto& f : found) {
    const std::uint64_t bytes = size_or_zero(f);
    out.files.push_back({std::move(f), true, bytes});
  }
  for (auto& w : skipped) out.warnings.push_back(std::move(w));
}

}  // namespace

FileListing list_trace_files(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("no trace given: name a trace file or a directory of traces");
  FileListing listing;
  for (const auto& p : paths) {
    if (p == "-") {  // standard input, read like a pipe
      listing.files.push_back({p, false});
      continue;
    }
    const fs::file_status st = named_path_status(p);
    if (fs::is_directory(st)) {
      list_directory(p, listing);
      continue;
    }
    // A named pipe (a shell's <(...)) is not opened here: that could block, or take its data.
    if (fs::is_regular_file(st))
      if (std::string why = unreadable_reason(p); !why.empty())
        throw InputError(fmt::format("{}: cannot read: {}", p, why));
    listing.files.push_back({p, false, fs::is_regular_file(st) ? size_or_zero(p) : 0});
  }
  return listing;
}


std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (auto& f : list_trace_files(paths).files) out.push_back(std::move(f.path));
  return out;
}

RankTrace read_kineto_file(const std::string& path, const IngestOptions& opts) {
  auto src = open_byte_source(path);
  FileReader r{*src, path, opts, threads_for(opts.jobs), 0, src->total()};
  return r.read();
}

RankTrace read_kineto_buffer(std::string_view json, const std::string& name,
                             const IngestOptions& opts) {
  auto src = memory_byte_source(json);
  FileReader r{*src, name, opts, opts.jobs > 0 ? opts.jobs : 1, 0, json.size()};
  return r.read();
}

namespace {

// What the job's rules read of a rank, kept when the rank itself goes to the consumer.
struct RankStub {
  std::string path;
  std::optional<int> named;                   // distributedInfo.rank, else rank-N in the file name
  RankTrace::RankSource named_by = RankTrace::RankSource::FileOrder;
  std::optional<std::int64_t> out_of_range;   // a distributedInfo rank no int holds
  bool no_events = false;
};

// The rank a trace names for itself: distributedInfo's, else the file name's.
std::optional<int> own_rank(const RankTrace& r) {
  if (r.distributed.rank) return r.distributed.rank;
  return rank_from_file_name(r.path);
}

// An export of `nsys profile mpirun ...` holds several ranks. Nothing in it says which process is
// which rank, and a rank-N in its name cannot name them all: every rank is then numbered in file
// order, and by pid within a file.
void number_in_file_order(std::vector<RankPlace*>& kept, const std::vector<std::string>& shared_files,
                          std::vector<IngestWarning>& warnings) {
  for (std::size_t i = 0; i < kept.size(); ++i) *kept[i] = {true, static_cast<int>(i), RankTrace::RankSource::FileOrder};
  warnings.push_back({WarningId::ExportRanksInFileOrder, {}, shared_files});
}

// Numbers the kept ranks: their own number, else their place in file order; refuses duplicates.
// A JSON file whose ranks all name themselves (a job file split by its process names) needs no
// numbering by file order; an Nsight export's processes are numbered by it whatever they say.
bool every_rank_named(const std::vector<RankStub>& stubs) {
  return std::all_of(stubs.begin(), stubs.end(), [](const RankStub& s) { return s.named.has_value(); });
}

void assign_ranks(const std::vector<std::vector<RankStub>>& stubs, ListingPlan& plan,
                  const std::vector<std::string>& shared_files) {
  std::vector<RankPlace*> kept;
  std::vector<const RankStub*> kept_stub;
  for (std::size_t f = 0; f < stubs.size(); ++f)
    for (std::size_t k = 0; k < stubs[f].size(); ++k)
      if (plan.files[f][k].kept) kept.push_back(&plan.files[f][k]), kept_stub.push_back(&stubs[f][k]);
  if (!shared_files.empty()) return number_in_file_order(kept, shared_files, plan.warnings);
  bool any_order = false;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const RankStub& r = *kept_stub[i];
    if (r.out_of_range)
      throw InputError(fmt::format("{}: distributedInfo rank {} is out of range (at most {})", r.path,
                                   *r.out_of_range, std::numeric_limits<int>::max()));
    if (r.named) {
      *kept[i] = {true, *r.named, r.named_by};
    } else {
      *kept[i] = {true, static_cast<int>(i), RankTrace::RankSource::FileOrder};
      any_order = true;
    }
  }
  if (any_order && kept.size() > 1) plan.warnings.push_back({WarningId::RanksInFileOrder, {}, {}});
  std::map<int, const std::string*> seen;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    auto [it, fresh] = seen.emplace(kept[i]->rank, &kept_stub[i]->path);
    if (!fresh)
      throw InputError(fmt::format("{} and {} are both rank {}: pass one trace per rank",
                                   *it->second, kept_stub[i]->path, kept[i]->rank));
  }
}

// JSON files beside a directory's traces that hold none are skipped with a warning; a directory
// with nothing else is an error.
void note_not_traces(const std::vector<std::string>& files, const std::vector<char>& not_traces, bool share,
                     std::vector<IngestWarning>& warnings) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < files.size(); ++i)
    if (not_traces[i]) names.push_back(fs::path(files[i]).filename().string());
  if (names.empty()) return;
  if (names.size() == files.size() && !share)
    throw InputError(fmt::format("{}: no trace among the directory's files (none holds \"traceEvents\")",
                                 fs::path(files.front()).parent_path().string()));
  warnings.push_back({WarningId::NotTracesSkipped, {}, std::move(names)});
}

// A rank file cut before its first event (the job killed while the profiler was writing) holds
// no step: kept as a rank, it would add an empty step to every mean. It is left out with a
// warning while other ranks hold events; alone, it stays, and analysis says there is nothing to
// analyse. Only Kineto files: an export without events is refused when read.
void leave_out_empty_ranks(const std::vector<std::string>& files, const std::vector<bool>& sqlite,
                           const std::vector<std::vector<RankStub>>& stubs, ListingPlan& plan) {
  auto is_empty = [&](std::size_t i) { return !sqlite[i] && stubs[i].size() == 1 && stubs[i][0].no_events; };
  bool any_events = false;
  for (std::size_t i = 0; i < files.size(); ++i) any_events = any_events || (!stubs[i].empty() && !is_empty(i));
  if (!any_events) return;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!is_empty(i)) continue;
    plan.files[i][0].kept = false;
    plan.warnings.push_back({WarningId::CutBeforeFirstEvent, {}, {files[i]}});
  }
}

// A directory's complete trace that holds no event (a rank that recorded nothing) is left out
// with a warning while another file holds a rank; when none does, the first such file's error
// stands, as it would for that file named alone.
void leave_out_eventless_files(const std::vector<std::string>& files, const std::vector<std::string>& reasons,
                               const std::vector<std::vector<RankStub>>& stubs, bool share,
                               std::vector<IngestWarning>& warnings) {
  const std::string* first = nullptr;
  bool any_rank = false;
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    if (!reasons[i].empty() && !first) first = &reasons[i];
    any_rank = any_rank || !stubs[i].empty();
  }
  if (!first) return;
  if (!any_rank && !share) throw EmptyTraceError(*first);
  for (std::size_t i = 0; i < reasons.size(); ++i)
    if (!reasons[i].empty()) warnings.push_back({WarningId::EventlessFile, {}, {files[i]}});
}

}  // namespace

Trace read_traces(const std::vector<std::string>& paths, const IngestOptions& opts) {
  return read_trace_files(list_trace_files(paths), opts);
}

ListingPlan read_trace_files_each(FileListing listing, const IngestOptions& opts,
                                  const std::function<void(std::size_t, std::size_t, RankTrace&&)>& take) {
  const std::vector<FoundFile>& found = listing.files;
  std::vector<std::string> files;
  for (const auto& f : found) files.push_back(f.path);
  std::vector<char> not_traces(files.size(), 0);  // listed JSON documents without traceEvents
  std::vector<std::string> empty(files.size());     // listed traces without events: the reason
  // What is read: the file itself, or a stream's copy (messages still name the stream).
  std::vector<std::unique_ptr<SpooledInput>> spooled(files.size());
  std::vector<std::string> sources = files;
  // Standard input redirected from a regular file (`analyze - < t.json.gz`) is no stream to copy:
  // it is read through /dev/stdin like any file.
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string named = files[i] == "-" ? "/dev/stdin" : files[i];
    sources[i] = (spooled[i] = spool_if_stream(named)) ? spooled[i]->path() : named;
  }
  const std::vector<bool> sqlite = classify_sqlite(sources);
  int jobs = threads_for(opts.jobs);
  ListingPlan plan;
  plan.warnings = std::move(listing.warnings);
  std::vector<std::vector<RankStub>> stubs(files.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) total += size_or_zero(sources[i]);
  // Files in parallel when there are several; the threads left over parse within a file.
  int file_threads = std::max(1, std::min<int>(jobs, static_cast<int>(files.size())));
  int inner = std::max(1, jobs / file_threads);
  std::mutex progress_mu;
  std::vector<std::uint64_t> done(files.size(), 0);
  IngestOptions inner_opts;
  inner_opts.jobs = inner;
  // Each file's ranks are stubbed, numbered as far as they name themselves, and handed on; only
  // the thread reading file i touches stubs[i].
  auto hand_on = [&](std::size_t i, std::vector<RankTrace>&& ranks) {
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      RankTrace& r = ranks[k];
      const auto own = own_rank(r);
      const auto source = r.distributed.rank ? RankTrace::RankSource::DistributedInfo : RankTrace::RankSource::FileName;
      stubs[i].push_back({r.path, own, own ? source : RankTrace::RankSource::FileOrder, r.distributed.rank_out_of_range,
                          r.events.size() == 0});
      if (own) r.rank = *own, r.rank_source = source;
      take(i, k, std::move(r));
    }
  };
  auto read_one = [&](std::size_t i) {
    IngestOptions o = inner_opts;
    if (opts.progress) {
      o.progress = [&, i](std::uint64_t d, std::uint64_t) {
        std::lock_guard<std::mutex> lk(progress_mu);
        done[i] = d;
        std::uint64_t sum = 0;
        for (auto x : done) sum += x;
        opts.progress(sum, total);
      };
    }
    std::vector<RankTrace> ranks;
    if (sqlite[i]) {
      ranks = read_nsys_sqlite(sources[i], o);
      for (auto& r : ranks) r.path = files[i];
      return hand_on(i, std::move(ranks));
    }
    auto src = open_byte_source(sources[i]);
    FileReader r{*src, files[i], o, inner, 0, total};
    try {
      RankTrace read = r.read();
      if (const std::string what = not_a_profiler_trace(read); !what.empty())
        throw NotATraceError(fmt::format("{}: not a profiler trace: this is {}", files[i], what));
      ranks = split_merged_ranks(std::move(read));
    } catch (const NotATraceError&) {
      if (!found[i].listed) throw;
      not_traces[i] = 1;
    } catch (const EmptyTraceError& e) {
      if (!found[i].listed) throw;
      empty[i] = e.what();
    }
    hand_on(i, std::move(ranks));
  };
  if (file_threads == 1) {
    for (std::size_t i = 0; i < files.size(); ++i) read_one(i);
  } else {
    ThreadPool pool(file_threads);
    std::vector<std::future<void>> fut;
    for (std::size_t i = 0; i < files.size(); ++i) fut.push_back(pool.submit([&, i] { read_one(i); }));
    for (auto& f : fut) f.get();
  }
  note_not_traces(files, not_traces, listing.share, plan.warnings);
  leave_out_eventless_files(files, empty, stubs, listing.share, plan.warnings);
  plan.files.resize(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) plan.files[i].resize(stubs[i].size());
  leave_out_empty_ranks(files, sqlite, stubs, plan);
  std::vector<std::string> shared_files;
  for (std::size_t i = 0; i < files.size(); ++i)
    if (stubs[i].size() > 1 && plan.files[i][0].kept && (sqlite[i] || !every_rank_named(stubs[i])))
      shared_files.push_back(files[i]);
  assign_ranks(stubs, plan, shared_files);
  return plan;
}

Trace read_trace_files(FileListing listing, const IngestOptions& opts) {
  std::vector<std::vector<RankTrace>> per_file(listing.files.size());
  const ListingPlan plan = read_trace_files_each(std::move(listing), opts, [&](std::size_t f, std::size_t, RankTrace&& r) {
    per_file[f].push_back(std::move(r));
  });
  Trace t;
  t.warnings = plan.warnings;
  for (std::size_t f = 0; f < per_file.size(); ++f)
    for (std::size_t k = 0; k < per_file[f].size(); ++k) {
      const RankPlace& place = plan.files[f][k];
      if (!place.kept) continue;
      RankTrace& r = per_file[f][k];
      r.rank = place.rank;
      r.rank_source = place.source;
      t.ranks.push_back(std::move(r));
    }
  std::sort(t.ranks.begin(), t.ranks.end(), [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  return t;
}

}  // namespace stepscope
