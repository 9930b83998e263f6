// Views of a watch: the refreshing terminal block, the final summary, and the JSON document.
#include "stepscope/watch/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace stepscope::watch {

namespace {

using json = nlohmann::ordered_json;

std::string opt(const std::optional<double>& v, const char* format = "{:.0f}") {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

std::string live_host_lines(const Series& series, const HostReading& h) {
  double cpu = 0;
  int threads = 0;
  for (const auto& p : h.processes) {
    cpu += p.cpu_pct;
    threads += p.threads;
  }
  const ThreadReading* top = nullptr;
  int runnable = 0, in_io = 0;
  for (const auto& t : h.threads) {
    if (!top || t.cpu_pct + t.wait_pct.value_or(0) > top->cpu_pct + top->wait_pct.value_or(0))
      top = &t;
    runnable += t.state == 'R';
    in_io += t.state == 'D';
  }
  double rd = 0, wr = 0;
  for (const auto& p : h.processes) {
    rd += p.read_mbps.value_or(0);
    wr += p.write_mbps.value_or(0);
  }
  std::string out = fmt::format(
      "host  cpu {:>5.0f}% of a core · {} proc · {} threads ({} running, {} in I/O) · io r {:.1f} "
      "w {:.1f} MB/s\n",
      cpu, h.processes.size(), threads, runnable, in_io, rd, wr);
  if (top)
    out += fmt::format("      top thread {} '{}' {:.0f}% on CPU + {:.0f}% waiting for one\n",
                       top->tid, sanitize(top->comm), top->cpu_pct, top->wait_pct.value_or(0));
  out += fmt::format(
      "      system busy {}% iowait {}% · disk r {} w {} MB/s busy {}% · net rx {} tx {} MB/s\n",
      opt(h.system_busy_pct), opt(h.system_iowait_pct, "{:.1f}"), opt(h.disk_read_mbps, "{:.1f}"),
      opt(h.disk_write_mbps, "{:.1f}"), opt(h.disk_busy_pct), opt(h.net_rx_mbps, "{:.1f}"),
      opt(h.net_tx_mbps, "{:.1f}"));
  return out;
}

std::string live_gpu_line(const GpuReading& g) {
  return fmt::format(
      "gpu{} util {:>3}% mem {:>3}% · sm {}/{} MHz · {}/{} W · {} C · mem {}/{} MiB · pcie rx {} "
      "MB/s · {}{}\n",
      g.index, opt(g.util_pct), opt(g.mem_util_pct), opt(g.sm_clock_mhz), opt(g.sm_clock_max_mhz),
      opt(g.power_w), opt(g.power_limit_w), opt(g.temp_c), opt(g.mem_used_mib),
      opt(g.mem_total_mib), opt(g.pcie_rx_mbps),
      g.throttle_reasons
          ? "throttle " + throttle::describe(*g.throttle_reasons & ~throttle::kGpuIdle)
          : "",
      g.target_pids.empty() ? "" : fmt::format(" · {} watched proc", g.target_pids.size()));
}

std::string format_value(double v) {
  if (std::abs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  if (std::abs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::abs(v) >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

json opt_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The readings keep the units of top and nvidia-smi (percent of one core, percent of the
// interval); the JSON speaks the analysis report's language: fractions 0..1 (`_share`) and CPU
// in cores (`_cores`, 1 = one core busy the whole interval).
json share(const std::optional<double>& pct) { return pct ? json(*pct / 100.0) : json(nullptr); }
double cores(double pct) { return pct / 100.0; }

json finding_json(const LiveFinding& f) {
  json ev = json::array();
  for (const auto& e : f.evidence)
    ev.push_back(
        {{"metric", e.metric}, {"value", e.value}, {"unit", e.unit}, {"meaning", e.meaning}});
  json margins = json::array();
  for (const auto& m : f.basis.margins)
    margins.push_back({{"metric", m.metric},
                       {"value", m.value},
                       {"threshold", m.threshold},
                       {"distance", m.distance()}});
  return {{"rule", f.rule},
          {"title", f.title},
          {"confidence", to_string(f.confidence)},
          {"evidence", ev},
          {"next_step", f.next_step},
          {"command", f.command},
          {"confidence_basis",
           {{"samples", f.basis.samples},
            {"margins", margins},
            {"ceiling_reason", f.basis.ceiling_reason},
            {"text", f.basis.text},
            {"to_raise", f.basis.to_raise}}},
          {"shown_at_s", f.shown_at_s}};
}

// Said plainly whenever no GPU of the job was seen: a host-side verdict is not a GPU verdict.
std::string gpu_side_lines(const Classification& c) {
  if (c.gpu_in_view) return "";
  return fmt::format(
      "  gpu side: unknown ({}). Whether a GPU waits on this process cannot be told from here; "
      "the verdict is host-side only.\n  to find out: {}\n",
      sanitize(c.gpu_unknown_reason), c.gpu_how_to_find_out);
}

std::string confidence_lines(const LiveFinding& f) {
  std::string out;
  if (!f.basis.text.empty()) out += fmt::format("  confidence: {}\n", f.basis.text);
  if (!f.basis.to_raise.empty()) out += fmt::format("  to raise it: {}\n", f.basis.to_raise);
  return out;
}

json gpu_stats_json(const GpuStats& g) {
  return {{"index", g.index},
          {"name", g.name},
          {"samples", g.samples},
          {"used_by_target", g.used_by_target},
          {"util_mean_share", share(g.util_mean)},
          {"util_std_share", share(g.util_std)},
          {"util_min_share", share(g.util_min)},
          {"util_max_share", share(g.util_max)},
          {"swing_share", opt_json(g.swing_share)},
          {"sm_clock_ratio", opt_json(g.sm_clock_ratio)},
          {"power_ratio", opt_json(g.power_ratio)},
          {"mem_used_ratio", opt_json(g.mem_used_ratio)},
          {"mem_util_mean_share", share(g.mem_util_mean)},
          {"pcie_rx_mbps_mean", opt_json(g.pcie_rx_mbps_mean)},
          {"throttled_share", g.throttled_share},
          {"throttle_reasons", throttle::describe(g.throttle_reasons_seen)},
          {"edge_idle_samples", g.edge_idle_samples}};
}

json host_stats_json(const HostStats& h) {
  return {{"samples", h.samples},
          {"cpus_known", h.cpus_known},
          {"cpu_mean_cores", cores(h.cpu_mean_pct)},
          {"cpu_max_cores", cores(h.cpu_max_pct)},
          {"usable_cpus", h.effective_cpus},
          {"max_processes", h.max_processes},
          {"max_threads", h.max_threads},
          {"top_thread",
           {{"tid", h.top_thread_tid},
            {"comm", h.top_thread_comm},
            {"demand_cores", cores(h.top_thread_demand_pct)},
            {"cpu_cores", cores(h.top_thread_cpu_pct)},
            {"io_share", h.top_thread_io_share}}},
          {"top_process",
           {{"pid", h.top_process_pid},
            {"comm", h.top_process_comm},
            {"cpu_cores", cores(h.top_process_cpu_pct)}}},
          {"busy_threads", h.busy_threads},
          {"second_thread_demand_cores", cores(h.second_thread_demand_pct)},
          {"demand_cores", h.demand_cores},
          {"runnable_threads", h.runnable_threads},
          {"io_blocked_threads", h.io_blocked_threads},
          {"involuntary_cs_per_s", opt_json(h.involuntary_cs_per_s)},
          {"voluntary_cs_per_s", opt_json(h.voluntary_cs_per_s)},
          {"read_mbps", opt_json(h.read_mbps)},
          {"write_mbps", opt_json(h.write_mbps)},
          {"system_iowait_share", share(h.system_iowait_pct)},
          {"system_busy_share", share(h.system_busy_pct)},
          {"disk_busy_share", share(h.disk_busy_pct)},
          {"disk_read_mbps", opt_json(h.disk_read_mbps)},
          {"disk_write_mbps", opt_json(h.disk_write_mbps)},
          {"net_rx_mbps", opt_json(h.net_rx_mbps)},
          {"net_tx_mbps", opt_json(h.net_tx_mbps)},
          {"cgroup_throttled_share", share(h.cgroup_throttled_pct)},
          {"rss_max_mib", opt_json(h.rss_max_mib)}};
}

// Samples are kept compact: per-process rows in full, threads only the busiest few.
constexpr size_t kJsonThreadsPerSample = 8;

json sample_json(const Sample& s) {
  json j = {{"t_s", s.t_s}};
  if (s.host) {
    const auto& h = *s.host;
    json procs = json::array();
    for (const auto& p : h.processes)
      procs.push_back({{"pid", p.pid},
                       {"ppid", p.ppid},
                       {"comm", p.comm},
                       {"cpu_cores", cores(p.cpu_pct)},
                       {"threads", p.threads},
                       {"rss_mib", opt_json(p.rss_mib)},
                       {"read_mbps", opt_json(p.read_mbps)},
                       {"write_mbps", opt_json(p.write_mbps)},
                       {"voluntary_cs_per_s", opt_json(p.voluntary_cs_per_s)},
                       {"involuntary_cs_per_s", opt_json(p.involuntary_cs_per_s)}});
    std::vector<const ThreadReading*> top;
    for (const auto& t : h.threads) top.push_back(&t);
    std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->cpu_pct > b->cpu_pct; });
    if (top.size() > kJsonThreadsPerSample) top.resize(kJsonThreadsPerSample);
    json threads = json::array();
    for (const auto* t : top)
      threads.push_back({{"tid", t->tid},
                         {"pid", t->pid},
                         {"comm", t->comm},
                         {"state", std::string(1, t->state)},
                         {"cpu_cores", cores(t->cpu_pct)},
                         {"wait_share", share(t->wait_pct)}});
    j["host"] = {{"processes", procs},
                 {"top_threads", threads},
                 {"thread_count", h.threads.size()},
                 {"system_busy_share", share(h.system_busy_pct)},
                 {"system_iowait_share", share(h.system_iowait_pct)},
                 {"disk_read_mbps", opt_json(h.disk_read_mbps)},
                 {"disk_write_mbps", opt_json(h.disk_write_mbps)},
                 {"disk_busy_share", share(h.disk_busy_pct)},
                 {"net_rx_mbps", opt_json(h.net_rx_mbps)},
                 {"net_tx_mbps", opt_json(h.net_tx_mbps)},
                 {"cgroup_throttled_share", share(h.cgroup_throttled_pct)}};
  }
  json gpus = json::array();
  for (const auto& g : s.gpus)
    gpus.push_back(
        {{"index", g.index},
         {"name", g.name},
         {"util_share", share(g.util_pct)},
         {"mem_util_share", share(g.mem_util_pct)},
         {"sm_clock_mhz", opt_json(g.sm_clock_mhz)},
         {"sm_clock_max_mhz", opt_json(g.sm_clock_max_mhz)},
         {"mem_clock_mhz", opt_json(g.mem_clock_mhz)},
         {"power_w", opt_json(g.power_w)},
         {"power_limit_w", opt_json(g.power_limit_w)},
         {"temp_c", opt_json(g.temp_c)},
         {"mem_used_mib", opt_json(g.mem_used_mib)},
         {"mem_total_mib", opt_json(g.mem_total_mib)},
         {"pcie_rx_mbps", opt_json(g.pcie_rx_mbps)},
         {"pcie_tx_mbps", opt_json(g.pcie_tx_mbps)},
         {"throttle_reasons", g.throttle_reasons ? json(*g.throttle_reasons) : json(nullptr)},
         {"target_pids", g.target_pids},
         {"target_mem_mib", g.target_mem_mib}});
  j["gpus"] = gpus;
  return j;
}

std::string gpu_summary_line(const GpuStats& g) {
  std::string out = fmt::format("  gpu{}{}{} util mean {}% (std {}, range {}..{})", g.index,
                                g.name.empty() ? "" : " ", sanitize(g.name), opt(g.util_mean),
                                opt(g.util_std), opt(g.util_min), opt(g.util_max));
  if (g.sm_clock_ratio) out += fmt::format(" · sm clock {:.0f}% of max", *g.sm_clock_ratio * 100);
  if (g.power_ratio) out += fmt::format(" · power {:.0f}% of limit", *g.power_ratio * 100);
  if (g.mem_used_ratio) out += fmt::format(" · memory peak {:.0f}%", *g.mem_used_ratio * 100);
  if (g.throttled_share > 0)
    out += fmt::format(" · throttled in {:.0f}% of samples ({})", g.throttled_share * 100,
                       throttle::describe(g.throttle_reasons_seen));
  if (g.used_by_target) out += " · used by the target";
  if (g.edge_idle_samples > 0)
    out += fmt::format(" · {} idle sample(s) before the job's first GPU work or after its last left out",
                       g.edge_idle_samples);
  return out + "\n";
}

}  // namespace

// C0 controls and DEL, C1 controls (U+0080-U+009F: CSI, OSC), the bidirectional overrides and
// isolates (U+202A-U+202E, U+2066-U+2069), and a byte that starts no UTF-8 sequence (0x9B alone
// is CSI too) all become '?': each would drive or reorder the terminal.
std::string sanitize(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    for (std::size_t k = 1; n > 1 && k < n; ++k)
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) n = 0;
    const std::string_view seq = n ? std::string_view(s).substr(i, n) : std::string_view();
    const bool control = n == 1 && (c < 0x20 || c == 0x7f);
    const bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) <= 0x9f;
    const bool bidi = n == 3 && (seq.substr(0, 2) == "\xe2\x80" ? static_cast<unsigned char>(s[i + 2]) >= 0xaa &&
                                                                      static_cast<unsigned char>(s[i + 2]) <= 0xae
                                 : seq.substr(0, 2) == "\xe2\x81" ? static_cast<unsigned char>(s[i + 2]) >= 0xa6 &&
                                                                      static_cast<unsigned char>(s[i + 2]) <= 0xa9
                                                                    : false);
    if (n == 0 || control || c1 || bidi) out += '?';
    else out.append(seq);
    i += n ? n : 1;
  }
  return out;
}

namespace {

// Columns a UTF-8 line takes: one per code point (the view's text has no wide characters).
std::size_t columns(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// The longest prefix of `s` that takes at most `cols` columns, cut between code points.
std::string_view first_columns(std::string_view s, std::size_t cols) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;
    if (seen++ == cols) return s.substr(0, i);
  }
  return s;
}

std::string fit_block(const std::string& block, std::size_t width) {
  if (width == 0) return block;
  std::string out;
  std::size_t start = 0;
  while (start < block.size()) {
    std::size_t end = block.find('\n', start);
    if (end == std::string::npos) end = block.size();
    out += fit_line(block.substr(start, end - start), width);
    if (end < block.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string fit_line(const std::string& line, std::size_t width) {
  static constexpr std::string_view kSep = " · ", kMore = "…";
  if (width == 0 || columns(line) <= width) return line;
  std::string_view s = line;
  // Drop whole fields from the end while a shorter line with the marker still has a field.
  for (std::size_t cut = s.rfind(kSep); cut != std::string_view::npos && cut > 0; cut = s.rfind(kSep)) {
    s = s.substr(0, cut);
    if (columns(s) + columns(kSep) + columns(kMore) <= width) return std::string(s) + std::string(kSep) + std::string(kMore);
  }
  if (width <= 1) return std::string(kMore).substr(0, width ? kMore.size() : 0);
  return std::string(first_columns(line, width - 1)) + std::string(kMore);
}

std::string render_live(const Series& series, double window_s, std::size_t width) {
  std::string out;
  double t = series.samples.empty() ? 0 : series.samples.back().t_s;
  out += fmt::format("stepscope watch · pid {} · {:.1f}/{:.0f} s · {} usable core(s)\n",
                     series.target.pid, t, window_s, format_value(series.target.effective_cpus()));
  if (series.samples.empty()) return fit_block(out, width);
  const Sample& s = series.samples.back();
  if (s.host) out += live_host_lines(series, *s.host);
  for (const auto& g : s.gpus) out += live_gpu_line(g);
  if (!series.gpu_observed) out += fmt::format("gpu   none: {}\n", sanitize(series.gpu_status));
  return fit_block(out, width);
}

std::string render_summary(const Series& series, const Classification& c,
                           const std::string& source_line) {
  std::string out;
  out += sanitize(source_line) + "\n";
  if (!series.target.command.empty())
    out += fmt::format("target: {}\n", sanitize(series.target.command));
  if (series.target.pid || series.target.online_cpus) {
    std::string limits = fmt::format("{} online", series.target.online_cpus);
    if (series.target.affinity_cpus)
      limits += fmt::format(", affinity {}", *series.target.affinity_cpus);
    if (series.target.cgroup_quota_cpus)
      limits += fmt::format(", cgroup quota {}", format_value(*series.target.cgroup_quota_cpus));
    out +=
        fmt::format("cpus:   {} usable ({})", format_value(series.target.effective_cpus()), limits);
    out += fmt::format(" · OMP_NUM_THREADS={} MKL_NUM_THREADS={}\n",
                       series.target.omp_num_threads.value_or("unset"),
                       series.target.mkl_num_threads.value_or("unset"));
  }
  out += "\n";
  const LiveFinding& v = c.verdict;
  out +=
      fmt::format("verdict: {}  [{} confidence]\n  {}\n", v.rule, to_string(v.confidence), sanitize(v.title));
  size_t width = 0;
  for (const auto& e : v.evidence) width = std::max(width, e.metric.size());
  for (const auto& e : v.evidence)
    out += fmt::format("    {:<{}}  {:>8} {:<12} {}\n", e.metric, width, format_value(e.value),
                       e.unit, sanitize(e.meaning));
  out += confidence_lines(v);
  if (!v.next_step.empty()) out += fmt::format("  next: {}\n", v.next_step);
  if (!v.command.empty()) out += fmt::format("  run:  {}\n", sanitize(v.command));
  out += gpu_side_lines(c);
  if (!c.others.empty()) {
    out += "\nalso:\n";
    for (const auto& f : c.others) {
      out += fmt::format("  {}: {}\n", f.rule, sanitize(f.title));
      if (!f.next_step.empty()) out += fmt::format("    next: {}\n", f.next_step);
      if (!f.command.empty()) out += fmt::format("    run:  {}\n", sanitize(f.command));
    }
  }
  if (!c.gpus.empty()) {
    out += "\ngpus:\n";
    for (const auto& g : c.gpus) out += gpu_summary_line(g);
  }
  if (c.host) {
    const auto& h = *c.host;
    out += fmt::format(
        "\nhost: cpu mean {:.0f}% of a core (max {:.0f}%) · demand {:.2f} cores of {} · "
        "{} proc / {} threads max · top thread {} '{}' {:.0f}%\n",
        h.cpu_mean_pct, h.cpu_max_pct, h.demand_cores, format_value(h.effective_cpus),
        h.max_processes, h.max_threads, h.top_thread_tid, sanitize(h.top_thread_comm),
        h.top_thread_demand_pct);
  }
  const std::vector<std::string> notes = warning_texts(series.notes);
  if (!notes.empty()) {
    out += "\nnotes:\n";
    for (const auto& n : notes) out += fmt::format("  - {}\n", sanitize(n));
  }
  return out;
}

std::string render_json(const Series& series, const Classification& c, const std::string& source,
                        const std::vector<LogReport>* logs) {
  const auto& t = series.target;
  bool cpus_known = t.online_cpus > 0 || t.affinity_cpus || t.cgroup_quota_cpus;
  json target = {{"pid", t.pid},
                 {"command", t.command},
                 {"online_cpus", t.online_cpus},
                 {"affinity_cpus", t.affinity_cpus ? json(*t.affinity_cpus) : json(nullptr)},
                 {"cgroup_quota_cpus", opt_json(t.cgroup_quota_cpus)},
                 {"cgroup_path", t.cgroup_path ? json(*t.cgroup_path) : json(nullptr)},
                 {"usable_cpus", cpus_known ? json(t.effective_cpus()) : json(nullptr)},
                 {"OMP_NUM_THREADS", t.omp_num_threads ? json(*t.omp_num_threads) : json(nullptr)},
                 {"MKL_NUM_THREADS", t.mkl_num_threads ? json(*t.mkl_num_threads) : json(nullptr)}};
  json others = json::array();
  for (const auto& f : c.others) others.push_back(finding_json(f));
  json gpus = json::array();
  for (const auto& g : c.gpus) gpus.push_back(gpu_stats_json(g));
  json samples = json::array();
  for (const auto& s : series.samples) samples.push_back(sample_json(s));
  json log_reports = json::array();
  if (logs)
    for (const auto& l : *logs)
      log_reports.push_back({{"file", l.file},
                             {"format", to_string(l.kind)},
                             {"rows", l.records},
                             {"malformed", l.malformed},
                             {"problems", l.problems}});
  json doc = {{"schema", kWatchJsonSchema},
              {"source", source},
              {"target", target},
              {"interval_s", series.interval_s},
              {"gpu_observed", series.gpu_observed},
              {"gpu_status", series.gpu_status},
              {"notes", warning_texts(series.notes)},
              {"verdict", finding_json(c.verdict)},
              {"gpu_in_view", c.gpu_in_view},
              {"gpu_side",
               {{"known", c.gpu_in_view},
                {"reason", c.gpu_unknown_reason},
                {"how_to_find_out", c.gpu_how_to_find_out}}},
              {"findings", others},
              {"gpu_stats", gpus},
              {"host_stats", c.host ? host_stats_json(*c.host) : json(nullptr)},
              {"samples", samples}};
  if (logs) doc["logs"] = log_reports;
  // Untrusted names (thread names, commands) may hold invalid UTF-8; replace rather than throw.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace stepscope::watch
