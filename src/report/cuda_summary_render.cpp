#include "report/cuda_summary_render.hpp"

#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "report/text_layout.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

nlohmann::json duration_stats_json(const DurationStats& s) {
  return {{"name", s.name},     {"instances", s.instances}, {"total_ns", s.total},
          {"avg_ns", s.avg},    {"median_ns", s.median},    {"min_ns", s.min},
          {"max_ns", s.max},    {"stddev_ns", s.stddev},    {"time_share", s.time_pct / 100.0}};
}

nlohmann::json table_json(const std::vector<DurationStats>& rows) {
  auto a = nlohmann::json::array();
  for (const auto& r : rows) a.push_back(duration_stats_json(r));
  return a;
}

std::string ms3(double ns) { return fmt::format("{:.3f} ms", ns / 1e6); }

// The name column is last: it takes what the figures (66 columns) leave, at least 16.
void table_text(const char* title, const std::vector<DurationStats>& rows, const TextOptions& o, std::string& out) {
  if (rows.empty()) return;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < rows.size() && i < o.top; ++i) names.push_back(terminal_safe(rows[i].name));
  const std::size_t columns = o.width ? o.width : 100;
  if (!o.wide) names = shorten_distinct(names, columns > 82 ? columns - 66 : 16);
  out += fmt::format("  {}:\n", title);
  out += fmt::format("    {:>7}  {:>9}  {:>12}  {:>12}  {:>12}  {}\n", "time %", "instances", "total", "avg", "median", "name");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& r = rows[i];
    out += fmt::format("    {:>6.2f}%  {:>9}  {:>12}  {:>12}  {:>12}  {}\n", r.time_pct, r.instances,
                       ms3(static_cast<double>(r.total)), ms3(r.avg), ms3(r.median), names[i]);
  }
  if (rows.size() > names.size()) out += fmt::format("    ... {} more\n", rows.size() - names.size());
}

}  // namespace

nlohmann::json to_json(const CudaSummary& s) {
  nlohmann::json j;
  j["present"] = s.present;
  j["kernels"] = table_json(s.kernels);
  j["kernels_by_short_name"] = table_json(s.kernels_short_name);
  j["kernel_count"] = s.kernel_count;
  j["kernel_total_ns"] = s.kernel_total;
  auto& copies = j["memcpy_by_kind"] = nlohmann::json::array();
  for (const auto& c : s.memcpy_by_kind) {
    nlohmann::json row = duration_stats_json(c.time);
    row.erase("name");
    row.erase("time_share");
    row["kind"] = c.kind;
    row["bytes"] = c.bytes;
    copies.push_back(std::move(row));
  }
  j["runtime_api"] = table_json(s.runtime_api);
  j["sync_api_calls"] = s.sync_calls;
  j["pageable_async_memcpy"] = s.pageable_async_copies;
  j["kernel_launches"] = s.kernel_launches;
  j["launches_then_sync"] = s.launches_then_sync;
  j["sync_after_launch"] = s.sync_after_launch;
  j["gap_threshold_ns"] = s.gap_threshold;
  auto& devs = j["gpu_time_by_device"] = nlohmann::json::array();
  for (const auto& d : s.devices)
    devs.push_back({{"device", d.device}, {"span_ns", d.span}, {"busy_ns", d.busy}, {"idle_ns", d.idle},
                    {"idle_share", d.idle_pct / 100.0}, {"gaps_over_threshold", d.gaps_over_threshold},
                    {"largest_gap_ns", d.largest_gap}});
  return j;
}

std::string cuda_summary_text(const CudaSummary& s, const TextOptions& o) {
  std::string out = "CUDA summary (nsys stats definitions):\n";
  table_text("kernels", s.kernels, o, out);
  if (!s.memcpy_by_kind.empty()) {
    out += "  copies:\n";
    for (const auto& c : s.memcpy_by_kind)
      out += fmt::format("    {:<6} {:>6} copies  {:>12}  {:>14} bytes\n", c.kind, c.time.instances,
                         ms3(static_cast<double>(c.time.total)), c.bytes);
  }
  table_text("CUDA API", s.runtime_api, o, out);
  out += fmt::format("  synchronising API calls: {}; pageable async copies: {}\n", s.sync_calls, s.pageable_async_copies);
  if (s.launches_then_sync)
    out += fmt::format("  kernel launches followed by a sync before the next launch: {} of {} ({})\n",
                       s.launches_then_sync, s.kernel_launches, terminal_safe(s.sync_after_launch));
  for (const auto& d : s.devices)
    out += fmt::format("  GPU {}: busy {} of {} ({:.1f}% idle), largest gap {}, {} gaps over {}\n", d.device,
                       ms3(static_cast<double>(d.busy)), ms3(static_cast<double>(d.span)), d.idle_pct,
                       ms3(static_cast<double>(d.largest_gap)), d.gaps_over_threshold,
                       ms3(static_cast<double>(s.gap_threshold)));
  return out;
}

}  // namespace stepscope
