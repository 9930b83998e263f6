// The analyses of one rank that read HTA's view of it (hta::build_view), given one view for all of
// them: analyze_rank builds it once where each analysis would build its own (four times a rank,
// each a pass over every event). The view is built with the default GpuTimelineOptions.
#pragma once

#include <functional>
#include <vector>

#include "analysis/hta_view.hpp"
#include "stepscope/critical_path.hpp"
#include "stepscope/drilldown.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/gpu_timeline.hpp"

namespace stepscope {

GpuTimeline analyze_gpu_timeline(const RankTrace& rank, const RankFacts& facts, const GpuTimelineOptions& opts,
                                 const hta::View& view);
// analyze_gpu_timeline in its two halves, for callers that run them on two threads: the figures
// read from the view (HTA's), and those read from the trace (our own) over the profiler steps
// the caller has put in out.steps (profiler_step_windows). Each writes only its own fields of
// `out`, and the second only reads out.steps.
void gpu_timeline_hta_figures(const RankTrace& rank, const RankFacts& facts, const GpuTimelineOptions& opts,
                              const hta::View& view, GpuTimeline& out);
void gpu_timeline_own_figures(const RankTrace& rank, const RankFacts& facts, const GpuTimelineOptions& opts,
                              GpuTimeline& out);
std::vector<StepWindow> profiler_step_windows(const RankTrace& rank, const RankFacts& facts);
CriticalPathOptions primary_critical_path_options(const HtaLoad& load);
// `load` as build_rows needs it (critical_path_internal.hpp).
CriticalPath analyze_critical_path(const RankTrace& rank, const CriticalPathOptions& opts, const HtaLoad& load);
// The drill-down's critical path: HTA's, of the rank's primary window, its edges named; or "not
// computed" when DrillDownOptions::critical_path is off.
// `load` is the view's (View::load): the path needs no more of it.
CriticalPath drilldown_critical_path(const RankTrace& rank, const DrillDownOptions& opts, const HtaLoad& load);
// analyze_drilldown with the critical path asked of `critical_path` once the view's readers are
// done, so that a caller may compute it on another thread meanwhile. The view is taken, and freed
// as soon as its last reader is done.
DrillDown analyze_drilldown(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                            const DrillDownOptions& opts, const std::function<CriticalPath()>& critical_path,
                            hta::View&& view);

}  // namespace stepscope
