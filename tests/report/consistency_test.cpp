// One number per fact: a figure the text, the JSON, the page and the CSV tables all show is the
// same number in each, or where two sections measure different things (HTA's definitions against
// ours, the whole trace against the steady steps, a path against a step), the text says which.
// On every fixture of ../shared/fixtures, through the real command.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "report/cli_run.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The Kineto traces and Nsight exports of the fixtures, and the eight DLRM ranks as one job.
std::vector<std::string> fixture_traces() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(STEPSCOPE_FIXTURES_DIR)) {
    const std::string p = e.path().string();
    if (!e.is_regular_file() || p.find("/et/") != std::string::npos || p.find("_et.json") != std::string::npos) continue;
    if (p.ends_with(".json.gz") || p.ends_with(".sqlite")) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.push_back(std::string(STEPSCOPE_FIXTURES_DIR) + "/param/dlrm_8rank/kineto");
  return out;
}

struct Reports {
  int rc = -1;
  std::string text, html, kernels_csv;
  json doc;
};

// One run writes every report: the text (--wide, so no line is broken), JSON, HTML and CSV.
Reports analyze(const std::string& input, const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  Reports r;
  const CliRun run = cli_shell(fmt::format("({}/stepscope analyze -q --wide '{}' --json '{}' --html '{}' --csv '{}' 2>/dev/null)",
                                           STEPSCOPE_BINARY_DIR, input, (dir / "r.json").string(), (dir / "r.html").string(),
                                           (dir / "csv").string()));
  r.rc = run.rc;
  if (run.rc != 0) return r;
  r.text = run.output;
  r.html = slurp(dir / "r.html");
  r.kernels_csv = slurp(dir / "csv" / "kernels.csv");
  r.doc = json::parse(slurp(dir / "r.json"));
  return r;
}

// "62 calls in the trace, 2.0 per steady step": the GPU timeline's count over the trace, the
// partition's per steady step, as each rank's JSON holds them.
std::string sync_words(const json& rank) {
  std::string s = fmt::format("{} calls in the trace", rank["gpu_timeline"]["sync_points"]["count"].get<long>());
  const json& p = rank["partition"];
  if (p["steady_steps"].get<long>() > 0)
    s += fmt::format(", {:.1f} per steady step", p["sync_calls"].get<double>() / p["steady_steps"].get<double>());
  return s;
}

bool has_gpu(const json& rank) { return rank.contains("gpu_timeline") && rank["gpu_timeline"]["has_gpu_activity"].get<bool>(); }

// Synchronising calls: the text's GPU timeline, the page and the JSON say the same, and the
// evidence's "N synchronising calls per step" is the per steady step figure.
void expect_sync_calls_agree(const std::string& what, const Reports& r) {
  std::map<int, const json*> by_rank;
  for (const json& rank : r.doc["ranks"]) by_rank[rank["rank"].get<int>()] = &rank;
  static const std::regex kText(R"(  sync points  (\d+ calls in the trace(?:, [0-9.]+ per steady step)?),)");
  for (std::sregex_iterator it(r.text.begin(), r.text.end(), kText), end; it != end; ++it) {
    bool matched = false;
    for (const auto& [n, rank] : by_rank) matched = matched || (has_gpu(*rank) && sync_words(*rank) == (*it)[1].str());
    EXPECT_TRUE(matched) << what << ": the text's sync points \"" << (*it)[1] << "\" are no rank's JSON figures";
  }
  for (const auto& [n, rank] : by_rank)
    if (has_gpu(*rank) && (*rank)["gpu_timeline"]["sync_points"]["count"].get<long>() > 0)
      EXPECT_NE(r.html.find(fmt::format("rank {}: synchronising calls: {},", n, sync_words(*rank))), std::string::npos)
          << what << ": the page's synchronising calls of rank " << n << " differ from " << sync_words(*rank);
  static const std::regex kEvidence(R"(rank (\d+): ([0-9.]+) synchronising calls per step)");
  for (std::sregex_iterator it(r.text.begin(), r.text.end(), kEvidence), end; it != end; ++it) {
    const json& p = (*by_rank.at(std::stoi((*it)[1]))).at("partition");
    EXPECT_EQ((*it)[2].str(), fmt::format("{:.1f}", p["sync_calls"].get<double>() / p["steady_steps"].get<double>())) << what;
  }
}

// A kernel in HTA's top list and in the drill-down's table: the same count, or the text and the
// page say that HTA's counts are its own (HTA leaves out the last profiler step, and joins rows
// its own way: a Triton kernel launched through the driver counts twice there).
void expect_kernel_counts_agree_or_labelled(const std::string& what, const Reports& r) {
  for (const json& rank : r.doc["ranks"]) {
    if (!has_gpu(rank) || !rank.contains("drilldown")) continue;
    std::map<std::string, long> ours;
    for (const json& k : rank["drilldown"]["kernels"]["rows"]) ours[k["name"].get<std::string>()] = k["calls"].get<long>();
    const json& hta = rank["gpu_timeline"]["hta"];
    for (const json& k : hta["kernel_breakdown"]["top_kernels"]) {
      const auto it = ours.find(k["name"].get<std::string>());
      if (k["others"].get<bool>() || it == ours.end() || it->second == k["count"].get<long>()) continue;
      EXPECT_NE(r.text.find("(HTA's definitions"), std::string::npos) << what << ": " << it->first;
      EXPECT_NE(r.text.find("counts can differ from the drill-down's, which counts every GPU record of the trace"),
                std::string::npos) << what << ": " << it->first << " x" << k["count"] << " in HTA's list, x" << it->second
                                   << " in the drill-down, unlabelled";
      EXPECT_NE(r.html.find("counts can differ from the kernels table's"), std::string::npos) << what;
    }
  }
}

// Stability: a rank of one steady step is "unknown", never listed as stable.
void expect_one_step_ranks_unknown(const std::string& what, const Reports& r) {
  std::vector<int> one;
  for (const json& rank : r.doc["ranks"])
    if (rank.contains("stability") && rank["stability"]["steps"].get<long>() == 1) one.push_back(rank["rank"].get<int>());
  if (one.empty()) return;
  static const std::regex kStable(R"(stability: stable on ranks? ([0-9,\-]+))");
  std::smatch m;
  if (std::regex_search(r.text, m, kStable))
    for (int rank : one)
      EXPECT_EQ(("," + m[1].str() + ",").find("," + std::to_string(rank) + ","), std::string::npos)
          << what << ": rank " << rank << " has one step and is called stable";
  EXPECT_TRUE(r.text.find("stability unknown") != std::string::npos || r.text.find("stability: unknown on") != std::string::npos)
      << what;
}

// The critical path's shares are of the path: the line says so beside the verdict's shares of the step.
void expect_critical_path_labelled(const std::string& what, const Reports& r) {
  static const std::regex kPath(R"(  critical path of [^\n]*)");
  for (std::sregex_iterator it(r.text.begin(), r.text.end(), kPath), end; it != end; ++it)
    if (it->str().find("not available") == std::string::npos)
      EXPECT_NE(it->str().find("(shares of the path, not of the step)"), std::string::npos) << what << ": " << it->str();
}

// The CSV kernel table holds each drilled rank's kernels, as many rows as the JSON.
void expect_csv_rows_agree(const std::string& what, const Reports& r) {
  std::map<std::string, long> csv_rows;
  std::istringstream in(r.kernels_csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) ++csv_rows[line.substr(0, line.find(','))];
  for (const json& rank : r.doc["ranks"])
    if (rank.contains("drilldown"))
      EXPECT_EQ(csv_rows[std::to_string(rank["rank"].get<int>())], static_cast<long>(rank["drilldown"]["kernels"]["rows"].size()))
          << what << " rank " << rank["rank"];
}

TEST(Consistency, EveryFigureShownTwiceIsOneNumberOrLabelled) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("stepscope-consistency-{}", ::getpid());
  std::size_t checked = 0;
  for (const auto& input : fixture_traces()) {
    const Reports r = analyze(input, dir);
    if (r.rc != 0) continue;  // nothing to analyse, or not an input analyze takes
    expect_sync_calls_agree(input, r);
    expect_kernel_counts_agree_or_labelled(input, r);
    expect_one_step_ranks_unknown(input, r);
    expect_critical_path_labelled(input, r);
    expect_csv_rows_agree(input, r);
    ++checked;
  }
  fs::remove_all(dir);
  EXPECT_GE(checked, 30u);
}

}  // namespace
}  // namespace stepscope
