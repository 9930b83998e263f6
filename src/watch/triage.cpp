// Readers for recorded monitoring logs. They are lenient by design: logs are cut mid-line when a
// job is killed, headers repeat when runs are concatenated, and columns vary with driver and
// tool versions. Unknown columns are ignored; a bad line is counted, never fatal.
#include "stepscope/watch/triage.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::watch {

namespace {

constexpr size_t kProblemsKept = 5;
constexpr double kSecondsPerDay = 86400;

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  return out;
}

// Whitespace- and comma-separated tokens (dmon writes either, depending on --format).
std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

// A number, ignoring a trailing unit ("95 %", "1410 MHz", "250.00 W"). Values the tools print
// for readings they lack ("-", "N/A", "[Not Supported]", ...) give nothing.
std::optional<double> triage_number(const std::string& raw) {
  std::string s = trim(raw);
  if (s.empty() || s == "-" || s[0] == '[' || lower(s).rfind("n/a", 0) == 0) return std::nullopt;
  const auto read = parse_double_prefix(s);
  if (!read) return std::nullopt;
  std::string rest = trim(s.substr(read->used));
  if (!rest.empty() && !std::isalpha(static_cast<unsigned char>(rest[0])) && rest[0] != '%')
    return std::nullopt;
  return read->value;
}

// A pidstat row's CPU share: its %CPU, or %usr + %system where the row has no total.
std::optional<double> pidstat_cpu(const std::map<std::string, std::string>& row) {
  const auto field = [&](const char* name) {
    const auto it = row.find(name);
    return it == row.end() ? std::nullopt : triage_number(it->second);
  };
  if (const std::optional<double> total = field("%CPU")) return total;
  const std::optional<double> user = field("%usr"), system = field("%system");
  if (user && system) return *user + *system;
  return std::nullopt;
}

// Whether a field is one of the "no reading" markers rather than garbage.
bool is_missing_marker(const std::string& raw) {
  std::string s = lower(trim(raw));
  return s.empty() || s == "-" || s.rfind("n/a", 0) == 0 || s.rfind("[", 0) == 0;
}

// "HH:MM:SS[.fff]" with an optional "AM"/"PM" → seconds since midnight.
std::optional<double> clock_time(const std::string& hms, const std::string& ampm = "") {
  int h = 0, m = 0;
  double sec = 0;
  if (std::sscanf(hms.c_str(), "%d:%d:%lf", &h, &m, &sec) != 3) return std::nullopt;
  if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec >= 61) return std::nullopt;
  std::string p = lower(ampm);
  if (p == "pm" && h < 12) h += 12;
  if (p == "am" && h == 12) h = 0;
  return h * 3600.0 + m * 60.0 + sec;
}

// Days since 1970-01-01 for a civil date (Howard Hinnant's algorithm).
double days_from_civil(int y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return double(era * 146097 + int(doe) - 719468);
}

// "YYYYMMDD" (dmon -o D) or "YYYY/MM/DD" (query-gpu timestamps) → days since the epoch.
std::optional<double> date_days(const std::string& s) {
  int y = 0;
  unsigned m = 0, d = 0;
  if (s.size() == 8 && std::all_of(s.begin(), s.end(), ::isdigit)) {
    y = std::atoi(s.substr(0, 4).c_str());
    m = unsigned(std::atoi(s.substr(4, 2).c_str()));
    d = unsigned(std::atoi(s.substr(6, 2).c_str()));
  } else if (std::sscanf(s.c_str(), "%d/%u/%u", &y, &m, &d) != 3 &&
             std::sscanf(s.c_str(), "%d-%u-%u", &y, &m, &d) != 3) {
    return std::nullopt;
  }
  if (m < 1 || m > 12 || d < 1 || d > 31) return std::nullopt;
  return days_from_civil(y, m, d);
}

// Turns clock times that may wrap past midnight into a rising sequence.
class Timeline {
 public:
  double place(std::optional<double> t, double interval) {
    if (!t) {
      last_ = last_ ? *last_ + interval : 0.0;
      return *last_;
    }
    double v = *t + offset_;
    if (last_ && v + kSecondsPerDay / 2 < *last_) {
      offset_ += kSecondsPerDay;
      v += kSecondsPerDay;
    }
    last_ = v;
    return v;
  }

 private:
  std::optional<double> last_;
  double offset_ = 0;
};

void problem(LogReport& r, int line_no, const std::string& why) {
  ++r.malformed;
  if (r.problems.size() < kProblemsKept)
    r.problems.push_back(fmt::format("line {}: {}", line_no, why));
}

bool matches(const std::string& command, int pid, const TriageOptions& o) {
  if (o.pid != 0) return pid == o.pid;
  std::string c = lower(command);
  return std::any_of(o.match.begin(), o.match.end(),
                     [&](const std::string& m) { return c.find(lower(m)) != std::string::npos; });
}

// ---------------------------------------------------------------------------------------------
// nvidia-smi dmon

struct DmonHeader {
  std::vector<std::string> names;  // lower case: "gpu", "pwr", "sm", "date", "time", ...
};

void apply_dmon_field(const std::string& name, const std::string& value, GpuReading& g,
                      std::optional<double>& date, std::optional<double>& time) {
  if (name == "date") {
    date = date_days(value);
    return;
  }
  if (name == "time") {
    time = clock_time(value);
    return;
  }
  auto v = triage_number(value);
  if (name == "sm")
    g.util_pct = v;
  else if (name == "mem")
    g.mem_util_pct = v;
  else if (name == "pclk")
    g.sm_clock_mhz = v;
  else if (name == "mclk")
    g.mem_clock_mhz = v;
  else if (name == "pwr")
    g.power_w = v;
  else if (name == "gtemp")
    g.temp_c = v;
  else if (name == "fb")
    g.mem_used_mib = v;
  else if (name == "rxpci")
    g.pcie_rx_mbps = v;
  else if (name == "txpci")
    g.pcie_tx_mbps = v;
  // Violation counters: pviol is the share of time power-capped, tviol whether thermally capped.
  else if (name == "pviol" && v)
    g.throttle_reasons = g.throttle_reasons.value_or(0) | (*v > 0 ? throttle::kSwPowerCap : 0);
  else if (name == "tviol" && v)
    g.throttle_reasons = g.throttle_reasons.value_or(0) | (*v > 0 ? throttle::kSwThermal : 0);
}

}  // namespace

const char* to_string(LogKind kind) {
  switch (kind) {
    case LogKind::Dmon:
      return "nvidia-smi dmon";
    case LogKind::QueryGpu:
      return "nvidia-smi --query-gpu csv";
    case LogKind::Top:
      return "top -b";
    case LogKind::Pidstat:
      return "pidstat";
    case LogKind::Unknown:
      return "unknown";
  }
  return "unknown";
}

LogKind detect_log_kind(const std::string& text) {
  int seen = 0;
  for (const auto& raw : lines_of(text)) {
    std::string line = trim(raw);
    if (line.empty()) continue;
    if (++seen > 20) break;
    std::string l = lower(line);
    if (l.rfind("top - ", 0) == 0) return LogKind::Top;
    if (l.rfind("linux ", 0) == 0 && l.find("cpu)") != std::string::npos) return LogKind::Pidstat;
    if (line[0] == '#') {
      auto t = tokens(l.substr(1));
      if (std::find(t.begin(), t.end(), "gpu") != t.end() ||
          std::find(t.begin(), t.end(), "idx") != t.end())
        return LogKind::Dmon;
      if (std::find(t.begin(), t.end(), "uid") != t.end() ||
          std::find(t.begin(), t.end(), "pid") != t.end())
        return LogKind::Pidstat;
    }
    if (l.find("utilization.") != std::string::npos || l.find("timestamp") != std::string::npos ||
        l.find("memory.used") != std::string::npos || l.find("clocks.") != std::string::npos ||
        l.find("power.draw") != std::string::npos || l.find("temperature.gpu") != std::string::npos)
      return LogKind::QueryGpu;
    if ((l.find(" pid ") != std::string::npos || l.find(" tgid ") != std::string::npos) &&
        l.find("command") != std::string::npos)
      return LogKind::Pidstat;
    // A header-less CSV: several commas, a number in it.
    if (std::count(line.begin(), line.end(), ',') >= 2) return LogKind::QueryGpu;
  }
  return LogKind::Unknown;
}

LogReport parse_dmon(const std::string& text, std::vector<Sample>& out, const TriageOptions& o) {
  LogReport r;
  r.kind = LogKind::Dmon;
  DmonHeader header;
  Timeline timeline;
  std::optional<double> last_tick;  // readings of one tick share a time: one per GPU
  auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    int no = int(i + 1);
    std::string line = trim(lines[i]);
    if (line.empty()) continue;
    if (line[0] == '#') {
      auto t = tokens(lower(line.substr(1)));
      // The names line holds "gpu"; the units line that follows holds "idx" in that column.
      if (std::find(t.begin(), t.end(), "gpu") != t.end()) header.names = t;
      continue;
    }
    if (header.names.empty()) {
      problem(r, no, "data before the '# gpu ...' header line");
      continue;
    }
    auto t = tokens(line);
    if (t.size() != header.names.size()) {
      problem(r, no,
              fmt::format("{} fields where the header names {}", t.size(), header.names.size()));
      continue;
    }
    GpuReading g;
    std::optional<double> date, time;
    bool index_ok = false;
    for (size_t k = 0; k < t.size(); ++k) {
      if (header.names[k] == "gpu") {
        auto idx = triage_number(t[k]);
        index_ok = idx && *idx >= 0 && *idx == std::floor(*idx);
        if (index_ok) g.index = int(*idx);
      } else {
        apply_dmon_field(header.names[k], t[k], g, date, time);
      }
    }
    if (!index_ok) {
      problem(r, no, fmt::format("GPU index '{}' is not a number", t[0]));
      continue;
    }
    std::optional<double> when;
    if (time) when = *time + date.value_or(0) * kSecondsPerDay;
    // Without timestamps, a new tick begins when a GPU index comes round again.
    double t_s;
    if (when) {
      t_s = timeline.place(when, o.interval_s);
    } else {
      bool new_tick = !last_tick || out.empty() || out.back().gpus.empty() ||
                      g.index <= out.back().gpus.back().index;
      t_s = new_tick ? timeline.place(std::nullopt, o.interval_s) : *last_tick;
    }
    last_tick = t_s;
    Sample s;
    s.t_s = t_s;
    s.gpus.push_back(std::move(g));
    out.push_back(std::move(s));
    ++r.records;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]

namespace {

// "utilization.gpu [%]" → "utilization.gpu"; the old "clocks_throttle_reasons" prefix is the
// same field as the newer "clocks_event_reasons".
std::string query_key(const std::string& header_field) {
  std::string k = lower(trim(header_field));
  auto bracket = k.find(" [");
  if (bracket != std::string::npos) k = k.substr(0, bracket);
  const std::string old_prefix = "clocks_throttle_reasons.";
  if (k.rfind(old_prefix, 0) == 0) k = "clocks_event_reasons." + k.substr(old_prefix.size());
  static const std::map<std::string, std::string> kAliases = {
      {"gpu_name", "name"},
      {"gpu_bus_id", "pci.bus_id"},
      {"gpu_uuid", "uuid"},
      {"clocks.current.sm", "clocks.sm"},
      {"clocks.current.graphics", "clocks.gr"},
      {"clocks.graphics", "clocks.gr"},
      {"clocks.current.memory", "clocks.mem"},
      {"clocks.memory", "clocks.mem"},
      {"clocks.max.graphics", "clocks.max.gr"},
      {"clocks.max.memory", "clocks.max.mem"},
      {"power.draw.instant", "power.draw"},
      {"enforced.power.limit", "power.limit.enforced"},
      {"clocks_throttle_reasons_active", "clocks_event_reasons.active"}};
  if (auto it = kAliases.find(k); it != kAliases.end()) return it->second;
  return k;
}

bool is_query_header(const std::vector<std::string>& fields) {
  static const char* kKnown[] = {"timestamp",          "index",       "name",
                                 "pci.bus_id",         "uuid",        "utilization.gpu",
                                 "utilization.memory", "memory.used", "memory.total",
                                 "temperature.gpu",    "power.draw",  "clocks.sm"};
  return std::any_of(fields.begin(), fields.end(), [](const std::string& f) {
    std::string k = query_key(f);
    return std::any_of(std::begin(kKnown), std::end(kKnown), [&](const char* n) { return k == n; });
  });
}

std::optional<double> query_timestamp(const std::string& v) {
  // "2024/01/02 10:15:00.123"
  auto space = v.find(' ');
  if (space == std::string::npos) return clock_time(v);
  auto d = date_days(v.substr(0, space));
  auto t = clock_time(trim(v.substr(space + 1)));
  if (!t) return std::nullopt;
  return *t + d.value_or(0) * kSecondsPerDay;
}

std::optional<std::uint64_t> reason_bit(const std::string& key) {
  static const std::map<std::string, std::uint64_t> kBits = {
      {"clocks_event_reasons.gpu_idle", throttle::kGpuIdle},
      {"clocks_event_reasons.applications_clocks_setting", throttle::kApplicationsClocks},
      {"clocks_event_reasons.sw_power_cap", throttle::kSwPowerCap},
      {"clocks_event_reasons.hw_slowdown", throttle::kHwSlowdown},
      {"clocks_event_reasons.sync_boost", throttle::kSyncBoost},
      {"clocks_event_reasons.sw_thermal_slowdown", throttle::kSwThermal},
      {"clocks_event_reasons.hw_thermal_slowdown", throttle::kHwThermal},
      {"clocks_event_reasons.hw_power_brake_slowdown", throttle::kHwPowerBrake}};
  auto it = kBits.find(key);
  if (it == kBits.end()) return std::nullopt;
  return it->second;
}

struct QueryRow {
  GpuReading g;
  std::optional<double> when;
  std::string identity;  // index, bus id or uuid: which GPU the row is
  std::optional<double> limit_enforced, limit;
};

// Returns false when a field holds a value that is neither a reading nor a "no reading" marker.
bool apply_query_field(const std::string& key, const std::string& value, QueryRow& row,
                       std::string& why) {
  GpuReading& g = row.g;
  auto num = [&](std::optional<double>& dst) {
    dst = triage_number(value);
    if (!dst && !is_missing_marker(value)) {
      why = fmt::format("{} = '{}' is not a number", key, value);
      return false;
    }
    return true;
  };
  if (key == "timestamp") {
    row.when = query_timestamp(value);
    return true;
  }
  if (key == "index") {
    std::optional<double> idx;
    if (!num(idx)) return false;
    if (idx) {
      g.index = int(*idx);
      row.identity = "index " + value;
    }
    return true;
  }
  if (key == "pci.bus_id" || key == "uuid") {
    if (row.identity.empty()) row.identity = value;
    return true;
  }
  if (key == "name") {
    g.name = value;
    return true;
  }
  if (key == "utilization.gpu") return num(g.util_pct);
  if (key == "utilization.memory") return num(g.mem_util_pct);
  if (key == "clocks.sm") return num(g.sm_clock_mhz);
  if (key == "clocks.gr") {
    std::optional<double> v;
    if (!num(v)) return false;
    if (!g.sm_clock_mhz) g.sm_clock_mhz = v;
    return true;
  }
  if (key == "clocks.max.sm") return num(g.sm_clock_max_mhz);
  if (key == "clocks.max.gr") {
    std::optional<double> v;
    if (!num(v)) return false;
    if (!g.sm_clock_max_mhz) g.sm_clock_max_mhz = v;
    return true;
  }
  if (key == "clocks.mem") return num(g.mem_clock_mhz);
  if (key == "power.draw" || key == "power.draw.average") {
    std::optional<double> v;
    if (!num(v)) return false;
    if (v || !g.power_w) g.power_w = v ? v : g.power_w;
    return true;
  }
  if (key == "power.limit.enforced") return num(row.limit_enforced);
  if (key == "power.limit") return num(row.limit);
  if (key == "temperature.gpu") return num(g.temp_c);
  if (key == "memory.used") return num(g.mem_used_mib);
  if (key == "memory.total") return num(g.mem_total_mib);
  if (key == "clocks_event_reasons.active") {
    if (is_missing_marker(value)) return true;
    char* end = nullptr;
    unsigned long long v = std::strtoull(value.c_str(), &end, 16);
    if (end == value.c_str()) {
      why = fmt::format("{} = '{}' is not a hex mask", key, value);
      return false;
    }
    g.throttle_reasons = v;
    return true;
  }
  if (auto bit = reason_bit(key)) {
    std::string v = lower(value);
    if (v == "active")
      g.throttle_reasons = g.throttle_reasons.value_or(0) | *bit;
    else if (v == "not active")
      g.throttle_reasons = g.throttle_reasons.value_or(0);
    return true;
  }
  return true;  // a column the rules do not use
}

}  // namespace

LogReport parse_query_gpu(const std::string& text, std::vector<Sample>& out,
                          const TriageOptions& o) {
  LogReport r;
  r.kind = LogKind::QueryGpu;
  std::vector<std::string> keys;
  for (const auto& c : o.columns) keys.push_back(query_key(c));
  std::map<std::string, int> index_of_identity;  // GPUs without an index column, in order seen
  Timeline timeline;
  std::optional<double> last_when;
  double last_t = 0;
  auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    int no = int(i + 1);
    std::string line = trim(lines[i]);
    if (line.empty() || line[0] == '#') continue;
    auto fields = csv_fields(line);
    if (is_query_header(fields)) {
      keys.clear();
      for (const auto& f : fields) keys.push_back(query_key(f));
      continue;
    }
    if (keys.empty()) {
      problem(r, no, "no header line: pass the --query-gpu field list with --columns");
      continue;
    }
    if (fields.size() != keys.size()) {
      problem(r, no,
              fmt::format("{} fields where the header names {}", fields.size(), keys.size()));
      continue;
    }
    QueryRow row;
    std::string why;
    bool ok = true;
    for (size_t k = 0; k < keys.size() && ok; ++k)
      ok = apply_query_field(keys[k], fields[k], row, why);
    if (!ok) {
      problem(r, no, why);
      continue;
    }
    // The enforced limit is what the card obeys; fall back to the configured one.
    row.g.power_limit_w = row.limit_enforced ? row.limit_enforced : row.limit;
    bool has_index = std::find(keys.begin(), keys.end(), "index") != keys.end();
    if (!has_index) {
      auto [it, fresh] = index_of_identity.try_emplace(row.identity, int(index_of_identity.size()));
      row.g.index = it->second;
    }
    double t_s;
    if (row.when) {
      // Rows of one query share a timestamp to the millisecond at most; equal means same tick.
      t_s =
          (last_when && *row.when == *last_when) ? last_t : timeline.place(row.when, o.interval_s);
      last_when = row.when;
    } else {
      bool new_tick =
          out.empty() || out.back().gpus.empty() || row.g.index <= out.back().gpus.back().index;
      t_s = new_tick ? timeline.place(std::nullopt, o.interval_s) : last_t;
    }
    last_t = t_s;
    Sample s;
    s.t_s = t_s;
    s.gpus.push_back(std::move(row.g));
    out.push_back(std::move(s));
    ++r.records;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// top -b

namespace {

// "%Cpu(s):  12.5 us,  1.0 sy,  0.0 ni, 80.0 id,  6.0 wa, ..." (procps-ng) or the older
// "Cpu(s): 12.5%us,  1.0%sy, ..." — pairs of a number and a label.
std::map<std::string, double> top_cpu_fields(const std::string& line) {
  std::map<std::string, double> out;
  auto colon = line.find(':');
  std::string rest = line.substr(colon == std::string::npos ? 0 : colon + 1);
  for (auto& part : csv_fields(rest)) {
    std::string p = part;
    std::replace(p.begin(), p.end(), '%', ' ');
    std::istringstream in(p);
    double v = 0;
    std::string label;
    if (in >> v >> label) out[lower(label)] = v;
  }
  return out;
}

// top's memory columns: KiB by default, or with a unit suffix (m, g, t).
std::optional<double> top_mib(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char unit = char(std::tolower(static_cast<unsigned char>(s.back())));
  double scale = 1.0 / 1024.0;
  std::string digits = s;
  if (std::isalpha(static_cast<unsigned char>(unit))) {
    digits.pop_back();
    scale = unit == 'k'   ? 1.0 / 1024
            : unit == 'm' ? 1.0
            : unit == 'g' ? 1024.0
            : unit == 't' ? 1024.0 * 1024
                          : 0;
    if (scale == 0) return std::nullopt;
  }
  auto v = triage_number(digits);
  if (!v) return std::nullopt;
  return *v * scale;
}

struct TopFrame {
  std::optional<double> when;
  bool threads_mode = false;
  int cpu_lines = 0;  // per-core "%CpuN" lines, when top showed them
  HostReading host;
  bool has_rows = false;
};

}  // namespace

LogReport parse_top(const std::string& text, std::vector<Sample>& out, const TriageOptions& o,
                    std::optional<int>* cpus_seen) {
  LogReport r;
  r.kind = LogKind::Top;
  std::vector<std::string> columns;
  std::optional<TopFrame> frame;
  Timeline timeline;
  auto flush = [&] {
    if (!frame) return;
    if (frame->cpu_lines > 0 && cpus_seen) *cpus_seen = frame->cpu_lines;
    if (frame->threads_mode && !frame->host.threads.empty()) {
      // With -H each row is a thread; the process they belong to is not in the log.
      ProcessReading p;
      p.pid = o.pid;
      p.comm = frame->host.threads.front().comm;
      for (const auto& t : frame->host.threads) p.cpu_pct += t.cpu_pct;
      p.threads = int(frame->host.threads.size());
      frame->host.processes.push_back(p);
    }
    Sample s;
    s.t_s = timeline.place(frame->when, o.interval_s);
    s.host = std::move(frame->host);
    out.push_back(std::move(s));
    frame.reset();
  };
  auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    int no = int(i + 1);
    const std::string& raw = lines[i];
    std::string line = trim(raw);
    if (line.empty()) continue;
    if (line.rfind("top - ", 0) == 0) {
      flush();
      frame.emplace();
      auto t = tokens(line);
      if (t.size() >= 3) frame->when = clock_time(t[2]);
      columns.clear();
      continue;
    }
    if (!frame) continue;
    std::string l = lower(line);
    if (l.rfind("threads:", 0) == 0) frame->threads_mode = true;
    if (l.rfind("%cpu(s)", 0) == 0 || l.rfind("cpu(s)", 0) == 0) {
      auto f = top_cpu_fields(line);
      if (f.count("id")) {
        frame->host.system_iowait_pct = f.count("wa") ? f["wa"] : 0.0;
        frame->host.system_busy_pct = std::max(0.0, 100.0 - f["id"] - f["wa"]);
      }
      continue;
    }
    if (l.rfind("%cpu", 0) == 0 && l.size() > 4 && std::isdigit(static_cast<unsigned char>(l[4]))) {
      ++frame->cpu_lines;
      continue;
    }
    auto t = tokens(raw);
    if (std::find(t.begin(), t.end(), "PID") != t.end() &&
        std::find(t.begin(), t.end(), "%CPU") != t.end()) {
      columns = t;
      continue;
    }
    if (columns.empty()) continue;  // summary lines: Tasks, Mem, Swap, ...
    // The command is the last column and may hold spaces (top -c).
    if (t.size() < columns.size()) {
      problem(r, no, fmt::format("{} fields where the header names {}", t.size(), columns.size()));
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t k = 0; k + 1 < columns.size(); ++k) row[columns[k]] = t[k];
    std::string command = t[columns.size() - 1];
    for (size_t k = columns.size(); k < t.size(); ++k) command += " " + t[k];
    auto pid = triage_number(row["PID"]);
    auto cpu = triage_number(row["%CPU"]);
    if (!pid || !cpu) {
      problem(r, no, "PID or %CPU is not a number");
      continue;
    }
    ++r.records;
    // top -H rows are threads and cannot be tied to a --pid; a log recorded with `-p PID` holds
    // only that process's threads, so with a pid every thread row is taken.
    bool take = frame->threads_mode ? (o.pid != 0 || matches(command, 0, o))
                                    : matches(command, int(*pid), o);
    if (!take) continue;
    char state = row.count("S") && !row["S"].empty() ? row["S"][0] : '?';
    if (frame->threads_mode) {
      ThreadReading th;
      th.tid = int(*pid);
      th.pid = o.pid;
      th.comm = command;
      th.cpu_pct = *cpu;
      th.state = state;
      frame->host.threads.push_back(th);
    } else {
      ProcessReading p;
      p.pid = int(*pid);
      p.comm = command;
      p.cpu_pct = *cpu;
      p.threads = 1;
      if (row.count("RES")) p.rss_mib = top_mib(row["RES"]);
      frame->host.processes.push_back(p);
    }
  }
  flush();
  return r;
}

// ---------------------------------------------------------------------------------------------
// pidstat

namespace {

bool is_pidstat_column(const std::string& t) {
  return t == "UID" || t == "USER" || t == "TGID" || t == "PID";
}

std::string time_key_of(const std::vector<std::string>& t, size_t n) {
  std::string k;
  for (size_t i = 0; i < n && i < t.size(); ++i) k += (i ? " " : "") + t[i];
  return k;
}

std::optional<double> pidstat_time(const std::vector<std::string>& t, size_t n) {
  if (n == 0 || t.empty()) return std::nullopt;
  if (auto c = clock_time(t[0], n > 1 ? t[1] : "")) return c;
  return triage_number(t[0]);  // -h prints seconds since the epoch
}

}  // namespace

LogReport parse_pidstat(const std::string& text, std::vector<Sample>& out, const TriageOptions& o,
                        std::optional<int>* cpus_seen) {
  LogReport r;
  r.kind = LogKind::Pidstat;
  std::vector<std::string> names;  // column names after the time columns
  size_t time_tokens = 0;
  std::map<std::string, size_t> sample_of_time;  // reports of one interval merge into one sample
  Timeline timeline;
  bool current_process_matched = false;
  auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    int no = int(i + 1);
    std::string line = trim(lines[i]);
    if (line.empty()) continue;
    if (lower(line).rfind("linux ", 0) == 0) {
      auto open = line.rfind('(');
      if (open != std::string::npos && cpus_seen)
        if (auto n = triage_number(line.substr(open + 1)); n && *n > 0) *cpus_seen = int(*n);
      continue;
    }
    auto t = tokens(line[0] == '#' ? line.substr(1) : line);
    auto first_col = std::find_if(t.begin(), t.end(), is_pidstat_column);
    if (first_col != t.end() && std::find(t.begin(), t.end(), "Command") != t.end()) {
      time_tokens = size_t(first_col - t.begin());
      names.assign(first_col, t.end());
      continue;
    }
    if (t.empty() || t[0] == "Average:") continue;
    if (names.empty()) continue;  // preamble
    if (t.size() < time_tokens + names.size()) {
      problem(
          r, no,
          fmt::format("{} fields where the header names {}", t.size(), time_tokens + names.size()));
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t k = 0; k + 1 < names.size(); ++k) row[names[k]] = t[time_tokens + k];
    std::string command = t[time_tokens + names.size() - 1];
    for (size_t k = time_tokens + names.size(); k < t.size(); ++k) command += " " + t[k];
    bool is_thread =
        row.count("TID") && row["TID"] != "-" && (!row.count("TGID") || row["TGID"] == "-");
    std::string id_text = is_thread ? row["TID"] : (row.count("TGID") ? row["TGID"] : row["PID"]);
    auto id = triage_number(id_text);
    if (!id) {
      problem(r, no, fmt::format("process id '{}' is not a number", id_text));
      continue;
    }
    ++r.records;
    if (command.rfind("|__", 0) == 0) command = command.substr(3);
    if (!is_thread) current_process_matched = matches(command, int(*id), o);
    if (!current_process_matched) continue;

    std::string key = time_key_of(t, time_tokens);
    auto [it, fresh] = sample_of_time.try_emplace(key, out.size());
    if (fresh) {
      Sample s;
      s.t_s = timeline.place(pidstat_time(t, time_tokens), o.interval_s);
      s.host = HostReading{};
      out.push_back(std::move(s));
    }
    HostReading& h = *out[it->second].host;
    const std::optional<double> cpu = pidstat_cpu(row);
    if (is_thread) {
      if (!cpu) continue;
      ThreadReading th;
      th.tid = int(*id);
      th.pid = h.processes.empty() ? 0 : h.processes.back().pid;
      th.comm = command;
      th.cpu_pct = *cpu;
      if (row.count("%wait")) th.wait_pct = triage_number(row["%wait"]);
      auto existing = std::find_if(h.threads.begin(), h.threads.end(),
                                   [&](const ThreadReading& x) { return x.tid == th.tid; });
      if (existing == h.threads.end()) h.threads.push_back(th);
      continue;
    }
    auto proc = std::find_if(h.processes.begin(), h.processes.end(),
                             [&](const ProcessReading& p) { return p.pid == int(*id); });
    if (proc == h.processes.end()) {
      ProcessReading p;
      p.pid = int(*id);
      p.comm = command;
      h.processes.push_back(p);
      proc = h.processes.end() - 1;
    }
    if (cpu) proc->cpu_pct = *cpu;
    if (auto v = row.count("%wait") ? triage_number(row["%wait"]) : std::nullopt) proc->wait_pct = v;
    // pidstat's kB are 1024 bytes.
    if (auto v = row.count("kB_rd/s") ? triage_number(row["kB_rd/s"]) : std::nullopt)
      proc->read_mbps = *v * 1024 / 1e6;
    if (auto v = row.count("kB_wr/s") ? triage_number(row["kB_wr/s"]) : std::nullopt)
      proc->write_mbps = *v * 1024 / 1e6;
    if (auto v = row.count("cswch/s") ? triage_number(row["cswch/s"]) : std::nullopt)
      proc->voluntary_cs_per_s = v;
    if (auto v = row.count("nvcswch/s") ? triage_number(row["nvcswch/s"]) : std::nullopt)
      proc->involuntary_cs_per_s = v;
    if (auto v = row.count("RSS") ? triage_number(row["RSS"]) : std::nullopt) proc->rss_mib = *v / 1024;
    if (auto v = row.count("threads") ? triage_number(row["threads"]) : std::nullopt)
      proc->threads = int(*v);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------

TriageResult triage_logs(const std::vector<std::pair<std::string, std::string>>& logs,
                         const TriageOptions& o) {
  if (logs.empty())
    throw InputError(
        "no log given: triage FILE... (nvidia-smi dmon or --query-gpu csv, top -b, pidstat)");
  if (!(o.interval_s > 0)) throw InputError("--interval must be above 0 seconds");
  TriageResult result;
  Series& series = result.series;
  std::optional<int> cpus_seen;
  std::vector<Sample> gpu_samples, host_samples;
  for (const auto& [name, text] : logs) {
    LogReport r;
    switch (detect_log_kind(text)) {
      case LogKind::Dmon:
        r = parse_dmon(text, gpu_samples, o);
        break;
      case LogKind::QueryGpu:
        r = parse_query_gpu(text, gpu_samples, o);
        break;
      case LogKind::Top:
        r = parse_top(text, host_samples, o, &cpus_seen);
        break;
      case LogKind::Pidstat:
        r = parse_pidstat(text, host_samples, o, &cpus_seen);
        break;
      case LogKind::Unknown:
        break;
    }
    r.file = name;
    result.logs.push_back(r);
  }
  int records = 0;
  for (const auto& r : result.logs) records += r.records;
  if (records == 0) {
    std::string why;
    for (const auto& r : result.logs) {
      why += fmt::format("{}{}: ", why.empty() ? "" : "; ", r.file);
      if (r.kind == LogKind::Unknown)
        why += "not a format triage reads";
      else if (!r.problems.empty())
        why += r.problems.front();
      else
        why += fmt::format("no data rows in this {} log", to_string(r.kind));
    }
    throw InputError("nothing to triage: " + why);
  }
  for (const auto& r : result.logs) {
    if (r.kind == LogKind::Unknown)
      series.notes.push_back({WarningId::UnknownLog, fmt::format("{}: not a format triage reads; ignored", r.file)});
    else if (r.malformed > 0)
      series.notes.push_back({WarningId::MalformedLogLines, fmt::format("{}: {} malformed line(s) skipped, first {}",
                                                                        r.file, r.malformed, r.problems.front())});
  }
  bool host_logs = std::any_of(result.logs.begin(), result.logs.end(), [](const LogReport& r) {
    return r.kind == LogKind::Top || r.kind == LogKind::Pidstat;
  });
  if (host_logs && std::none_of(host_samples.begin(), host_samples.end(), [](const Sample& s) {
        return s.host && !s.host->processes.empty();
      }))
    series.notes.push_back({WarningId::NoMatchingProcess,
                            o.pid ? fmt::format("no row for pid {} in the host logs", o.pid)
                                  : "no process in the host logs matches the job's names; pass --pid or --match"});
  // Host frames without a matching process still carry the system iowait, but judging the job
  // from them would call it idle: keep only frames that saw the job.
  host_samples.erase(
      std::remove_if(host_samples.begin(), host_samples.end(),
                     [](const Sample& s) { return !s.host || s.host->processes.empty(); }),
      host_samples.end());
  series.samples = std::move(gpu_samples);
  series.samples.insert(series.samples.end(), host_samples.begin(), host_samples.end());
  series.gpu_observed = std::any_of(series.samples.begin(), series.samples.end(),
                                    [](const Sample& s) { return !s.gpus.empty(); });
  series.gpu_status =
      series.gpu_observed ? "from nvidia-smi logs" : "no GPU log given; host side only";
  if (!series.gpu_observed) series.notes.push_back({WarningId::NoGpuObserved, series.gpu_status});
  series.interval_s = o.interval_s;
  series.target.pid = o.pid;
  if (o.cpus)
    series.target.online_cpus = int(std::ceil(*o.cpus)), series.target.cgroup_quota_cpus = *o.cpus;
  else if (cpus_seen)
    series.target.online_cpus = *cpus_seen;
  else if (host_logs)
    series.notes.push_back({WarningId::NoCoreCount,
                            "the logs do not say how many cores the job had; pass --cpus N to judge "
                            "saturation and oversubscription"});
  result.classification = classify(series);
  return result;
}

namespace {

// Logs are text: a NUL in the first block means another kind of file (or /dev/zero), refused
// before more of it is read. A day of dmon at one line a second is a few MB: the limit leaves
// room for far more, yet bounds what an endless stream can take.
constexpr std::size_t kMaxLogBytes = 512ull << 20;

constexpr int kFirstByteWaitS = 30;  // a FIFO nobody writes to is refused, not waited on forever

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens without blocking (a FIFO's open waits for a writer), then waits a bounded time for the
// first byte.
int open_log(const std::string& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open", p));
  pollfd w{fd, POLLIN, 0};
  int ready;
  do ready = ::poll(&w, 1, kFirstByteWaitS * 1000);
  while (ready < 0 && errno == EINTR);
  if (ready <= 0) {
    ::close(fd);
    throw InputError(fmt::format("{}: no data arrived in {} s (a pipe nobody writes to?)", p, kFirstByteWaitS));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

void append_bounded(std::string& text, std::string_view piece, const std::string& p) {
  if (text.size() + piece.size() > kMaxLogBytes)
    throw InputError(fmt::format("{}: over {} MiB: not a log triage reads whole", p, kMaxLogBytes >> 20));
  text.append(piece);
}

// A log kept gzipped (`top -b ... | gzip > top.log.gz`, logrotate's .gz) is read as its text:
// its header (1f 8b) would otherwise look like a binary file or a malformed CSV.
class GzipLog {
 public:
  GzipLog() {
    if (::inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw InputError("cannot start a gzip decoder");
  }
  ~GzipLog() { ::inflateEnd(&z_); }
  GzipLog(const GzipLog&) = delete;
  GzipLog& operator=(const GzipLog&) = delete;

  // Decodes `piece` onto `text`; members concatenated by `cat a.gz b.gz` are read one after another.
  void feed(std::string_view piece, std::string& text, const std::string& p) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(piece.data()));
    z_.avail_in = static_cast<uInt>(piece.size());
    char out[1 << 16];
    while (z_.avail_in > 0) {
      z_.next_out = reinterpret_cast<Bytef*>(out);
      z_.avail_out = sizeof out;
      const int rc = ::inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        throw InputError(fmt::format("{}: a gzip file that does not decode: {}", p, z_.msg ? z_.msg : "corrupt data"));
      append_bounded(text, std::string_view(out, sizeof out - z_.avail_out), p);
      if (rc == Z_STREAM_END) ::inflateReset(&z_);
      else if (rc == Z_BUF_ERROR && z_.avail_out != 0) break;
    }
  }

 private:
  z_stream z_{};
};

bool gzip_magic(std::string_view piece) { return piece.size() >= 2 && piece[0] == '\x1f' && piece[1] == '\x8b'; }

std::string read_log(const std::string& p) {
  const Fd in{open_log(p)};
  std::string text;
  std::unique_ptr<GzipLog> gz;
  bool first = true;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("{}: read error: {}", p, std::strerror(errno)));
    if (n == 0) break;
    const std::string_view piece(buf, static_cast<std::size_t>(n));
    if (first && gzip_magic(piece)) gz = std::make_unique<GzipLog>();
    first = false;
    if (gz) {
      gz->feed(piece, text, p);
      continue;
    }
    if (text.empty() && piece.find('\0') != std::string_view::npos)
      throw InputError(fmt::format("{}: not a text log (it holds NUL bytes)", p));
    append_bounded(text, piece, p);
  }
  if (gz && text.find('\0') != std::string::npos)
    throw InputError(fmt::format("{}: a gzip file that holds no text log (it holds NUL bytes)", p));
  return text;
}

}  // namespace

TriageResult triage_files(const std::vector<std::string>& paths, const TriageOptions& o) {
  std::vector<std::pair<std::string, std::string>> logs;
  for (const auto& p : paths) logs.emplace_back(p, read_log(p));
  return triage_logs(logs, o);
}

}  // namespace stepscope::watch
