// The run history: every analysed run of a log directory, kept in one SQLite file
// (LOGDIR/.stepscope/runs.sqlite by default). A run is stored with its ranks' summaries
// (stepscope/rank_summary.hpp) and its headline figures, keyed by the SHA-256 of its inputs'
// contents, so a run is analysed once whatever its files are renamed to. The file is in WAL
// mode and each run is written in one transaction: a process killed at any moment loses at most
// the run it was writing, and every run written before it stays readable.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stepscope/pipeline.hpp"
#include "stepscope/partition.hpp"

namespace stepscope {

inline constexpr const char* kStoreSchema = "stepscope.store/1";
inline constexpr const char* kHistorySchema = "stepscope.history/1";

// A run found under a log directory: its files and the name it is shown by.
struct RunInputs {
  std::string name;                // its path under the log directory ("nightly/2026-11-27")
  std::string job;                 // the runs of one job share it (job_of_run)
  std::vector<std::string> files;  // absolute paths, sorted
  std::int64_t date = 0;           // newest file's modification time, Unix seconds
};

// What the runs page, the history and the regression test read of a run, without decoding its
// summaries.
struct StoredRun {
  std::int64_t id = 0;
  std::string key;  // SHA-256 over the inputs' content hashes, in file order
  std::string name, job;
  std::vector<std::string> files;  // relative to the log directory
  std::int64_t date = 0, analysed_at = 0;
  double analysis_seconds = 0;
  bool ok = false;
  std::string error;  // why the run could not be analysed (ok == false)
  int ranks = 0;
  std::size_t steps = 0;
  double step_ns = 0;  // mean steady-state step of the job
  std::array<double, kCategoryCount> category_ns{};
  std::string bound;    // verdict's bound id ("input_bound"), "" when not diagnosed
  std::string verdict;  // its headline
  std::string trust;    // "ok", "limited", "inconclusive"
  std::vector<std::string> trust_codes;
};

class Store {
 public:
  // Opens or creates the store (and its folder); throws InputError when it cannot, or when the
  // file is no stepscope store or one of another schema.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  bool has(const std::string& key) const;
  std::optional<StoredRun> find(const std::string& key) const;
  std::optional<StoredRun> get(std::int64_t id) const;
  // Every run, oldest first (date, then id).
  std::vector<StoredRun> runs() const;
  // One transaction: the run and its summaries, or nothing.
  std::int64_t put(const StoredRun& run, const SummaryFile& summary);
  // The run's analysis rebuilt from its stored summaries (what analyze_paths gave).
  DiagnosedResult result(std::int64_t id) const;

  // Content hashes of files already read, by path, size and modification time, so an unchanged
  // file is not read again.
  std::optional<std::string> cached_hash(const std::string& path, std::uint64_t size, std::int64_t mtime_ns) const;
  void cache_hash(const std::string& path, std::uint64_t size, std::int64_t mtime_ns, const std::string& hash);

 private:
  struct Db;
  std::string path_;
  std::unique_ptr<Db> db_;
};

// LOGDIR/.stepscope/runs.sqlite
std::string default_store_path(const std::string& logdir);

// The job a run belongs to: its name with a trailing date, time or counter taken off its last
// part ("nightly/run_0007" -> "nightly/run", "resnet/2026-11-27" -> "resnet"); a name that is
// only such a suffix belongs to its folder's job ("." at the top).
std::string job_of_run(const std::string& name);

// The runs under `logdir`: a folder whose trace files all name their rank (rank-N, workerN, the
// profiler's host_pid.timestamp names) is one run of several ranks; any other trace file is a run
// of its own. Hidden folders (.stepscope) and links that leave the folder are skipped.
std::vector<RunInputs> discover_runs(const std::string& logdir);

// SHA-256 of a file's bytes, in hex. Throws InputError when the file cannot be read.
std::string file_sha256(const std::string& path);

struct IndexProgress {
  std::string run;  // the run being analysed
  std::size_t done = 0, total = 0;  // runs
  std::uint64_t bytes_done = 0, bytes_total = 0;  // of the run being read
};

struct IndexOptions {
  int jobs = 0;
  std::function<void(const IndexProgress&)> progress;  // may be empty
  // May be empty; true: stop, dropping the run being read (it is analysed again next time).
  std::function<bool()> stop;
};

struct IndexReport {
  std::size_t found = 0, analysed = 0, failed = 0, known = 0;
  std::vector<double> seconds;  // per analysed run
};

// Analyses every run under `logdir` the store does not hold yet, one transaction each.
IndexReport index_runs(Store& store, const std::string& logdir, const IndexOptions& opts = {});

// One point of a job's history, and how it compares with the run before it (its baseline).
struct HistoryPoint {
  StoredRun run;
  bool has_baseline = false;
  std::string baseline;           // the baseline run's name
  double speedup = 1, speedup_lo = 1, speedup_hi = 1;  // baseline step / this step
  bool significant = false;
  bool regressed = false;         // slower than the baseline beyond noise
};

struct JobHistory {
  std::string job;
  std::vector<HistoryPoint> points;  // oldest first; only runs that were analysed
};

// The history of each job (or only `job` when not empty), the newest-run test on the last point
// of each: the bootstrap test `diff` uses, over the two runs' steady-state steps.
std::vector<JobHistory> job_histories(const Store& store, const std::string& job = {});

// True when the newest run of any of the jobs regressed against its baseline.
bool newest_regressed(const std::vector<JobHistory>& jobs);

// `stepscope history --json`: schema kHistorySchema, durations in ns, shares as fractions.
nlohmann::json history_to_json(const std::vector<JobHistory>& jobs, const std::string& store_path);
// The terminal's table, one block per job.
std::string render_history_text(const std::vector<JobHistory>& jobs);

}  // namespace stepscope
