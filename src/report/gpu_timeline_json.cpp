#include "report/gpu_timeline_json.hpp"

#include <cmath>

namespace stepscope {

using nlohmann::json;

namespace {

// µs as HTA reports them; exact for HTA's rounded times (multiples of 1000 ns).
double us(ns_t v) { return static_cast<double>(v) / 1000.0; }
double us(double v_ns) { return v_ns / 1000.0; }

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

json stats_json(const SampleStats& s, bool ns_to_us) {
  auto f = [&](double v) { return num(ns_to_us ? v / 1000.0 : v); };
  return {{"count", s.count}, {"sum", f(s.sum)},   {"mean", f(s.mean)},     {"std", f(s.std)},
          {"min", f(s.min)},  {"p25", f(s.p25)},   {"median", f(s.median)}, {"p75", f(s.p75)},
          {"p95", f(s.p95)},  {"max", f(s.max)}};
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
          {"cutoff_ts_us", l.last_step_dropped ? json(us(l.cutoff_ts)) : json(nullptr)},
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
  j["idle_time_us"] = us(t.idle);
  j["compute_time_us"] = us(t.compute);
  j["non_compute_time_us"] = us(t.non_compute);
  j["kernel_time_us"] = us(t.kernel_time);
  j["idle_time_pctg"] = num(hta_round(t.idle_pct, 2));
  j["compute_time_pctg"] = num(hta_round(t.compute_pct, 2));
  j["non_compute_time_pctg"] = num(hta_round(t.non_compute_pct, 2));
  j["exact"] = {{"idle_pct", num(t.idle_pct)},
                {"compute_pct", num(t.compute_pct)},
                {"non_compute_pct", num(t.non_compute_pct)}};
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
                      {"idle_time_us", us(cat.idle)},
                      {"idle_time_ratio", num(hta_round(cat.ratio, 2))},
                      {"ratio_exact", num(cat.ratio)},
                      {"interval_stats_us", stats_json(cat.intervals, true)}});
    }
    streams.push_back({{"stream", s.stream}, {"kernels", s.kernels}, {"categories", cats}});
  }
  j["streams"] = streams;
  json totals;
  for (int c = 0; c < kIdleCategoryCount; ++c)
    totals[idle_category_name(static_cast<IdleCategory>(c))] = us(b.total[c]);
  j["total_us"] = totals;
  return j;
}

json overlap_json(const HtaCommCompOverlap& o) {
  json j = {{"available", o.available},
            {"overlap_us", us(o.overlap)},
            {"communication_us", us(o.communication)},
            {"comp_comm_overlap_pctg", num(hta_round(o.pct, 2))},
            {"pct_exact", num(o.pct)}};
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
                   {"sum_us", us(r.sum)},
                   {"max_us", num(us(r.max))},
                   {"min_us", num(us(r.min))},
                   {"mean_us", num(us(r.mean))},
                   {"stddev_us", num(us(r.stddev))},
                   {"count", r.count},
                   {"names", r.names},
                   {"launch_max_us", us(r.max_dur)},
                   {"launch_min_us", us(r.min_dur)},
                   {"launch_mean_us", num(us(r.mean_dur))}});
  }
  return out;
}

json launch_list_json(const std::vector<HtaLaunch>& v) {
  json out = json::array();
  for (const HtaLaunch& l : v)
    out.push_back({{"cpu_event", l.cpu_event},
                   {"gpu_event", l.gpu_event},
                   {"correlation", l.correlation},
                   {"cpu_duration_us", us(l.cpu_duration)},
                   {"gpu_duration_us", us(l.gpu_duration)},
                   {"launch_delay_us", us(l.launch_delay)}});
  return out;
}

json launches_json(const HtaLaunchStats& s) {
  return {{"events", s.events},
          {"short_gpu_kernels", s.short_gpu_kernels},
          {"runtime_outliers", s.runtime_outliers},
          {"launch_delay_outliers", s.launch_delay_outliers},
          {"gpu_shorter_than_cpu", s.gpu_shorter_than_cpu},
          {"cpu_duration_us", stats_json(s.cpu_duration, true)},
          {"gpu_duration_us", stats_json(s.gpu_duration, true)},
          {"launch_delay_us", stats_json(s.launch_delay, true)},
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
    out.push_back({{"step", s.number}, {"start_us", us(s.start)}, {"end_us", us(s.end)}});
  return out;
}

json classes_json(const KernelClasses& c) {
  json classes = json::array(), colls = json::array();
  for (const KernelClassShare& s : c.classes)
    classes.push_back({{"class", kernel_class_name(s.cls)}, {"count", s.count}, {"time_us", us(s.time)}, {"share", num(s.share)}});
  for (const CollectiveShare& s : c.collectives)
    colls.push_back({{"collective", collective_name(s.collective)}, {"count", s.count}, {"time_us", us(s.time)}, {"share", num(s.share)}});
  return {{"total_time_us", us(c.total_time)},
          {"classes", classes},
          {"collectives", colls},
          {"tensor_core_share_of_gemm", num(c.tensor_core_share_of_gemm)}};
}

json syncs_json(const SyncPoints& s) {
  json by_name = json::array(), worst = json::array();
  for (const SyncByName& b : s.by_name)
    by_name.push_back({{"name", utf8_safe(b.name)}, {"count", b.count}, {"host_blocked_us", us(b.host_blocked)}, {"gpu_idle_after_us", us(b.gpu_idle_after)}});
  for (const SyncCall& c : s.worst)
    worst.push_back({{"event", c.event}, {"ts_us", us(c.ts)}, {"host_blocked_us", us(c.host_blocked)},
                     {"gpu_idle_after_us", us(c.gpu_idle_after)}, {"step", c.step}});
  return {{"count", s.count},
          {"host_blocked_us", us(s.host_blocked)},
          {"gpu_idle_after_us", us(s.gpu_idle_after)},
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
                      {"count", g.count}, {"bytes", g.bytes}, {"time_us", us(g.time)}, {"gbps", num(g.gbps)},
                      {"critical_count", g.critical_count}, {"critical_time_us", us(g.critical_time)}});
  for (const CopyEvent& e : c.longest)
    longest.push_back({{"event", e.event}, {"direction", direction_name(e.direction)}, {"host_memory", host_mem_name(e.host)},
                       {"bytes", e.bytes < 0 ? json(nullptr) : json(e.bytes)}, {"ts_us", us(e.ts)}, {"dur_us", us(e.dur)},
                       {"gbps", num(e.gbps)}, {"critical", e.critical}});
  return {{"count", c.count},
          {"time_us", us(c.time)},
          {"pageable_count", c.pageable_count},
          {"pageable_time_us", us(c.pageable_time)},
          {"critical_time_us", us(c.critical_time)},
          {"groups", groups},
          {"longest", longest}};
}

json launch_overhead_json(const LaunchOverhead& l) {
  return {{"kernels", l.kernels},
          {"kernels_per_step", l.kernels_per_step},
          {"mean_kernels_per_step", num(l.mean_kernels_per_step)},
          {"kernel_duration_us", stats_json(l.kernel_duration, true)},
          {"short_kernel_share", num(l.short_kernel_share)},
          {"short_kernel_us", us(l.short_kernel)},
          {"gaps_us", stats_json(l.gaps, true)},
          {"launch_call_us", stats_json(l.launch_call, true)}};
}

json occupancy_json(const Occupancy& o) {
  return {{"available", o.available},
          {"coverage", num(o.coverage)},
          {"achieved_occupancy_pct", num(o.achieved_occupancy_pct)},
          {"blocks_per_sm", num(o.blocks_per_sm)},
          {"warps_per_sm", num(o.warps_per_sm)},
          {"sm_efficiency_pct", num(o.sm_efficiency_pct)}};
}

json memory_json(const MemoryPeaks& m) {
  json devices = json::array();
  for (const DeviceMemoryPeak& d : m.devices)
    devices.push_back({{"device_type", d.device_type}, {"device_id", d.device_id}, {"samples", d.samples},
                       {"peak_allocated_bytes", d.peak_allocated}, {"peak_allocated_ts_us", us(d.peak_allocated_ts)},
                       {"peak_allocated_step", d.peak_allocated_step}, {"peak_reserved_bytes", d.peak_reserved},
                       {"peak_reserved_ts_us", us(d.peak_reserved_ts)}, {"peak_reserved_step", d.peak_reserved_step}});
  return {{"available", m.available}, {"devices", devices}};
}

}  // namespace

nlohmann::json kernel_types_to_json(const std::vector<HtaKernelTypeTime>& types) {
  json out = json::array();
  for (const HtaKernelTypeTime& t : types)
    out.push_back({{"kernel_type", t.label},
                   {"sum_us", us(t.time)},
                   {"percentage", num(hta_round(t.pct, 1))},
                   {"percentage_exact", num(t.pct)}});
  return out;
}

nlohmann::json to_json(const GpuTimeline& t) {
  return {{"rank", t.rank},
          {"has_gpu_activity", t.has_gpu_activity},
          {"hta", hta_json(t)},
          {"steps", steps_json(t.steps)},
          {"kernel_classes", classes_json(t.classes)},
          {"sync_points", syncs_json(t.syncs)},
          {"copies", copies_json(t.copies)},
          {"launch_overhead", launch_overhead_json(t.launch_overhead)},
          {"occupancy", occupancy_json(t.occupancy)},
          {"memory", memory_json(t.memory)}};
}

}  // namespace stepscope
