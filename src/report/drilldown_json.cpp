#include <nlohmann/json.hpp>
#include "report/drilldown_json.hpp"

#include "report/gpu_timeline_json.hpp"

namespace stepscope {
namespace {

using nlohmann::json;
using report_json::num;
using report_json::stats_json;
using report_json::utf8_safe;

json operator_json(const OperatorView& v) {
  json rows = json::array();
  for (const OperatorRow& r : v.rows) {
    json j = {{"name", utf8_safe(r.name)},
              {"calls", r.calls},
              {"host_total_ns", r.host_total},
              {"host_self_ns", r.host_self},
              {"gpu_total_ns", r.gpu_total},
              {"gpu_self_ns", r.gpu_self},
              {"kernels", r.kernels},
              {"kernels_per_call", num(r.kernels_per_call)},
              {"step_share", num(r.step_share)},
              {"gpu_share", num(r.gpu_share)},
              {"stage", *stage_hint_name(r.stage) ? stage_hint_name(r.stage) : "other"},
              {"on_critical_path", r.on_critical_path}};
    if (v.grouping == OperatorGrouping::NameAndShape) j["input_dims"] = utf8_safe(r.input_dims);
    if (v.grouping == OperatorGrouping::Module) j["module"] = utf8_safe(r.module);
    rows.push_back(std::move(j));
  }
  return {{"grouping", operator_grouping_name(v.grouping)},
          {"step_time_ns", v.step_time},
          {"gpu_time_ns", v.gpu_time},
          {"rows", std::move(rows)}};
}

json kernel_json(const KernelView& v) {
  json rows = json::array();
  for (const KernelRow& r : v.rows)
    rows.push_back({{"name", utf8_safe(r.name)},
                    {"kind", kind_name(r.kind)},
                    {"class", kernel_class_name(r.cls)},
                    {"engine", engine_name(r.engine)},
                    {"dtype", data_type_name(r.dtype)},
                    {"calls", r.calls},
                    {"total_ns", r.total},
                    {"mean_ns", num(r.mean)},
                    {"min_ns", r.min},
                    {"max_ns", r.max},
                    {"share", num(r.share)},
                    {"launching_op", utf8_safe(r.launching_op)},
                    {"achieved_occupancy", r.achieved_occupancy_pct < 0 ? json(nullptr) : json(r.achieved_occupancy_pct / 100.0)},
                    {"registers_per_thread", r.registers_per_thread < 0 ? json(nullptr) : json(r.registers_per_thread)},
                    {"shared_memory_bytes", r.shared_memory < 0 ? json(nullptr) : json(r.shared_memory)}});
  return {{"gpu_time_ns", v.gpu_time}, {"rows", std::move(rows)}};
}

json queue_json(const QueueLength& q) {
  json j = {{"available", q.available}};
  if (!q.available) j["note"] = q.note;
  json streams = json::array();
  for (const StreamQueue& s : q.streams) {
    json ts = json::array(), values = json::array();
    for (const QueuePoint& p : s.series) ts.push_back(p.ts), values.push_back(p.value);
    streams.push_back({{"stream", s.stream},
                       {"summary", stats_json(s.summary)},
                       {"time_at_max_queue_ns", s.time_at_max},
                       {"series", {{"ts_ns", std::move(ts)}, {"queue_length", std::move(values)}}}});
  }
  j["max_queue_length"] = kMaxLaunchQueue;
  j["streams"] = std::move(streams);
  return j;
}

json bandwidth_json(const MemoryBandwidth& m) {
  json j = {{"available", m.available}};
  if (!m.available) j["note"] = m.note;
  json types = json::array();
  for (const CopyBandwidth& c : m.types) {
    json ts = json::array(), values = json::array();
    for (const BandwidthPoint& p : c.series) ts.push_back(p.ts), values.push_back(p.gbps);
    types.push_back({{"name", c.name},
                     {"summary_gbps", stats_json(c.summary)},
                     {"series", {{"ts_ns", std::move(ts)}, {"gbps", std::move(values)}}}});
  }
  j["types"] = std::move(types);
  return j;
}

json sequences_json(const KernelSequences& k) {
  json rows = json::array();
  for (const KernelSequence& s : k.sequences) {
    json pattern = json::array();
    for (const auto& p : s.pattern) pattern.push_back(utf8_safe(p));
    rows.push_back({{"pattern", std::move(pattern)}, {"count", s.count}, {"gpu_time_ns", s.gpu_time}, {"cpu_time_ns", s.cpu_time}});
  }
  json j = {{"op", utf8_safe(k.op)}, {"chosen", k.chosen}, {"min_pattern_len", k.min_pattern_len}, {"sequences", std::move(rows)}};
  if (!k.note.empty()) j["note"] = k.note;
  return j;
}

json memory_json(const MemoryTimeline& m) {
  json devices = json::array();
  for (const DeviceMemoryTimeline& d : m.devices) {
    json ts = json::array(), allocated = json::array(), reserved = json::array();
    for (const MemorySample& s : d.samples) ts.push_back(s.ts), allocated.push_back(s.allocated), reserved.push_back(s.reserved);
    json steps = json::array();
    for (const StepMemoryPeak& p : d.steps)
      steps.push_back({{"step", p.step}, {"peak_allocated_bytes", p.peak_allocated}, {"ts_ns", p.ts}, {"op", utf8_safe(p.op)}});
    devices.push_back({{"device_type", d.device_type},
                       {"device_id", d.device_id},
                       {"peak_allocated_bytes", d.peak_allocated},
                       {"peak_reserved_bytes", d.peak_reserved},
                       {"peak_ts_ns", d.peak_ts},
                       {"peak_op", utf8_safe(d.peak_op)},
                       {"steps", std::move(steps)},
                       {"series", {{"ts_ns", std::move(ts)}, {"allocated_bytes", std::move(allocated)}, {"reserved_bytes", std::move(reserved)}}}});
  }
  return {{"available", m.available}, {"devices", std::move(devices)}};
}

json total_json(const CpTotal& t) { return {{"duration_ns", t.duration}, {"edges", t.edges}}; }

json path_json(const CriticalPath& cp) {
  json edges = json::array();
  for (const CpPathEdge& e : cp.path) {
    json j = {{"begin_ns", e.begin_ts},
              {"end_ns", e.end_ts},
              {"duration_ns", e.duration},
              {"type", cp_edge_type_name(e.type)},
              {"bound_by", cp_bound_by_name(e.bound_by)},
              {"kind", cp_kind_name(e.kind)},
              {"event", e.event},
              {"stream", e.stream},
              {"name", utf8_safe(e.name)}};
    edges.push_back(std::move(j));
  }
  return edges;
}

// Example: a 2,411 µs path, 2,365 µs of it host ops, gives by_kind.host = {duration_ns: 2365000,
// share: 0.981}, and HTA's own split under by_bound_by / summary_share.
json critical_path_json(const CriticalPath& cp) {
  json j = {{"success", cp.success}};
  if (!cp.success) {
    j["error"] = cp.error;
    return j;
  }
  json by_bound = json::object(), share = json::object(), by_type = json::object(), by_kind = json::object();
  for (int b = 0; b < kCpBoundByCount; ++b) {
    const char* name = cp_bound_by_name(static_cast<CpBoundBy>(b));
    by_bound[name] = total_json(cp.by_bound_by[b]);
    share[name] = num(cp.summary_pct[b] / 100.0);
  }
  for (int t = 0; t < kCpEdgeTypeCount; ++t) by_type[cp_edge_type_name(static_cast<CpEdgeType>(t))] = total_json(cp.by_edge_type[t]);
  for (int k = 0; k < kCpKindCount; ++k) {
    json t = total_json(cp.by_kind[k]);
    t["share"] = cp.length > 0 ? num(static_cast<double>(cp.by_kind[k].duration) / static_cast<double>(cp.length)) : json(nullptr);
    by_kind[cp_kind_name(static_cast<CpKind>(k))] = std::move(t);
  }
  j.update({{"annotation", utf8_safe(cp.annotation)},
            {"window_start_ns", cp.window_start},
            {"window_end_ns", cp.window_open_end ? json(nullptr) : json(cp.window_end)},
            {"nodes", cp.nodes},
            {"edges", cp.edges},
            {"length_ns", cp.length},
            {"by_kind", std::move(by_kind)},
            {"hta", {{"by_bound_by", std::move(by_bound)}, {"summary_share", std::move(share)}, {"by_edge_type", std::move(by_type)}}},
            {"path", path_json(cp)}});
  return j;
}

}  // namespace

json to_json(const DrillDown& d) {
  json ops = json::array();
  for (const OperatorView& v : d.operators) ops.push_back(operator_json(v));
  return {{"operators", std::move(ops)},
          {"kernels", kernel_json(d.kernels)},
          {"queue_length", queue_json(d.queue_length)},
          {"memory_bandwidth", bandwidth_json(d.memory_bandwidth)},
          {"kernel_sequences", sequences_json(d.sequences)},
          {"memory", memory_json(d.memory)},
          {"critical_path", critical_path_json(d.critical_path)}};
}

}  // namespace stepscope
