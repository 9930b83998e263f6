// Every text report fits the width it is given (COLUMNS=80 and 200 here), and the names it
// shortens stay apart: on every fixture of ../shared/fixtures, through the real command.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "report/cli_run.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (char c : line) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Every input a fixture folder holds that `analyze` reads: traces, Nsight exports, snapshots; and
// the eight DLRM ranks as one job.
std::vector<std::string> fixture_inputs() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(STEPSCOPE_FIXTURES_DIR)) {
    const std::string p = e.path().string();
    if (!e.is_regular_file() || p.find("/et/") != std::string::npos || p.find("_et.json") != std::string::npos) continue;
    if (p.ends_with(".json.gz") || p.ends_with(".sqlite") || p.ends_with(".pickle")) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.push_back(std::string(STEPSCOPE_FIXTURES_DIR) + "/param/dlrm_8rank/kineto");
  return out;
}

// The name cells of each table of shortened names: the drill-down's operators and kernels
// (the name, then the figures), HTA's top kernels and diff's kernels that changed (the figures,
// then the name).
std::vector<std::vector<std::string>> name_tables(const std::vector<std::string>& lines) {
  static const std::regex kLeading(R"(^    (\S.*?) +-?[0-9][0-9.]* +-?[0-9][0-9.]*%? .*$)");
  static const std::regex kTrailing(R"(^    +[0-9.]+ [a-z]+  x[0-9]+ +(.*)$)");
  static const std::regex kChanged(R"(^  [a-z]+ +\S+ \S+ +\S+ \S+ +\S+ \S+ +\S+ +\S+  (.*)$)");
  static const std::regex kChangedFigures(R"(^  [a-z]+ +\S+ \S+ +\S+ \S+ +\S+ \S+ +\S+ +\S+$)");
  static const std::regex kNameBelow(R"(^    (\S.*)$)");
  std::vector<std::vector<std::string>> tables;
  enum { None, Leading, Trailing, Changed } in = None;
  for (const auto& line : lines) {
    if (line.starts_with("  operators (") || line.starts_with("  kernels (")) {
      in = Leading, tables.emplace_back();
      continue;
    }
    if (line.starts_with("  kernel types ")) {
      in = Trailing, tables.emplace_back();
      continue;
    }
    if (line.starts_with("kernels that changed")) {
      in = Changed, tables.emplace_back();
      continue;
    }
    if (in == Changed && tables.back().empty() && line.find(" base ") != std::string::npos) continue;  // column names
    // Narrow: the figures, then the name on a line of its own.
    if (in == Changed && std::regex_match(line, kChangedFigures)) continue;
    std::smatch below;
    if (in == Changed && std::regex_match(line, below, kNameBelow)) {
      tables.back().push_back(below[1]);
      continue;
    }
    std::smatch m;
    if (in != None && std::regex_match(line, m, in == Leading ? kLeading : in == Trailing ? kTrailing : kChanged)) {
      tables.back().push_back(m[1]);
      continue;
    }
    // A title too long for the header line stands on its own, the column names below it.
    if (in == Leading && tables.back().empty() && line.find_first_not_of(' ') > 4 &&
        (line.find(" self ") != std::string::npos || line.find(" total ") != std::string::npos))
      continue;
    // A table row broken onto a second line would leave its figures out of their columns.
    if (in != None && !tables.back().empty()) EXPECT_FALSE(line.starts_with("        ")) << "a broken table row: " << line;
    in = None;
  }
  return tables;
}

// Returns how many shortened-name cells it checked.
std::size_t expect_fits(const std::string& what, const std::string& out, std::size_t width) {
  const auto lines = lines_of(out);
  for (std::size_t i = 0; i < lines.size(); ++i)
    EXPECT_LE(columns(lines[i]), width) << what << " line " << i + 1 << ": " << lines[i];
  std::size_t names = 0;
  for (const auto& table : name_tables(lines)) {
    std::set<std::string> seen;
    for (const auto& name : table) EXPECT_TRUE(seen.insert(name).second) << what << ": two rows read " << name;
    names += table.size();
  }
  return names;
}

std::string stepscope_at(std::size_t width, const std::string& args) {
  return "(COLUMNS=" + std::to_string(width) + " NO_COLOR=1 " + STEPSCOPE_BINARY_DIR + "/stepscope " + args + " 2>/dev/null)";
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

TEST(Width, EveryFixturesReportFitsEightyAndTwoHundredColumns) {
  std::size_t reports = 0, names = 0;
  for (const auto& input : fixture_inputs()) {
    for (std::size_t width : {80, 200}) {
      const CliRun r = cli_shell(stepscope_at(width, "analyze -q " + quoted(input)));
      if (r.rc != 0 && r.rc != 1) continue;  // not an input analyze takes (refused with exit 2)
      names += expect_fits(input + " at " + std::to_string(width), r.output, width);
      ++reports;
    }
  }
  EXPECT_GE(reports, 60u);
  EXPECT_GE(names, 1000u);  // the operator, kernel and HTA tables were found and read, at both widths
}

}  // namespace
}  // namespace stepscope

namespace stepscope {
namespace {

// The other text reports: diff (the added and removed kernels of two runs), plan, whatif, triage.
TEST(Width, DiffPlanWhatIfAndTriageFitEightyAndTwoHundredColumns) {
  std::size_t names = 0;
  const std::string fixtures = STEPSCOPE_FIXTURES_DIR;
  const std::string monitor = std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/monitor/";
  const std::vector<std::string> commands{
      "diff -q " + quoted(fixtures + "/hta/trace_diff/control/control.json.gz") + " " +
          quoted(fixtures + "/hta/trace_diff/test/test.json.gz"),
      "plan memory --model llama-3-8b --gpus 8 --zero 3",
      "whatif --set batch_wait=0.5 " + quoted(fixtures + "/cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz"),
      "whatif " + quoted(fixtures + "/param/dlrm_8rank/kineto"),
      "plan roofline --layer -m llama-3-8b",
      "triage " + quoted(monitor + "dmon.log") + " " + quoted(monitor + "query.log")};
  for (const auto& args : commands)
    for (std::size_t width : {80, 200}) {
      const CliRun r = cli_shell(stepscope_at(width, args));
      EXPECT_EQ(r.rc, 0) << args << "\n" << r.output;
      names += expect_fits(args + " at " + std::to_string(width), r.output, width);
    }
  EXPECT_GE(names, 20u);  // diff's kernels that changed, at both widths
}

// --wide keeps whole names and the figures still line up: each row's "self" figure ends where
// the header's does.
TEST(Width, WideKeepsTheColumnsAligned) {
  const CliRun r = cli_shell(stepscope_at(80, "analyze -q --wide " + quoted(std::string(STEPSCOPE_FIXTURES_DIR) +
                                                                        "/hta/trace_diff/control/control.json.gz")));
  ASSERT_EQ(r.rc, 0) << r.output;
  const auto lines = lines_of(r.output);
  const auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("  operators ("); });
  ASSERT_NE(header, lines.end());
  const std::size_t self_end = columns(header->substr(0, header->find(" self", header->find(')')) + 5));
  std::size_t rows = 0;
  for (auto it = header + 1; it != lines.end() && it->starts_with("    "); ++it, ++rows) {
    static const std::regex kSelf(R"(^(    .*? +[0-9]+\.[0-9]{2}) +[0-9]+\.[0-9]{2} .*$)");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(*it, m, kSelf)) << *it;
    EXPECT_EQ(columns(m[1]), self_end) << *it;
  }
  EXPECT_GE(rows, 5u);
  EXPECT_GT(std::max_element(lines.begin(), lines.end(), [](auto& a, auto& b) { return columns(a) < columns(b); })->size(), 80u);
}

}  // namespace
}  // namespace stepscope
