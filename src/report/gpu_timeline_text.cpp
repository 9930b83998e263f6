#include "report/gpu_timeline_text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "report/gpu_summary.hpp"
#include "report/text_layout.hpp"
#include "stepscope/report.hpp"

namespace stepscope {

namespace {

// Durations with a unit that keeps 3-4 significant digits.
std::string dur(double ns) {
  if (!std::isfinite(ns)) return "n/a";
  double a = std::fabs(ns);
  if (a >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f} ms", ns / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}
std::string dur(ns_t ns) { return dur(static_cast<double>(ns)); }

std::string pct_value(double p, int places = 1) {
  return std::isfinite(p) ? fmt::format("{:.{}f}%", p, places) : std::string("n/a");
}

// The figures the page's GPU summary shows too (report/gpu_summary.hpp), on one line.
void summary_line(const GpuTimeline& t, std::string& s) {
  std::string line;
  for (const GpuSummaryFigure& f : gpu_summary(t)) line += fmt::format("{}{} {}", line.empty() ? "" : "  ", f.label, f.value);
  if (!line.empty()) s += fmt::format("  summary      {}\n", line);
}

void temporal_lines(const GpuTimeline& t, std::string& s) {
  const auto& b = t.hta_temporal;
  if (!b.available) {
    s += fmt::format("  temporal     {}\n", b.note);
    return;
  }
  s += fmt::format("  temporal     compute {}  non-compute {}  idle {}  of a {} GPU span\n",
                   pct_value(hta_percent(b.compute_share, 2), 2), pct_value(hta_percent(b.non_compute_share, 2), 2),
                   pct_value(hta_percent(b.idle_share, 2), 2), dur(b.kernel_time));
}

void idle_lines(const GpuTimeline& t, std::string& s) {
  const auto& b = t.hta_idle;
  if (!b.available) return;
  s += fmt::format("  idle gaps    host wait {}  kernel wait {}  other {}  (summed over {} streams)\n",
                   dur(b.total[0]), dur(b.total[1]), dur(b.total[2]), b.streams.size());
}

void overlap_lines(const GpuTimeline& t, std::string& s) {
  const auto& o = t.hta_overlap;
  if (!o.available) {
    s += fmt::format("  overlap      {}\n", o.note);
    return;
  }
  s += fmt::format("  overlap      {} of {} communication hidden under compute\n",
                   pct_value(hta_percent(o.share, 2), 2), dur(o.communication));
}

// HTA's top kernels, as many as --top asks and HTA kept, named to tell them apart in the width
// the figures leave (24 columns of them).
void kernel_lines(const GpuTimeline& t, const TextOptions& o, std::string& s) {
  std::string types;
  int listed = 0;
  for (const auto& k : t.hta_kernels.types) {
    if (listed++ == 4) break;
    if (!types.empty()) types += ", ";
    types += fmt::format("{} {}", k.label, pct_value(hta_percent(k.share, 1)));
  }
  if (!types.empty()) s += fmt::format("  kernel types {}\n", types);
  std::vector<const HtaKernelRow*> rows;
  std::vector<std::string> names;
  for (const auto& r : t.hta_kernels.top)
    if (!r.others && rows.size() < o.top) rows.push_back(&r), names.push_back(terminal_safe(r.name));
  const std::size_t columns = o.width ? o.width : 100;
  if (!o.wide) names = shorten_distinct(names, columns > 48 ? columns - 24 : 24);
  // Where a kernel is in both, its time and count here can differ from the drill-down's: say why.
  if (!rows.empty())
    s += fmt::format("  top kernels  (HTA's definitions{}: counts can differ from the drill-down's, which counts every GPU "
                     "record of the trace)\n", t.hta_load.last_step_dropped ? ", the last profiler step left out" : "");
  for (std::size_t k = 0; k < rows.size(); ++k)
    s += fmt::format("    {:>10}  x{:<6} {}\n", dur(rows[k]->sum), rows[k]->count, names[k]);
}

void launch_lines(const GpuTimeline& t, std::string& s) {
  const auto& l = t.hta_launches;
  if (l.events == 0) return;
  s += fmt::format("  launches     {} joined; {} shorter on GPU than their launch call; {} calls > 50 us; "
                   "{} delays > 100 us (median delay {})\n",
                   l.events, l.short_gpu_kernels, l.runtime_outliers, l.launch_delay_outliers,
                   dur(l.launch_delay.median));
}

void class_lines(const GpuTimeline& t, std::string& s) {
  std::string line;
  int shown = 0;
  for (const auto& c : t.classes.classes) {
    if (shown++ == 6) break;
    if (!line.empty()) line += ", ";
    line += fmt::format("{} {}", kernel_class_name(c.cls), pct_value(100 * c.share));
  }
  if (!line.empty()) s += fmt::format("  classes      {}\n", line);
}

void sync_copy_lines(const GpuTimeline& t, const RankPartition* p, std::string& s) {
  const auto& y = t.syncs;
  if (y.count > 0)
    s += fmt::format("  sync points  {}, host blocked {}, GPU idle after {}\n", sync_calls_text(y, p), dur(y.host_blocked),
                     dur(y.gpu_idle_after));
  const auto& c = t.copies;
  if (c.count > 0)
    s += fmt::format("  copies       {} in {}; pageable {} ({}); not overlapped by kernels {}\n", c.count,
                     dur(c.time), c.pageable_count, dur(c.pageable_time), dur(c.critical_time));
}

void overhead_lines(const GpuTimeline& t, std::string& s) {
  const auto& l = t.launch_overhead;
  if (l.kernels > 0)
    s += fmt::format("  kernels      {} ({} per step), median {}, {} shorter than {}, median gap {}\n", l.kernels,
                     std::isfinite(l.mean_kernels_per_step) ? fmt::format("{:.0f}", l.mean_kernels_per_step) : "n/a",
                     dur(l.kernel_duration.median), pct_value(100 * l.short_kernel_share), dur(l.short_kernel),
                     dur(l.gaps.median));
  for (const auto& d : t.memory.devices) {
    // c10::DeviceType: 0 is the host, 1 CUDA (ROCm reports as CUDA too).
    std::string where = d.device_type == 0 ? "host" : d.device_type == 1 ? fmt::format("gpu {}", d.device_id)
                                                                          : fmt::format("device {}:{}", d.device_type, d.device_id);
    std::string step = d.peak_allocated_step >= 0 ? fmt::format(" in step {}", d.peak_allocated_step) : "";
    s += fmt::format("  memory       {} peak allocated {:.2f} GB{}, peak reserved {:.2f} GB\n", where,
                     static_cast<double>(d.peak_allocated) / 1e9, step, static_cast<double>(d.peak_reserved) / 1e9);
  }
}

}  // namespace

std::string gpu_timeline_text(const GpuTimeline& t, int rank, const TextOptions& o, const RankPartition* p) {
  std::string s = fmt::format("GPU timeline, rank {}", rank);
  if (!t.has_gpu_activity) return s + ": no GPU kernels, copies or memsets in the trace\n";
  s += t.hta_load.last_step_dropped ? " (HTA definitions; last profiler step left out, as HTA does)\n"
                                    : " (HTA definitions)\n";
  summary_line(t, s);
  temporal_lines(t, s);
  idle_lines(t, s);
  overlap_lines(t, s);
  kernel_lines(t, o, s);
  launch_lines(t, s);
  class_lines(t, s);
  sync_copy_lines(t, p, s);
  overhead_lines(t, s);
  return s;
}

}  // namespace stepscope
