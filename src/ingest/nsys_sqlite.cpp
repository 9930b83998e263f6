// Nsight Systems SQLite exports into the trace model, with the Kineto reader's conventions
// (GPU rows on pid = device, tid = stream; Kineto-style names and categories) so that every
// analysis reads them unchanged.
#include "ingest/nsys_sqlite.hpp"

#include <fmt/core.h>
#include <sqlite3.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <initializer_list>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "stepscope/error.hpp"
#include "stepscope/temp_files.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::ingest {
namespace {

// One prepared statement; rows are read one at a time, so memory grows with the model only.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr) != SQLITE_OK)
      throw InputError(fmt::format("{}: cannot read the export: {}", path, sqlite3_errmsg(db)));
    db_ = db;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(st_); }

  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw InputError(fmt::format("{}: cannot read the export: {}", path_, sqlite3_errmsg(db_)));
  }
  bool null(int c) const { return c < 0 || sqlite3_column_type(st_, c) == SQLITE_NULL; }
  bool is_text(int c) const { return c >= 0 && sqlite3_column_type(st_, c) == SQLITE_TEXT; }
  bool is_integer(int c) const { return c >= 0 && sqlite3_column_type(st_, c) == SQLITE_INTEGER; }
  std::int64_t i64(int c, std::int64_t fallback = kNone) const {
    return null(c) ? fallback : sqlite3_column_int64(st_, c);
  }
  std::string_view text(int c) const {
    if (null(c)) return {};
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(st_, c))) : std::string_view{};
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* st_ = nullptr;
  std::string path_;
};

// The file as a read-only SQLite URI. An export is read, never written: "immutable" keeps SQLite
// from creating -shm/-wal files beside it (which fails in a read-only directory).
// Example: "/d/run 1.sqlite" -> "file:/d/run%201.sqlite?immutable=1".
std::string read_only_uri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') uri += static_cast<char>(c);
    else uri += fmt::format("%{:02X}", c);
  }
  return uri + "?immutable=1";
}

// An export left in WAL mode keeps part of its rows in the -wal file beside it, which only a
// reader that writes a -shm index can see. Nothing is ever written beside an input: the database
// and its -wal are copied to a temporary directory and read there (registered, so that a signal
// removes the copy too).
class WalCopy {
 public:
  explicit WalCopy(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path + "-wal", ec)) return;
    std::string dir = (std::filesystem::temp_directory_path(ec) / "stepscope-nsys-XXXXXX").string();
    if (!create_registered_temporary_dir(dir)) throw InputError(fmt::format("{}: cannot copy the export and its -wal file: {}", path, std::strerror(errno)));
    dir_ = dir;
    copy_ = dir_ + "/export.sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) register_temporary(copy_ + suffix);
    std::filesystem::copy_file(path, copy_, ec);
    if (!ec) std::filesystem::copy_file(path + "-wal", copy_ + "-wal", ec);
    if (ec) {
      remove();  // a constructor that throws runs no destructor
      throw InputError(fmt::format("{}: cannot copy the export and its -wal file: {}", path, ec.message()));
    }
  }
  ~WalCopy() { remove(); }
  WalCopy(const WalCopy&) = delete;
  WalCopy& operator=(const WalCopy&) = delete;
  // The URI to open: the copy (read-only, so SQLite may index the WAL beside it), or the file.
  std::string uri(const std::string& path) const {
    if (dir_.empty()) return read_only_uri(path);
    std::string u = read_only_uri(copy_);
    return u.substr(0, u.size() - std::string_view("?immutable=1").size()) + "?mode=ro";
  }

 private:
  void remove() {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    for (const char* suffix : {"", "-wal", "-shm"}) release_temporary(copy_ + suffix);
    release_temporary(dir_);
    dir_.clear();
  }
  std::string dir_, copy_;
};

class Database {
 public:
  explicit Database(const std::string& path) : path_(path), wal_(path) {
    int rc = sqlite3_open_v2(wal_.uri(path).c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    if (rc != SQLITE_OK) {
      std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      throw InputError(fmt::format("{}: cannot open the SQLite file: {}", path, why));
    }
    try {
      Statement s(db_, "SELECT name FROM sqlite_master WHERE type = 'table'", path_);
      while (s.step()) tables_.insert(std::string(s.text(0)));
    } catch (...) {
      sqlite3_close(db_);  // a constructor that throws runs no destructor
      throw;
    }
  }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database() { sqlite3_close(db_); }

  bool has(const std::string& table) const { return tables_.count(table) != 0; }
  bool has_column(const std::string& table, const std::string& column) {
    if (!has(table)) return false;
    auto cols = columns(table);
    return std::find(cols.begin(), cols.end(), column) != cols.end();
  }
  const std::set<std::string>& tables() const { return tables_; }
  const std::string& path() const { return path_; }

  std::unique_ptr<Statement> query(const std::string& sql) { return std::make_unique<Statement>(db_, sql, path_); }

  std::vector<std::string> columns(const std::string& table) {
    std::vector<std::string> cols;
    Statement s(db_, fmt::format("PRAGMA table_info(\"{}\")", table), path_);
    while (s.step()) cols.emplace_back(s.text(1));
    return cols;
  }

  // SELECT of the wanted columns that the table has; col(name) gives each one's index or -1,
  // so that a column one nsys version lacks reads as NULL.
  struct Query {
    std::unique_ptr<Statement> st;
    std::map<std::string, int> index;
    int col(const std::string& name) const {
      auto it = index.find(name);
      return it == index.end() ? -1 : it->second;
    }
  };
  Query select(const std::string& table, const std::vector<std::string>& wanted) {
    auto have = columns(table);
    Query q;
    std::string list;
    for (const auto& w : wanted) {
      if (std::find(have.begin(), have.end(), w) == have.end()) continue;
      q.index[w] = static_cast<int>(q.index.size());
      list += (list.empty() ? "\"" : ", \"") + w + "\"";
    }
    if (list.empty()) list = "NULL";
    q.st = std::make_unique<Statement>(db_, fmt::format("SELECT {} FROM \"{}\"", list, table), path_);
    return q;
  }

 private:
  std::string path_;
  WalCopy wal_;  // before db_: the copy outlives the connection
  sqlite3* db_ = nullptr;
  std::set<std::string> tables_;
};

// globalTid / globalPid pack the process id in bits 24..47 and the thread id in bits 0..23.
std::int64_t pid_of(std::int64_t global) { return (global >> 24) & 0xFFFFFF; }
std::int64_t tid_of(std::int64_t global_tid) { return global_tid & 0xFFFFFF; }

// CUPTI writes "no stream" as 0xFFFFFFFF in an unsigned column.
std::int64_t stream_of(std::int64_t s) { return s == 0xFFFFFFFFLL ? -1 : s; }

// Names stored as StringIds ids (or, in some tables and versions, as text).
class Strings {
 public:
  void load(Database& db) {
    if (!db.has("StringIds")) return;
    auto q = db.select("StringIds", {"id", "value"});
    while (q.st->step()) by_id_[q.st->i64(q.col("id"))] = std::string(q.st->text(q.col("value")));
  }
  std::string_view get(const Statement& s, int col) const {
    if (s.is_text(col)) return s.text(col);
    if (s.null(col)) return {};
    auto it = by_id_.find(s.i64(col));
    return it == by_id_.end() ? std::string_view{} : std::string_view(it->second);
  }
  std::string_view get(std::int64_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? std::string_view{} : std::string_view(it->second);
  }

 private:
  std::unordered_map<std::int64_t, std::string> by_id_;
};

// Enum values by their name where the export carries ENUM_* tables (schema 3); the values the
// older schema uses otherwise (they did not change between the two).
class Enums {
 public:
  void load(Database& db, const std::string& table) {
    if (!db.has(table)) return;
    auto q = db.select(table, {"id", "name"});
    while (q.st->step()) values_[std::string(q.st->text(q.col("name")))] = q.st->i64(q.col("id"));
  }
  std::int64_t value(const std::string& name, std::int64_t fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }

 private:
  std::map<std::string, std::int64_t> values_;
};

// Every row an export gives is a complete event, its span checked by row_span.
void append(RankTrace& t, const EventRow& r) { t.events.append(r); }

// Times at or past 2^62 ns (146 years) are no profile's, as in the Kineto reader: within that
// bound end - start and the difference of any two rows' times stay inside int64.
constexpr std::int64_t kMaxTimeNs = std::int64_t{1} << 62;

bool nsys_time_in_range(std::int64_t t) { return t > -kMaxTimeNs && t < kMaxTimeNs; }

struct Span {
  ns_t start = 0, dur = 0;
};

// A row's start and end, or nullopt where they cannot be a span: NULL, text, blob or real
// (sqlite would read those as 0 or a truncated number), out of range, or ending before they
// start (a corrupted row; a negative duration would break every interval the analyses take).
std::optional<Span> row_span(const Statement& s, int start_col, int end_col) {
  if (!s.is_integer(start_col) || !s.is_integer(end_col)) return std::nullopt;
  const std::int64_t start = s.i64(start_col), end = s.i64(end_col);
  if (!nsys_time_in_range(start) || !nsys_time_in_range(end) || end < start) return std::nullopt;
  return Span{start, end - start};
}

// Rows of one table skipped for their times, counted per rank so that each rank says how many
// of its own rows it lacks: one warning per table, not one per row.
class SkippedRows {
 public:
  explicit SkippedRows(std::string table) : table_(std::move(table)) {}
  void count(RankTrace* t) { ++rows_[t]; }
  void warn() const {
    for (const auto& [t, n] : rows_)
      t->warnings.push_back({WarningId::ExportRowsSkipped, {n}, {table_}});
  }

 private:
  std::string table_;
  std::map<RankTrace*, std::uint64_t> rows_;
};

// A side record holding only the source's other spelling of the row's name.
std::int32_t alt_name_extra(RankTrace& t, StrId alt_name) {
  EventExtra x;
  x.alt_name = alt_name;
  return t.add_extra(x);
}

std::int32_t bytes_extra(RankTrace& t, std::int64_t bytes) {
  EventExtra x;
  x.bytes = bytes;
  return t.add_extra(x);
}

const char* const kGpuTables[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                  "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"};
constexpr const char* kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";

// The distinct processes of a table, from a globalPid / globalTid column.
void add_processes(Database& db, const std::string& table, const std::string& column, std::set<std::int64_t>& out) {
  auto q = db.query(fmt::format("SELECT DISTINCT (\"{1}\" >> 24) & 16777215 FROM \"{0}\" WHERE \"{1}\" IS NOT NULL",
                                table, column));
  while (q->step()) out.insert(q->i64(0));
}

bool has_null(Database& db, const std::string& table, const std::string& column) {
  return db.query(fmt::format("SELECT 1 FROM \"{}\" WHERE \"{}\" IS NULL LIMIT 1", table, column))->step();
}

// Which process each export row belongs to. One `nsys profile mpirun -np 4 ...` writes every
// process into one export; merged, their threads, streams and correlation ids (CUPTI counts per
// process) would mix, so each process that did CUDA work becomes its own rank. Processes without
// any (the launcher, helper processes) are no rank.
struct ProcessPlan {
  std::vector<std::int64_t> pids;  // processes with GPU activity or CUDA calls, ascending
  // For GPU tables that carry no globalPid: each launch's process, by correlation id.
  std::unordered_map<std::int64_t, std::int64_t> pid_by_correlation;
  std::optional<IngestWarning> warning;  // why processes that did CUDA work were read as one rank
};

// The process of each launch, for GPU rows without globalPid; nullopt when correlation ids
// repeat across processes (CUPTI numbers them per process), where a GPU row's owner is unknown.
std::optional<std::unordered_map<std::int64_t, std::int64_t>> pid_by_correlation(Database& db) {
  std::unordered_map<std::int64_t, std::int64_t> owner;
  auto q = db.query(fmt::format("SELECT DISTINCT \"correlationId\", (\"globalTid\" >> 24) & 16777215 FROM \"{}\" "
                                "WHERE \"correlationId\" IS NOT NULL AND \"globalTid\" IS NOT NULL",
                                kRuntimeTable));
  while (q->step()) {
    auto [it, fresh] = owner.emplace(q->i64(0), q->i64(1));
    if (!fresh && it->second != q->i64(1)) return std::nullopt;
  }
  return owner;
}

ProcessPlan plan_processes(Database& db) {
  ProcessPlan plan;
  std::set<std::int64_t> pids;
  bool gpu_without_pid = false;
  for (const char* table : kGpuTables) {
    if (!db.has(table)) continue;
    if (db.has_column(table, "globalPid")) add_processes(db, table, "globalPid", pids);
    else gpu_without_pid = true;
  }
  if (db.has_column(kRuntimeTable, "globalTid")) add_processes(db, kRuntimeTable, "globalTid", pids);
  if (pids.size() < 2) return plan;
  // Only a split needs to know whether some GPU rows name no process (a scan of each table).
  for (const char* table : kGpuTables)
    if (!gpu_without_pid && db.has_column(table, "globalPid") && has_null(db, table, "globalPid"))
      gpu_without_pid = true;
  if (gpu_without_pid) {
    auto owners = pid_by_correlation(db);
    if (!owners) {
      plan.warning = IngestWarning{WarningId::ExportReadAsOneRank, {pids.size()}, {}};
      return plan;
    }
    plan.pid_by_correlation = std::move(*owners);
  }
  plan.pids.assign(pids.begin(), pids.end());
  return plan;
}

// The RankTrace each process's rows go to: its own when the export is split, else the one trace.
class Routes {
 public:
  explicit Routes(const std::vector<std::int64_t>& pids) : traces_(std::max<std::size_t>(1, pids.size())) {
    for (std::size_t i = 0; i < pids.size(); ++i) index_[pids[i]] = i;
  }
  bool split() const { return traces_.size() > 1; }
  std::vector<RankTrace>& traces() { return traces_; }

  // nullptr for a process that is no rank.
  RankTrace* of(std::int64_t pid) {
    if (!split()) return &traces_[0];
    auto it = index_.find(pid);
    return it == index_.end() ? nullptr : &traces_[it->second];
  }
  // Same, for an event: those left out are counted, to say what was left out.
  RankTrace* of_event(std::int64_t pid) {
    RankTrace* t = of(pid);
    if (!t) ++left_out_[pid];
    return t;
  }
  // Rows that name no process (a column an nsys version lacks) belong to every rank.
  std::vector<RankTrace*> owners(std::int64_t pid) {
    std::vector<RankTrace*> out;
    if (pid == kNone && split()) {
      for (auto& t : traces_) out.push_back(&t);
    } else if (RankTrace* t = of(pid)) {
      out.push_back(t);
    }
    return out;
  }
  // Names of the processes that are no rank, for the warning about what was left out.
  void name_process(std::int64_t pid, std::string_view name) {
    if (split() && !index_.count(pid)) other_names_[pid] = std::string(name);
  }

  // "3 rows of processes without CUDA work (pid 7000 mpirun) left out", or nullopt.
  std::optional<IngestWarning> left_out_warning() const {
    if (left_out_.empty()) return std::nullopt;
    std::uint64_t rows = 0, unknown = 0;
    std::vector<std::string> processes;
    for (const auto& [pid, n] : left_out_) {
      if (pid == kNone) {
        unknown = n;  // GPU rows whose process neither the row nor its launch names
        continue;
      }
      rows += n;
      auto name = other_names_.find(pid);
      processes.push_back(fmt::format("pid {}{}", pid, name == other_names_.end() ? "" : " " + name->second));
    }
    return IngestWarning{WarningId::ExportRowsLeftOut, {rows, unknown}, std::move(processes)};
  }

 private:
  std::vector<RankTrace> traces_;
  std::unordered_map<std::int64_t, std::size_t> index_;
  std::map<std::int64_t, std::uint64_t> left_out_;
  std::unordered_map<std::int64_t, std::string> other_names_;
};

class Reader {
 public:
  Reader(Database& db, Routes& routes, std::unordered_map<std::int64_t, std::int64_t> pid_by_correlation)
      : db_(db), routes_(routes), pid_by_correlation_(std::move(pid_by_correlation)) {}

  void read() {
    strings_.load(db_);
    event_types_.load(db_, "ENUM_NSYS_EVENT_TYPE");
    read_metadata();
    read_gpus();
    read_streams();
    read_names();
    read_kernels();
    read_copies();
    read_memsets();
    read_sync();
    read_runtime();
    read_nvtx();
    give_devices();
    read_launch_rank();
  }

 private:
  Database& db_;
  Routes& routes_;
  std::unordered_map<std::int64_t, std::int64_t> pid_by_correlation_;
  Strings strings_;
  Enums event_types_;
  StringTable scratch_;  // keeps names read as text alive past their row
  std::vector<DeviceProperties> devices_;

  static StrId intern(RankTrace& t, std::string_view s) { return t.strings.intern(s); }

  // The columns every GPU activity table shares: times, device, stream, correlation, process.
  static std::vector<std::string> gpu_columns(std::vector<std::string> more) {
    more.insert(more.end(), {"start", "end", "deviceId", "streamId", "correlationId", "globalPid"});
    return more;
  }

  // The rank a GPU row goes to: its process, or where the table names none, its launch's.
  RankTrace* gpu_owner(const Database::Query& q) {
    const Statement& s = *q.st;
    std::int64_t pid = kNone;
    if (!s.null(q.col("globalPid"))) {
      pid = pid_of(s.i64(q.col("globalPid")));
    } else {
      auto it = pid_by_correlation_.find(s.i64(q.col("correlationId")));
      if (it != pid_by_correlation_.end()) pid = it->second;
    }
    return routes_.of_event(pid);
  }

  // The rank of a GPU row whose times can be read, with its span; nullptr for a row of no rank
  // and, counted in `skipped`, for one whose start or end cannot be read.
  RankTrace* gpu_owner_with_span(const Database::Query& q, SkippedRows& skipped, Span& span) {
    RankTrace* t = gpu_owner(q);
    if (!t) return nullptr;
    std::optional<Span> s = row_span(*q.st, q.col("start"), q.col("end"));
    if (!s) {
      skipped.count(t);
      return nullptr;
    }
    span = *s;
    return t;
  }

  // Row fields every GPU activity table shares: times, device, stream, correlation.
  static EventRow gpu_row(RankTrace& t, const Database::Query& q, Span span, std::string_view category, Kind kind) {
    const Statement& s = *q.st;
    EventRow r;
    r.ts = span.start;
    r.dur = span.dur;
    r.device = static_cast<std::int32_t>(s.i64(q.col("deviceId"), -1));
    r.stream = stream_of(s.i64(q.col("streamId"), -1));
    r.correlation = s.i64(q.col("correlationId"));
    r.pid = r.device;
    r.tid = r.stream;
    r.kind = kind;
    r.category = intern(t, category);
    return r;
  }

  // The export's own facts, the same for every rank read from it.
  void read_metadata() {
    for (RankTrace& t : routes_.traces()) t.layout = TraceLayout::NsysSqlite;
    for (const char* table : {"META_DATA_EXPORT", "EXPORT_META_DATA"}) {
      if (!db_.has(table)) continue;
      auto q = db_.select(table, {"name", "value"});
      while (q.st->step()) {
        std::string_view k = q.st->text(q.col("name"));
        std::string v(q.st->text(q.col("value")));
        for (RankTrace& t : routes_.traces()) {
          if (k == "EXPORT_PRODUCT_VERSION" || k == "EXPORT_SCHEMA_VERSION") t.metadata.emplace_back(std::string(k), v);
          if (k == "EXPORT_PRODUCT_VERSION") t.trace_name = fmt::format("Nsight Systems {}", v);
        }
      }
    }
  }

  void read_gpus() {
    if (!db_.has("TARGET_INFO_GPU")) return;
    auto q = db_.select("TARGET_INFO_GPU", {"id", "name", "totalMemory", "computeMajor", "computeMinor",
                                            "smCount", "threadsPerWarp", "maxWarpsPerSm",
                                            "maxRegistersPerSm", "maxShmemPerSm"});
    const Statement& s = *q.st;
    while (q.st->step()) {
      DeviceProperties d;
      d.id = s.i64(q.col("id"), static_cast<std::int64_t>(devices_.size()));
      d.name = std::string(s.text(q.col("name")));
      d.total_global_mem = s.i64(q.col("totalMemory"));
      d.compute_major = static_cast<int>(s.i64(q.col("computeMajor")));
      d.compute_minor = static_cast<int>(s.i64(q.col("computeMinor")));
      d.num_sms = static_cast<int>(s.i64(q.col("smCount")));
      d.warp_size = static_cast<int>(s.i64(q.col("threadsPerWarp")));
      std::int64_t warps = s.i64(q.col("maxWarpsPerSm"));
      if (warps > 0 && d.warp_size > 0) d.max_threads_per_sm = static_cast<int>(warps * d.warp_size);
      d.regs_per_sm = static_cast<int>(s.i64(q.col("maxRegistersPerSm")));
      d.shared_mem_per_sm = s.i64(q.col("maxShmemPerSm"));
      devices_.push_back(std::move(d));
    }
  }

  // `srun nsys profile ...` or `torchrun ... nsys profile ...` starts one nsys per rank, and nsys
  // records its own environment: the launcher's rank and world size are there. One nsys over
  // `mpirun` sees none (and its export is split by process instead).
  void read_launch_rank() {
    if (routes_.split() || !db_.has("TARGET_INFO_SYSTEM_ENV")) return;
    auto q = db_.select("TARGET_INFO_SYSTEM_ENV", {"name", "value"});
    while (q.st->step()) {
      if (q.st->text(q.col("name")) != "DeviceEnvironment") continue;
      const std::string_view env = q.st->text(q.col("value"));
      DistributedInfo& d = routes_.traces()[0].distributed;
      d.rank = first_env_int(env, {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0);
      d.world_size = first_env_int(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1);
      // A batch script holds SLURM_PROCID=0 for the whole allocation; only a task that srun
      // started has a job step id (the batch and extern steps' ids, from 0xFFFFFFF0 up, do not
      // fit an int and read as none).
      if (!d.rank && first_env_int(env, {"SLURM_STEP_ID"}, 0)) {
        d.rank = first_env_int(env, {"SLURM_PROCID"}, 0);
        if (!d.world_size) d.world_size = first_env_int(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, 1);
      }
      d.present = d.rank.has_value();
      if (!d.present) d.world_size.reset();
      return;
    }
  }

  // The first of `keys` set to a whole number of at least `least` in a "KEY=VALUE;KEY=VALUE"
  // environment dump.
  static std::optional<int> first_env_int(std::string_view env, std::initializer_list<std::string_view> keys,
                                          int least) {
    for (std::string_view key : keys) {
      for (std::size_t at = 0; at < env.size();) {
        std::size_t end = env.find(';', at);
        if (end == std::string_view::npos) end = env.size();
        const std::string_view item = env.substr(at, end - at);
        at = end + 1;
        if (item.size() <= key.size() || item.substr(0, key.size()) != key || item[key.size()] != '=') continue;
        const std::optional<int> n = parse_int<int>(item.substr(key.size() + 1));
        if (n && *n >= least) return n;
      }
    }
    return std::nullopt;
  }

  // TARGET_INFO_GPU names no process: a split rank gets the GPUs its activity ran on (all of
  // them where it ran none, or where the ids do not match).
  void give_devices() {
    for (RankTrace& t : routes_.traces()) {
      if (routes_.split()) t.devices = devices_used(t, devices_);
      if (t.devices.empty()) t.devices = devices_;
    }
  }
  static std::vector<DeviceProperties> devices_used(const RankTrace& t, const std::vector<DeviceProperties>& all) {
    std::set<std::int64_t> used;
    for (std::size_t i = 0; i < t.events.size(); ++i)
      if (is_gpu_kind(t.events.kind[i])) used.insert(t.events.device[i]);
    std::vector<DeviceProperties> out;
    for (const auto& d : all)
      if (used.count(d.id)) out.push_back(d);
    return out;
  }

  // CUPTI's stream flag: 1 default, 2 non-blocking, 3 the legacy NULL stream. Schema 3 names the
  // values in ENUM_CUPTI_STREAM_TYPE; schema 2 has the same numbers without the table.
  void read_streams() {
    if (!db_.has("TARGET_INFO_CUDA_STREAM")) return;
    Enums types;
    types.load(db_, "ENUM_CUPTI_STREAM_TYPE");
    const std::pair<std::int64_t, StreamType> flags[] = {
        {types.value("CUPTI_ACTIVITY_STREAM_CREATE_FLAG_DEFAULT", 1), StreamType::Default},
        {types.value("CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NON_BLOCKING", 2), StreamType::NonBlocking},
        {types.value("CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NULL", 3), StreamType::Null}};
    auto q = db_.select("TARGET_INFO_CUDA_STREAM", {"streamId", "contextId", "priority", "flag", "processId"});
    const Statement& s = *q.st;
    while (q.st->step()) {
      StreamInfo si;
      si.stream = stream_of(s.i64(q.col("streamId"), -1));
      si.context = s.i64(q.col("contextId"), -1);
      // Written as an unsigned 32-bit value: 4294967291 is priority -5.
      si.priority = static_cast<std::int32_t>(static_cast<std::uint32_t>(s.i64(q.col("priority"), 0)));
      const std::int64_t flag = s.i64(q.col("flag"), 0);
      for (const auto& [value, type] : flags)
        if (flag == value) si.type = type;
      // Stream ids are per process: two ranks each have their stream 7.
      for (RankTrace* t : routes_.owners(s.i64(q.col("processId"))))
        t->stream_info.push_back(si);
    }
    for (RankTrace& t : routes_.traces())
      std::sort(t.stream_info.begin(), t.stream_info.end(),
                [](const StreamInfo& a, const StreamInfo& b) { return a.stream < b.stream; });
  }

  void read_names() {
    if (db_.has("ThreadNames")) {
      auto q = db_.select("ThreadNames", {"nameId", "globalTid"});
      while (q.st->step()) {
        const std::int64_t gtid = q.st->i64(q.col("globalTid"), 0);
        for (RankTrace* t : routes_.owners(pid_of(gtid)))
          t->thread_names[tid_of(gtid)] = std::string(strings_.get(*q.st, q.col("nameId")));
      }
    }
    if (db_.has("PROCESSES")) {
      auto q = db_.select("PROCESSES", {"globalPid", "pid", "name"});
      while (q.st->step()) {
        std::int64_t pid = q.col("globalPid") >= 0 ? pid_of(q.st->i64(q.col("globalPid"), 0)) : q.st->i64(q.col("pid"), 0);
        std::string_view name = q.st->text(q.col("name"));
        for (RankTrace* t : routes_.owners(pid)) t->process_names[pid] = std::string(name);
        routes_.name_process(pid, name);
      }
    }
  }

  void read_kernels() {
    if (!db_.has("CUPTI_ACTIVITY_KIND_KERNEL")) return;
    auto q = db_.select("CUPTI_ACTIVITY_KIND_KERNEL",
                        gpu_columns({"demangledName", "shortName", "mangledName", "gridX", "gridY", "gridZ",
                                     "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
                                     "dynamicSharedMemory"}));
    const Statement& s = *q.st;
    SkippedRows skipped("CUPTI_ACTIVITY_KIND_KERNEL");
    Span span;
    while (q.st->step()) {
      RankTrace* t = gpu_owner_with_span(q, skipped, span);
      if (!t) continue;
      RankTrace& out = *t;
      EventRow r = gpu_row(out, q, span, "kernel", Kind::Kernel);
      std::string_view shortn = strings_.get(s, q.col("shortName"));
      std::string_view name = strings_.get(s, q.col("demangledName"));
      if (name.empty()) name = shortn.empty() ? strings_.get(s, q.col("mangledName")) : shortn;
      r.name = intern(out, name);
      if (!shortn.empty()) r.extra = alt_name_extra(out, intern(out, shortn));
      r.kernel_args = out.add_kernel_args(launch_config(q));
      append(out, r);
    }
    skipped.warn();
  }

  // Shared memory counts the static and the dynamic part together, as Kineto's "shared memory".
  static KernelArgs launch_config(const Database::Query& q) {
    const Statement& s = *q.st;
    KernelArgs a;
    const char* dims[2][3] = {{"gridX", "gridY", "gridZ"}, {"blockX", "blockY", "blockZ"}};
    for (int k = 0; k < 3; ++k) {
      a.grid[k] = static_cast<std::int32_t>(s.i64(q.col(dims[0][k]), 0));
      a.block[k] = static_cast<std::int32_t>(s.i64(q.col(dims[1][k]), 0));
    }
    a.registers_per_thread = static_cast<std::int32_t>(s.i64(q.col("registersPerThread"), -1));
    std::int64_t st_shm = s.i64(q.col("staticSharedMemory"), -1), dyn = s.i64(q.col("dynamicSharedMemory"), -1);
    if (st_shm >= 0 || dyn >= 0) a.shared_memory = std::max<std::int64_t>(st_shm, 0) + std::max<std::int64_t>(dyn, 0);
    return a;
  }

  // CUPTI's copy kinds: arrays are device memory; unified-memory migrations count by direction.
  static CopyKind copy_kind(std::int64_t k) {
    switch (k) {
      case 1: case 3: case 11: return CopyKind::HtoD;
      case 2: case 4: case 12: return CopyKind::DtoH;
      case 5: case 6: case 7: case 8: case 13: return CopyKind::DtoD;
      case 9: return CopyKind::HtoH;
      case 10: return CopyKind::PtoP;
      default: return CopyKind::Other;
    }
  }
  static const char* mem_kind_name(std::int64_t k) {
    switch (k) {
      case 0: return "Pageable";
      case 1: return "Pinned";
      case 2: return "Device";
      case 3: return "Array";
      case 4: return "Managed";
      case 5: return "Device Static";
      case 6: return "Managed Static";
      default: return "Unknown";
    }
  }
  static HostMem host_mem(std::int64_t k) {
    return k == 0 ? HostMem::Pageable : k == 1 ? HostMem::Pinned : HostMem::Unknown;
  }

  void read_copies() {
    if (!db_.has("CUPTI_ACTIVITY_KIND_MEMCPY")) return;
    auto q = db_.select("CUPTI_ACTIVITY_KIND_MEMCPY", gpu_columns({"bytes", "copyKind", "srcKind", "dstKind"}));
    const Statement& s = *q.st;
    SkippedRows skipped("CUPTI_ACTIVITY_KIND_MEMCPY");
    Span span;
    while (q.st->step()) {
      RankTrace* t = gpu_owner_with_span(q, skipped, span);
      if (!t) continue;
      EventRow r = gpu_row(*t, q, span, "gpu_memcpy", Kind::Memcpy);
      const CopyKind ck = copy_kind(s.i64(q.col("copyKind"), 0));
      std::int64_t src = s.i64(q.col("srcKind"), 7), dst = s.i64(q.col("dstKind"), 7);
      // Kineto's spelling, which the copy analyses also read: "Memcpy HtoD (Pageable -> Device)".
      r.name = intern(*t, fmt::format("Memcpy {} ({} -> {})", copy_kind_name(ck), mem_kind_name(src), mem_kind_name(dst)));
      r.copy_kind = ck;
      r.host_mem = ck == CopyKind::DtoH                          ? host_mem(dst)
                   : ck == CopyKind::HtoD || ck == CopyKind::HtoH ? host_mem(src)
                                                                  : HostMem::Unknown;
      r.extra = bytes_extra(*t, s.i64(q.col("bytes")));
      append(*t, r);
    }
    skipped.warn();
  }

  void read_memsets() {
    if (!db_.has("CUPTI_ACTIVITY_KIND_MEMSET")) return;
    auto q = db_.select("CUPTI_ACTIVITY_KIND_MEMSET", gpu_columns({"bytes", "memKind"}));
    SkippedRows skipped("CUPTI_ACTIVITY_KIND_MEMSET");
    Span span;
    while (q.st->step()) {
      RankTrace* t = gpu_owner_with_span(q, skipped, span);
      if (!t) continue;
      EventRow r = gpu_row(*t, q, span, "gpu_memset", Kind::Memset);
      r.name = intern(*t, fmt::format("Memset ({})", mem_kind_name(q.st->i64(q.col("memKind"), 7))));
      r.extra = bytes_extra(*t, q.st->i64(q.col("bytes")));
      append(*t, r);
    }
    skipped.warn();
  }

  // Kineto's cuda_sync names, from CUPTI's synchronisation types.
  static const char* sync_name(std::int64_t t) {
    switch (t) {
      case 1: return "Event Sync";
      case 2: return "Stream Wait Event";
      case 3: return "Stream Sync";
      case 4: return "Context Sync";
      default: return "Sync";
    }
  }

  void read_sync() {
    if (!db_.has("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) return;
    auto q = db_.select("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", gpu_columns({"syncType"}));
    SkippedRows skipped("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
    Span span;
    while (q.st->step()) {
      RankTrace* t = gpu_owner_with_span(q, skipped, span);
      if (!t) continue;
      EventRow r = gpu_row(*t, q, span, "cuda_sync", Kind::GpuSync);
      r.name = intern(*t, sync_name(q.st->i64(q.col("syncType"), 0)));
      append(*t, r);
    }
    skipped.warn();
  }

  // "cudaMalloc_v3020" -> "cudaMalloc": the analyses know the API by its plain name.
  static std::string_view plain_api_name(std::string_view n) {
    auto v = n.rfind("_v");
    if (v == std::string_view::npos || v + 2 == n.size()) return n;
    for (std::size_t i = v + 2; i < n.size(); ++i)
      if (n[i] < '0' || n[i] > '9') return n;
    return n.substr(0, v);
  }
  static bool is_driver_api(std::string_view n) { return n.substr(0, 2) == "cu" && n.substr(0, 4) != "cuda"; }

  struct ApiRow {
    ns_t start, end;
    std::int64_t gtid, correlation;
    std::string_view name;
  };

  // A correlation id within its process: CUPTI numbers them per process.
  struct CallKey {
    std::int64_t pid, correlation;
    bool operator==(const CallKey& o) const { return pid == o.pid && correlation == o.correlation; }
  };
  struct CallKeyHash {
    std::size_t operator()(const CallKey& k) const {
      // Unsigned arithmetic: ids are the file's, any value, and must wrap rather than overflow.
      return std::hash<std::uint64_t>()(static_cast<std::uint64_t>(k.correlation) * 1000003u +
                                        static_cast<std::uint64_t>(k.pid));
    }
  };

  // Some versions write a second row per call that has a backtrace, enclosing the call with the
  // same correlation id. The innermost row of a correlation id is the call; the others are kept
  // (the runtime API summary counts every row, as nsys does) but play no part in the timeline.
  static std::vector<bool> innermost_rows(const std::vector<ApiRow>& rows) {
    std::vector<bool> keep(rows.size(), true);
    std::unordered_map<CallKey, std::size_t, CallKeyHash> best;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].correlation == kNone || rows[i].correlation == 0) continue;
      auto [it, fresh] = best.emplace(CallKey{pid_of(rows[i].gtid), rows[i].correlation}, i);
      if (fresh) continue;
      const ApiRow& b = rows[it->second];
      bool inner = rows[i].start > b.start || (rows[i].start == b.start && rows[i].end < b.end);
      if (inner) {
        keep[it->second] = false;
        it->second = i;
      } else {
        keep[i] = false;
      }
    }
    return keep;
  }

  void read_runtime() {
    if (!db_.has("CUPTI_ACTIVITY_KIND_RUNTIME")) return;
    auto q = db_.select("CUPTI_ACTIVITY_KIND_RUNTIME", {"start", "end", "globalTid", "correlationId", "nameId", "name"});
    const Statement& s = *q.st;
    std::vector<ApiRow> rows;
    SkippedRows skipped(kRuntimeTable);
    while (q.st->step()) {
      ApiRow a;
      a.gtid = s.i64(q.col("globalTid"), 0);
      const std::optional<Span> span = row_span(s, q.col("start"), q.col("end"));
      if (!span) {
        if (RankTrace* t = routes_.of_event(pid_of(a.gtid))) skipped.count(t);
        continue;
      }
      a.start = span->start;
      a.end = span->start + span->dur;
      a.correlation = s.i64(q.col("correlationId"));
      a.name = strings_.get(s, q.col("nameId"));
      if (a.name.empty()) a.name = scratch_.view(scratch_.intern(s.text(q.col("name"))));
      rows.push_back(a);
    }
    skipped.warn();
    std::vector<bool> call = innermost_rows(rows);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const ApiRow& a = rows[i];
      RankTrace* t = routes_.of_event(pid_of(a.gtid));
      if (!t) continue;
      std::string_view plain = plain_api_name(a.name);
      EventRow r;
      r.ts = a.start;
      r.dur = a.end - a.start;
      r.pid = pid_of(a.gtid);
      r.tid = tid_of(a.gtid);
      r.correlation = a.correlation;
      bool driver = is_driver_api(plain);
      r.kind = !call[i] ? Kind::Other : driver ? Kind::Driver : Kind::Runtime;
      r.category = intern(*t, !call[i] ? "cuda_api_backtrace" : driver ? "cuda_driver" : "cuda_runtime");
      r.name = intern(*t, plain);
      if (plain.size() != a.name.size()) r.extra = alt_name_extra(*t, intern(*t, a.name));
      append(*t, r);
    }
  }

  // Ranges nsys records itself when tracing MPI, OpenSHMEM or UCX calls are host calls, not the
  // user's annotations: they must not be taken for steps or stages.
  static bool is_api_trace_domain(std::string_view d) {
    return d == "MPI" || d == "OpenSHMEM" || d == "UCX" || d == "NVSHMEM";
  }

  // PyTorch's emit_nvtx (nsys --pytorch=autograd-nvtx) appends ", seq = N", ", op_id = N",
  // ", sizes = [...]", ", input_op_ids = [...]" to each op's name; the analyses know the plain
  // name ("ProfilerStep#3", "aten::mm").
  static std::string_view plain_nvtx_name(std::string_view n) {
    std::size_t cut = n.size();
    for (std::string_view suffix : {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "})
      cut = std::min(cut, n.find(suffix));
    return n.substr(0, cut);
  }
  // Of PyTorch's ranges, the framework's ops ("aten::mm", "autograd::engine::...") are ops, as
  // Kineto files them; record_function ranges (ProfilerStep#N, the user's) stay annotations.
  static bool is_pytorch_op(std::string_view plain, std::string_view full) {
    return plain.size() != full.size() && plain.find("::") != std::string_view::npos;
  }

  void read_nvtx() {
    if (!db_.has("NVTX_EVENTS")) return;
    const std::int64_t push_pop = event_types_.value("NvtxPushPopRange", 59);
    const std::int64_t start_end = event_types_.value("NvtxStartEndRange", 60);
    const std::int64_t domain_create = event_types_.value("NvtxDomainCreate", 75);
    auto q = db_.select("NVTX_EVENTS", {"start", "end", "eventType", "text", "textId", "globalTid", "domainId"});
    const Statement& s = *q.st;
    // Domain ids are the process's; a domain created on a row without a process still names it.
    std::map<std::pair<std::int64_t, std::int64_t>, std::string> domains;
    std::unordered_map<std::int64_t, std::string> domains_by_id;
    struct Range {
      RankTrace* trace;
      EventRow row;
      std::int64_t domain;
      StrId full_name;
    };
    std::vector<Range> ranges;  // domains are resolved once all rows are read
    SkippedRows skipped("NVTX_EVENTS");
    while (q.st->step()) {
      std::int64_t type = s.i64(q.col("eventType"));
      std::string_view text = s.text(q.col("text"));
      if (text.empty()) text = strings_.get(s, q.col("textId"));
      std::int64_t gtid = s.i64(q.col("globalTid"), 0);
      if (type == domain_create) {
        domains[{pid_of(gtid), s.i64(q.col("domainId"), 0)}] = std::string(text);
        domains_by_id[s.i64(q.col("domainId"), 0)] = std::string(text);
        continue;
      }
      if (type != push_pop && type != start_end) continue;
      RankTrace* t = routes_.of_event(pid_of(gtid));
      if (!t) continue;
      // A range still open when the profiler stopped has no end either: no span to place.
      const std::optional<Span> span = row_span(s, q.col("start"), q.col("end"));
      if (!span) {
        skipped.count(t);
        continue;
      }
      EventRow r;
      r.ts = span->start;
      r.dur = span->dur;
      r.pid = pid_of(gtid);
      r.tid = tid_of(gtid);
      std::string_view plain = plain_nvtx_name(text);
      r.kind = is_pytorch_op(plain, text) ? Kind::CpuOp : Kind::UserAnnotation;
      r.category = intern(*t, "nvtx");
      r.name = intern(*t, plain);
      ranges.push_back({t, r, s.i64(q.col("domainId"), 0), plain.size() != text.size() ? intern(*t, text) : kNoStr});
    }
    for (auto& [t, r, domain, full] : ranges) {
      auto d = domains.find({r.pid, domain});
      const std::string* name = nullptr;
      if (d != domains.end()) name = &d->second;
      else if (auto any = domains_by_id.find(domain); any != domains_by_id.end()) name = &any->second;
      if (name && is_api_trace_domain(*name)) {
        r.kind = Kind::CpuOp;
        r.category = intern(*t, "nvtx:" + *name);
      }
      if (full != kNoStr) r.extra = alt_name_extra(*t, full);
      append(*t, r);
    }
    skipped.warn();
  }
};

bool is_nsys_export(const Database& db) {
  if (db.has("StringIds") || db.has("NVTX_EVENTS")) return true;
  for (const auto& t : db.tables())
    if (t.rfind("CUPTI_ACTIVITY_KIND_", 0) == 0) return true;
  return false;
}

}  // namespace

bool has_sqlite_magic(const std::string& path) {
  static constexpr char kMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  std::ifstream f(path, std::ios::binary);
  char head[16] = {};
  if (!f.read(head, sizeof head)) return false;
  return std::memcmp(head, kMagic, sizeof head) == 0;
}

bool is_nsys_report_name(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".nsys-rep" || ext == ".qdrep";
}

std::vector<RankTrace> read_nsys_sqlite(const std::string& path, const IngestOptions& opts) {
  Database db(path);
  if (!is_nsys_export(db))
    throw InputError(fmt::format(
        "{}: a SQLite database but not an Nsight Systems export (no StringIds, NVTX_EVENTS or "
        "CUPTI_ACTIVITY_KIND_* table)",
        path));
  ProcessPlan plan = plan_processes(db);
  Routes routes(plan.pids);
  Reader(db, routes, std::move(plan.pid_by_correlation)).read();
  const std::optional<IngestWarning> left_out = routes.left_out_warning();
  std::vector<RankTrace> out = std::move(routes.traces());
  std::size_t events = 0;
  for (const auto& t : out) events += t.events.size();
  if (events == 0)
    throw InputError(fmt::format("{}: the export holds no CUDA activity, runtime calls or NVTX ranges", path));
  if (plan.warning) out[0].warnings.push_back(*plan.warning);
  if (left_out) out[0].warnings.push_back(*left_out);
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  for (RankTrace& t : out) {
    t.path = path;
    t.bytes_read = ec ? 0 : size;
    t.build_indexes();
  }
  if (opts.progress) opts.progress(out[0].bytes_read, out[0].bytes_read);
  return out;
}

}  // namespace stepscope::ingest
