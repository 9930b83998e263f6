#include "report/gpu_timeline_json.hpp"

#include <nlohmann/json.hpp>
#include <cmath>

namespace stepscope {

using nlohmann::json;

namespace {

// A percentage of the model (0..100) as the report's share (0..1).
double share_of_pct(double pct) { return pct / 100.0; }

}  // namespace

namespace report_json {

// Names come from the trace and may hold invalid UTF-8, which nlohmann refuses to dump: every
// byte that does not start a well-formed sequence becomes U+FFFD.
std::string utf8_safe(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  while (i < in.size()) {
    auto c = static_cast<unsigned char>(in[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= in.size() && !(len == 2 && c < 0xC2);
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(in[i + k]) >> 6) == 0x2;
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = c <= 0xF4 && !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// NaN and infinities become null (JSON has neither).
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json stats_json(const SampleStats& s) {
  return {{"count", s.count},     {"sum", num(s.sum)},   {"mean", num(s.mean)},     {"std", num(s.std)},
          {"min", num(s.min)},    {"p25", num(s.p25)},   {"median", num(s.median)}, {"p75", num(s.p75)},
          {"p95", num(s.p95)},    {"max", num(s.max)}};
}

}  // namespace report_json

namespace {

using report_json::num;
using report_json::stats_json;
using report_json::utf8_safe;

json load_json(const HtaLoad& l) {
  return {{"rounded_to_us", l.rounded_to_us},
          {"profiler_step_names", l.profiler_step_names},
          {"last_step_dropped", l.last_step_dropped},
          {"cutoff_ts_ns", l.last_step_dropped ? json(l.cutoff_ts) : json(nullptr)},
          {"rows_kept", l.rows_kept},
          {"gpu_rows", l.gpu_rows},
          {"iterations", l.iterations}};
}

json temporal_json(const HtaTemporalBreakdown& t) {
  json j = {{"available", t.available}};
  if (!t.available) {
    j["note"] = t.note;
    return j;
  }
  j["idle_time_ns"] = t.idle;
  j["compute_time_ns"] = t.compute;
  j["non_compute_time_ns"] = t.non_compute;
  j["kernel_time_ns"] = t.kernel_time;
  j["idle_time_share"] = num(t.idle_share);
  j["compute_time_share"] = num(t.compute_share);
  j["non_compute_time_share"] = num(t.non_compute_share);
  return j;
}

json idle_json(const HtaIdleBreakdown& b) {
  json j = {{"available", b.available}};
  if (!b.available) j["note"] = b.note;
  json streams = json::array();
  for (const HtaStreamIdle& s : b.streams) {
    json cats = json::array();
    for (int c = 0; c < kIdleCategoryCount; ++c) {
      const HtaIdleCategory& cat = s.category[c];
      if (!cat.present) continue;
      cats.push_back({{"idle_category", idle_category_name(static_cast<IdleCategory>(c))},
                      {"idle_time_ns", cat.idle},
                      {"idle_time_share", num(cat.ratio)},
                      {"interval_stats_ns", stats_json(cat.intervals)}});
    }
    streams.push_back({{"stream", s.stream}, {"kernels", s.kernels}, {"categories", cats}});
  }
  j["streams"] = streams;
  json totals;
  for (int c = 0; c < kIdleCategoryCount; ++c)
    totals[idle_category_name(static_cast<IdleCategory>(c))] = b.total[c];
  j["total_ns"] = totals;
  return j;
}

json overlap_json(const HtaCommCompOverlap& o) {
  json j = {{"available", o.available},
            {"overlap_ns", o.overlap},
            {"communication_ns", o.communication},
            {"comp_comm_overlap_share", num(o.share)}};
  if (!o.available) j["note"] = o.note;
  return j;
}

json top_kernels_json(const std::vector<HtaKernelRow>& rows) {
  json out = json::array();
  for (const HtaKernelRow& r : rows) {
    out.push_back({{"name", utf8_safe(r.name)},
                   {"kernel_type", hta_kernel_type_name(r.type)},
                   {"class", r.others ? json(nullptr) : json(kernel_class_name(r.cls))},
                   {"others", r.others},
                   {"sum_ns", r.sum},
                   {"max_ns", num(r.max)},
                   {"min_ns", num(r.min)},
                   {"mean_ns", num(r.mean)},
                   {"stddev_ns", num(r.stddev)},
                   {"count", r.count},
                   {"names", r.names},
                   {"launch_max_ns", r.max_dur},
                   {"launch_min_ns", r.min_dur},
                   {"launch_mean_ns", num(r.mean_dur)}});
  }
  return out;
}

json launch_list_json(const std::vector<HtaLaunch>& v) {
  json out = json::array();
  for (const HtaLaunch& l : v)
    out.push_back({{"cpu_event", l.cpu_event},
                   {"gpu_event", l.gpu_event},
                   {"correlation", l.correlation},
                   {"cpu_duration_ns", l.cpu_duration},
                   {"gpu_duration_ns", l.gpu_duration},
                   {"launch_delay_ns", l.launch_delay}});
  return out;
}

json launches_json(const HtaLaunchStats& s) {
  return {{"events", s.events},
          {"short_gpu_kernels", s.short_gpu_kernels},
          {"runtime_outliers", s.runtime_outliers},
          {"launch_delay_outliers", s.launch_delay_outliers},
          {"gpu_shorter_than_cpu", s.gpu_shorter_than_cpu},
          {"cpu_duration_ns", stats_json(s.cpu_duration)},
          {"gpu_duration_ns", stats_json(s.gpu_duration)},
          {"launch_delay_ns", stats_json(s.launch_delay)},
          {"worst_delays", launch_list_json(s.worst_delays)},
          {"worst_runtimes", launch_list_json(s.worst_runtimes)}};
}

json hta_json(const GpuTimeline& t) {
  return {{"load", load_json(t.hta_load)},
          {"temporal_breakdown", temporal_json(t.hta_temporal)},
          {"idle_time_breakdown", idle_json(t.hta_idle)},
          {"comm_comp_overlap", overlap_json(t.hta_overlap)},
          {"kernel_breakdown",
           {{"kernel_type_breakdown", kernel_types_to_json(t.hta_kernels.types)},
            {"top_kernels", top_kernels_json(t.hta_kernels.top)}}},
          {"kernel_launch_stats", launches_json(t.hta_launches)}};
}

json steps_json(const std::vector<StepWindow>& steps) {
  json out = json::array();
  for (const StepWindow& s : steps)
    out.push_back({{"step", s.number}, {"start_ns", s.start}, {"end_ns", s.end}});
  return out;
}

json classes_json(const KernelClasses& c) {
  json classes = json::array(), colls = json::array();
  for (const KernelClassShare& s : c.classes)
    classes.push_back({{"class", kernel_class_name(s.cls)}, {"count", s.count}, {"time_ns", s.time}, {"share", num(s.share)}});
  for (const CollectiveShare& s : c.collectives)
    colls.push_back({{"collective", collective_name(s.collective)}, {"count", s.count}, {"time_ns", s.time}, {"share", num(s.share)}});
  return {{"total_time_ns", c.total_time},
          {"classes", classes},
          {"collectives", colls},
          {"tensor_core_share_of_gemm", num(c.tensor_core_share_of_gemm)}};
}

json syncs_json(const SyncPoints& s) {
  json by_name = json::array(), worst = json::array();
  for (const SyncByName& b : s.by_name)
    by_name.push_back({{"name", utf8_safe(b.name)}, {"count", b.count}, {"host_blocked_ns", b.host_blocked}, {"gpu_idle_after_ns", b.gpu_idle_after}});
  for (const SyncCall& c : s.worst)
    worst.push_back({{"event", c.event}, {"ts_ns", c.ts}, {"host_blocked_ns", c.host_blocked},
                     {"gpu_idle_after_ns", c.gpu_idle_after}, {"step", c.step}});
  return {{"count", s.count},
          {"host_blocked_ns", s.host_blocked},
          {"gpu_idle_after_ns", s.gpu_idle_after},
          {"per_step", num(s.per_step)},
          {"count_per_step", s.count_per_step},
          {"by_name", by_name},
          {"worst", worst}};
}

// Spelled here rather than with the model's copy_kind_name so the JSON keys stay fixed.
const char* direction_name(CopyKind c) {
  switch (c) {
    case CopyKind::HtoD: return "HtoD";
    case CopyKind::DtoH: return "DtoH";
    case CopyKind::DtoD: return "DtoD";
    case CopyKind::HtoH: return "HtoH";
    case CopyKind::PtoP: return "PtoP";
    case CopyKind::None: return "none";
    case CopyKind::Other: return "other";
  }
  return "other";
}

const char* host_mem_name(HostMem h) {
  switch (h) {
    case HostMem::Pageable: return "pageable";
    case HostMem::Pinned: return "pinned";
    case HostMem::Unknown: return "unknown";
  }
  return "unknown";
}

json copies_json(const Copies& c) {
  json groups = json::array(), longest = json::array();
  for (const CopyGroup& g : c.groups)
    groups.push_back({{"direction", direction_name(g.direction)}, {"host_memory", host_mem_name(g.host)},
                      {"count", g.count}, {"bytes", g.bytes}, {"time_ns", g.time}, {"gbps", num(g.gbps)},
                      {"critical_count", g.critical_count}, {"critical_time_ns", g.critical_time}});
  for (const CopyEvent& e : c.longest)
    longest.push_back({{"event", e.event}, {"direction", direction_name(e.direction)}, {"host_memory", host_mem_name(e.host)},
                       {"bytes", e.bytes < 0 ? json(nullptr) : json(e.bytes)}, {"ts_ns", e.ts}, {"dur_ns", e.dur},
                       {"gbps", num(e.gbps)}, {"critical", e.critical}});
  return {{"count", c.count},
          {"time_ns", c.time},
          {"pageable_count", c.pageable_count},
          {"pageable_time_ns", c.pageable_time},
          {"critical_time_ns", c.critical_time},
          {"groups", groups},
          {"longest", longest}};
}

json launch_overhead_json(const LaunchOverhead& l) {
  return {{"kernels", l.kernels},
          {"kernels_per_step", l.kernels_per_step},
          {"mean_kernels_per_step", num(l.mean_kernels_per_step)},
          {"kernel_duration_ns", stats_json(l.kernel_duration)},
          {"short_kernel_share", num(l.short_kernel_share)},
          {"short_kernel_ns", l.short_kernel},
          {"gaps_ns", stats_json(l.gaps)},
          {"launch_call_ns", stats_json(l.launch_call)}};
}

json occupancy_json(const Occupancy& o) {
  return {{"available", o.available},
          {"coverage", num(o.coverage)},
          {"achieved_occupancy", num(share_of_pct(o.achieved_occupancy_pct))},
          {"blocks_per_sm", num(o.blocks_per_sm)},
          {"warps_per_sm", num(o.warps_per_sm)},
          {"sm_efficiency", num(share_of_pct(o.sm_efficiency_pct))}};
}

json memory_peaks_json(const MemoryPeaks& m) {
  json devices = json::array();
  for (const DeviceMemoryPeak& d : m.devices)
    devices.push_back({{"device_type", d.device_type}, {"device_id", d.device_id}, {"samples", d.samples},
                       {"peak_allocated_bytes", d.peak_allocated}, {"peak_allocated_ts_ns", d.peak_allocated_ts},
                       {"peak_allocated_step", d.peak_allocated_step}, {"peak_reserved_bytes", d.peak_reserved},
                       {"peak_reserved_ts_ns", d.peak_reserved_ts}, {"peak_reserved_step", d.peak_reserved_step}});
  return {{"available", m.available}, {"devices", devices}};
}

}  // namespace

nlohmann::json kernel_types_to_json(const std::vector<HtaKernelTypeTime>& types) {
  json out = json::array();
  for (const HtaKernelTypeTime& t : types)
    out.push_back({{"kernel_type", t.label},
                   {"sum_ns", t.time},
                   {"share", num(t.share)}});
  return out;
}

nlohmann::json to_json(const GpuTimeline& t, int rank) {
  return {{"rank", rank},
          {"has_gpu_activity", t.has_gpu_activity},
          {"hta", hta_json(t)},
          {"steps", steps_json(t.steps)},
          {"kernel_classes", classes_json(t.classes)},
          {"sync_points", syncs_json(t.syncs)},
          {"copies", copies_json(t.copies)},
          {"launch_overhead", launch_overhead_json(t.launch_overhead)},
          {"occupancy", occupancy_json(t.occupancy)},
          {"memory", memory_peaks_json(t.memory)}};
}

}  // namespace stepscope
