// Golden tests: our critical path against HTA's (critical_path_analysis +
// get_critical_path_breakdown) on the fixtures of ../shared/oracles/hta-deep/, every case and
// both environments (HTA's defaults, and CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE=1).
//
// Checked: success agrees (an HTA error is our success=false); the path length and the duration
// of each bound_by class within 1 % of HTA's path length. Edge counts per type are compared and
// reported, but not required to match (see kExactEdgeCounts).
#include <gtest/gtest.h>

#include "oracle_files.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "stepscope/critical_path.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path oracle_dir() { return fs::path(STEPSCOPE_ORACLES_DIR) / "hta-deep"; }
fs::path fixtures_dir() { return fs::path(STEPSCOPE_FIXTURES_DIR); }

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

struct Case {
  std::string file;
  std::size_t index = 0;
  std::string env;  // "default_env" or "tests_env_zero_weight_launch_edges"
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const std::string& f : testing_support::oracle_files("hta-deep")) {
    json o = read_json(oracle_dir() / f);
    if (!o.contains("results") || !o["results"].contains("critical_path")) continue;
    const json& cases = o["results"]["critical_path"]["cases"];
    for (std::size_t i = 0; i < cases.size(); ++i)
      for (const char* env : {"default_env", "tests_env_zero_weight_launch_edges"})
        if (cases[i].contains(env)) out.push_back({f, i, env});
  }
  return out;
}

// The fixture holding the analysed rank's file (the oracle names files by base name).
fs::path fixture_for(const json& o, int rank) {
  const json& files = o["load"]["rank_files"];
  std::string base = files.contains(std::to_string(rank)) ? files[std::to_string(rank)].get<std::string>() : "";
  for (const json& f : o["fixtures"]) {
    fs::path p = fixtures_dir() / f.get<std::string>();
    if (p.filename() == base) return p;
  }
  if (o["fixtures"].size() == 1) return fixtures_dir() / o["fixtures"][0].get<std::string>();
  return {};
}

CriticalPathOptions options_of(const json& args, bool zero_weight_launch_edges) {
  CriticalPathOptions opts;
  opts.annotation = args["annotation"].is_string() ? args["annotation"].get<std::string>() : "";
  const json& inst = args["instance_id"];
  if (inst.is_number_integer()) {
    opts.instance_first = opts.instance_last = inst.get<int>();
  } else if (inst.is_array() && inst.size() == 2) {
    opts.instance_first = inst[0].get<int>();
    opts.instance_last = inst[1].get<int>();
  }
  if (args.contains("data_load_events") && args["data_load_events"].is_array())
    for (const json& p : args["data_load_events"]) opts.data_load_patterns.push_back(p.get<std::string>());
  opts.zero_weight_launch_edges = zero_weight_launch_edges;
  return opts;
}

double us(ns_t v) { return static_cast<double>(v) / 1000.0; }

std::string describe(const CriticalPath& cp, const json& want) {
  std::ostringstream s;
  s << "ours: nodes " << cp.nodes << " edges";
  for (int t = 0; t < kCpEdgeTypeCount; ++t)
    s << " " << cp_edge_type_name(static_cast<CpEdgeType>(t)) << "=" << cp.edges_by_type[static_cast<std::size_t>(t)];
  s << " length " << us(cp.length) << " path edges " << cp.path.size() << "\n";
  s << "HTA:  nodes " << want["graph"]["nodes"] << " edges " << want["graph"]["edges_by_type"].dump() << " length "
    << want["critical_path"]["length_us_graph_weights"] << " path edges " << want["critical_path"]["edges"] << "\n";
  s << "by bound_by ours:";
  for (int b = 0; b < kCpBoundByCount; ++b) {
    const CpTotal& t = cp.by_bound_by[static_cast<std::size_t>(b)];
    if (t.edges) s << " '" << cp_bound_by_name(static_cast<CpBoundBy>(b)) << "'=" << us(t.duration) << "/" << t.edges;
  }
  s << "\nby bound_by HTA: " << want["by_bound_by"].dump() << "\n";
  s << "by edge type ours:";
  for (int b = 0; b < kCpEdgeTypeCount; ++b) {
    const CpTotal& t = cp.by_edge_type[static_cast<std::size_t>(b)];
    if (t.edges) s << " " << cp_edge_type_name(static_cast<CpEdgeType>(b)) << "=" << us(t.duration) << "/" << t.edges;
  }
  s << "\nby edge type HTA: " << want["by_edge_type"].dump();
  return s.str();
}

// Cases we do not match, each with its cause (none today).
std::string known_deviation(const Case&) { return ""; }

// Graph edge counts per type are compared exactly, except these, which differ for a known cause:
// - df_index_resolver: 16 GPU events get a kernel-kernel edge here and a launch-delay edge in
//   HTA (2,332 / 2,120 vs 2,348 / 2,104). The choice reads the queue length series, which HTA
//   sorts with an unstable quicksort: rows at equal ts come in an order we do not reproduce.
std::set<std::string> inexact_edge_types(const Case& c) {
  if (c.file == "hta__df_index_resolver__df_index_resolver.json")
    return {"critical_path_kernel_launch_delay", "critical_path_kernel_kernel_delay"};
  return {};
}

class HtaCriticalPath : public ::testing::TestWithParam<Case> {};

TEST_P(HtaCriticalPath, MatchesHta) {
  const Case& c = GetParam();
  const json o = read_json(oracle_dir() / c.file);
  const json& cpj = o["results"]["critical_path"];
  const json& kase = cpj["cases"][c.index];
  const json& want = kase[c.env];
  const int rank = cpj.contains("rank") && cpj["rank"].is_number_integer() ? cpj["rank"].get<int>() : 0;
  fs::path p = fixture_for(o, rank);
  ASSERT_FALSE(p.empty()) << "no fixture for rank " << rank;
  RankTrace t = read_kineto_file(p.string());
  const CriticalPathOptions opts = options_of(kase["args"], c.env != "default_env");
  const CriticalPath cp = analyze_critical_path(t, opts);

  const bool hta_ok = want.value("success", false);
  if (const std::string why = known_deviation(c); !why.empty()) {
    // A listed case must still differ; if it starts matching, the list is stale.
    const double hta_len = hta_ok ? want["critical_path"]["length_us_graph_weights"].get<double>() : 0.0;
    EXPECT_FALSE(cp.success && std::abs(us(cp.length) - hta_len) <= 0.01 * hta_len) << "known deviation now matches";
    GTEST_SKIP() << why;
  }
  if (!hta_ok) {
    EXPECT_FALSE(cp.success) << "HTA failed (" << want.value("error", json()).dump() << ") but we succeeded";
    if (!cp.success) {
      EXPECT_FALSE(cp.error.empty());
    }
    if (std::getenv("STEPSCOPE_CP_VERBOSE")) std::cerr << "HTA error: " << want.value("error", json()).dump() << "\nours: " << cp.error << "\n";
    return;
  }
  ASSERT_TRUE(cp.success) << cp.error;
  if (std::getenv("STEPSCOPE_CP_VERBOSE")) std::cerr << describe(cp, want) << "\n";
  if (const char* dump = std::getenv("STEPSCOPE_CP_DUMP")) {
    std::ofstream f(dump);
    for (const CpPathEdge& e : cp.path)
      f << cp_edge_type_name(e.type) << " " << e.duration / 1000 << " " << (e.begin_ts - cp.window_start) / 1000 << " "
        << (e.end_ts - cp.window_start) / 1000 << " " << e.stream << " " << (e.event >= 0 ? t.name_of(static_cast<std::size_t>(e.event)) : "-") << "\n";
  }
  const double length = want["critical_path"]["length_us_graph_weights"].get<double>();
  const double tol = std::max(1.0, 0.01 * length);
  EXPECT_NEAR(us(cp.length), length, tol) << describe(cp, want);
  std::map<std::string, double> ours;
  for (int b = 0; b < kCpBoundByCount; ++b) {
    const CpTotal& tot = cp.by_bound_by[static_cast<std::size_t>(b)];
    if (tot.edges) ours[cp_bound_by_name(static_cast<CpBoundBy>(b))] = us(tot.duration);
  }
  for (const auto& [name, v] : want["by_bound_by"].items()) {
    const double hta = v["duration_us"].get<double>();
    EXPECT_NEAR(ours.count(name) ? ours[name] : 0.0, hta, tol) << "bound_by '" << name << "'\n" << describe(cp, want);
  }
  for (const auto& [name, v] : ours) {
    if (!want["by_bound_by"].contains(name)) EXPECT_NEAR(v, 0.0, tol) << "bound_by '" << name << "' not in HTA's path";
  }
  // Graph size: nodes and edges per type.
  EXPECT_EQ(cp.nodes, want["graph"]["nodes"].get<std::int64_t>());
  const std::set<std::string> inexact = inexact_edge_types(c);
  for (int ty = 0; ty < kCpEdgeTypeCount; ++ty) {
    const std::string name = cp_edge_type_name(static_cast<CpEdgeType>(ty));
    const std::int64_t hta = want["graph"]["edges_by_type"].value(name, std::int64_t{0});
    const std::int64_t mine = cp.edges_by_type[static_cast<std::size_t>(ty)];
    if (inexact.count(name)) {
      EXPECT_NEAR(static_cast<double>(mine), static_cast<double>(hta), std::max(1.0, 0.01 * static_cast<double>(hta))) << name;
    } else {
      EXPECT_EQ(mine, hta) << name;
    }
  }
  // Kind breakdown adds up to the bound_by breakdown.
  ns_t kinds = 0, bounds = 0;
  for (const CpTotal& k : cp.by_kind) kinds += k.duration;
  for (const CpTotal& k : cp.by_bound_by) bounds += k.duration;
  EXPECT_EQ(kinds, bounds);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.file.substr(0, info.param.file.size() - 5) + "_case" + std::to_string(info.param.index) +
                  (info.param.env == "default_env" ? "_default" : "_zero_weight_launch");
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Oracles, HtaCriticalPath, ::testing::ValuesIn(all_cases()), case_name);

TEST(HtaCriticalPathSet, OraclesArePresent) { EXPECT_GE(all_cases().size(), 20u); }

}  // namespace
}  // namespace stepscope
