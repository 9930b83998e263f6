// The rows of a table in docs/, for the tests that hold a registry to its documentation.
#pragma once

#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace stepscope::test {

// The cells of each row of the table under the header line starting with `header` in
// docs/<file>, trimmed: "| `a` | b |" -> {"`a`", "b"}.
inline std::vector<std::vector<std::string>> doc_table(const std::string& file, const std::string& header) {
  std::ifstream in(std::string(STEPSCOPE_SOURCE_DIR) + "/docs/" + file);
  std::string line;
  while (std::getline(in, line) && line.rfind(header, 0) != 0) {
  }
  std::getline(in, line);  // |---|---|
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line) && line.rfind("| ", 0) == 0) {
    std::vector<std::string> cells;
    for (std::size_t at = 1; at < line.size();) {
      const std::size_t end = line.find(" |", at);
      if (end == std::string::npos) break;
      std::string cell = line.substr(at, end - at);
      cell.erase(0, cell.find_first_not_of(' '));
      cells.push_back(cell);
      at = end + 2;
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

// The `code`s a cell names ("`one_step`, `few_steps`" -> {one_step, few_steps}).
inline std::set<std::string> codes_in(const std::string& cell) {
  static const std::regex code("`([a-z0-9_]+)`");
  std::set<std::string> out;
  for (std::sregex_iterator it(cell.begin(), cell.end(), code), end; it != end; ++it) out.insert((*it)[1]);
  return out;
}

}  // namespace stepscope::test
