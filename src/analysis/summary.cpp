#include <algorithm>
#include <charconv>

#include "stepscope/analysis.hpp"
#include "stepscope/steps.hpp"

namespace stepscope {
namespace {

const char* rank_source_name(RankTrace::RankSource s) {
  switch (s) {
    case RankTrace::RankSource::DistributedInfo: return "distributedInfo";
    case RankTrace::RankSource::FileName: return "file name";
    case RankTrace::RankSource::FileOrder: return "file order";
  }
  return "file order";
}

std::vector<std::int64_t> host_profiler_steps(const RankTrace& t) {
  std::vector<std::int64_t> steps;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    Kind k = t.events.kind[i];
    if (k != Kind::UserAnnotation && k != Kind::CpuOp) continue;
    if (auto n = profiler_step_number(t.name_of(i)); n >= 0) steps.push_back(n);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

}  // namespace

IngestSummary summarize_ingest(const RankTrace& t) {
  IngestSummary s;
  s.rank = t.rank;
  s.rank_source = rank_source_name(t.rank_source);
  s.path = t.path;
  s.layout = t.layout == TraceLayout::Kineto        ? "kineto"
             : t.layout == TraceLayout::NsysSqlite ? "nsys sqlite"
                                                   : "legacy array";
  s.world_size = t.distributed.world_size;
  s.backend = t.distributed.backend;
  s.events = t.events.size();
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    std::string_view cat = t.str(t.events.category[i]);
    ++s.events_by_category[cat.empty() ? std::string("(none)") : std::string(cat)];
    ++s.events_by_kind[kind_name(t.events.kind[i])];
  }
  for (auto [cat, n] : t.launch_flow_counts) {
    s.events += n;
    s.events_by_category[std::string(t.str(cat))] += n;
    s.events_by_kind[kind_name(Kind::Flow)] += n;
  }
  s.first_ts = t.first_ts();
  s.last_end = t.last_end();
  s.counters = t.counters.size();
  for (const auto& tr : t.host_tracks)
    s.threads.push_back({tr.pid, tr.tid, tr.name, tr.events.size()});
  for (const auto& tr : t.gpu_tracks) {
    StreamSummary ss{tr.pid, tr.tid, tr.events.size(), 0};
    for (auto i : tr.events)
      if (t.events.kind[i] != Kind::GpuAnnotation) ss.busy_ns += t.events.dur[i];
    s.streams.push_back(ss);
  }
  for (const auto& d : t.devices) s.gpus.push_back(d.name);
  s.profiler_steps = host_profiler_steps(t);
  s.bytes_read = t.bytes_read;
  s.truncated = t.truncated;
  s.bytes_lost = t.bytes_lost;
  s.warnings = t.warnings;
  return s;
}

AnalysisResult analyze(const Trace& trace, const AnalyzeOptions& opts) {
  AnalysisResult r;
  for (const auto& rank : trace.ranks) {
    r.ranks.push_back(summarize_ingest(rank));
    r.partitions.push_back(partition_rank(rank, opts.partition));
    r.stability.push_back(compute_stability(r.partitions.back()));
    r.gpu_timelines.push_back(analyze_gpu_timeline(rank));
    r.cuda_summaries.push_back(summarize_cuda(rank));
  }
  r.rank_comparison = compare_ranks(r.partitions);
  r.warnings = trace.warnings;
  return r;
}

}  // namespace stepscope
