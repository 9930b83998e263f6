// The memory analysis as text, JSON and an HTML section: each renders one SnapshotAnalysis and
// computes nothing new. Strings from the snapshot (file names, function names) are untrusted:
// control characters are replaced in text and every HTML string is escaped.
#include <nlohmann/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <climits>

#include "stepscope/memory/analysis.hpp"

namespace stepscope::memory {

namespace {

std::string safe(std::string_view s) {
  std::string out;
  for (char c : s) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  return out;
}

std::string esc(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') ? '?' : c;
    }
  }
  return out;
}

double mem_pct(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string frame_text(const Frame& f) { return fmt::format("{} ({}:{})", safe(f.name), safe(f.filename), f.line); }

void text_device(const DeviceMemory& d, std::string& out) {
  out += fmt::format("\n{}\n", safe(d.headline));
  out += fmt::format("  peak: {} allocated, {} reserved, trace entry {}{}{}\n", human_bytes(d.peak.allocated_bytes),
                     human_bytes(d.peak.reserved_bytes), d.peak.entry, d.peak.step ? fmt::format(", step {}", d.peak.step) : "",
                     d.peak.phase != Phase::none ? fmt::format(", in {}", phase_name(d.peak.phase)) : "");
  for (std::size_t c = 0; c < kMemClasses; ++c)
    out += fmt::format("    {:<16} {:>12}  {:5.1f}%\n", class_name(static_cast<MemClass>(c)), human_bytes(d.peak.by_class[c]),
                       mem_pct(d.peak.by_class[c], d.peak.allocated_bytes));
  if (!d.step_peaks.empty()) {
    out += "  step peaks:";
    for (std::size_t i = 0; i < d.step_peaks.size(); ++i) out += fmt::format(" {}={}", i + 1, human_bytes(d.step_peaks[i].allocated_bytes));
    out += "\n";
  }
  out += "  how the classes were recognised:\n";
  for (const auto& e : d.evidence)
    if (e.peak_bytes > 0)
      out += fmt::format("    {:<16} {:>12}  {} allocations: {}\n", class_name(e.cls), human_bytes(e.peak_bytes), e.allocations,
                         reason_text(e.reason));
  const Fragmentation& f = d.at_peak;
  out += fmt::format("  fragmentation at the peak: {} cached free ({:.1f}% of reserved), largest free block {}; small pool {} "
                     "segments ({}), large pool {} segments ({}); expandable_segments {}\n",
                     human_bytes(f.cached_free_bytes), mem_pct(f.cached_free_bytes, f.reserved_bytes), human_bytes(f.largest_free_block),
                     f.small_segments, human_bytes(f.small_segment_bytes), f.large_segments, human_bytes(f.large_segment_bytes),
                     d.expandable_segments ? "on" : "off");
  if (d.oom) {
    const OomReport& o = *d.oom;
    out += fmt::format("  OUT OF MEMORY (trace entry {}{}): {} requested on stream {}\n", o.entry,
                       o.count > 1 ? fmt::format(", first of {}", o.count) : "", human_bytes(o.requested_bytes), o.stream);
    out += fmt::format("    {}\n", o.explanation);
    out += "    alive:";
    for (std::size_t c = 0; c < kMemClasses; ++c)
      if (o.alive.by_class[c] > 0) out += fmt::format(" {} {}", class_name(static_cast<MemClass>(c)), human_bytes(o.alive.by_class[c]));
    out += "\n";
    for (const Frame& fr : o.frames) out += fmt::format("    at {}\n", frame_text(fr));
  }
  out += "  levers (bytes freed at the peak):\n";
  for (const auto& l : d.levers) {
    if (!l.applies) continue;
    out += fmt::format("    - {}: {}\n", l.title, l.gain);
    out += fmt::format("      when: {}; risk: {}\n", l.precondition, l.risk);
  }
}

nlohmann::json by_class_json(const ByClass& b) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t c = 0; c < kMemClasses; ++c) j[std::string(class_name(static_cast<MemClass>(c)))] = b[c];
  return j;
}

// The trace's microseconds as the report's nanoseconds; null before PyTorch 2.1 recorded times.
nlohmann::json time_ns(std::int64_t time_us) {
  if (time_us < 0 || time_us > INT64_MAX / 1000) return nullptr;
  return time_us * 1000;
}

nlohmann::json moment_json(const MemoryMoment& m) {
  return {{"entry", m.entry},
          {"time_ns", time_ns(m.time_us)},
          {"allocated_bytes", m.allocated_bytes},
          {"reserved_bytes", m.reserved_bytes},
          {"by_class", by_class_json(m.by_class)},
          {"step", m.step},
          {"phase", std::string(phase_name(m.phase))}};
}

nlohmann::json fragmentation_json(const Fragmentation& f) {
  return {{"reserved_bytes", f.reserved_bytes},
          {"allocated_bytes", f.allocated_bytes},
          {"cached_free_bytes", f.cached_free_bytes},
          {"largest_free_block", f.largest_free_block},
          {"largest_free_block_large_pool", f.largest_free_block_large},
          {"free_blocks", f.free_blocks},
          {"small_pool", {{"segments", f.small_segments}, {"bytes", f.small_segment_bytes}, {"free_bytes", f.small_free_bytes}}},
          {"large_pool", {{"segments", f.large_segments}, {"bytes", f.large_segment_bytes}, {"free_bytes", f.large_free_bytes}}}};
}

nlohmann::json frames_json(const std::vector<Frame>& frames) {
  nlohmann::json j = nlohmann::json::array();
  for (const Frame& f : frames) j.push_back({{"filename", f.filename}, {"name", f.name}, {"line", f.line}});
  return j;
}

nlohmann::json device_json(const DeviceMemory& d) {
  nlohmann::json j;
  j["device"] = d.device;
  j["headline"] = d.headline;
  j["entries"] = d.entries;
  j["allocations"] = d.allocations;
  j["steps"] = d.steps;
  j["peak"] = moment_json(d.peak);
  j["step_peaks"] = nlohmann::json::array();
  for (const auto& s : d.step_peaks) j["step_peaks"].push_back(moment_json(s));
  j["fragmentation"] = {{"at_peak", fragmentation_json(d.at_peak)},
                        {"expandable_segments", d.expandable_segments},
                        {"segment_frees", d.segment_frees},
                        {"segment_reallocs", d.segment_reallocs}};
  if (d.oom) {
    const OomReport& o = *d.oom;
    j["fragmentation"]["at_oom"] = fragmentation_json(o.fragmentation);
    j["oom"] = {{"entry", o.entry},
                {"time_ns", time_ns(o.time_us)},
                {"requested_bytes", o.requested_bytes},
                {"stream", o.stream},
                {"device_free_bytes", o.device_free_bytes},
                {"frames", frames_json(o.frames)},
                {"alive", moment_json(o.alive)},
                {"cause", o.fragmentation_cause ? "fragmentation" : "exhaustion"},
                {"explanation", o.explanation},
                {"count", o.count}};
  }
  auto& ev = j["evidence"] = nlohmann::json::array();
  for (const auto& e : d.evidence)
    ev.push_back({{"class", std::string(class_name(e.cls))},
                  {"reason", std::string(reason_name(e.reason))},
                  {"how", std::string(reason_text(e.reason))},
                  {"allocations", e.allocations},
                  {"peak_bytes", e.peak_bytes}});
  auto& lv = j["levers"] = nlohmann::json::array();
  for (const auto& l : d.levers)
    lv.push_back({{"id", l.id},
                  {"title", l.title},
                  {"applies", l.applies},
                  {"frees_bytes", l.frees_bytes},
                  {"of_bytes", l.peak_bytes},
                  {"precondition", l.precondition},
                  {"gain", l.gain},
                  {"risk", l.risk}});
  auto& tl = j["timeline"] = nlohmann::json::array();
  for (const auto& m : d.timeline)
    tl.push_back({{"entry", m.entry},
                  {"time_ns", time_ns(m.time_us)},
                  {"allocated_bytes", m.allocated_bytes},
                  {"reserved_bytes", m.reserved_bytes},
                  {"by_class", by_class_json(m.by_class)}});
  return j;
}

constexpr std::array<const char*, kMemClasses> kColours{"#1565c0", "#6a1b9a", "#ef6c00", "#2e7d32", "#9e9d24", "#9e9e9e"};

// Memory over the trace, stacked by class, the peak marked: inline SVG, no script.
std::string timeline_svg(const DeviceMemory& d) {
  constexpr double kW = 900, kH = 220, kLeft = 70, kTop = 10, kBottom = 24;
  const auto& tl = d.timeline;
  if (tl.size() < 2) return {};
  std::int64_t ymax = 1;
  for (const auto& m : tl) ymax = std::max({ymax, m.allocated_bytes, m.reserved_bytes});
  const double plot_w = kW - kLeft - 10, plot_h = kH - kTop - kBottom;
  auto x = [&](std::size_t i) { return kLeft + plot_w * static_cast<double>(i) / static_cast<double>(tl.size() - 1); };
  auto y = [&](std::int64_t v) { return kTop + plot_h * (1.0 - static_cast<double>(v) / static_cast<double>(ymax)); };
  std::string out = fmt::format(
      "<svg class=\"chart memory-timeline\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" aria-label=\"memory over time by class, "
      "device {}\">\n",
      kW, kH, d.device);
  out += fmt::format("<text x=\"4\" y=\"{:.0f}\">{}</text><text x=\"4\" y=\"{:.0f}\">0</text>\n", kTop + 10, esc(human_bytes(ymax)),
                     kTop + plot_h);
  for (std::size_t c = kMemClasses; c-- > 0;) {
    std::string top, bottom;
    for (std::size_t i = 0; i < tl.size(); ++i) {
      std::int64_t below = 0;
      for (std::size_t k = 0; k < c; ++k) below += std::max<std::int64_t>(0, tl[i].by_class[k]);
      const std::int64_t above = below + std::max<std::int64_t>(0, tl[i].by_class[c]);
      top += fmt::format("{:.1f},{:.1f} ", x(i), y(above));
      bottom = fmt::format("{:.1f},{:.1f} ", x(i), y(below)) + bottom;
    }
    out += fmt::format("<polygon fill=\"{}\" fill-opacity=\"0.8\" points=\"{}{}\"><title>{}</title></polygon>\n", kColours[c], top,
                       bottom, class_name(static_cast<MemClass>(c)));
  }
  std::string reserved;
  for (std::size_t i = 0; i < tl.size(); ++i) reserved += fmt::format("{:.1f},{:.1f} ", x(i), y(tl[i].reserved_bytes));
  out += fmt::format("<polyline fill=\"none\" stroke=\"#333\" stroke-dasharray=\"4 3\" points=\"{}\"><title>reserved</title></polyline>\n",
                     reserved);
  for (std::size_t i = 0; i < tl.size(); ++i)
    if (tl[i].entry == d.peak.entry) {
      out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\" stroke=\"#d32f2f\" stroke-width=\"1.5\"/>"
                         "<text x=\"{3:.1f}\" y=\"{4:.0f}\" fill=\"#d32f2f\">peak {5}</text>\n",
                         x(i), kTop, kTop + plot_h, std::min(x(i) + 4, kW - 120), kTop + 12, esc(human_bytes(d.peak.allocated_bytes)));
      break;
    }
  out += "</svg>\n<p class=\"muted\">";
  for (std::size_t c = 0; c < kMemClasses; ++c)
    out += fmt::format("<span style=\"color:{}\">&#9632;</span> {} ", kColours[c], class_name(static_cast<MemClass>(c)));
  out += "&#8212; dashed: reserved</p>\n";
  return out;
}

void html_device(const DeviceMemory& d, std::string& out) {
  out += fmt::format("<h3>{}</h3>\n", esc(d.headline));
  out += timeline_svg(d);
  out += "<table><tr><th>class at the peak</th><th>bytes</th><th>share</th></tr>\n";
  for (std::size_t c = 0; c < kMemClasses; ++c)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.1f}%</td></tr>\n", class_name(static_cast<MemClass>(c)),
                       esc(human_bytes(d.peak.by_class[c])), mem_pct(d.peak.by_class[c], d.peak.allocated_bytes));
  out += "</table>\n<table><tr><th>class</th><th>at the peak</th><th>allocations</th><th>how it was recognised</th></tr>\n";
  for (const auto& e : d.evidence)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", class_name(e.cls), esc(human_bytes(e.peak_bytes)),
                       e.allocations, esc(reason_text(e.reason)));
  const Fragmentation& f = d.at_peak;
  out += fmt::format("</table>\n<p>Fragmentation at the peak: {} cached free of {} reserved, largest free block {}; small pool "
                     "{} segments, large pool {} segments; expandable_segments {}.</p>\n",
                     esc(human_bytes(f.cached_free_bytes)), esc(human_bytes(f.reserved_bytes)), esc(human_bytes(f.largest_free_block)),
                     f.small_segments, f.large_segments, d.expandable_segments ? "on" : "off");
  if (d.oom) {
    out += fmt::format("<p><b>Out of memory</b>: {} requested. {}</p>\n<ul>", esc(human_bytes(d.oom->requested_bytes)),
                       esc(d.oom->explanation));
    for (const Frame& fr : d.oom->frames) out += "<li class=\"name\">" + esc(frame_text(fr)) + "</li>";
    out += "</ul>\n";
  }
  out += "<table><tr><th>lever</th><th>frees</th><th>gain</th><th>precondition</th><th>risk</th></tr>\n";
  for (const auto& l : d.levers)
    if (l.applies)
      out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", esc(l.title), esc(human_bytes(l.frees_bytes)),
                         esc(l.gain), esc(l.precondition), esc(l.risk));
  out += "</table>\n";
}

}  // namespace

// "planned (llama-3-8b, plan memory's model states) against observed at the peak:" and a row per class.
void text_planned(const PlannedVsObserved& p, std::string& out) {
  out += fmt::format("planned ({}, {:.3g} parameters: plan memory's model states) against observed at the peak:\n",
                     safe(p.model), p.parameters);
  out += fmt::format("  {:<16} {:>12} {:>12}\n", "class", "planned", "observed");
  for (const auto& r : p.rows)
    out += fmt::format("  {:<16} {:>12} {:>12}\n", class_name(r.cls), human_bytes(r.planned_bytes),
                       human_bytes(r.observed_bytes));
  if (p.differences.empty()) out += "  the snapshot holds what the model's states need\n";
  for (const auto& d : p.differences) out += fmt::format("  differs: {}\n", safe(d));
}

nlohmann::json planned_json(const PlannedVsObserved& p) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : p.rows)
    rows.push_back({{"class", class_name(r.cls)}, {"planned_bytes", r.planned_bytes},
                    {"observed_bytes", r.observed_bytes}, {"basis", r.basis}});
  return {{"model", p.model}, {"parameters", p.parameters}, {"bytes_per_parameter", p.bytes_per_parameter},
          {"classes", std::move(rows)}, {"differences", p.differences}};
}

void html_planned(const PlannedVsObserved& p, std::string& out) {
  out += fmt::format("<h3>Planned ({}) against observed</h3>\n<table><tr><th>class</th><th>planned</th><th>observed</th>"
                     "<th>how planned</th></tr>\n", esc(p.model));
  for (const auto& r : p.rows)
    out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                       esc(class_name(r.cls)), esc(human_bytes(r.planned_bytes)), esc(human_bytes(r.observed_bytes)),
                       esc(r.basis));
  out += "</table>\n";
  for (const auto& d : p.differences) out += "<p class=\"warn\">" + esc(d) + "</p>\n";
}

std::string render_text(const SnapshotAnalysis& a) {
  std::string out = fmt::format("memory snapshot {}\n", safe(a.path));
  for (const auto& w : a.warnings) out += fmt::format("warning: {}\n", safe(w.text));
  for (const auto& d : a.devices) text_device(d, out);
  if (a.planned) text_planned(*a.planned, out);
  return out;
}

nlohmann::json to_json(const SnapshotAnalysis& a) {
  nlohmann::json j;
  j["schema"] = a.schema;
  j["path"] = a.path;
  j["headline"] = a.headline;
  j["warnings"] = warning_texts(a.warnings);
  j["allocator_settings"] = {{"expandable_segments", a.expandable_segments}, {"PYTORCH_CUDA_ALLOC_CONF", a.alloc_conf}};
  auto& devices = j["devices"] = nlohmann::json::array();
  for (const auto& d : a.devices) devices.push_back(device_json(d));
  if (a.planned) j["planned"] = planned_json(*a.planned);
  return j;
}

std::string render_html_section(const SnapshotAnalysis& a) {
  std::string out = "<section class=\"memory\">\n<h2>Memory snapshot</h2>\n";
  out += "<p class=\"muted name\">" + esc(a.path) + "</p>\n";
  for (const auto& w : a.warnings) out += "<p class=\"warn\">" + esc(w.text) + "</p>\n";
  for (const auto& d : a.devices) html_device(d, out);
  if (a.planned) html_planned(*a.planned, out);
  out += "</section>\n";
  return out;
}

std::vector<MemoryDiff> diff_snapshots(const SnapshotAnalysis& base, const SnapshotAnalysis& test) {
  std::vector<MemoryDiff> out;
  for (const auto& b : base.devices)
    for (const auto& t : test.devices) {
      if (b.device != t.device) continue;
      MemoryDiff d;
      d.base_path = base.path;
      d.test_path = test.path;
      d.device = b.device;
      d.base_peak = b.peak.allocated_bytes;
      d.test_peak = t.peak.allocated_bytes;
      d.base_reserved = b.peak.reserved_bytes;
      d.test_reserved = t.peak.reserved_bytes;
      d.base_oom = b.oom.has_value();
      d.test_oom = t.oom.has_value();
      for (std::size_t c = 0; c < kMemClasses; ++c) d.classes.push_back({static_cast<MemClass>(c), b.peak.by_class[c], t.peak.by_class[c]});
      const std::int64_t delta = d.test_peak - d.base_peak;
      std::string biggest;
      std::int64_t most = 0;
      for (const auto& c : d.classes)
        if (c.base_bytes - c.test_bytes > most) {
          most = c.base_bytes - c.test_bytes;
          biggest = std::string(class_name(c.cls));
        }
      d.headline = fmt::format("device {}: peak {} -> {} ({}{}){}{}", d.device, human_bytes(d.base_peak), human_bytes(d.test_peak),
                               delta > 0 ? "+" : "", human_bytes(delta),
                               most > 0 ? fmt::format(", mostly {} freed ({})", biggest, human_bytes(most)) : "",
                               d.base_oom && !d.test_oom ? "; the OOM is gone" : (!d.base_oom && d.test_oom ? "; the test run hit an OOM" : ""));
      out.push_back(std::move(d));
    }
  return out;
}

std::string render_diff_text(const std::vector<MemoryDiff>& diffs) {
  std::string out;
  for (const auto& d : diffs) {
    out += safe(d.headline) + "\n";
    out += fmt::format("  {:<16} {:>12} {:>12} {:>12}\n", "class at peak", "base", "test", "change");
    for (const auto& c : d.classes)
      out += fmt::format("  {:<16} {:>12} {:>12} {:>12}\n", class_name(c.cls), human_bytes(c.base_bytes), human_bytes(c.test_bytes),
                         human_bytes(c.test_bytes - c.base_bytes));
    out += fmt::format("  {:<16} {:>12} {:>12} {:>12}\n", "reserved", human_bytes(d.base_reserved), human_bytes(d.test_reserved),
                       human_bytes(d.test_reserved - d.base_reserved));
  }
  if (diffs.empty()) out += "no device in common between the two snapshots\n";
  return out;
}

nlohmann::json diff_to_json(const std::vector<MemoryDiff>& diffs) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& d : diffs) {
    nlohmann::json classes = nlohmann::json::object();
    for (const auto& c : d.classes)
      classes[std::string(class_name(c.cls))] = {{"base_bytes", c.base_bytes}, {"test_bytes", c.test_bytes}, {"change_bytes", c.test_bytes - c.base_bytes}};
    j.push_back({{"device", d.device},
                 {"base", d.base_path},
                 {"test", d.test_path},
                 {"peak", {{"base_bytes", d.base_peak}, {"test_bytes", d.test_peak}, {"change_bytes", d.test_peak - d.base_peak}}},
                 {"reserved", {{"base_bytes", d.base_reserved}, {"test_bytes", d.test_reserved}}},
                 {"by_class", classes},
                 {"oom", {{"base", d.base_oom}, {"test", d.test_oom}}},
                 {"headline", d.headline}});
  }
  return {{"schema", "stepscope.memory_diff/0.1"}, {"devices", j}};
}

}  // namespace stepscope::memory
