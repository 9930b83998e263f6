// The run history in SQLite: one row per run, its summaries as a blob beside it.
#include <sqlite3.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stepscope/error.hpp"
#include "stepscope/rank_summary.hpp"
#include "stepscope/store.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

// A store another process is writing is waited for this long before a statement gives up.
constexpr int kBusyTimeoutMs = 10000;

constexpr const char* kSchemaSql = R"(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  job TEXT NOT NULL,
  files TEXT NOT NULL,
  date INTEGER NOT NULL,
  analysed_at INTEGER NOT NULL,
  analysis_seconds REAL NOT NULL,
  ok INTEGER NOT NULL,
  error TEXT NOT NULL,
  ranks INTEGER NOT NULL,
  steps INTEGER NOT NULL,
  step_ns REAL NOT NULL,
  category_ns TEXT NOT NULL,
  bound TEXT NOT NULL,
  verdict TEXT NOT NULL,
  trust TEXT NOT NULL,
  trust_codes TEXT NOT NULL,
  summary_schema TEXT NOT NULL,
  summary BLOB);
CREATE INDEX IF NOT EXISTS runs_job ON runs(job, date);
CREATE TABLE IF NOT EXISTS file_hashes(
  path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL);
)";

constexpr const char* kRunColumns =
    "id, key, name, job, files, date, analysed_at, analysis_seconds, ok, error, ranks, steps, step_ns, "
    "category_ns, bound, verdict, trust, trust_codes";

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
      throw InputError(std::string("run history: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(st_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& s) {
    sqlite3_bind_text(st_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(st_, i, v);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(st_, i, v);
    return *this;
  }
  Statement& bind_blob(int i, const std::string& b) {
    sqlite3_bind_blob(st_, i, b.data(), static_cast<int>(b.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // True while rows come.
  bool step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw InputError(std::string("run history: ") + sqlite3_errmsg(db_));
  }
  std::string text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(st_, c))) : std::string();
  }
  std::string blob(int c) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(st_, c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(st_, c))) : std::string();
  }
  std::int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
  double real(int c) const { return sqlite3_column_double(st_, c); }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

void exec(sqlite3* db, const char* sql, const std::string& path) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw InputError(path + ": run history: " + msg);
  }
}

std::string strings_json(const std::vector<std::string>& v) {
  return nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> strings_of(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  std::vector<std::string> out;
  if (j.is_array())
    for (const auto& s : j)
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

std::string categories_json(const std::array<double, kCategoryCount>& c) {
  return nlohmann::json(std::vector<double>(c.begin(), c.end())).dump();
}

std::array<double, kCategoryCount> categories_of(const std::string& text) {
  std::array<double, kCategoryCount> out{};
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_array())
    for (std::size_t i = 0; i < out.size() && i < j.size(); ++i)
      if (j[i].is_number()) out[i] = j[i].get<double>();
  return out;
}

StoredRun run_of(const Statement& s) {
  StoredRun r;
  r.id = s.i64(0);
  r.key = s.text(1);
  r.name = s.text(2);
  r.job = s.text(3);
  r.files = strings_of(s.text(4));
  r.date = s.i64(5);
  r.analysed_at = s.i64(6);
  r.analysis_seconds = s.real(7);
  r.ok = s.i64(8) != 0;
  r.error = s.text(9);
  r.ranks = static_cast<int>(s.i64(10));
  r.steps = static_cast<std::size_t>(s.i64(11));
  r.step_ns = s.real(12);
  r.category_ns = categories_of(s.text(13));
  r.bound = s.text(14);
  r.verdict = s.text(15);
  r.trust = s.text(16);
  r.trust_codes = strings_of(s.text(17));
  return r;
}

}  // namespace

struct Store::Db {
  sqlite3* handle = nullptr;
  ~Db() { sqlite3_close_v2(handle); }
};

Store::Store(const std::string& path) : path_(path), db_(std::make_unique<Db>()) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) throw InputError(path + ": cannot create its folder: " + ec.message() + " (--store PATH puts the history elsewhere)");
  if (sqlite3_open_v2(path.c_str(), &db_->handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    throw InputError(path + ": cannot open the run history: " +
                     (db_->handle ? sqlite3_errmsg(db_->handle) : std::string("out of memory")) +
                     " (--store PATH puts the history elsewhere)");
  sqlite3_busy_timeout(db_->handle, kBusyTimeoutMs);
  // WAL: readers (the web pages) never block the writer, and a killed writer leaves the last
  // committed state; NORMAL sync is durable across a process kill, which is what we guard.
  exec(db_->handle, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", path);
  exec(db_->handle, "BEGIN IMMEDIATE;", path);
  try {
    exec(db_->handle, kSchemaSql, path);
    Statement get(db_->handle, "SELECT value FROM meta WHERE key='schema'");
    if (get.step()) {
      if (get.text(0) != kStoreSchema)
        throw InputError(path + ": a run history of schema " + get.text(0) + ", this stepscope reads " + kStoreSchema);
    } else {
      Statement set(db_->handle, "INSERT INTO meta(key, value) VALUES('schema', ?)");
      set.bind(1, std::string(kStoreSchema)).step();
    }
    exec(db_->handle, "COMMIT;", path);
  } catch (...) {
    sqlite3_exec(db_->handle, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

Store::~Store() = default;

bool Store::has(const std::string& key) const {
  // A run analysed by a stepscope whose summaries this one cannot read counts as not analysed:
  // the next scan analyses it again, in place.
  Statement s(db_->handle, "SELECT 1 FROM runs WHERE key=? AND summary_schema=?");
  s.bind(1, key).bind(2, std::string(kSummarySchema));
  return s.step();
}

std::optional<StoredRun> Store::find(const std::string& key) const {
  Statement s(db_->handle, (std::string("SELECT ") + kRunColumns + " FROM runs WHERE key=?").c_str());
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  return run_of(s);
}

std::optional<StoredRun> Store::get(std::int64_t id) const {
  Statement s(db_->handle, (std::string("SELECT ") + kRunColumns + " FROM runs WHERE id=?").c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return run_of(s);
}

std::vector<StoredRun> Store::runs() const {
  Statement s(db_->handle, (std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY date, id").c_str());
  std::vector<StoredRun> out;
  while (s.step()) out.push_back(run_of(s));
  return out;
}

std::int64_t Store::put(const StoredRun& r, const SummaryFile& summary) {
  const std::string blob = r.ok ? encode_summary(summary) : std::string();
  exec(db_->handle, "BEGIN IMMEDIATE;", path_);
  try {
    Statement s(db_->handle,
                "INSERT OR REPLACE INTO runs(key, name, job, files, date, analysed_at, analysis_seconds, ok, error, "
                "ranks, steps, step_ns, category_ns, bound, verdict, trust, trust_codes, summary_schema, summary) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, r.key).bind(2, r.name).bind(3, r.job).bind(4, strings_json(r.files)).bind(5, r.date);
    s.bind(6, r.analysed_at).bind(7, r.analysis_seconds).bind(8, std::int64_t{r.ok}).bind(9, r.error);
    s.bind(10, std::int64_t{r.ranks}).bind(11, static_cast<std::int64_t>(r.steps)).bind(12, r.step_ns);
    s.bind(13, categories_json(r.category_ns)).bind(14, r.bound).bind(15, r.verdict).bind(16, r.trust);
    s.bind(17, strings_json(r.trust_codes)).bind(18, std::string(kSummarySchema)).bind_blob(19, blob);
    s.step();
    const std::int64_t id = sqlite3_last_insert_rowid(db_->handle);
    exec(db_->handle, "COMMIT;", path_);
    return id;
  } catch (...) {
    sqlite3_exec(db_->handle, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

DiagnosedResult Store::result(std::int64_t id) const {
  Statement s(db_->handle, "SELECT name, summary FROM runs WHERE id=? AND ok=1");
  s.bind(1, id);
  if (!s.step()) throw InputError(path_ + ": no analysed run " + std::to_string(id));
  std::vector<SummaryFile> parts;
  parts.push_back(decode_summary(s.blob(1), s.text(0)));
  return merge_summaries(std::move(parts));
}

std::optional<std::string> Store::cached_hash(const std::string& path, std::uint64_t size, std::int64_t mtime_ns) const {
  Statement s(db_->handle, "SELECT sha256 FROM file_hashes WHERE path=? AND size=? AND mtime_ns=?");
  s.bind(1, path).bind(2, static_cast<std::int64_t>(size)).bind(3, mtime_ns);
  if (!s.step()) return std::nullopt;
  return s.text(0);
}

void Store::cache_hash(const std::string& path, std::uint64_t size, std::int64_t mtime_ns, const std::string& hash) {
  Statement s(db_->handle, "INSERT OR REPLACE INTO file_hashes(path, size, mtime_ns, sha256) VALUES(?,?,?,?)");
  s.bind(1, path).bind(2, static_cast<std::int64_t>(size)).bind(3, mtime_ns).bind(4, hash);
  s.step();
}

std::string default_store_path(const std::string& logdir) {
  return (fs::path(logdir) / ".stepscope" / "runs.sqlite").string();
}

}  // namespace stepscope
