// Comparison of our HTA-compatible figures with the numbers HTA itself produced on the same
// fixture (../shared/oracles/hta/*.json, schema "hta-oracle/1"). Each oracle records the HTA
// methods run, their arguments, their results (tables as lists of records) or the exception
// HTA raised instead.
//
// Tolerances: every percentage within 0.1 percentage points, every time within 1 % of HTA's;
// counts exact unless stated. HTA's percentages are rounded (2 places, 1 for the kernel-type
// table, ratios to 2 places), so ours are rounded the same way (hta_round) before comparing.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "stepscope/gpu_timeline.hpp"

namespace stepscope::oracle {

using nlohmann::json;

// Figures known to differ from HTA for a documented reason, by the label the comparisons use
// (e.g. "temporal rank 0 idle"). A listed figure must still differ: if it starts matching, the
// list is stale and the test says so.
inline std::set<std::string>& known_deviations() {
  static std::set<std::string> s;
  return s;
}

inline double us_of(ns_t v) { return static_cast<double>(v) / 1000.0; }
inline double us_of(double v) { return v / 1000.0; }

inline bool is_null(const json& j) { return j.is_null(); }

// Time within 1 % of HTA's value (exact when HTA's is 0).
inline void expect_time(double ours_us, const json& theirs, const std::string& what) {
  ASSERT_TRUE(theirs.is_number()) << what << ": oracle value is not a number";
  double t = theirs.get<double>();
  bool within = std::fabs(ours_us - t) <= 0.01 * std::fabs(t) + 1e-9;
  if (known_deviations().count(what)) {
    EXPECT_FALSE(within) << what << " now matches HTA: remove it from the known deviations";
    return;
  }
  EXPECT_TRUE(within) << what << ": ours " << ours_us << " HTA " << t;
}

// Percentage within 0.1 pp (null in the oracle ⇔ NaN here).
inline void expect_pct(double ours, const json& theirs, const std::string& what) {
  if (theirs.is_null()) {
    EXPECT_FALSE(std::isfinite(ours)) << what << ": HTA has no value, ours " << ours;
    return;
  }
  EXPECT_LE(std::fabs(ours - theirs.get<double>()), 0.1 + 1e-9) << what << ": ours " << ours << " HTA " << theirs;
}

// Statistic of a sample (µs) within 1 %; null ⇔ NaN.
inline void expect_stat(double ours_us, const json& theirs, const std::string& what) {
  if (theirs.is_null()) {
    EXPECT_FALSE(std::isfinite(ours_us)) << what << ": HTA null, ours " << ours_us;
    return;
  }
  expect_time(ours_us, theirs, what);
}

inline const GpuTimeline* rank_of(const std::map<int, GpuTimeline>& ranks, int r) {
  auto it = ranks.find(r);
  return it == ranks.end() ? nullptr : &it->second;
}

inline void compare_temporal(const std::map<int, GpuTimeline>& ranks, const json& rows) {
  for (const json& row : rows) {
    int r = row["rank"].get<int>();
    const GpuTimeline* t = rank_of(ranks, r);
    ASSERT_NE(t, nullptr) << "rank " << r;
    const auto& tb = t->hta_temporal;
    ASSERT_TRUE(tb.available) << tb.note;
    std::string w = "temporal rank " + std::to_string(r) + " ";
    expect_time(us_of(tb.idle), row["idle_time(us)"], w + "idle");
    expect_time(us_of(tb.compute), row["compute_time(us)"], w + "compute");
    expect_time(us_of(tb.non_compute), row["non_compute_time(us)"], w + "non_compute");
    expect_time(us_of(tb.kernel_time), row["kernel_time(us)"], w + "kernel_time");
    expect_pct(hta_percent(tb.idle_share, 2), row["idle_time_pctg"], w + "idle %");
    expect_pct(hta_percent(tb.compute_share, 2), row["compute_time_pctg"], w + "compute %");
    expect_pct(hta_percent(tb.non_compute_share, 2), row["non_compute_time_pctg"], w + "non_compute %");
  }
}

inline const HtaStreamIdle* stream_of(const GpuTimeline& t, std::int64_t s) {
  for (const auto& x : t.hta_idle.streams)
    if (x.stream == s) return &x;
  return nullptr;
}

inline int category_index(const std::string& name) {
  for (int c = 0; c < kIdleCategoryCount; ++c)
    if (name == idle_category_name(static_cast<IdleCategory>(c))) return c;
  return -1;
}

inline void compare_idle(const std::map<int, GpuTimeline>& ranks, const json& result) {
  std::map<std::pair<int, std::int64_t>, int> listed;  // categories HTA lists per stream
  for (const json& row : result["breakdown"]) {
    int r = row["rank"].get<int>();
    auto s = row["stream"].get<std::int64_t>();
    const GpuTimeline* t = rank_of(ranks, r);
    ASSERT_NE(t, nullptr);
    const HtaStreamIdle* st = stream_of(*t, s);
    ASSERT_NE(st, nullptr) << "rank " << r << " stream " << s << " missing";
    int c = category_index(row["idle_category"].get<std::string>());
    ASSERT_GE(c, 0);
    ++listed[{r, s}];
    const HtaIdleCategory& cat = st->category[c];
    std::string w = "idle rank " + std::to_string(r) + " stream " + std::to_string(s) + " " +
                    row["idle_category"].get<std::string>();
    EXPECT_TRUE(cat.present) << w;
    expect_time(us_of(cat.idle), row["idle_time"], w + " time");
    const json& ratio = row["idle_time_ratio"];
    if (ratio.is_null()) {
      EXPECT_FALSE(std::isfinite(cat.ratio)) << w << " ratio";
    } else {
      // Ratios are 0..1, HTA rounds them to 2 places: compare in percentage points.
      expect_pct(100 * hta_round(cat.ratio, 2), json(100 * ratio.get<double>()), w + " ratio");
    }
  }
  for (const auto& [rank, t] : ranks)
    for (const HtaStreamIdle& st : t.hta_idle.streams) {
      int present = 0;
      for (const auto& c : st.category) present += c.present;
      int expected = listed[std::make_pair(rank, st.stream)];
      EXPECT_EQ(present, expected) << "rank " << rank << " stream " << st.stream;
    }
  if (!result.contains("interval_stats")) return;
  for (const json& row : result["interval_stats"]) {
    int r = row["rank"].get<int>();
    const GpuTimeline* t = rank_of(ranks, r);
    const HtaStreamIdle* st = t ? stream_of(*t, row["stream"].get<std::int64_t>()) : nullptr;
    ASSERT_NE(st, nullptr);
    int c = category_index(row["idle_category"].get<std::string>());
    const SampleStats& s = st->category[c].intervals;
    std::string w = "idle intervals rank " + std::to_string(r) + " stream " + row["stream"].dump() + " " +
                    row["idle_category"].get<std::string>();
    EXPECT_EQ(static_cast<double>(s.count), row["count"].get<double>()) << w;
    // HTA rounds these to 2 places.
    for (auto [key, ours] : {std::pair<const char*, double>{"mean", s.mean}, {"min", s.min}, {"max", s.max},
                             {"50%", s.median}}) {
      const json& v = row[key];
      if (v.is_null()) {
        EXPECT_FALSE(std::isfinite(ours)) << w << " " << key;
      } else {
        EXPECT_LE(std::fabs(hta_round(us_of(ours), 2) - v.get<double>()), 0.01 * std::fabs(v.get<double>()) + 0.011)
            << w << " " << key << ": ours " << us_of(ours) << " HTA " << v;
      }
    }
  }
}

inline void compare_overlap(const std::map<int, GpuTimeline>& ranks, const json& rows) {
  for (const json& row : rows) {
    int r = row["rank"].get<int>();
    const GpuTimeline* t = rank_of(ranks, r);
    ASSERT_NE(t, nullptr);
    const json& p = row["comp_comm_overlap_pctg"];
    EXPECT_EQ(t->hta_overlap.available, !p.is_null()) << "overlap rank " << r << ": " << t->hta_overlap.note;
    expect_pct(hta_percent(t->hta_overlap.share, 2), p, "overlap rank " + std::to_string(r));
  }
}

inline void compare_kernel_breakdown(const std::map<int, GpuTimeline>& ranks, const json& result) {
  std::vector<const GpuTimeline*> all;
  for (const auto& [r, t] : ranks) all.push_back(&t);
  std::vector<HtaKernelTypeTime> types = combine_kernel_types(all);
  std::map<std::string, const HtaKernelTypeTime*> ours;
  for (const auto& t : types) ours[t.label] = &t;
  for (const json& row : result["kernel_type_breakdown"]) {
    std::string label = row["kernel_type"].get<std::string>();
    auto it = ours.find(label);
    double sum = row["sum"].get<double>();
    if (it == ours.end()) {
      // HTA lists zero-length states that its unstable sort happened to produce at ties.
      EXPECT_EQ(sum, 0) << "kernel type " << label << " missing";
      continue;
    }
    expect_time(us_of(it->second->time), row["sum"], "kernel type " + label);
    expect_pct(hta_percent(it->second->share, 1), row["percentage"], "kernel type % " + label);
    ours.erase(it);
  }
  for (const auto& [label, t] : ours) EXPECT_EQ(t->time, 0) << "kernel type " << label << " not in HTA's table";

  std::map<std::tuple<int, std::string, std::string>, const json*> theirs;
  for (const json& row : result["top_kernels"])
    theirs[{row["rank"].get<int>(), row["kernel_type"].get<std::string>(), row["name"].get<std::string>()}] = &row;
  std::size_t ours_rows = 0;
  for (const auto& [r, t] : ranks) {
    for (const HtaKernelRow& k : t.hta_kernels.top) {
      ++ours_rows;
      auto it = theirs.find({r, hta_kernel_type_name(k.type), k.name});
      ASSERT_NE(it, theirs.end()) << "kernel row not in HTA's table: rank " << r << " " << k.name;
      const json& row = *it->second;
      std::string w = "kernel " + k.name.substr(0, 60) + " ";
      expect_time(us_of(k.sum), row["sum (us)"], w + "sum");
      expect_time(us_of(k.max), row["max (us)"], w + "max");
      expect_time(us_of(k.min), row["min (us)"], w + "min");
      expect_time(us_of(k.mean), row["mean (us)"], w + "mean");
      expect_time(us_of(k.stddev), row["stddev"], w + "stddev");
    }
  }
  EXPECT_EQ(ours_rows, theirs.size()) << "number of kernel rows";
}

inline void compare_distribution(const SampleStats& s, const json& j, const std::string& w) {
  expect_time(us_of(s.sum), j["sum"], w + " sum");
  expect_stat(us_of(s.mean), j["mean"], w + " mean");
  expect_stat(us_of(s.median), j["median"], w + " median");
  expect_stat(us_of(s.p95), j["p95"], w + " p95");
  expect_stat(us_of(s.max), j["max"], w + " max");
}

inline void compare_launch_stats(const std::map<int, GpuTimeline>& ranks, const json& result) {
  for (const auto& [key, j] : result.items()) {
    int r = std::stoi(key);
    const GpuTimeline* t = rank_of(ranks, r);
    ASSERT_NE(t, nullptr);
    const HtaLaunchStats& l = t->hta_launches;
    std::string w = "launch stats rank " + key;
    EXPECT_EQ(l.events, j["events"].get<std::int64_t>()) << w;
    EXPECT_EQ(l.short_gpu_kernels, j["short_gpu_kernels"].get<std::int64_t>()) << w;
    EXPECT_EQ(l.runtime_outliers, j["runtime_outliers"].get<std::int64_t>()) << w;
    EXPECT_EQ(l.launch_delay_outliers, j["launch_delay_outliers"].get<std::int64_t>()) << w;
    EXPECT_EQ(l.gpu_shorter_than_cpu, j["gpu_shorter_than_cpu_any"].get<std::int64_t>()) << w;
    compare_distribution(l.cpu_duration, j["cpu_duration"], w + " cpu_duration");
    compare_distribution(l.gpu_duration, j["gpu_duration"], w + " gpu_duration");
    compare_distribution(l.launch_delay, j["launch_delay"], w + " launch_delay");
  }
}

inline void compare_load(const std::map<int, GpuTimeline>& ranks, const json& load, const json& results) {
  for (const auto& [key, rows] : load["rows_per_rank_after_filter"].items()) {
    const GpuTimeline* t = rank_of(ranks, std::stoi(key));
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->hta_load.rows_kept, rows.get<std::int64_t>()) << "rows kept, rank " << key;
  }
  if (!results.contains("get_profiler_steps")) return;
  // HTA's get_profiler_steps lists the iterations of every rank together.
  std::vector<std::int64_t> ours;
  for (const auto& [r, t] : ranks) ours.insert(ours.end(), t.hta_load.iterations.begin(), t.hta_load.iterations.end());
  std::sort(ours.begin(), ours.end());
  ours.erase(std::unique(ours.begin(), ours.end()), ours.end());
  EXPECT_EQ(ours, results["get_profiler_steps"].get<std::vector<std::int64_t>>()) << "profiler steps";
}

// Where HTA raised instead of answering (no GPU rows), we answer plainly: not available, with a
// note, and no numbers.
inline void compare_errors(const std::map<int, GpuTimeline>& ranks, const json& errors) {
  for (const auto& [method, message] : errors.items()) {
    for (const auto& [r, t] : ranks) {
      if (method == "get_temporal_breakdown") {
        EXPECT_FALSE(t.hta_temporal.available) << "HTA raised " << message;
        EXPECT_FALSE(t.hta_temporal.note.empty());
      } else if (method == "get_idle_time_breakdown") {
        EXPECT_FALSE(t.hta_idle.available) << "HTA raised " << message;
        EXPECT_FALSE(t.hta_idle.note.empty());
      }
      // get_potential_stragglers is not a GPU timeline figure (see the golden test).
    }
  }
}

}  // namespace stepscope::oracle
