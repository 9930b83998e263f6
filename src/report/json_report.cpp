#include "report/cuda_summary_render.hpp"
#include "report/diagnosis_render.hpp"
#include "report/drilldown_json.hpp"
#include "report/gpu_timeline_json.hpp"
#include "stepscope/report.hpp"

#include <nlohmann/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <functional>

namespace stepscope {
namespace {

std::vector<const GpuTimeline*> gpu_timelines_of(const AnalysisResult& r) {
  std::vector<const GpuTimeline*> out;
  for (const RankAnalysis& a : r.ranks) out.push_back(&a.gpu_timeline);
  return out;
}

nlohmann::json ingest_json(const IngestSummary& s) {
  nlohmann::json j;
  j["rank"] = s.rank;
  j["rank_source"] = s.rank_source;
  j["path"] = s.path;
  j["layout"] = s.layout;
  j["world_size"] = s.world_size ? nlohmann::json(*s.world_size) : nlohmann::json(nullptr);
  j["backend"] = s.backend;
  j["events"] = s.events;
  j["events_by_category"] = s.events_by_category;
  j["events_by_kind"] = s.events_by_kind;
  j["first_ts_ns"] = s.first_ts;
  j["last_end_ns"] = s.last_end;
  j["span_ns"] = s.last_end - s.first_ts;
  j["counter_samples"] = s.counters;
  auto& threads = j["threads"] = nlohmann::json::array();
  for (const auto& t : s.threads)
    threads.push_back({{"pid", t.pid}, {"tid", t.tid}, {"name", t.name}, {"events", t.events}});
  auto& streams = j["gpu_streams"] = nlohmann::json::array();
  for (const auto& st : s.streams) {
    nlohmann::json row = {{"device", st.device}, {"stream", st.stream}, {"events", st.events}, {"busy_ns", st.busy_ns}};
    if (st.info) {
      row["type"] = stream_type_name(st.info->type);
      row["priority"] = st.info->priority;
    }
    streams.push_back(std::move(row));
  }
  j["gpus"] = s.gpus;
  j["profiler_steps"] = s.profiler_steps;
  j["bytes_read"] = s.bytes_read;
  j["truncated"] = s.truncated;
  j["bytes_lost"] = s.bytes_lost;
  j["warnings"] = ingest_warning_texts(s.warnings);
  return j;
}

nlohmann::json device_json(const DeviceModel& d) {
  if (!d.present) return nullptr;
  return {{"name", d.name},
          {"arch", d.arch},
          {"compute_capability", d.cc_major >= 0 ? nlohmann::json(fmt::format("{}.{}", d.cc_major, d.cc_minor))
                                                 : nlohmann::json(nullptr)},
          {"source", d.source},
          {"lower_bound", d.lower_bound},
          {"memory_bytes", d.memory_bytes},
          {"sms", d.sms},
          {"capabilities",
           {{"tensor_cores", capability_name(d.tensor_cores())},
            {"bf16", capability_name(d.bf16())},
            {"tf32", capability_name(d.tf32())},
            {"fp8", capability_name(d.fp8())},
            {"flash_attention2", capability_name(d.flash_attention2())}}}};
}

// What the input file holds: the recorder, its options, each activity kind with its count.
nlohmann::json inventory_json(const InputInventory& inv) {
  nlohmann::json activities = nlohmann::json::object();
  for (int a = 0; a < kActivityCount; ++a) activities[activity_name(static_cast<Activity>(a))] = inv.counts[static_cast<std::size_t>(a)];
  return {{"recorder", recorder_name(inv.recorder)},
          {"format", inv.format},
          {"options", inv.options},
          {"activities", std::move(activities)},
          {"processes", inv.processes},
          {"threads", inv.threads},
          {"gpus", inv.gpus},
          {"streams", inv.streams},
          {"ranks_in_file", inv.ranks_in_file},
          {"ranks_evidence", inv.ranks_evidence},
          {"window_ns", inv.window_ns},
          {"startup_only", inv.startup_only},
          {"startup_evidence", inv.startup_evidence},
          {"device_evidence", inv.device_evidence},
          {"line", describe_inventory(inv)}};
}

// The facts that reports and users check: the device, the thread roles, the record pairing.
nlohmann::json facts_json(const RankFacts& f) {
  nlohmann::json j;
  j["device"] = device_json(f.device);
  j["pytorch"] = f.pytorch;
  j["run_kind"] = run_kind_name(f.run_kind);
  j["run_kind_evidence"] = f.run_kind_evidence;
  j["cuda_graphs"] = f.cuda_graphs;
  j["gpu_records"] = f.gpu_records;
  j["launch_calls"] = f.launch_calls;
  j["launches_without_gpu_records"] = f.launches_without_gpu;
  j["gpu_records_without_launch"] = f.gpu_without_launch;
  j["device_syncs"] = f.device_syncs.size();
  j["startup_calls"] = f.startup.size();
  auto& roles = j["thread_roles"] = nlohmann::json::array();
  for (auto r : f.track_role) roles.push_back(thread_role_name(r));
  j["device_line"] = device_line(f);
  j["inventory"] = inventory_json(f.inventory);
  return j;
}

}  // namespace

namespace {

nlohmann::json trust_json(const Trust& t) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : t.warnings)
    out.push_back({{"code", trust_code_name(w.code)},
                   {"severity", trust_severity_name(w.severity)},
                   {"rank", w.rank},
                   {"text", w.text},
                   {"advice", w.advice},
                   {"figures", w.figures}});
  return out;
}

}  // namespace

namespace {

// Which ranks' drill-down the document holds (JsonOptions::drilldown_ranks), by index.
std::vector<bool> drilled_ranks(const AnalysisResult& r, const JsonOptions& opts) {
  std::vector<bool> drilled(has_drilldowns(r) ? r.ranks.size() : 0, false);
  if (has_drilldowns(r))
    for (std::size_t i : listed_ranks(r, opts.drilldown_ranks)) drilled.at(i) = true;
  return drilled;
}

nlohmann::json rank_json(const AnalysisResult& r, std::size_t i, bool drilled) {
  const RankAnalysis& a = r.ranks[i];
  nlohmann::json rank = {{"rank", a.rank()}, {"ingest", ingest_json(a.ingest)}};
  rank["partition"] = report_detail::partition_json(a.partition);
  rank["stability"] = report_detail::stability_json(a.stability);
  rank["gpu_timeline"] = to_json(a.gpu_timeline, a.rank());
  rank["cuda_summary"] = to_json(a.cuda_summary);
  rank["facts"] = facts_json(a.facts);
  if (a.drilldown && drilled) rank["drilldown"] = to_json(*a.drilldown);
  rank["whatif"] = report_detail::whatif_json(a.whatif);
  return rank;
}

// The document less its "ranks".
nlohmann::json job_json(const DiagnosedResult& r, const std::vector<bool>& drilled) {
  nlohmann::json j;
  j["schema"] = r.schema;
  if (has_drilldowns(r)) {
    auto& listed = j["drilldown_ranks"] = nlohmann::json::array();
    for (std::size_t i = 0; i < drilled.size(); ++i)
      if (drilled[i]) listed.push_back(r.ranks[i].rank());
  }
  if (!r.ranks.empty())
    j["hta_kernel_types_all_ranks"] = kernel_types_to_json(combine_kernel_types(gpu_timelines_of(r)));
  j["trust"] = trust_json(r.job.trust);
  report_detail::add_diagnosis_json(r, j);
  j["job_whatif"] = report_detail::job_whatif_json(r.job.whatif);
  j["warnings"] = ingest_warning_texts(r.job.warnings);
  if (!r.job.memory_snapshots.empty()) {  // only for snapshot inputs: traces' documents are unchanged
    auto& snapshots = j["memory_snapshots"] = nlohmann::json::array();
    for (const auto& m : r.job.memory_snapshots) snapshots.push_back(memory::to_json(m));
  }
  return j;
}

// `v` as dump(2) writes it at `depth` levels in: every line after the first indented as much more.
//   {"a": 1} at depth 1 -> "{\n    \"a\": 1\n  }"
std::string dump_at(const nlohmann::json& v, int depth) {
  std::string text = v.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string indent(static_cast<std::size_t>(2 * depth), ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    out += c;
    if (c == '\n') out += indent;  // a string's newline is written \n: every raw one is layout
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const DiagnosedResult& r, const JsonOptions& opts) {
  const std::vector<bool> drilled = drilled_ranks(r, opts);
  nlohmann::json j = job_json(r, drilled);
  auto& ranks = j["ranks"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.ranks.size(); ++i) ranks.push_back(rank_json(r, i, i < drilled.size() && drilled[i]));
  return j;
}

void write_json_report(const DiagnosedResult& r, const JsonOptions& opts, const std::function<void(std::string_view)>& out) {
  const std::vector<bool> drilled = drilled_ranks(r, opts);
  const nlohmann::json job = job_json(r, drilled);
  // The keys in the order nlohmann writes an object's (sorted), "ranks" among them.
  std::vector<std::string> keys{"ranks"};
  for (const auto& [key, value] : job.items()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  out("{\n");
  for (std::size_t k = 0; k < keys.size(); ++k) {
    out(fmt::format("  \"{}\": ", keys[k]));
    if (keys[k] != "ranks") {
      out(dump_at(job.at(keys[k]), 1));
    } else if (r.ranks.empty()) {
      out("[]");
    } else {
      out("[\n");
      for (std::size_t i = 0; i < r.ranks.size(); ++i) {
        out("    " + dump_at(rank_json(r, i, i < drilled.size() && drilled[i]), 2));
        out(i + 1 < r.ranks.size() ? ",\n" : "\n");
      }
      out("  ]");
    }
    out(k + 1 < keys.size() ? ",\n" : "\n");
  }
  out("}\n");
}

}  // namespace stepscope
