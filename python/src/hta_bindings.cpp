// `stepscope._stepscope.HtaTrace`: traces read once, then each of HTA's analyses computed on
// demand with the arguments an HTA notebook passes (`stepscope.hta.TraceAnalysis`). The figures
// come from the same C++ as the report's (GPU timeline, drill-down, critical path); only the
// options differ per call, so a notebook that asks for `num_kernels=20` gets HTA's answer for 20.
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bindings.hpp"
#include "stepscope/critical_path.hpp"
#include "stepscope/drilldown.hpp"
#include "stepscope/error.hpp"
#include "stepscope/gpu_timeline.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
// The report module's serialisers of one rank's tables (src/report/gpu_timeline_json.hpp and
// drilldown_json.hpp, not public headers): the frames read the same keys as in the full report.
nlohmann::json to_json(const GpuTimeline& t, int rank);
nlohmann::json to_json(const DrillDown& d);
nlohmann::json kernel_types_to_json(const std::vector<HtaKernelTypeTime>& types);
namespace report_json {
std::string utf8_safe(std::string_view in);
}  // namespace report_json
namespace hta {
// src/analysis/hta_view.hpp: the double Python's json.loads makes of a timestamp past 2^53 ns.
double python_us_far(ns_t ns);
}  // namespace hta
}  // namespace stepscope

namespace py = pybind11;

namespace stepscope::python {
namespace {

// HTA's start of a row in µs: with sub-µs times, ceil() of the double json.loads made of the
// trace's text (hta_view.hpp's rounded_start).
double hta_start_us(ns_t ns, bool rounded) {
  constexpr ns_t kExact = ns_t{1} << 53;
  const double us = (ns > -kExact && ns < kExact) ? static_cast<double>(ns) / 1000.0 : hta::python_us_far(ns);
  return rounded ? std::ceil(us) : us;
}

constexpr std::size_t kWholeSeries = std::numeric_limits<std::size_t>::max();

ns_t us_to_ns(double us, const char* option) {
  if (!(us >= 0) || us > 1e12) throw InputError(std::string(option) + " must be a non-negative number of microseconds");
  return static_cast<ns_t>(us * 1000.0 + 0.5);
}

class HtaTrace {
 public:
  explicit HtaTrace(Trace t) : trace_(std::move(t)) {}

  std::vector<int> ranks() const {
    std::vector<int> out;
    for (const RankTrace& r : trace_.ranks) out.push_back(r.rank);
    return out;
  }

  std::vector<std::string> warnings() const { return ingest_warning_texts(trace_.warnings); }

  // HTA's time origin: the earliest start of a complete row (the profiler's own "Trace" span
  // left out) over every rank, in HTA's µs. HTA shifts every ts by it (_align_all_ranks).
  double origin_us() const {
    py::gil_scoped_release unlocked;
    double origin = 0;
    bool any = false;
    for (const RankTrace& r : trace_.ranks) {
      const bool rounded = analyze_gpu_timeline(r, GpuTimelineOptions{}).hta_load.rounded_to_us;
      const EventTable& ev = r.events;
      ns_t first = 0;
      bool seen = false;
      for (std::size_t i = 0; i < ev.size(); ++i) {
        if (ev.phase[i] != Phase::Complete || ev.kind[i] == Kind::TraceSpan) continue;
        if (!seen || ev.ts[i] < first) first = ev.ts[i], seen = true;
      }
      if (!seen) continue;
      const double us = hta_start_us(first, rounded);
      if (!any || us < origin) origin = us, any = true;
    }
    return origin;
  }

  // rank -> the file it was read from (as bytes: a name need not be UTF-8).
  std::vector<std::pair<int, py::bytes>> files() const {
    std::vector<std::pair<int, py::bytes>> out;
    for (const RankTrace& r : trace_.ranks) out.emplace_back(r.rank, py::bytes(r.path));
    return out;
  }

  std::string gpu_timeline(int rank, bool include_last, double consecutive_kernel_delay_us, double runtime_cutoff_us,
                           double launch_delay_cutoff_us, bool include_memory_events, double duration_ratio,
                           int num_kernels) const {
    const RankTrace& r = at(rank);
    GpuTimelineOptions o;
    o.include_last_profiler_step = include_last;
    o.consecutive_kernel_delay = us_to_ns(consecutive_kernel_delay_us, "consecutive_kernel_delay");
    o.runtime_cutoff = us_to_ns(runtime_cutoff_us, "runtime_cutoff");
    o.launch_delay_cutoff = us_to_ns(launch_delay_cutoff_us, "launch_delay_cutoff");
    o.include_memory_events = include_memory_events;
    if (!(duration_ratio >= 0 && duration_ratio <= 1)) throw InputError("duration_ratio must be between 0 and 1");
    o.duration_ratio = duration_ratio;
    if (num_kernels < 0) throw InputError("num_kernels must be non-negative");
    o.num_kernels = num_kernels;
    py::gil_scoped_release unlocked;
    const GpuTimeline t = analyze_gpu_timeline(r, o);
    nlohmann::json j = to_json(t, r.rank);
    j["kernel_types"] = kernel_types_to_json(t.hta_kernels.types);
    return dump_report(j);
  }

  // Every (launch call, GPU row) pair HTA's inner merge gives, in the call's trace order:
  // correlation, cpu duration, gpu duration and launch delay (GPU start - end of the call, 0 where
  // the kernel started before the call returned), in HTA's whole µs.
  std::tuple<std::vector<std::int64_t>, std::vector<std::int64_t>, std::vector<std::int64_t>, std::vector<std::int64_t>>
  launches(int rank, bool include_last, bool include_memory_events) const {
    const RankTrace& r = at(rank);
    GpuTimelineOptions o;
    o.include_last_profiler_step = include_last;
    o.include_memory_events = include_memory_events;
    o.top_events = std::numeric_limits<int>::max();  // keep every launch, not the worst few
    std::tuple<std::vector<std::int64_t>, std::vector<std::int64_t>, std::vector<std::int64_t>, std::vector<std::int64_t>> out;
    {
      py::gil_scoped_release unlocked;
      const GpuTimeline t = analyze_gpu_timeline(r, o);
      std::vector<HtaLaunch> all = t.hta_launches.worst_delays;
      std::stable_sort(all.begin(), all.end(), [](const HtaLaunch& a, const HtaLaunch& b) {
        return a.cpu_event != b.cpu_event ? a.cpu_event < b.cpu_event : a.gpu_event < b.gpu_event;
      });
      auto& [corr, cpu, gpu, delay] = out;
      for (const HtaLaunch& l : all) {
        corr.push_back(l.correlation);
        cpu.push_back(l.cpu_duration / 1000);
        gpu.push_back(l.gpu_duration / 1000);
        delay.push_back(l.launch_delay / 1000);
      }
    }
    return out;
  }

  // The rank's complete rows as HTA's trace frame keeps them: `which` is "gpu" (kernels, copies,
  // memsets, syncs, GPU annotations), "user_annotation" (the host's) or "all" (the profiler's own
  // span left out). With two or more profiler steps and !include_last, a host row stays when it
  // starts before the last step, a GPU row when its launch does (a GPU annotation: itself).
  py::dict rows(int rank, bool include_last, const std::string& which) const {
    if (which != "gpu" && which != "user_annotation" && which != "all")
      throw InputError("rows: expected gpu, user_annotation or all (got " + which + ")");
    const RankTrace& r = at(rank);
    std::vector<std::int64_t> index, ts, dur, pid, tid, stream, correlation;
    std::vector<std::string> name, category, kind;
    {
      py::gil_scoped_release unlocked;
      GpuTimelineOptions o;
      o.include_last_profiler_step = include_last;
      const HtaLoad load = analyze_gpu_timeline(r, o).hta_load;
      const EventTable& ev = r.events;
      std::unordered_map<std::int64_t, ns_t> launch_ts;  // correlation -> earliest host row
      if (load.last_step_dropped)
        for (std::size_t i = 0; i < ev.size(); ++i)
          if (!is_gpu_kind(ev.kind[i]) && ev.correlation[i] >= 0) {
            auto [it, fresh] = launch_ts.emplace(ev.correlation[i], ev.ts[i]);
            if (!fresh) it->second = std::min(it->second, ev.ts[i]);
          }
      for (std::size_t i = 0; i < ev.size(); ++i) {
        const Kind k = ev.kind[i];
        const bool wanted = which == "all" ? k != Kind::TraceSpan
                            : which == "gpu" ? is_gpu_kind(k) : k == Kind::UserAnnotation;
        if (!wanted || ev.phase[i] != Phase::Complete) continue;
        if (load.last_step_dropped) {
          ns_t start = ev.ts[i];
          if (is_gpu_kind(k) && k != Kind::GpuAnnotation) {
            const auto it = launch_ts.find(ev.correlation[i]);
            if (it == launch_ts.end()) continue;
            start = it->second;
          }
          if (start >= load.cutoff_ts) continue;
        }
        index.push_back(static_cast<std::int64_t>(i));
        ts.push_back(ev.ts[i]);
        dur.push_back(ev.dur[i]);
        const TrackKey& key = ev.keys.at(ev.track[i]);
        pid.push_back(key.pid);
        tid.push_back(key.tid);
        stream.push_back(ev.stream[i]);
        correlation.push_back(ev.correlation[i]);
        name.push_back(report_json::utf8_safe(r.strings.view(ev.name[i])));
        category.push_back(report_json::utf8_safe(r.strings.view(ev.category[i])));
        kind.push_back(kind_name(ev.kind[i]));
      }
    }
    py::dict out;
    out["index"] = index;
    out["ts_ns"] = ts;
    out["dur_ns"] = dur;
    out["pid"] = pid;
    out["tid"] = tid;
    out["stream"] = stream;
    out["correlation"] = correlation;
    out["name"] = name;
    out["cat"] = category;
    out["kind"] = kind;
    return out;
  }

  std::string queue_length(int rank) const {
    const RankTrace& r = at(rank);
    py::gil_scoped_release unlocked;
    DrillDown d;
    d.queue_length = hta_queue_length(r, kWholeSeries);
    return dump_report(to_json(d)["queue_length"]);
  }

  std::string memory_bandwidth(int rank) const {
    const RankTrace& r = at(rank);
    py::gil_scoped_release unlocked;
    DrillDown d;
    d.memory_bandwidth = hta_memory_bandwidth(r, kWholeSeries);
    return dump_report(to_json(d)["memory_bandwidth"]);
  }

  std::string kernel_sequences(int rank, const std::string& op, int min_pattern_len) const {
    const RankTrace& r = at(rank);
    if (min_pattern_len < 1) throw InputError("min_pattern_len must be at least 1");
    py::gil_scoped_release unlocked;
    DrillDown d;
    d.sequences = hta_kernel_sequences(r, op, min_pattern_len);
    return dump_report(to_json(d)["kernel_sequences"]);
  }

  std::string critical_path(int rank, const std::string& annotation, int first, int last,
                            const std::vector<std::string>& data_load, bool include_last, bool zero_weight_launch_edges) const {
    const RankTrace& r = at(rank);
    if (first < 0 || last < first) throw InputError("instance_id: expected a non-negative index or an increasing (start, end) pair");
    CriticalPathOptions o;
    o.annotation = annotation;
    o.instance_first = first;
    o.instance_last = last;
    o.data_load_patterns = data_load;
    o.include_last_profiler_step = include_last;
    o.zero_weight_launch_edges = zero_weight_launch_edges;
    py::gil_scoped_release unlocked;
    DrillDown d;
    d.critical_path = analyze_critical_path(r, o);
    // The path names its events by index; HTA's breakdown carries their names.
    for (CpPathEdge& e : d.critical_path.path)
      if (e.name.empty() && e.event >= 0 && static_cast<std::size_t>(e.event) < r.events.size())
        e.name = std::string(r.strings.view(r.events.name[static_cast<std::size_t>(e.event)]));
    return dump_report(to_json(d)["critical_path"]);
  }

 private:
  const RankTrace& at(int rank) const {
    for (const RankTrace& r : trace_.ranks)
      if (r.rank == rank) return r;
    throw InputError("rank " + std::to_string(rank) + " is not in the trace (ranks: " + rank_list() + ")");
  }
  std::string rank_list() const {
    std::string s;
    for (const RankTrace& r : trace_.ranks) s += (s.empty() ? "" : ", ") + std::to_string(r.rank);
    return s;
  }

  Trace trace_;
};

}  // namespace

void bind_hta(py::module_& m) {
  py::class_<HtaTrace, std::shared_ptr<HtaTrace>>(m, "HtaTrace", "Traces read once; HTA's analyses on demand (JSON text).")
      .def("ranks", &HtaTrace::ranks)
      .def("warnings", &HtaTrace::warnings)
      .def("files", &HtaTrace::files)
      .def("origin_us", &HtaTrace::origin_us)
      .def("gpu_timeline", &HtaTrace::gpu_timeline, py::arg("rank"), py::arg("include_last_profiler_step"),
           py::arg("consecutive_kernel_delay_us"), py::arg("runtime_cutoff_us"), py::arg("launch_delay_cutoff_us"),
           py::arg("include_memory_events"), py::arg("duration_ratio"), py::arg("num_kernels"))
      .def("launches", &HtaTrace::launches, py::arg("rank"), py::arg("include_last_profiler_step"),
           py::arg("include_memory_events"))
      .def("rows", &HtaTrace::rows, py::arg("rank"), py::arg("include_last_profiler_step"),
           py::arg("which") = "gpu")
      .def("queue_length", &HtaTrace::queue_length, py::arg("rank"))
      .def("memory_bandwidth", &HtaTrace::memory_bandwidth, py::arg("rank"))
      .def("kernel_sequences", &HtaTrace::kernel_sequences, py::arg("rank"), py::arg("op"), py::arg("min_pattern_len"))
      .def("critical_path", &HtaTrace::critical_path, py::arg("rank"), py::arg("annotation"), py::arg("first"),
           py::arg("last"), py::arg("data_load_events"), py::arg("include_last_profiler_step"),
           py::arg("zero_weight_launch_edges"));
  m.def(
      "hta_load",
      [](const std::vector<std::string>& paths, int jobs, const std::shared_ptr<CancelToken>& cancel) {
        if (jobs < 0) throw InputError("--jobs must be non-negative (got " + std::to_string(jobs) + ")");
        IngestOptions io;
        io.jobs = jobs;
        io.progress = cancel_check(cancel);
        std::shared_ptr<HtaTrace> out;
        {
          py::gil_scoped_release unlocked;
          out = std::make_shared<HtaTrace>(read_traces(paths, io));
        }
        return out;
      },
      py::arg("paths"), py::kw_only(), py::arg("jobs") = 0, py::arg("cancel") = std::shared_ptr<CancelToken>{},
      "Read the traces once for stepscope.hta.TraceAnalysis.");
}

}  // namespace stepscope::python
