#include "report/drilldown_text.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "report/text_layout.hpp"

namespace stepscope {

namespace {

std::string ms_figure(ns_t v) { return fmt::format("{:.2f}", static_cast<double>(v) / 1e6); }
std::string share_pct(double share) { return std::isfinite(share) ? fmt::format("{:.1f}%", 100.0 * share) : "-"; }

// The stage in three letters ("fwd", "bwd", "opt"), or "".
std::string stage_label(StageHint s) {
  static const char* const kShort[] = {"fwd", "bwd", "opt"};
  return s == StageHint::None ? "" : kShort[static_cast<int>(s)];
}

// The name column takes what the terminal leaves after the indent and the figures (60 columns
// with the stage and "*path", or the class and data type), at least 20; with --wide the longest
// name shown, so the columns stay aligned.
std::size_t name_width(const TextOptions& o, const std::vector<std::string>& names) {
  if (o.wide) {
    std::size_t longest = 0;
    for (const auto& n : names) longest = std::max(longest, display_width(n));
    return longest;
  }
  const std::size_t columns = o.width ? o.width : 100;
  return columns > 80 ? columns - 60 : 20;
}

// The first `top` rows' names, terminal-safe and shortened to tell them apart.
template <class Rows>
std::vector<std::string> shown_names(const Rows& rows, const TextOptions& o) {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < rows.size() && k < o.top; ++k) names.push_back(terminal_safe(rows[k].name));
  return o.wide ? names : shorten_distinct(names, name_width(o, names));
}

// fmt pads by code points, as the terminal shows them.
std::string pad_right(const std::string& s, std::size_t width) {
  const std::size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

// The table's title on the header line when it fits above the names, else on a line of its own.
std::string table_title(const char* title, std::size_t width) {
  if (display_width(title) <= width + 2) return pad_right(title, width + 2);
  return std::string(title) + "\n  " + std::string(width + 2, ' ');
}

void render_operators(const OperatorView& v, const TextOptions& o, std::string& out) {
  const std::vector<std::string> names = shown_names(v.rows, o);
  const std::size_t width = std::max<std::size_t>(name_width(o, names), 8);
  out += fmt::format("  {} {:>8} {:>8} {:>8} {:>6} {:>7}\n", table_title("operators (by host self time; ms)", width), "self",
                     "total", "gpu", "calls", "of step");
  for (std::size_t k = 0; k < names.size(); ++k) {
    const OperatorRow& r = v.rows[k];
    std::string row = fmt::format("    {} {:>8} {:>8} {:>8} {:>6} {:>7}  {}{}", pad_right(names[k], width), ms_figure(r.host_self),
                                  ms_figure(r.host_total), ms_figure(r.gpu_total), r.calls, share_pct(r.step_share), stage_label(r.stage),
                                  r.on_critical_path ? " *path" : "");
    row.erase(row.find_last_not_of(' ') + 1);
    out += row + "\n";
  }
}

void render_kernels(const KernelView& v, const TextOptions& o, std::string& out) {
  const std::vector<std::string> names = shown_names(v.rows, o);
  const std::size_t width = std::max<std::size_t>(name_width(o, names), 8);
  out += fmt::format("  {} {:>8} {:>6} {:>8} {:>6}  {}\n", table_title("kernels (by total time; ms)", width), "total", "share",
                     "mean", "calls", "class");
  for (std::size_t k = 0; k < names.size(); ++k) {
    const KernelRow& r = v.rows[k];
    out += fmt::format("    {} {:>8} {:>6} {:>8.3f} {:>6}  {}{}\n", pad_right(names[k], width), ms_figure(r.total), share_pct(r.share),
                       r.mean / 1e6, r.calls, kernel_class_name(r.cls),
                       r.dtype != DataType::Unknown ? std::string(" ") + data_type_name(r.dtype) : "");
  }
}

void render_critical_path(const CriticalPath& cp, std::string& out) {
  if (!cp.success) {
    out += fmt::format("  critical path: not available ({})\n", cp.error);
    return;
  }
  std::string parts;
  for (int k = 0; k < kCpKindCount; ++k) {
    const CpTotal& t = cp.by_kind[k];
    if (t.duration <= 0 || cp.length <= 0) continue;
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", cp_kind_name(static_cast<CpKind>(k)),
                         share_pct(static_cast<double>(t.duration) / static_cast<double>(cp.length)));
  }
  // Its shares are of one step's longest dependency path (HTA's), not of the step's time as the
  // partition and the verdict split it: a step can be 86% GPU compute and its path all host.
  out += fmt::format("  critical path of {}: {} ms: {} (shares of the path, not of the step)\n",
                     cp.annotation.empty() ? "the trace" : terminal_safe(cp.annotation), ms_figure(cp.length), parts);
}

void render_sequences(const KernelSequences& s, const TextOptions& o, std::string& out) {
  if (s.sequences.empty()) return;
  out += fmt::format("  kernel sequences under {} (fusion candidates):\n", terminal_safe(s.op));
  for (std::size_t k = 0; k < s.sequences.size() && k < 3; ++k) {
    const KernelSequence& q = s.sequences[k];
    std::vector<std::string> pattern;
    for (std::size_t n = 1; n < q.pattern.size(); ++n) pattern.push_back(terminal_safe(q.pattern[n]));
    if (!o.wide) pattern = shorten_distinct(pattern, 28);
    std::string names;
    for (const auto& n : pattern) names += (names.empty() ? "" : ", ") + n;
    out += fmt::format("    {}x {} ms on the GPU: {}\n", q.count, ms_figure(q.gpu_time), names);
  }
}

void render_memory(const MemoryTimeline& m, std::string& out) {
  for (const DeviceMemoryTimeline& d : m.devices) {
    if (d.device_type == 0) continue;  // host allocations: the GPU's memory is the question
    out += fmt::format("  memory (device {}): peak {:.1f} MiB allocated, {:.1f} MiB reserved{}\n", d.device_id,
                       static_cast<double>(d.peak_allocated) / 1048576.0, static_cast<double>(d.peak_reserved) / 1048576.0,
                       d.peak_op.empty() ? "" : ", peak in " + terminal_safe(d.peak_op));
  }
}

}  // namespace

std::string drilldown_text(const DrillDown& d, int rank, const TextOptions& o) {
  std::string out = fmt::format("drill-down (rank {}):\n", rank);
  if (!d.operators.empty()) render_operators(d.operators.front(), o, out);
  if (!d.kernels.rows.empty()) render_kernels(d.kernels, o, out);
  render_critical_path(d.critical_path, out);
  render_sequences(d.sequences, o, out);
  render_memory(d.memory, out);
  return out;
}

}  // namespace stepscope
