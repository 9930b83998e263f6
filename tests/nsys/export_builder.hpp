// Builds small Nsight Systems exports with the sqlite3 library, in the exact schema of a real
// export (its CREATE TABLE statements and ENUM_* rows are copied), so the reader meets each nsys
// version's columns, including the ones another version lacks.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace stepscope::nsys_test {

using SqlValue = std::variant<std::nullptr_t, std::int64_t, std::string>;

class ExportBuilder {
 public:
  // A fresh file at `out` with the tables of `schema_from` (minus `skip`), empty but for ENUM_*;
  // tables named in `borrow` that it lacks come from `borrow_from` (an export made without that
  // kind of tracing has no such table).
  ExportBuilder(const std::string& out, const std::string& schema_from, const std::set<std::string>& skip = {},
                const std::string& borrow_from = "", const std::set<std::string>& borrow = {}) {
    std::filesystem::remove(out);
    if (sqlite3_open_v2(out.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nullptr) != SQLITE_OK)
      throw std::runtime_error("cannot create " + out);
    // A scratch file: no journal, no fsync per statement.
    exec("PRAGMA journal_mode = OFF");
    exec("PRAGMA synchronous = OFF");
    exec("ATTACH DATABASE 'file:" + schema_from + "?mode=ro' AS src");
    std::vector<std::pair<std::string, std::string>> tables;
    query("SELECT name, sql FROM src.sqlite_master WHERE type = 'table'", [&](sqlite3_stmt* s) {
      tables.emplace_back(text(s, 0), text(s, 1));
    });
    // Plain references, not structured bindings: clang before 16 cannot capture a binding in
    // the lambda below.
    for (const auto& table : tables) {
      const std::string& name = table.first;
      const std::string& sql = table.second;
      if (skip.count(name)) continue;
      exec(sql);
      if (name.rfind("ENUM_", 0) == 0) exec("INSERT INTO main.\"" + name + "\" SELECT * FROM src.\"" + name + "\"");
      query("PRAGMA main.table_info(\"" + name + "\")", [&](sqlite3_stmt* s) {
        columns_[name].push_back({text(s, 1), sqlite3_column_int(s, 3) != 0});
      });
    }
    exec("DETACH DATABASE src");
    if (borrow_from.empty()) return;
    exec("ATTACH DATABASE 'file:" + borrow_from + "?mode=ro' AS lend");
    std::vector<std::pair<std::string, std::string>> lent;
    query("SELECT name, sql FROM lend.sqlite_master WHERE type = 'table'", [&](sqlite3_stmt* s) {
      if (borrow.count(text(s, 0)) && !columns_.count(text(s, 0)) && !skip.count(text(s, 0)))
        lent.emplace_back(text(s, 0), text(s, 1));
    });
    for (const auto& table : lent) {
      const std::string& name = table.first;
      exec(table.second);
      query("PRAGMA main.table_info(\"" + name + "\")", [&](sqlite3_stmt* s) {
        columns_[name].push_back({text(s, 1), sqlite3_column_int(s, 3) != 0});
      });
    }
    exec("DETACH DATABASE lend");
  }
  ExportBuilder(const ExportBuilder&) = delete;
  ExportBuilder& operator=(const ExportBuilder&) = delete;
  ~ExportBuilder() { sqlite3_close(db_); }

  bool has(const std::string& table) const { return columns_.count(table) != 0; }
  bool has_column(const std::string& table, const std::string& col) const {
    auto it = columns_.find(table);
    if (it == columns_.end()) return false;
    for (const auto& c : it->second)
      if (c.name == col) return true;
    return false;
  }

  // Inserts the given columns that the table has; NOT NULL columns left out get 0. A table the
  // schema lacks is skipped (that version does not record it).
  void insert(const std::string& table, const std::map<std::string, SqlValue>& row) {
    auto it = columns_.find(table);
    if (it == columns_.end()) return;
    std::string cols, vals;
    for (const auto& c : it->second) {
      auto v = row.find(c.name);
      if (v == row.end() && !c.not_null) continue;
      cols += (cols.empty() ? "\"" : ", \"") + c.name + "\"";
      vals += (vals.empty() ? "" : ", ") + (v == row.end() ? std::string("0") : literal(v->second));
    }
    exec("INSERT INTO \"" + table + "\" (" + cols + ") VALUES (" + vals + ")");
  }

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(sql + ": " + msg);
    }
  }

 private:
  struct Column {
    std::string name;
    bool not_null;
  };
  sqlite3* db_ = nullptr;
  std::map<std::string, std::vector<Column>> columns_;

  template <class F>
  void query(const std::string& sql, F&& f) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) throw std::runtime_error(sql);
    while (sqlite3_step(s) == SQLITE_ROW) f(s);
    sqlite3_finalize(s);
  }
  static std::string text(sqlite3_stmt* s, int c) {
    const auto* p = sqlite3_column_text(s, c);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  static std::string literal(const SqlValue& v) {
    if (std::holds_alternative<std::nullptr_t>(v)) return "NULL";
    if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
    std::string out = "'";
    for (char c : std::get<std::string>(v)) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }
};

}  // namespace stepscope::nsys_test
