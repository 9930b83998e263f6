// A rank's summary file: RankAnalysis and every struct inside it, one key per field, as CBOR.
//
// Errors name the field that is missing or of the wrong type. nlohmann's diagnostics mode knows
// where a value sits in its document (each value keeps its parent), so it is switched on here. It
// is part of nlohmann's ABI tag: this file's nlohmann::json is a type of its own, and nothing of
// it crosses this file's interface, which speaks bytes.
#define JSON_DIAGNOSTICS 1

// GCC 12 to 14 take the parent pointer of diagnostics mode for an out-of-bounds access when they
// inline a conversion to json (a false positive, fixed in GCC 15).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif

#include "stepscope/rank_summary.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <type_traits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "stepscope/error.hpp"

NLOHMANN_JSON_NAMESPACE_BEGIN
// nlohmann 3.11.2 has no std::optional support; an empty one is null.
template <typename T>
struct adl_serializer<std::optional<T>> {
  template <typename Json>
  static void to_json(Json& j, const std::optional<T>& v) {
    if (v) {
      j = *v;
    } else {
      j = nullptr;
    }
  }
  template <typename Json>
  static void from_json(const Json& j, std::optional<T>& v) {
    if (j.is_null()) {
      v.reset();
    } else {
      j.get_to(v.emplace());
    }
  }
};
NLOHMANN_JSON_NAMESPACE_END

namespace stepscope {
namespace {

// Converts to any type, so that T{AnyField{}...} compiles with as many of them as T has fields
// and no more: the count of an aggregate's fields, to hold each field list below to its struct.
struct AnyField {
  template <typename U>
  operator U() const;  // NOLINT(google-explicit-constructor)
};

template <typename T, std::size_t... I>
constexpr bool takes_fields(std::index_sequence<I...>) {
  return requires { T{(static_cast<void>(I), AnyField{})...}; };
}

template <typename T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (takes_fields<T>(std::make_index_sequence<N + 1>{})) {
    return field_count<T, N + 1>();
  } else {
    return N;
  }
}

constexpr std::size_t names_in(std::string_view list) {
  return static_cast<std::size_t>(std::count(list.begin(), list.end(), ',')) + 1;
}

}  // namespace
}  // namespace stepscope

// to_json / from_json of Type, one key per field named as the field. Every field must be listed
// (in declaration order, by convention): a field added to the struct and not here fails the build
// instead of silently missing from every summary.
#define STEPSCOPE_SUMMARY_FIELDS(Type, ...)                                                   \
  static_assert(::stepscope::field_count<Type>() == ::stepscope::names_in(#__VA_ARGS__),      \
                #Type " has a field that the summary does not list");                         \
  NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Type, __VA_ARGS__)

namespace stepscope {
namespace {

// Long lists of small rows (a critical path's edges, a time series' points) are written column by
// column: integers (enums, flags) as their differences from the row before, which are small for
// times in order and cost a byte or two in CBOR; strings as a table of their distinct values and
// one index per row; doubles as they are. Differences wrap around in 64 bits, so any value comes
// back exactly. A path of 17,000 edges takes 0.3 MB this way against 2.6 MB as one object per row.
//   rows {ts: 100, v: 3}, {ts: 250, v: 3}, {ts: 260, v: 1}  ->  {"ts": [100, 150, 10], "v": [3, 0, -2]}
template <typename V>
nlohmann::json column_of(const std::vector<V>& values) {
  if constexpr (std::is_same_v<V, std::string>) {
    nlohmann::json table = nlohmann::json::array(), index = nlohmann::json::array();
    std::map<std::string_view, std::size_t> seen;
    for (const std::string& v : values) {
      auto [it, fresh] = seen.try_emplace(v, table.size());
      if (fresh) table.push_back(v);
      index.push_back(it->second);
    }
    return {{"values", std::move(table)}, {"index", std::move(index)}};
  } else if constexpr (std::is_floating_point_v<V>) {
    return values;
  } else {
    nlohmann::json out = nlohmann::json::array();
    std::uint64_t before = 0;
    for (const V& v : values) {
      const auto now = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
      out.push_back(static_cast<std::int64_t>(now - before));
      before = now;
    }
    return out;
  }
}

// A string column decodes to at most this many bytes: a few rows naming one long value could
// otherwise ask for terabytes.
constexpr std::size_t kMaxColumnBytes = std::size_t{1} << 30;

std::int64_t integer_of(const nlohmann::json& v) {
  if (!v.is_number_integer()) throw nlohmann::json::type_error::create(302, "an integer is expected", &v);
  return v.get<std::int64_t>();
}

template <typename V>
std::vector<V> column_from(const nlohmann::json& j) {
  std::vector<V> out;
  if constexpr (std::is_same_v<V, std::string>) {
    const auto table = j.at("values").get<std::vector<std::string>>();
    // Every index is checked, and the column's size summed, before any row is built.
    std::vector<std::size_t> picks;
    std::size_t bytes = 0;
    for (const auto& i : j.at("index")) {
      const std::int64_t k = integer_of(i);
      if (k < 0 || static_cast<std::size_t>(k) >= table.size())
        throw nlohmann::json::other_error::create(501, "index past the table of values", &j);
      bytes += table[static_cast<std::size_t>(k)].size();
      if (bytes > kMaxColumnBytes) throw nlohmann::json::other_error::create(501, "a column of more than 1 GiB", &j);
      picks.push_back(static_cast<std::size_t>(k));
    }
    out.reserve(picks.size());
    for (std::size_t k : picks) out.push_back(table[k]);
  } else if constexpr (std::is_floating_point_v<V>) {
    j.get_to(out);
  } else {
    std::uint64_t now = 0;
    for (const auto& d : j) {
      now += static_cast<std::uint64_t>(integer_of(d));
      out.push_back(static_cast<V>(static_cast<std::int64_t>(now)));
    }
  }
  return out;
}

template <typename T, typename F>
struct Column {
  const char* name;
  F T::*field;
};

template <typename T, typename... F>
void rows_to_json(nlohmann::json& j, const std::vector<T>& rows, Column<T, F>... columns) {
  j = nlohmann::json::object();
  auto put = [&](auto column) {
    std::vector<std::remove_cvref_t<decltype(rows[0].*column.field)>> values;
    values.reserve(rows.size());
    for (const T& r : rows) values.push_back(r.*column.field);
    j[column.name] = column_of(values);
  };
  (put(columns), ...);
}

template <typename T, typename... F>
void rows_from_json(const nlohmann::json& j, std::vector<T>& rows, Column<T, F>... columns) {
  rows.clear();
  bool first = true;
  auto take = [&](auto column) {
    auto values = column_from<std::remove_cvref_t<decltype(rows[0].*column.field)>>(j.at(column.name));
    if (first) rows.resize(values.size()), first = false;
    if (values.size() != rows.size())
      throw nlohmann::json::other_error::create(501, fmt::format("column {} has another length", column.name), &j);
    for (std::size_t i = 0; i < values.size(); ++i) rows[i].*column.field = std::move(values[i]);
  };
  (take(columns), ...);
}

}  // namespace
}  // namespace stepscope

// Pasted one after another without a separator (NLOHMANN_JSON_PASTE), so each brings its comma.
#define STEPSCOPE_SUMMARY_COLUMN(field) , ::stepscope::Column<Row, decltype(Row::field)>{#field, &Row::field}

// A list of Type written column by column (see rows_to_json); every field listed, as above.
#define STEPSCOPE_SUMMARY_COLUMNS(Type, ...)                                                       \
  static_assert(::stepscope::field_count<::stepscope::Type>() == ::stepscope::names_in(#__VA_ARGS__), \
                #Type " has a field that the summary does not list");                              \
  NLOHMANN_JSON_NAMESPACE_BEGIN                                                                    \
  template <>                                                                                      \
  struct adl_serializer<std::vector<::stepscope::Type>> {                                          \
    using Row = ::stepscope::Type;                                                                 \
    template <typename Json>                                                                       \
    static void to_json(Json& j, const std::vector<Row>& rows) {                                   \
      ::stepscope::rows_to_json(j, rows NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(STEPSCOPE_SUMMARY_COLUMN, __VA_ARGS__))); \
    }                                                                                              \
    template <typename Json>                                                                       \
    static void from_json(const Json& j, std::vector<Row>& rows) {                                 \
      ::stepscope::rows_from_json(j, rows NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(STEPSCOPE_SUMMARY_COLUMN, __VA_ARGS__))); \
    }                                                                                              \
  };                                                                                               \
  NLOHMANN_JSON_NAMESPACE_END

STEPSCOPE_SUMMARY_COLUMNS(CpPathEdge, begin_ts, end_ts, duration, type, bound_by, kind, event, stream, name)
STEPSCOPE_SUMMARY_COLUMNS(QueuePoint, ts, value)
STEPSCOPE_SUMMARY_COLUMNS(BandwidthPoint, ts, gbps)
STEPSCOPE_SUMMARY_COLUMNS(MemorySample, ts, allocated, reserved)
STEPSCOPE_SUMMARY_COLUMNS(CollectiveMark, key, start, end, point_to_point, role, steady)

namespace stepscope {

// Leaves first: each definition is seen before a struct that holds it.

// A registry's id read back from its stable string; `found` is the registry's lookup of it.
template <typename Id>
Id registered(std::optional<Id> found, const char* what, const nlohmann::json& j) {
  if (!found) throw nlohmann::json::other_error::create(501, what, &j);
  return *found;
}

// warning_ids.hpp: a warning by its stable string, as docs/warnings.md names it.
void to_json(nlohmann::json& j, const WarningId& w) { j = warning_name(w); }
void from_json(const nlohmann::json& j, WarningId& w) { w = registered(find_warning(j.get<std::string>()), "an unknown warning id", j); }

// trace.hpp, analysis.hpp: what was read.
STEPSCOPE_SUMMARY_FIELDS(IngestWarning, id, counts, names)
STEPSCOPE_SUMMARY_FIELDS(Warning, id, text)
STEPSCOPE_SUMMARY_FIELDS(ThreadSummary, pid, tid, name, events)
STEPSCOPE_SUMMARY_FIELDS(StreamInfo, stream, context, priority, type)
STEPSCOPE_SUMMARY_FIELDS(StreamSummary, device, stream, events, busy_ns, info)
STEPSCOPE_SUMMARY_FIELDS(DeviceProperties, id, name, total_global_mem, compute_major, compute_minor, num_sms,
                         max_threads_per_sm, regs_per_sm, shared_mem_per_sm, warp_size)
STEPSCOPE_SUMMARY_FIELDS(IngestSummary, rank, rank_source, path, layout, world_size, backend, events,
                         events_by_category, events_by_kind, first_ts, last_end, counters, threads, streams, gpus,
                         devices, profiler_steps, bytes_read, truncated, bytes_lost, warnings)

// facts.hpp; trust_codes.hpp: a trust code by its stable string, as the JSON spells it.
void to_json(nlohmann::json& j, const TrustCode& c) { j = trust_code_name(c); }
void from_json(const nlohmann::json& j, TrustCode& c) { c = registered(find_trust_code(j.get<std::string>()), "an unknown trust code", j); }

STEPSCOPE_SUMMARY_FIELDS(StartupOutlier, event, start, end, peer_median_ns)
STEPSCOPE_SUMMARY_FIELDS(DeviceModel, present, name, vendor, cc_major, cc_minor, arch, memory_bytes, sms, source,
                         lower_bound)
STEPSCOPE_SUMMARY_FIELDS(TrustWarning, code, severity, rank, text, advice, figures)
STEPSCOPE_SUMMARY_FIELDS(Trust, warnings)
STEPSCOPE_SUMMARY_FIELDS(InputInventory, recorder, format, counts, options, processes, threads, gpus, streams,
                         ranks_in_file, ranks_evidence, window_ns, startup_only, startup_evidence, device_evidence)

namespace {

// RankFacts less names, the event facts (event_stage, event_role, event_parent, event_steps and the
// stage_rules they carry), comm_roles and device_sync_busy: they are per name or per event of the
// rank's trace, which the summary does not carry, and nothing after the analysis reads them (the
// partition's mix keeps what comm_roles sum to).
template <typename Facts, typename Visit>
void visit_summary_facts(Facts& f, Visit&& visit) {
  visit("track_role", f.track_role);
  visit("main_track", f.main_track);
  visit("device_syncs", f.device_syncs);
  visit("scalar_reads_without_wait", f.scalar_reads_without_wait);
  visit("startup", f.startup);
  visit("device", f.device);
  visit("pytorch", f.pytorch);
  visit("run_kind", f.run_kind);
  visit("run_kind_evidence", f.run_kind_evidence);
  visit("cuda_graphs", f.cuda_graphs);
  visit("gpu_records", f.gpu_records);
  visit("launch_calls", f.launch_calls);
  visit("launches_without_gpu", f.launches_without_gpu);
  visit("gpu_without_launch", f.gpu_without_launch);
  visit("graph_launches", f.graph_launches);
  visit("graph_launches_without_gpu", f.graph_launches_without_gpu);
  visit("trust", f.trust);
  visit("inventory", f.inventory);
}
static_assert(field_count<RankFacts>() == 18 + 8, "RankFacts has a field that visit_summary_facts does not list");

}  // namespace

void to_json(nlohmann::json& j, const RankFacts& f) {
  j = nlohmann::json::object();
  visit_summary_facts(f, [&j](const char* key, const auto& v) { j[key] = v; });
}

void from_json(const nlohmann::json& j, RankFacts& f) {
  visit_summary_facts(f, [&j](const char* key, auto& v) { j.at(key).get_to(v); });
}

// lever_ids.hpp: a lever by its stable string, so that a summary names it as the JSON does.
void to_json(nlohmann::json& j, const LeverId& l) { j = lever_name(l); }

void from_json(const nlohmann::json& j, LeverId& l) { l = registered(find_lever(j.get<std::string>()), "an unknown lever id", j); }

// partition.hpp, stability.hpp
STEPSCOPE_SUMMARY_FIELDS(StepPartition, number, name, start, end, host_start, host_end, warmup, warmup_reason, ns)
STEPSCOPE_SUMMARY_FIELDS(ComputeMix, class_ns, kernels, softmax_ns, gemm_ns_by_dtype, fp32_simt_gemm_ns,
                         fp32_simt_conv_ns, comm_ns_by_kind, comm_ns_by_role, compiled_ns, compiled_eltwise_norm_ns, recompute_seen,
                         fused_optimizer_seen)
STEPSCOPE_SUMMARY_FIELDS(RankPartition, gpu, source, source_detail, main_thread, steps, steady_steps,
                         steady_mean_ns, steady_mean_category, mix, sync_calls, item_calls, model_syncs,
                         sync_refill_ns, sync_wait_ns, profiler_overhead_ns, host_runs_ahead, startup_skipped_ns,
                         notes, trust)
STEPSCOPE_SUMMARY_FIELDS(Spike, step, duration, excess, grew, grew_by)
STEPSCOPE_SUMMARY_FIELDS(Periodicity, kind, every, category, mean_excess, occurrences)
STEPSCOPE_SUMMARY_FIELDS(Stability, steps, mean_ns, p50_ns, p90_ns, max_ns, cv, quiet_ns, spikes, period,
                         bursty)

// gpu_timeline.hpp
STEPSCOPE_SUMMARY_FIELDS(SampleStats, count, sum, mean, std, min, p25, median, p75, p95, max)
STEPSCOPE_SUMMARY_FIELDS(HtaLoad, rounded_to_us, profiler_step_names, last_step_dropped, cutoff_ts, rows_kept,
                         gpu_rows, iterations)
STEPSCOPE_SUMMARY_FIELDS(HtaTemporalBreakdown, available, note, idle, compute, non_compute, kernel_time,
                         idle_share, compute_share, non_compute_share)
STEPSCOPE_SUMMARY_FIELDS(HtaIdleCategory, present, idle, ratio, intervals)
STEPSCOPE_SUMMARY_FIELDS(HtaStreamIdle, stream, kernels, category)
STEPSCOPE_SUMMARY_FIELDS(HtaIdleBreakdown, available, note, streams, total)
STEPSCOPE_SUMMARY_FIELDS(HtaCommCompOverlap, available, note, overlap, communication, share)
STEPSCOPE_SUMMARY_FIELDS(HtaKernelTypeTime, label, mask, time, share)
STEPSCOPE_SUMMARY_FIELDS(HtaKernelRow, name, type, others, sum, max, min, mean, stddev, count, names, max_dur,
                         min_dur, mean_dur, cls)
STEPSCOPE_SUMMARY_FIELDS(HtaKernelBreakdown, types, top)
STEPSCOPE_SUMMARY_FIELDS(HtaLaunch, cpu_event, gpu_event, correlation, cpu_duration, gpu_duration, launch_delay)
STEPSCOPE_SUMMARY_FIELDS(HtaLaunchStats, events, short_gpu_kernels, runtime_outliers, launch_delay_outliers,
                         gpu_shorter_than_cpu, cpu_duration, gpu_duration, launch_delay, worst_delays,
                         worst_runtimes)
STEPSCOPE_SUMMARY_FIELDS(StepWindow, number, start, end)
STEPSCOPE_SUMMARY_FIELDS(KernelClassShare, cls, count, time, share)
STEPSCOPE_SUMMARY_FIELDS(CollectiveShare, collective, count, time, share)
STEPSCOPE_SUMMARY_FIELDS(KernelClasses, total_time, classes, collectives, tensor_core_share_of_gemm)
STEPSCOPE_SUMMARY_FIELDS(SyncCall, event, ts, host_blocked, gpu_idle_after, step)
STEPSCOPE_SUMMARY_FIELDS(SyncByName, name, count, host_blocked, gpu_idle_after)
STEPSCOPE_SUMMARY_FIELDS(SyncPoints, count, host_blocked, gpu_idle_after, per_step, by_name, count_per_step, worst)
STEPSCOPE_SUMMARY_FIELDS(CopyGroup, direction, host, count, bytes, time, gbps, critical_count, critical_time)
STEPSCOPE_SUMMARY_FIELDS(CopyEvent, event, direction, host, bytes, ts, dur, gbps, critical)
STEPSCOPE_SUMMARY_FIELDS(Copies, count, time, pageable_count, pageable_time, critical_time, groups, longest)
STEPSCOPE_SUMMARY_FIELDS(LaunchOverhead, kernels, kernels_per_step, mean_kernels_per_step, kernel_duration,
                         short_kernel_share, short_kernel, gaps, launch_call)
STEPSCOPE_SUMMARY_FIELDS(Occupancy, available, coverage, achieved_occupancy_pct, blocks_per_sm, warps_per_sm,
                         sm_efficiency_pct)
STEPSCOPE_SUMMARY_FIELDS(DeviceMemoryPeak, device_type, device_id, samples, peak_allocated, peak_allocated_ts,
                         peak_allocated_step, peak_reserved, peak_reserved_ts, peak_reserved_step)
STEPSCOPE_SUMMARY_FIELDS(MemoryPeaks, available, devices)
STEPSCOPE_SUMMARY_FIELDS(GpuTimeline, has_gpu_activity, hta_load, hta_temporal, hta_idle, hta_overlap,
                         hta_kernels, hta_launches, steps, classes, syncs, copies, launch_overhead, occupancy, memory)

// cuda_summary.hpp
STEPSCOPE_SUMMARY_FIELDS(DurationStats, name, instances, total, avg, median, min, max, stddev, time_pct)
STEPSCOPE_SUMMARY_FIELDS(CopyKindStats, kind, bytes, time)
STEPSCOPE_SUMMARY_FIELDS(DeviceBusy, device, span, busy, idle, idle_pct, gaps_over_threshold, largest_gap)
STEPSCOPE_SUMMARY_FIELDS(CudaSummary, present, kernels, kernels_short_name, kernel_count, kernel_total,
                         memcpy_by_kind, runtime_api, sync_calls, pageable_async_copies, kernel_launches,
                         launches_then_sync, sync_after_launch, gap_threshold, devices)

// critical_path.hpp, drilldown.hpp
STEPSCOPE_SUMMARY_FIELDS(CpTotal, duration, edges)
STEPSCOPE_SUMMARY_FIELDS(CriticalPath, success, error, annotation, annotation_event, window_start, window_end,
                         window_open_end, nodes, edges, edges_by_type, path, length, by_bound_by, by_edge_type,
                         summary_pct, by_kind)
STEPSCOPE_SUMMARY_FIELDS(OperatorRow, name, input_dims, module, calls, host_total, host_self, gpu_total, gpu_self,
                         kernels, kernels_per_call, step_share, gpu_share, stage, on_critical_path)
STEPSCOPE_SUMMARY_FIELDS(OperatorView, grouping, step_time, gpu_time, rows)
STEPSCOPE_SUMMARY_FIELDS(KernelRow, name, kind, cls, engine, dtype, calls, total, min, max, mean, share,
                         launching_op, achieved_occupancy_pct, registers_per_thread, shared_memory)
STEPSCOPE_SUMMARY_FIELDS(KernelView, gpu_time, rows)
STEPSCOPE_SUMMARY_FIELDS(StreamQueue, stream, summary, series, time_at_max)
STEPSCOPE_SUMMARY_FIELDS(QueueLength, available, note, streams)
STEPSCOPE_SUMMARY_FIELDS(CopyBandwidth, name, summary, series)
STEPSCOPE_SUMMARY_FIELDS(MemoryBandwidth, available, note, types)
STEPSCOPE_SUMMARY_FIELDS(KernelSequence, pattern, count, gpu_time, cpu_time)
STEPSCOPE_SUMMARY_FIELDS(KernelSequences, op, chosen, min_pattern_len, note, sequences)
STEPSCOPE_SUMMARY_FIELDS(StepMemoryPeak, step, peak_allocated, ts, op)
STEPSCOPE_SUMMARY_FIELDS(DeviceMemoryTimeline, device_type, device_id, samples, peak_allocated, peak_reserved,
                         peak_ts, peak_op, steps)
STEPSCOPE_SUMMARY_FIELDS(MemoryTimeline, available, devices)
STEPSCOPE_SUMMARY_FIELDS(DrillDown, operators, kernels, queue_length, memory_bandwidth, sequences, memory,
                         critical_path)

namespace footgun {

// footgun_detector.hpp: each detector's evidence under its name, field by field through the
// detector's own fields(), so that the summary holds whatever the registered detectors gather.
STEPSCOPE_SUMMARY_FIELDS(NameTime, count, time)

namespace {

// Writes an evidence's fields into an object.
class FieldWriter final : public EvidenceFields {
 public:
  explicit FieldWriter(nlohmann::json& j) : j_(j) { j_ = nlohmann::json::object(); }
  void field(std::string_view name, std::int64_t& v) override { j_[std::string(name)] = v; }
  void field(std::string_view name, double& v) override { j_[std::string(name)] = v; }
  void field(std::string_view name, bool& v) override { j_[std::string(name)] = v; }
  void field(std::string_view name, ByName& v) override { j_[std::string(name)] = v; }
  void field(std::string_view name, std::vector<std::string>& v) override { j_[std::string(name)] = v; }
  void records(std::string_view name, std::size_t& count,
               const std::function<void(std::size_t, EvidenceFields&)>& each) override {
    nlohmann::json& list = j_[std::string(name)] = nlohmann::json::array();
    for (std::size_t i = 0; i < count; ++i) {
      FieldWriter row(list.emplace_back());
      each(i, row);
    }
  }

 private:
  nlohmann::json& j_;
};

// Reads them back; a missing field or one of another type is an error naming it.
class FieldReader final : public EvidenceFields {
 public:
  explicit FieldReader(const nlohmann::json& j) : j_(j) {}
  void field(std::string_view name, std::int64_t& v) override { at(name).get_to(v); }
  void field(std::string_view name, double& v) override { at(name).get_to(v); }
  void field(std::string_view name, bool& v) override { at(name).get_to(v); }
  void field(std::string_view name, ByName& v) override { at(name).get_to(v); }
  void field(std::string_view name, std::vector<std::string>& v) override { at(name).get_to(v); }
  void records(std::string_view name, std::size_t& count,
               const std::function<void(std::size_t, EvidenceFields&)>& each) override {
    const nlohmann::json& list = at(name);
    if (!list.is_array()) throw nlohmann::json::type_error::create(302, "an array is expected", &list);
    count = list.size();
    for (std::size_t i = 0; i < count; ++i) {
      FieldReader row(list[i]);
      each(i, row);
    }
  }

 private:
  const nlohmann::json& at(std::string_view name) const { return j_.at(std::string(name)); }
  const nlohmann::json& j_;
};

}  // namespace

void to_json(nlohmann::json& j, const RankFootguns& r) {
  j = {{"rank", r.rank}, {"gpu", r.gpu}, {"mtia", r.mtia}, {"steady_steps", r.steady_steps}, {"step_ns", r.step_ns}};
  nlohmann::json& evidence = j["evidence"] = nlohmann::json::object();
  const std::vector<Detector>& table = detectors();
  // A rank assembled without a scan writes each detector's empty evidence.
  for (std::size_t d = 0; d < table.size(); ++d) {
    FieldWriter w(evidence[std::string(table[d].name)]);
    if (d < r.evidence.size()) r.evidence[d]->fields(w);
    else table[d].make()->fields(w);
  }
}

void from_json(const nlohmann::json& j, RankFootguns& r) {
  j.at("rank").get_to(r.rank);
  j.at("gpu").get_to(r.gpu);
  j.at("mtia").get_to(r.mtia);
  j.at("steady_steps").get_to(r.steady_steps);
  j.at("step_ns").get_to(r.step_ns);
  r.make_evidence();
  const std::vector<Detector>& table = detectors();
  const nlohmann::json& evidence = j.at("evidence");
  for (std::size_t d = 0; d < table.size(); ++d) {
    FieldReader reader(evidence.at(std::string(table[d].name)));
    r.evidence[d]->fields(reader);
  }
}

}  // namespace footgun

// analysis.hpp
// clock_alignment.hpp
STEPSCOPE_SUMMARY_FIELDS(CollectiveMarks, marks, kernels, by_sequence)

namespace whatif {

// whatif.hpp
STEPSCOPE_SUMMARY_FIELDS(StepReplay, number, measured_ns, replayed_ns)
STEPSCOPE_SUMMARY_FIELDS(Disagreement, edge, count, total_ns)
STEPSCOPE_SUMMARY_FIELDS(Prediction, id, modelled, speedup, uncertainty, by_setting, held, basis)
STEPSCOPE_SUMMARY_FIELDS(PlanStep, id, speedup)
STEPSCOPE_SUMMARY_FIELDS(TimeSpan, start, end)
STEPSCOPE_SUMMARY_FIELDS(TimelineView, steps, host_waits, gpu)
STEPSCOPE_SUMMARY_FIELDS(TimelineEvent, name, lane, gpu, recorded_ts, recorded_dur, predicted_ts, predicted_dur)
STEPSCOPE_SUMMARY_FIELDS(PlanTimeline, present, levers, recorded, predicted, events)
STEPSCOPE_SUMMARY_FIELDS(RankWhatIf, present, nodes, edges, steps, replay_error_mean, replay_error_max, disagreements,
                         levers, custom, plan, timeline)

}  // namespace whatif

static_assert(field_count<RankAnalysis>() == 10, "RankAnalysis has a field that the summary does not list");

// Each analysis's object names the rank, as the files of this schema have always done, though
// the struct holds the number once (ingest.rank); a reader takes it from the ingest alone.
void to_json(nlohmann::json& j, const RankAnalysis& a) {
  j = {{"ingest", a.ingest}, {"facts", a.facts}, {"partition", a.partition}, {"stability", a.stability},
       {"gpu_timeline", a.gpu_timeline}, {"cuda_summary", a.cuda_summary}, {"drilldown", a.drilldown},
       {"footgun_scan", a.footgun_scan}, {"collectives", a.collectives}, {"whatif", a.whatif}};
  for (const char* key : {"facts", "partition", "stability", "gpu_timeline"}) j[key]["rank"] = a.rank();
  if (a.drilldown) j["drilldown"]["rank"] = a.rank();
}

void from_json(const nlohmann::json& j, RankAnalysis& a) {
  j.at("ingest").get_to(a.ingest);
  j.at("facts").get_to(a.facts);
  j.at("partition").get_to(a.partition);
  j.at("stability").get_to(a.stability);
  j.at("gpu_timeline").get_to(a.gpu_timeline);
  j.at("cuda_summary").get_to(a.cuda_summary);
  j.at("drilldown").get_to(a.drilldown);
  j.at("footgun_scan").get_to(a.footgun_scan);
  j.at("collectives").get_to(a.collectives);
  j.at("whatif").get_to(a.whatif);
}

namespace {

using json = nlohmann::json;

// Deeper than any summary nests (about ten levels).
constexpr int kMaxDepth = 64;

// The document builder from_cbor uses, refusing deep nesting: the CBOR reader recurses once per
// level, so a damaged file could otherwise exhaust the stack.
class BoundedDom : public nlohmann::detail::json_sax_dom_parser<json> {
  using Base = nlohmann::detail::json_sax_dom_parser<json>;

 public:
  explicit BoundedDom(json& doc) : Base(doc) {}
  bool start_object(std::size_t n) { return enter() && Base::start_object(n); }
  bool start_array(std::size_t n) { return enter() && Base::start_array(n); }
  bool end_object() {
    --depth_;
    return Base::end_object();
  }
  bool end_array() {
    --depth_;
    return Base::end_array();
  }
  bool too_deep() const { return too_deep_; }

 private:
  bool enter() {
    too_deep_ = ++depth_ > kMaxDepth;
    return !too_deep_;
  }
  int depth_ = 0;
  bool too_deep_ = false;
};

// Messages quote the file's own text (schema names, field paths through map keys): they stay on
// one line whatever it holds.
std::string one_line(std::string s) {
  std::replace_if(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }, ' ');
  return s;
}

[[noreturn]] void refuse(const std::string& name, const std::string& what) {
  throw InputError(one_line(fmt::format("{}: {}", name, what)));
}

json read_cbor(std::string_view bytes, const std::string& name) {
  if (bytes.empty()) refuse(name, "not a stepscope summary (empty file)");
  json doc;
  BoundedDom dom(doc);
  try {
    if (json::sax_parse(bytes.begin(), bytes.end(), &dom, json::input_format_t::cbor)) return doc;
  } catch (const json::parse_error& e) {
    refuse(name, fmt::format("not a stepscope summary (not CBOR at byte {})", e.byte));
  } catch (const json::exception&) {
    // A length no container can hold (out_of_range 408).
  }
  refuse(name, dom.too_deep() ? fmt::format("not a stepscope summary (nested deeper than {} levels)", kMaxDepth)
                              : std::string("not a stepscope summary (not CBOR)"));
}

void check_schema(const json& doc, const std::string& name) {
  const auto it = doc.find("schema");
  if (it == doc.end() || !it->is_string()) refuse(name, "not a stepscope summary (no schema)");
  const auto& schema = it->get_ref<const std::string&>();
  if (schema != kSummarySchema) {
    refuse(name, fmt::format("schema {}, this stepscope reads {}", schema, kSummarySchema));
  }
}

// The tokens of a JSON pointer ("/ranks/0/a~1b" -> ranks, 0, a/b).
std::vector<std::string> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> tokens;
  for (char c : pointer) {
    if (c == '/') {
      tokens.emplace_back();
    } else if (!tokens.empty()) {
      tokens.back() += c;
    }
  }
  for (auto& t : tokens) {
    for (auto at = t.find("~1"); at != std::string::npos; at = t.find("~1", at + 1)) t.replace(at, 2, "/");
    for (auto at = t.find("~0"); at != std::string::npos; at = t.find("~0", at + 1)) t.replace(at, 2, "~");
  }
  return tokens;
}

// The element `token` names under `node`, or null when there is none.
const json* child(const json* node, const std::string& token) {
  if (node == nullptr) return nullptr;
  if (node->is_array()) {
    std::size_t index = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
    const bool whole = ec == std::errc{} && end == token.data() + token.size();
    return whole && index < node->size() ? &(*node)[index] : nullptr;
  }
  const auto it = node->find(token);
  return it != node->end() ? &*it : nullptr;
}

// "/ranks/3/partition/steps" -> "ranks[3].partition.steps". The document tells array indexes
// from map keys that happen to be digits.
std::string dotted_path(const json& doc, std::string_view pointer) {
  std::string out;
  const json* node = &doc;
  for (const auto& token : pointer_tokens(pointer)) {
    if (node != nullptr && node->is_array()) {
      out += '[';
      out += token;
      out += ']';
    } else {
      if (!out.empty()) out += '.';
      out += token;
    }
    node = child(node, token);
  }
  return out;
}

// nlohmann's "[json.exception.type_error.302] (/ranks/0/partition/steps) type must be array, but
// is null" -> "field 'ranks[0].partition.steps': type must be array, but is null"; a missing key
// ("(/ranks/0) key 'facts' not found") -> "field 'ranks[0].facts': missing".
std::string field_error(const json& doc, const json::exception& e) {
  std::string_view text = e.what();
  if (const auto end = text.find("] "); end != std::string_view::npos) text.remove_prefix(end + 2);
  std::string_view pointer;
  if (text.starts_with('(')) {
    if (const auto close = text.find(") "); close != std::string_view::npos) {
      pointer = text.substr(1, close - 1);
      text.remove_prefix(close + 2);
    }
  }
  std::string path = dotted_path(doc, pointer);
  constexpr std::string_view kKey = "key '", kNotFound = "' not found";
  if (text.starts_with(kKey) && text.ends_with(kNotFound)) {
    const auto key = text.substr(kKey.size(), text.size() - kKey.size() - kNotFound.size());
    if (!path.empty()) path += '.';
    path += key;
    text = "missing";
  }
  return fmt::format("field '{}': {}", path, text);
}

}  // namespace

std::string encode_summary(const SummaryFile& s) {
  const json doc = {{"schema", kSummarySchema}, {"warnings", s.warnings}, {"ranks", s.ranks}};
  std::string out;
  json::to_cbor(doc, out);
  return out;
}

SummaryFile decode_summary(std::string_view bytes, const std::string& name) {
  const json doc = read_cbor(bytes, name);
  check_schema(doc, name);
  SummaryFile s;
  try {
    doc.at("warnings").get_to(s.warnings);
    doc.at("ranks").get_to(s.ranks);
  } catch (const json::exception& e) {
    refuse(name, field_error(doc, e));
  }
  return s;
}

}  // namespace stepscope
