#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "report/drilldown_text.hpp"
#include "report/cuda_summary_render.hpp"
#include "report/diagnosis_render.hpp"
#include "report/gpu_timeline_text.hpp"
#include "report/text_layout.hpp"
#include "stepscope/report.hpp"

namespace stepscope {

namespace {

// Length of the well-formed UTF-8 sequence at the start of `s`, 0 when it is not one.
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 && c >= 0xc2 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e && c <= 0xf4 ? 4 : 0;
  if (n == 0 || n > s.size()) return 0;
  for (std::size_t i = 1; i < n; ++i)
    if ((b(i) & 0xc0) != 0x80) return 0;
  if (n == 3 && ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) >= 0xa0))) return 0;  // overlong, surrogate
  if (n == 4 && ((c == 0xf0 && b(1) < 0x90) || (c == 0xf4 && b(1) >= 0x90))) return 0;
  return n;
}

std::uint32_t code_point(std::string_view s, std::size_t n) {
  const auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i])); };
  if (n == 1) return b(0);
  std::uint32_t cp = b(0) & (0xffu >> (n + 1));
  for (std::size_t i = 1; i < n; ++i) cp = (cp << 6) | (b(i) & 0x3f);
  return cp;
}

// Code points a terminal acts on rather than shows: C0 and C1 controls (U+009B is CSI, U+009D
// OSC), DEL, and the bidirectional overrides and isolates that reorder what follows them.
bool acts_on_terminal(std::uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const std::size_t n = utf8_length(s);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[0]));  // a lone byte: 0x9b alone is CSI too
      s.remove_prefix(1);
      continue;
    }
    const std::uint32_t cp = code_point(s, n);
    if (cp < 0x80 && acts_on_terminal(cp)) out += fmt::format("\\x{:02x}", cp);
    else if (acts_on_terminal(cp)) out += fmt::format("\\u{:04x}", cp);
    else out.append(s.data(), n);
    s.remove_prefix(n);
  }
  return out;
}

namespace {

std::string stream_info_text(const std::optional<StreamInfo>& info) {
  if (!info) return "";
  return fmt::format(" ({} stream{})", stream_type_name(info->type),
                     info->priority != 0 ? fmt::format(", priority {}", info->priority) : "");
}

std::string human_ns(ns_t ns) {
  double v = static_cast<double>(ns);
  if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", v / 1e9);
  if (ns >= 1'000'000) return fmt::format("{:.3f} ms", v / 1e6);
  if (ns >= 1'000) return fmt::format("{:.3f} us", v / 1e3);
  return fmt::format("{} ns", ns);
}

std::string bytes_text(std::uint64_t b) {
  double v = static_cast<double>(b);
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", v / (1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", v / (1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.1f} KiB", v / (1ull << 10));
  return fmt::format("{} B", b);
}

std::string step_range(const std::vector<std::int64_t>& steps) {
  if (steps.empty()) return "none (the whole trace is one window)";
  if (steps.size() == 1) return fmt::format("1 (#{})", steps.front());
  return fmt::format("{} (#{}..#{})", steps.size(), steps.front(), steps.back());
}

void render_categories(const IngestSummary& s, const TextOptions& opts, std::string& out) {
  std::vector<std::pair<std::string, std::uint64_t>> cats(s.events_by_category.begin(),
                                                          s.events_by_category.end());
  std::sort(cats.begin(), cats.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::size_t shown = opts.verbose ? cats.size() : std::min<std::size_t>(cats.size(), 8);
  out += "  events by category:\n";
  for (std::size_t i = 0; i < shown; ++i)
    out += fmt::format("    {:<22} {:>10}\n", terminal_safe(cats[i].first), cats[i].second);
  if (shown < cats.size()) out += fmt::format("    ... {} more categories (--verbose)\n", cats.size() - shown);
}

void render_rank(const IngestSummary& s, const TextOptions& opts, std::string& out) {
  out += fmt::format("rank {} ({}) — {}\n", s.rank, s.rank_source, terminal_safe(s.path));
  std::string world = s.world_size ? fmt::format(", world size {}", *s.world_size) : "";
  std::string backend = s.backend.empty() ? "" : fmt::format(", backend {}", terminal_safe(s.backend));
  out += fmt::format("  layout {}{}{}; {} events, {} of JSON\n", s.layout, world, backend, s.events,
                     bytes_text(s.bytes_read));
  out += fmt::format("  time span {}\n", human_ns(s.last_end - s.first_ts));
  out += fmt::format("  ProfilerStep markers: {}\n", step_range(s.profiler_steps));
  render_categories(s, opts, out);
  out += fmt::format("  host threads: {}", s.threads.size());
  std::size_t named = 0;
  for (const auto& t : s.threads)
    if (!t.name.empty() && named++ < 4) out += fmt::format("{} {}", named == 1 ? " —" : ",", terminal_safe(t.name));
  out += "\n";
  if (s.streams.empty()) {
    out += "  GPU: no GPU activity (CPU-only trace)\n";
  } else {
    std::string gpus;
    for (const auto& g : s.gpus) gpus += (gpus.empty() ? "" : ", ") + terminal_safe(g);
    if (s.gpus.size() > 2) gpus = fmt::format("{} x {}", s.gpus.size(), terminal_safe(s.gpus.front()));
    out += fmt::format("  GPU streams: {}{}\n", s.streams.size(), gpus.empty() ? "" : " on " + gpus);
    for (const auto& st : s.streams)
      out += fmt::format("    device {} stream {:<4} {:>8} events, {} busy{}\n", st.device, st.stream, st.events,
                         human_ns(st.busy_ns), stream_info_text(st.info));
  }
  for (const auto& w : s.warnings) out += fmt::format("  warning: {}\n", terminal_safe(ingest_warning_text(w)));
}

}  // namespace

// One rank's GPU timeline is shown by default; with many ranks the others only under --verbose,
// since the verdict and ranks table already compare them.
namespace {
void render_gpu_timelines(const AnalysisResult& r, const TextOptions& opts, const std::vector<std::size_t>& listed,
                          std::string& out) {
  bool shown = false;
  for (std::size_t i : listed) {
    if (i >= r.ranks.size()) break;
    const GpuTimeline& g = r.ranks[i].gpu_timeline;
    if (!g.has_gpu_activity || (shown && !opts.verbose)) continue;
    out += "\n" + gpu_timeline_text(g, r.ranks[i].rank(), opts, &r.ranks[i].partition);
    shown = true;
  }
}
// Shown for Nsight Systems exports, whose users know these tables; for Kineto traces under
// --verbose.
// ANSI colour on a terminal: the verdict bold, what limits it in yellow, section heads bold. Line
// by line over the finished text, so the renderers stay free of escape codes. Trace strings
// were made terminal-safe before, so no escape in them survives to combine with these.
std::string colorize(const std::string& text) {
  constexpr const char* kBold = "\x1b[1m";
  constexpr const char* kYellow = "\x1b[33m";
  constexpr const char* kReset = "\x1b[0m";
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    const char* style = line.starts_with("verdict:") ? kBold
                        : line.starts_with("warning:") || line.starts_with("  ! [") ? kYellow
                        : (line.starts_with("levers") || line.starts_with("trust (") || line.starts_with("drill-down")) ? kBold
                                                                                                                     : nullptr;
    if (style) out += style, out += line, out += kReset;
    else out += line;
    if (end < text.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

// The first rank's drill-down; the other listed ranks' under --verbose.
void render_drilldowns(const AnalysisResult& r, const TextOptions& opts, const std::vector<std::size_t>& listed,
                       std::string& out) {
  for (std::size_t k = 0; k < listed.size() && has_drilldowns(r) && listed[k] < r.ranks.size(); ++k) {
    if (k > 0 && !opts.verbose) break;
    out += "\n" + drilldown_text(*r.ranks[listed[k]].drilldown, r.ranks[listed[k]].rank(), opts);
  }
}
void render_cuda_summaries(const AnalysisResult& r, const TextOptions& opts, const std::vector<std::size_t>& listed,
                           std::string& out) {
  for (std::size_t i : listed)
    if (i < r.ranks.size())
    if (r.ranks[i].cuda_summary.present && (opts.verbose || r.ranks[i].ingest.layout == "nsys sqlite"))
      out += fmt::format("\nrank {} ", r.ranks[i].rank()) + cuda_summary_text(r.ranks[i].cuda_summary, opts);
}
}  // namespace

namespace {

std::string render_plain(const DiagnosedResult& r, const TextOptions& opts) {
  std::string out = report_detail::render_diagnosis_text(r, opts);
  const std::vector<std::size_t> listed = listed_ranks(r, opts.ranks);
  render_gpu_timelines(r, opts, listed, out);
  render_drilldowns(r, opts, listed, out);
  render_cuda_summaries(r, opts, listed, out);
  if (!opts.verbose) return out;
  out += "\ningest:\n";
  for (std::size_t i : listed) {
    if (i >= r.ranks.size()) break;
    render_rank(r.ranks[i].ingest, opts, out);
    out += "\n";
  }
  return out;
}

}  // namespace

// Each rank's reading warnings, the same words on several ranks one line naming them
// ("warning: ranks 0-7: 3 events ...").
std::string render_warnings(const AnalysisResult& r) {
  std::string out;
  for (const auto& w : report_detail::reading_warnings(r)) out += fmt::format("warning: {}\n", terminal_safe(w));
  return out;
}

namespace report_detail {

std::vector<std::string> reading_warnings(const AnalysisResult& r) {
  std::vector<std::string> out = ingest_warning_texts(r.job.warnings);
  std::vector<std::pair<IngestWarning, std::vector<int>>> grouped;
  for (const auto& a : r.ranks)
    for (const auto& w : a.ingest.warnings) {
      auto same = std::find_if(grouped.begin(), grouped.end(), [&](const auto& g) { return g.first == w; });
      if (same == grouped.end()) grouped.push_back({w, {a.rank()}});
      else same->second.push_back(a.rank());
    }
  for (const auto& [w, ranks] : grouped) out.push_back(fmt::format("{}: {}", rank_list(ranks), ingest_warning_text(w)));
  return out;
}

}  // namespace report_detail

std::string render_text(const DiagnosedResult& r, const TextOptions& opts) {
  std::string out = r.ranks.empty() && !r.job.memory_snapshots.empty() ? std::string() : render_plain(r, opts);
  for (const auto& m : r.job.memory_snapshots) out += (out.empty() ? "" : "\n") + memory::render_text(m);
  if (!opts.wide) out = fit_to_width(out, opts.width);
  return opts.color ? colorize(out) : out;
}

}  // namespace stepscope
