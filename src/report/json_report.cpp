#include "report/cuda_summary_render.hpp"
#include "report/diagnosis_render.hpp"
#include "report/gpu_timeline_json.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

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
  j["warnings"] = s.warnings;
  return j;
}

}  // namespace

nlohmann::json to_json(const AnalysisResult& r) {
  nlohmann::json j;
  j["schema"] = r.schema;
  auto& ranks = j["ranks"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    nlohmann::json rank = {{"rank", r.ranks[i].rank}, {"ingest", ingest_json(r.ranks[i])}};
    if (i < r.partitions.size()) rank["partition"] = report_detail::partition_json(r.partitions[i]);
    if (i < r.stability.size()) rank["stability"] = report_detail::stability_json(r.stability[i]);
    if (i < r.gpu_timelines.size()) rank["gpu_timeline"] = to_json(r.gpu_timelines[i]);
    if (i < r.cuda_summaries.size()) rank["cuda_summary"] = to_json(r.cuda_summaries[i]);
    ranks.push_back(std::move(rank));
  }
  if (!r.gpu_timelines.empty())
    j["hta_kernel_types_all_ranks"] = kernel_types_to_json(combine_kernel_types(r.gpu_timelines));
  report_detail::add_diagnosis_json(r, j);
  j["warnings"] = r.warnings;
  return j;
}

}  // namespace stepscope
