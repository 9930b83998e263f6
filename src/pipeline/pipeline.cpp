#include "stepscope/pipeline.hpp"

#include <fmt/core.h>

#include <filesystem>

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>

#include "stepscope/diagnose.hpp"
#include "stepscope/error.hpp"
#include "stepscope/threads.hpp"

namespace stepscope {

namespace {

std::atomic<void (*)(RunPhase)> run_phase_listener{nullptr};

void enter(RunPhase p) {
  if (auto* listener = run_phase_listener.load()) listener(p);
}

void check_jobs(int jobs) {
  if (jobs < 0 || jobs > kMaxJobs)
    throw InputError(fmt::format("--jobs {}: must be between 0 and {}", jobs, kMaxJobs));
}

void check_options(const PipelineOptions& opts) {
  check_jobs(opts.ingest.jobs);
  check_jobs(opts.analyze.jobs);
}

// The parts' set warnings, each once, in order. A part made from a subset of the files says that
// it numbered ranks in file order about that subset only: the merge says it anew.
std::vector<IngestWarning> merged_warnings(std::vector<SummaryFile>& parts) {
  std::vector<IngestWarning> out;
  for (auto& p : parts)
    for (auto& w : p.warnings)
      if (w.id != WarningId::RanksInFileOrder && std::find(out.begin(), out.end(), w) == out.end())
        out.push_back(std::move(w));
  return out;
}

// The rank's number, and its trust warnings, which name it as entries of the job's list.
void renumber(RankAnalysis& a, int rank) {
  a.ingest.rank = a.footgun_scan.rank = rank;
  for (auto& w : a.facts.trust.warnings) w.rank = rank;
  for (auto& w : a.partition.trust) w.rank = rank;
}

// As the reader numbers ranks that name none: by position in the list of every rank.
void number_file_order_ranks(std::vector<RankAnalysis>& ranks, std::vector<IngestWarning>& warnings) {
  bool any = false;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    RankAnalysis& a = ranks[i];
    if (a.ingest.rank_source != kRankSourceFileOrder) continue;
    any = true;
    renumber(a, static_cast<int>(i));
  }
  if (any && ranks.size() > 1) warnings.push_back({WarningId::RanksInFileOrder, {}, {}});
}

// The ranks in the order their files were listed; a file's ranks keep their order.
void order_by_file(std::vector<RankAnalysis>& ranks, const std::vector<std::string>& file_order) {
  std::map<std::string_view, std::size_t> position;
  for (std::size_t i = 0; i < file_order.size(); ++i) position.emplace(file_order[i], i);
  auto at = [&](const RankAnalysis& a) {
    auto it = position.find(a.ingest.path);
    return it == position.end() ? file_order.size() : it->second;
  };
  std::stable_sort(ranks.begin(), ranks.end(), [&](const RankAnalysis& a, const RankAnalysis& b) { return at(a) < at(b); });
}

void sort_by_rank(std::vector<RankAnalysis>& ranks) {
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankAnalysis& a, const RankAnalysis& b) { return a.ingest.rank < b.ingest.rank; });
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i].ingest.rank == ranks[i - 1].ingest.rank)
      throw InputError(fmt::format("{} and {} are both rank {}: pass one trace per rank", ranks[i - 1].ingest.path,
                                   ranks[i].ingest.path, ranks[i].ingest.rank));
}

// A summary is a CBOR map (encode_summary): anything else is refused at its first byte, before
// more of it is read.
bool starts_a_summary(std::string_view bytes) {
  return !bytes.empty() && (static_cast<unsigned char>(bytes[0]) >> 5) == 5;
}

// Summaries compress a few times over; a stream that decodes to far more than its file (a gzip
// of zeros) is stopped where it passes that, not once it has filled the memory.
std::uint64_t summary_budget(const std::string& path) {
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  return std::max<std::uint64_t>(64ull << 20, (ec ? 0 : size) * 64);
}

// A summary file's bytes, decoded from gzip when they are compressed (as for traces).
std::string summary_bytes(const std::string& path) {
  std::string bytes;
  const std::uint64_t budget = summary_budget(path);
  const bool complete = read_trace_bytes(path, [&](std::string_view piece) {
    if (bytes.empty() && !starts_a_summary(piece))
      throw InputError(fmt::format("{}: not a stepscope summary (it does not start as one): write it with "
                                   "`stepscope analyze --summary`", path));
    if (bytes.size() + piece.size() > budget)
      throw InputError(fmt::format("{}: decodes to over {} MiB, far more than a summary of its size: not a stepscope "
                                   "summary", path, budget >> 20));
    bytes.append(piece);
  });
  if (!complete) throw InputError(fmt::format("{}: the gzip stream ends early: the summary was cut off", path));
  return bytes;
}

}  // namespace

DiagnosedResult merge_summaries(std::vector<SummaryFile>&& parts, const std::vector<std::string>& file_order) {
  std::vector<IngestWarning> warnings = merged_warnings(parts);
  std::vector<RankAnalysis> ranks;
  for (auto& p : parts)
    for (auto& r : p.ranks) ranks.push_back(std::move(r));
  if (ranks.empty()) throw InputError("no rank to merge: the summaries hold no analysed trace");
  if (!file_order.empty()) order_by_file(ranks, file_order);
  number_file_order_ranks(ranks, warnings);
  sort_by_rank(ranks);
  return diagnosed(combine_ranks(std::move(ranks), std::move(warnings)));
}

DiagnosedResult merge_summary_files(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("no summary given: name the files `analyze --summary` wrote");
  std::vector<SummaryFile> parts;
  for (const auto& path : paths) parts.push_back(decode_summary(summary_bytes(path), path));
  return merge_summaries(std::move(parts));
}

namespace {

// Every rank analysed on the thread that read its file, then placed as the reader's plan says.
std::pair<std::vector<RankAnalysis>, std::vector<IngestWarning>> analyze_as_read(const std::vector<std::string>& paths,
                                                                                  const PipelineOptions& opts) {
  FileListing listing = list_trace_files(paths);
  // A rank without events waits for the plan, which leaves it out beside ranks that have some:
  // analysed at once it could stop the run (a --step-range it cannot hold) for nothing.
  struct Taken {
    RankAnalysis analysis;
    std::optional<RankTrace> eventless;
  };
  std::vector<std::vector<Taken>> per_file(listing.files.size());
  AnalyzeOptions one = opts.analyze;
  one.jobs = 1;  // the reader already runs a thread per file; the threads left over go to each rank
  one.keep_event_facts = false;  // each trace goes once its rank is analysed
  one.rank_threads = rank_threads_for(opts.ingest.jobs, listing.files.size());
  ListingPlan plan = read_trace_files_each(std::move(listing), opts.ingest, [&](std::size_t f, std::size_t, RankTrace&& t) {
    if (t.events.size() == 0) {
      per_file[f].push_back({{}, std::move(t)});
      return;
    }
    enter(RunPhase::Analysing);
    per_file[f].push_back({analyze_rank(t, one), std::nullopt});
    enter(RunPhase::Reading);
  });
  std::vector<RankAnalysis> ranks;
  for (std::size_t f = 0; f < per_file.size(); ++f)
    for (std::size_t k = 0; k < per_file[f].size(); ++k) {
      const RankPlace& place = plan.files[f][k];
      if (!place.kept) continue;
      Taken& taken = per_file[f][k];
      RankAnalysis& a = taken.analysis;
      if (taken.eventless) a = analyze_rank(*taken.eventless, one);
      if (a.ingest.rank != place.rank) renumber(a, place.rank);
      a.ingest.rank_source = rank_source_name(place.source);
      ranks.push_back(std::move(a));
    }
  std::sort(ranks.begin(), ranks.end(), [](const RankAnalysis& a, const RankAnalysis& b) { return a.ingest.rank < b.ingest.rank; });
  return {std::move(ranks), std::move(plan.warnings)};
}

Analysis analyze_trace_paths(const std::vector<std::string>& paths, const PipelineOptions& opts) {
  Analysis a;
  if (!opts.keep_trace) {
    auto [ranks, warnings] = analyze_as_read(paths, opts);
    enter(RunPhase::Analysing);
    if (opts.keep_summary) a.summary = {ranks, warnings};
    a.result = diagnosed(combine_ranks(std::move(ranks), std::move(warnings)));
    return a;
  }
  a.trace = read_traces(paths, opts.ingest);
  enter(RunPhase::Analysing);
  std::vector<RankAnalysis> ranks = analyze_ranks(a.trace, opts.analyze);
  if (opts.keep_summary) a.summary = {ranks, a.trace.warnings};
  a.result = diagnosed(combine_ranks(std::move(ranks), a.trace.warnings));
  return a;
}

// Memory snapshots are told from traces by their first bytes (a pickle's PROTO opcode), not by
// their names; they are analysed apart and join the result beside the traces' analysis.
std::vector<std::string> take_snapshots(const std::vector<std::string>& paths, std::vector<memory::SnapshotAnalysis>& out) {
  std::vector<std::string> traces;
  for (const auto& p : paths) {
    if (memory::is_snapshot_file(p))
      out.push_back(memory::analyze_snapshot_file(p));
    else
      traces.push_back(p);
  }
  return traces;
}

}  // namespace

void set_run_phase_listener(void (*listener)(RunPhase)) { run_phase_listener.store(listener); }

Analysis analyze_paths(const std::vector<std::string>& all_paths, const PipelineOptions& opts) {
  check_options(opts);
  Analysis a;
  std::vector<memory::SnapshotAnalysis> snapshots;
  const std::vector<std::string> paths = take_snapshots(all_paths, snapshots);
  if (!opts.memory_model.empty())
    for (auto& s : snapshots) s.planned = memory::compare_with_plan(s, opts.memory_model);
  if (paths.empty() && !snapshots.empty()) {
    a.result.job.memory_snapshots = std::move(snapshots);
    return a;
  }
  Analysis traces = analyze_trace_paths(paths, opts);
  traces.result.job.memory_snapshots = std::move(snapshots);
  return traces;
}

}  // namespace stepscope
