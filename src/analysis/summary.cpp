#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <functional>
#include <limits>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/core.h>

#include "analysis/shared_view.hpp"
#include "stepscope/analysis.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/threads.hpp"

namespace stepscope {
namespace {

// Runs fn(0..n-1) on up to `jobs` threads (0: the number of cores); the first exception thrown
// by any call is rethrown here once every thread has stopped.
void for_each_rank_parallel(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn) {
  const std::size_t threads = std::min<std::size_t>(n, static_cast<std::size_t>(threads_for(jobs)));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(error_mu);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
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

const char* rank_source_name(RankTrace::RankSource s) {
  switch (s) {
    case RankTrace::RankSource::DistributedInfo: return "distributedInfo";
    case RankTrace::RankSource::FileName: return "file name";
    case RankTrace::RankSource::FileOrder: return kRankSourceFileOrder;
  }
  return kRankSourceFileOrder;
}

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
  // Counted per category id and kind first: a map lookup per event cost more than the rest.
  std::vector<std::uint64_t> by_category(t.strings.size(), 0);
  std::array<std::uint64_t, static_cast<std::size_t>(Kind::Other) + 1> by_kind{};
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    ++by_category[t.events.category[i]];
    ++by_kind[static_cast<std::size_t>(t.events.kind[i])];
  }
  for (StrId c = 0; c < by_category.size(); ++c) {
    if (by_category[c] == 0) continue;
    std::string_view cat = t.str(c);
    s.events_by_category[cat.empty() ? std::string("(none)") : std::string(cat)] += by_category[c];
  }
  for (std::size_t k = 0; k < by_kind.size(); ++k)
    if (by_kind[k]) s.events_by_kind[kind_name(static_cast<Kind>(k))] += by_kind[k];
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
    StreamSummary ss{tr.pid, tr.tid, tr.events.size(), 0, std::nullopt};
    for (const auto& si : t.stream_info)
      if (si.stream == tr.tid) ss.info = si;
    for (auto i : tr.events)
      if (t.events.kind[i] != Kind::GpuAnnotation) ss.busy_ns += t.events.dur[i];
    s.streams.push_back(ss);
  }
  for (const auto& d : t.devices) s.gpus.push_back(d.name);
  s.devices = t.devices;
  s.profiler_steps = host_profiler_steps(t);
  s.bytes_read = t.bytes_read;
  s.truncated = t.truncated;
  s.bytes_lost = t.bytes_lost;
  s.warnings = t.warnings;
  return s;
}

namespace {

// One window with one-time start-up in it and no step markers is a single cold pass: what is left
// after the start-up is no steady state either (first allocations, cold caches), so no verdict.
void block_single_cold_pass(const RankPartition& p, RankFacts& f) {
  if (p.source != StepSource::WholeTrace || p.steps.size() != 1 || p.startup_skipped_ns <= 0) return;
  if (f.run_kind != RunKind::OneShot && f.run_kind != RunKind::Unknown) return;  // a loop is left after start-up
  for (auto& w : f.trust.warnings)
    if (w.is(TrustCode::ColdStart)) {
      w.severity = TrustSeverity::Blocks;
      w.text += "; the trace is one cold pass with no step markers, so it holds no steady state to judge";
    }
}

// A run read as one pass whose steps turn out to be a repeated range tiling the work is a loop:
// inference or evaluation under PyTorch, a loop of unknown purpose in any other program.
void refine_run_kind(const RankPartition& p, RankFacts& f) {
  if (f.run_kind != RunKind::OneShot || p.source != StepSource::Annotation || p.steps.size() < 2) return;
  const std::string what = fmt::format("{} repeated {} ranges tile the work", p.steps.size(), p.source_detail);
  if (f.pytorch) {
    f.run_kind = RunKind::Inference;
    f.run_kind_evidence = what + ", no backward or optimizer: a loop of forward passes";
  } else {
    f.run_kind = RunKind::Unknown;
    f.run_kind_evidence = what + " in a program without PyTorch ops: a loop whose purpose the trace does not say";
  }
}

}  // namespace

namespace {

// The facts of both phases, the user's rules applied once for every table that reads a stage.
RankFacts rank_facts(const RankTrace& rank, const AnalyzeOptions& opts) {
  RankFacts f = compute_facts(rank);
  apply_stage_rules(rank, opts.partition.stage_rules, f);
  return f;
}

// The ingest and CUDA summaries, then the step partition.
void analyze_steps(const RankTrace& rank, const AnalyzeOptions& opts, RankAnalysis& a) {
  a.ingest = summarize_ingest(rank);
  a.cuda_summary = summarize_cuda(rank);
  a.partition = partition_rank_into(rank, a.facts, opts.partition);
  a.stability = compute_stability(a.partition, batch_fetches(rank, a.facts, a.partition));
}

// The host ops' roles, which only the partition reads, freed once it ran when the caller keeps
// no event facts.
void release_host_op_roles(const AnalyzeOptions& opts, RankFacts& f) {
  if (!opts.keep_event_facts) std::vector<std::int8_t>().swap(f.event_role);
}

// The event stages, read last by the what-if replay and the drill-down's tables.
void release_event_stages(const AnalyzeOptions& opts, RankFacts& f) {
  if (!opts.keep_event_facts) std::vector<StageHint>().swap(f.event_stage);
}

// What reads the partition: the footgun scan, the what-if replay and the collectives' marks. The
// replay's graph is the largest thing the analysis holds: the scan, the last reader of each
// event's step, runs first, so that when the caller keeps no event facts the steps go before the
// graph is built; each host op's parent goes once the replay has read them.
void analyze_partitioned(const RankTrace& rank, const AnalyzeOptions& opts, RankAnalysis& a) {
  if (a.partition.steady_steps) a.footgun_scan = footgun::scan_footguns(rank, a.facts, a.partition);
  if (!opts.keep_event_facts) std::vector<std::int32_t>().swap(a.facts.event_steps.step);
  a.whatif = whatif::model_rank(rank, a.facts, a.partition, opts.whatif);
  if (!opts.keep_event_facts) std::vector<std::uint32_t>().swap(a.facts.event_parent);
  a.collectives = collective_marks(rank, a.facts, a.partition, rank.base_time_ns.value_or(0));
}

// The drill-down, which reads the GPU timeline's steps and frees the view; the critical path
// from `path`.
void analyze_drilldown_of(const RankTrace& rank, const AnalyzeOptions& opts, hta::View&& view,
                          const std::function<CriticalPath()>& path, RankAnalysis& a) {
  hta::drop_merged_intervals(view);
  if (opts.with_drilldown) {
    a.drilldown = analyze_drilldown(rank, a.facts, a.gpu_timeline.steps, opts.drilldown, path, std::move(view));
    return;
  }
  { const hta::View gone = std::move(view); }
}

// The facts and the profiler steps, announced through `ready` (or the error that stopped them);
// then the GPU timeline's figures read from the trace, the step analyses and what reads them.
void analyze_facts_then_steps(const RankTrace& rank, const AnalyzeOptions& opts, std::promise<void>& ready,
                              RankAnalysis& a) {
  try {
    a.facts = rank_facts(rank, opts);
    a.gpu_timeline.steps = profiler_step_windows(rank, a.facts);
  } catch (...) {
    ready.set_exception(std::current_exception());
    return;
  }
  ready.set_value();
  gpu_timeline_own_figures(rank, a.facts, GpuTimelineOptions{}, a.gpu_timeline);
  analyze_steps(rank, opts, a);
  // The other thread reads only the event stages of these facts.
  release_host_op_roles(opts, a.facts);
  analyze_partitioned(rank, opts, a);
}

}  // namespace

RankAnalysis analyze_rank(const RankTrace& rank, const AnalyzeOptions& opts) {
  RankAnalysis a;
  const int threads = threads_for(opts.rank_threads);
  if (threads < 2) {
    a.facts = rank_facts(rank, opts);
    hta::View view = hta::build_view(rank, GpuTimelineOptions{});
    const HtaLoad load = view.load;
    a.gpu_timeline = analyze_gpu_timeline(rank, a.facts, GpuTimelineOptions{}, view);
    analyze_drilldown_of(rank, opts, std::move(view), [&] { return drilldown_critical_path(rank, opts.drilldown, load); }, a);
    analyze_steps(rank, opts, a);
    release_host_op_roles(opts, a.facts);
    analyze_partitioned(rank, opts, a);
    release_event_stages(opts, a.facts);
    return a;
  }
  // Two threads split the work about evenly (1 GB benchmark trace: 1.0-1.2 s and 0.9 s). The
  // second computes the facts while this one builds HTA's view, then the GPU timeline's figures
  // read from the trace, the CUDA summary, the partition and what reads it (footgun scan,
  // collectives). This one, once the facts are in, runs the figures read from the view and the
  // drill-down, whose critical path comes last, once the view is freed (begun beside the GPU
  // timeline, its rows and graph would be held with the view). Each part writes fields of its
  // own. A third thread takes the path from the start.
  std::promise<void> facts_ready;
  const std::shared_future<void> second =
      std::async(std::launch::async, [&] { analyze_facts_then_steps(rank, opts, facts_ready, a); }).share();
  hta::View view = hta::build_view(rank, GpuTimelineOptions{});
  facts_ready.get_future().get();  // rethrows the facts' error
  const HtaLoad load = view.load;  // the path's part of the view, which the drill-down frees
  const auto path_now = [&] { return drilldown_critical_path(rank, opts.drilldown, load); };
  const bool path_apart = threads >= 3 && opts.with_drilldown && opts.drilldown.critical_path;
  std::shared_future<CriticalPath> path;
  if (path_apart) path = std::async(std::launch::async, path_now).share();
  // On this thread the path waits for the other's analyses: its rows (12 bytes an event) were
  // held beside the footgun scan's tables at the peak (massif, 1 GB trace: 42 + 15 MB). With the
  // pages the other thread frees given back (the binary's allocator while analysing), 1 GB analyze
  // -j2 peaks at 238 MiB, not 264.
  const auto path_after_second = [&] {
    second.wait();
    release_event_stages(opts, a.facts);  // the replay and the drill-down's tables have read them
    return path_now();
  };
  gpu_timeline_hta_figures(rank, a.facts, GpuTimelineOptions{}, view, a.gpu_timeline);
  analyze_drilldown_of(rank, opts, std::move(view),
                       path_apart ? std::function<CriticalPath()>([&] { return path.get(); }) : path_after_second, a);
  second.get();
  release_event_stages(opts, a.facts);
  return a;
}

// A straggler or a rank-local slowdown is a claim about the job: it needs at least half of the
// job's ranks (and two) in view. Two ranks sampled from 128 can differ by chance alone.
void check_job_coverage(AnalysisResult& r) {
  RankComparison& rc = r.job.rank_comparison;
  for (const auto& a : r.ranks) rc.world_size = std::max(rc.world_size, a.ingest.world_size.value_or(0));
  const auto seen = static_cast<int>(r.ranks.size());
  if (seen < 2 || rc.world_size <= 0 || 2 * seen >= rc.world_size) return;
  rc.withheld = fmt::format("{} of the job's {} ranks are in view; naming a straggler or a rank-local slowdown needs "
                            "at least half of them ({})",
                            seen, rc.world_size, (rc.world_size + 1) / 2);
  rc.straggler.reset();
  rc.straggler_cause = StragglerCause::None;
  rc.local = false;
  r.job.trust.warnings.push_back({TrustCode::PartialJob, TrustSeverity::Limits, r.ranks.front().rank(), rc.withheld,
                              "analyse the traces of every rank (or of at least half of them) together",
                              {{"ranks", seen}, {"world_size", rc.world_size}}});
}

// Ranks of one job name their rank or communicate, and run at the same time. Traces that do none
// of these are separate runs (two recordings of one script, two models in one folder): averaged as
// ranks, they make a step that belongs to neither.
void check_separate_runs(AnalysisResult& r) {
  if (r.ranks.size() < 2) return;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const InputInventory& inv = r.ranks[i].facts.inventory;
    if (r.ranks[i].ingest.rank_source != kRankSourceFileOrder || inv.has(Activity::CommKernels) ||
        inv.has(Activity::HostCollectives))
      return;
  }
  // The legacy profiler's times start at its own start: its windows say nothing of when it ran.
  const bool own_clocks = std::all_of(r.ranks.begin(), r.ranks.end(), [](const RankAnalysis& a) {
    return a.facts.inventory.recorder == Recorder::AutogradProfiler;
  });
  std::vector<std::pair<ns_t, ns_t>> windows;
  for (const auto& a : r.ranks) windows.emplace_back(a.ingest.first_ts, a.ingest.last_end);
  std::sort(windows.begin(), windows.end());
  ns_t least_gap = std::numeric_limits<ns_t>::max();
  for (std::size_t i = 1; i < windows.size() && !own_clocks; ++i) {
    const ns_t gap = windows[i].first - windows[i - 1].second;
    if (gap <= 0) return;  // two of them ran at the same time
    least_gap = std::min(least_gap, gap);
  }
  const std::string when = own_clocks ? "and each was recorded by the legacy profiler on a clock of its own"
                                      : fmt::format("and their time windows do not overlap (at least {:.1f} s apart)",
                                                    static_cast<double>(least_gap) / 1e9);
  r.job.rank_comparison.withheld = "the traces are separate runs, not ranks of one job";
  r.job.rank_comparison.straggler.reset();
  r.job.rank_comparison.local = false;
  r.job.trust.warnings.push_back(
      {TrustCode::SeparateRuns, TrustSeverity::Blocks, r.ranks.front().rank(),
       fmt::format("the {} traces look like separate runs, not ranks of one job: none names its rank, none "
                   "communicates, {}; averaged as ranks they would make a step that belongs to none of them",
                   r.ranks.size(), when),
       "analyse each run alone, or compare two with `stepscope diff BEFORE AFTER`",
       {{"traces", static_cast<double>(r.ranks.size())}}});
}

AnalysisResult combine_ranks(std::vector<RankAnalysis>&& ranks, std::vector<IngestWarning> warnings) {
  AnalysisResult r;
  r.ranks = std::move(ranks);
  std::vector<RankMarks> marks;
  for (const RankAnalysis& a : r.ranks) marks.push_back({a.rank(), &a.collectives});
  ClockAlignment clocks = align_clocks(marks);
  // The reports show the drill-down of every rank or of none.
  const bool drilldown = std::all_of(r.ranks.begin(), r.ranks.end(), [](const RankAnalysis& a) { return a.drilldown.has_value(); });
  std::vector<RankPartitionOf> partitions;
  for (RankAnalysis& a : r.ranks) {
    refine_run_kind(a.partition, a.facts);
    block_single_cold_pass(a.partition, a.facts);
    if (!drilldown) a.drilldown.reset();
    partitions.push_back({a.rank(), &a.partition});
  }
  JobAnalysis& job = r.job;
  job.rank_comparison = compare_ranks(partitions);
  job.rank_comparison.clocks = std::move(clocks);
  job.warnings = std::move(warnings);
  for (const RankAnalysis& a : r.ranks) {
    const auto& f = a.facts.trust.warnings;
    job.trust.warnings.insert(job.trust.warnings.end(), f.begin(), f.end());
    const auto& p = a.partition.trust;
    job.trust.warnings.insert(job.trust.warnings.end(), p.begin(), p.end());
    if (auto w = whatif::replay_trust(a.whatif, a.rank())) job.trust.warnings.push_back(std::move(*w));
  }
  check_job_coverage(r);
  check_separate_runs(r);
  job.whatif = whatif::model_job(marks, job.rank_comparison);
  for (RankAnalysis& a : r.ranks) a.collectives = {};
  check_invariants(r);
  return r;
}

std::vector<RankAnalysis> analyze_ranks(const Trace& trace, const AnalyzeOptions& opts) {
  std::vector<RankAnalysis> ranks(trace.ranks.size());
  AnalyzeOptions each = opts;
  each.rank_threads = rank_threads_for(opts.jobs, ranks.size());
  // Each rank's analyses read only that rank's trace and write only its own slot.
  for_each_rank_parallel(ranks.size(), opts.jobs, [&](std::size_t i) { ranks[i] = analyze_rank(trace.ranks[i], each); });
  return ranks;
}

AnalysisResult analyze(const Trace& trace, const AnalyzeOptions& opts) {
  return combine_ranks(analyze_ranks(trace, opts), trace.warnings);
}

}  // namespace stepscope
