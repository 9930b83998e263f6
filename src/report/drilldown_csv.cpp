// The drill-down's tables as CSV files, one per table, every rank's rows with a `rank` column.
// Times in µs, shares 0..1, as in the JSON report.
#include <fmt/core.h>

#include <cmath>

#include "report/gpu_timeline_json.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

// A text cell a spreadsheet would take for a formula: it starts with =, +, -, @, a tab or a
// carriage return (OWASP, "CSV Injection").
bool formula_like(std::string_view s) { return !s.empty() && std::string_view("=+-@\t\r").find(s.front()) != std::string_view::npos; }

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. A text cell
// that would start a formula gets a leading ' inside quotes, which spreadsheets show as text.
std::string csv_field(std::string_view s) {
  const std::string safe = report_json::utf8_safe(s);
  const bool formula = formula_like(safe);
  if (!formula && safe.find_first_of(",\"\r\n") == std::string::npos) return safe;
  std::string out = formula ? "\"'" : "\"";
  for (char c : safe) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_us(ns_t v) { return fmt::format("{:.3f}", static_cast<double>(v) / 1000.0); }
std::string csv_num(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : ""; }

void operators_csv(const AnalysisResult& r, OperatorGrouping g, std::string& out) {
  out = "rank,name,input_dims,module,calls,host_self_us,host_total_us,gpu_self_us,gpu_total_us,kernels,kernels_per_call,"
        "step_share,gpu_share,on_critical_path\n";
  for (const auto& [rank, d] : each_drilldown(r))
    for (const OperatorView& v : d.operators) {
      if (v.grouping != g) continue;
      for (const OperatorRow& o : v.rows)
        out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", rank, csv_field(o.name), csv_field(o.input_dims), csv_field(o.module),
                           o.calls, csv_us(o.host_self), csv_us(o.host_total), csv_us(o.gpu_self), csv_us(o.gpu_total), o.kernels,
                           csv_num(o.kernels_per_call), csv_num(o.step_share), csv_num(o.gpu_share), o.on_critical_path ? 1 : 0);
    }
}

std::string kernels_csv(const AnalysisResult& r) {
  std::string out = "rank,name,kind,class,engine,dtype,calls,total_us,mean_us,min_us,max_us,share,launching_op,"
                    "achieved_occupancy_pct,registers_per_thread,shared_memory_bytes\n";
  for (const auto& [rank, d] : each_drilldown(r))
    for (const KernelRow& k : d.kernels.rows)
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", rank, csv_field(k.name), kind_name(k.kind),
                         kernel_class_name(k.cls), engine_name(k.engine), data_type_name(k.dtype), k.calls, csv_us(k.total),
                         csv_num(k.mean / 1000.0), csv_us(k.min), csv_us(k.max), csv_num(k.share), csv_field(k.launching_op),
                         k.achieved_occupancy_pct < 0 ? "" : csv_num(k.achieved_occupancy_pct),
                         k.registers_per_thread < 0 ? "" : std::to_string(k.registers_per_thread),
                         k.shared_memory < 0 ? "" : std::to_string(k.shared_memory));
  return out;
}

std::string sequences_csv(const AnalysisResult& r) {
  std::string out = "rank,op,count,gpu_time_us,cpu_time_us,pattern\n";
  for (const auto& [rank, d] : each_drilldown(r))
    for (const KernelSequence& s : d.sequences.sequences) {
      std::string pattern;
      for (const auto& p : s.pattern) pattern += (pattern.empty() ? "" : "|") + p;
      out += fmt::format("{},{},{},{},{},{}\n", rank, csv_field(d.sequences.op), s.count, csv_us(s.gpu_time), csv_us(s.cpu_time), csv_field(pattern));
    }
  return out;
}

std::string summary_cells(const SampleStats& s) {
  return fmt::format("{},{},{},{},{},{},{},{}", s.count, csv_num(s.mean), csv_num(s.std), csv_num(s.min), csv_num(s.p25), csv_num(s.median), csv_num(s.p75), csv_num(s.max));
}

std::string queue_csv(const AnalysisResult& r) {
  std::string out = "rank,stream,count,mean,std,min,p25,median,p75,max,time_at_max_queue_us\n";
  for (const auto& [rank, d] : each_drilldown(r))
    for (const StreamQueue& q : d.queue_length.streams)
      out += fmt::format("{},{},{},{}\n", rank, q.stream, summary_cells(q.summary), csv_us(q.time_at_max));
  return out;
}

std::string bandwidth_csv(const AnalysisResult& r) {
  std::string out = "rank,copy_type,count,mean_gbps,std_gbps,min_gbps,p25_gbps,median_gbps,p75_gbps,max_gbps\n";
  for (const auto& [rank, d] : each_drilldown(r))
    for (const CopyBandwidth& c : d.memory_bandwidth.types) out += fmt::format("{},{},{}\n", rank, csv_field(c.name), summary_cells(c.summary));
  return out;
}

std::string critical_path_csv(const AnalysisResult& r) {
  std::string out = "rank,order,begin_us,end_us,duration_us,kind,bound_by,type,stream,name\n";
  for (const auto& [rank, d] : each_drilldown(r)) {
    std::size_t order = 0;
    for (const CpPathEdge& e : d.critical_path.path)
      out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", rank, order++, csv_us(e.begin_ts), csv_us(e.end_ts), csv_us(e.duration),
                         cp_kind_name(e.kind), cp_bound_by_name(e.bound_by), cp_edge_type_name(e.type), e.stream, csv_field(e.name));
  }
  return out;
}

std::string memory_csv(const AnalysisResult& r) {
  std::string out = "rank,device_type,device_id,ts_us,allocated_bytes,reserved_bytes\n";
  for (const auto& [rank, d] : each_drilldown(r))
    for (const DeviceMemoryTimeline& m : d.memory.devices)
      for (const MemorySample& s : m.samples)
        out += fmt::format("{},{},{},{},{},{}\n", rank, m.device_type, m.device_id, csv_us(s.ts), s.allocated, s.reserved);
  return out;
}

}  // namespace

std::vector<std::string> drilldown_csv_names() {
  std::vector<std::string> names;
  for (const CsvTable& t : drilldown_csv_tables(AnalysisResult{})) names.push_back(t.file);
  return names;
}

std::vector<CsvTable> drilldown_csv_tables(const AnalysisResult& r) {
  std::vector<CsvTable> tables;
  for (OperatorGrouping g : {OperatorGrouping::Name, OperatorGrouping::NameAndShape, OperatorGrouping::Module}) {
    CsvTable t{fmt::format("operators_by_{}.csv", operator_grouping_name(g)), {}};
    operators_csv(r, g, t.text);
    tables.push_back(std::move(t));
  }
  tables.push_back({"kernels.csv", kernels_csv(r)});
  tables.push_back({"kernel_sequences.csv", sequences_csv(r)});
  tables.push_back({"queue_length.csv", queue_csv(r)});
  tables.push_back({"memory_bandwidth.csv", bandwidth_csv(r)});
  tables.push_back({"critical_path.csv", critical_path_csv(r)});
  tables.push_back({"memory.csv", memory_csv(r)});
  return tables;
}

}  // namespace stepscope
