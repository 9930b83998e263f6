#include "report/drilldown_text.hpp"

#include <fmt/core.h>

#include <cmath>

namespace stepscope {

std::string shorten_middle(std::string_view name, std::size_t width) {
  if (width == 0 || name.size() <= width) return std::string(name);
  if (width < 5) return std::string(name.substr(0, width));
  // Two thirds for the head (the namespace, the kernel and its first template arguments), the
  // rest for the tail (the last template arguments and the parameter list).
  const std::size_t budget = width - 1;  // one column for the ellipsis
  const std::size_t head = budget * 2 / 3, tail = budget - head;
  return std::string(name.substr(0, head)) + "\xE2\x80\xA6" + std::string(name.substr(name.size() - tail));
}

namespace {

std::string ms(ns_t v) { return fmt::format("{:.2f}", static_cast<double>(v) / 1e6); }
std::string pct(double share) { return std::isfinite(share) ? fmt::format("{:.1f}%", 100.0 * share) : "-"; }

// The stage in three letters ("fwd", "bwd", "opt"), or "".
std::string stage_label(StageHint s) {
  static const char* const kShort[] = {"fwd", "bwd", "opt"};
  return s == StageHint::None ? "" : kShort[static_cast<int>(s)];
}

// The name column takes what the terminal leaves after the figures (52 columns), at least 24.
std::size_t name_width(const TextOptions& o) {
  if (o.wide) return 0;
  const std::size_t columns = o.width ? o.width : 100;
  return columns > 76 ? columns - 52 : 24;
}

void render_operators(const OperatorView& v, const TextOptions& o, std::string& out) {
  out += fmt::format("  {:<{}} {:>8} {:>8} {:>8} {:>6} {:>7}\n", "operators (by host self time; ms)", name_width(o) + 2, "self",
                     "total", "gpu", "calls", "of step");
  for (std::size_t k = 0; k < v.rows.size() && k < o.top; ++k) {
    const OperatorRow& r = v.rows[k];
    out += fmt::format("    {:<{}} {:>8} {:>8} {:>8} {:>6} {:>7}  {}{}\n", terminal_safe(shorten_middle(r.name, name_width(o))),
                       name_width(o),
                       ms(r.host_self), ms(r.host_total), ms(r.gpu_total), r.calls, pct(r.step_share), stage_label(r.stage),
                       r.on_critical_path ? " *path" : "");
  }
}

void render_kernels(const KernelView& v, const TextOptions& o, std::string& out) {
  out += fmt::format("  {:<{}} {:>8} {:>6} {:>8} {:>6}  {}\n", "kernels (by total time; ms)", name_width(o) + 2, "total", "share",
                     "mean", "calls", "class");
  for (std::size_t k = 0; k < v.rows.size() && k < o.top; ++k) {
    const KernelRow& r = v.rows[k];
    out += fmt::format("    {:<{}} {:>8} {:>6} {:>8.3f} {:>6}  {}{}\n", terminal_safe(shorten_middle(r.name, name_width(o))),
                       name_width(o),
                       ms(r.total), pct(r.share), r.mean / 1e6, r.calls, kernel_class_name(r.cls),
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
                         pct(static_cast<double>(t.duration) / static_cast<double>(cp.length)));
  }
  out += fmt::format("  critical path of {}: {} ms: {}\n", cp.annotation.empty() ? "the trace" : terminal_safe(cp.annotation),
                     ms(cp.length), parts);
}

void render_sequences(const KernelSequences& s, const TextOptions& o, std::string& out) {
  if (s.sequences.empty()) return;
  out += fmt::format("  kernel sequences under {} (fusion candidates):\n", terminal_safe(s.op));
  for (std::size_t k = 0; k < s.sequences.size() && k < 3; ++k) {
    const KernelSequence& q = s.sequences[k];
    std::string names;
    for (std::size_t n = 1; n < q.pattern.size(); ++n)
      names += (n > 1 ? ", " : "") + terminal_safe(shorten_middle(q.pattern[n], o.wide ? 0 : 28));
    out += fmt::format("    {}x {} ms on the GPU: {}\n", q.count, ms(q.gpu_time), names);
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

std::string drilldown_text(const DrillDown& d, const TextOptions& o) {
  std::string out = fmt::format("drill-down (rank {}):\n", d.rank);
  if (!d.operators.empty()) render_operators(d.operators.front(), o, out);
  if (!d.kernels.rows.empty()) render_kernels(d.kernels, o, out);
  render_critical_path(d.critical_path, out);
  render_sequences(d.sequences, o, out);
  render_memory(d.memory, out);
  return out;
}

}  // namespace stepscope
