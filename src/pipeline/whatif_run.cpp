// `stepscope whatif` in one call (stepscope/whatif_run.hpp).
#include "stepscope/whatif_run.hpp"

#include "stepscope/error.hpp"
#include "stepscope/whatif.hpp"

namespace stepscope {

DiagnosedResult whatif_paths(const std::vector<std::string>& paths, const WhatIfRunOptions& w, PipelineOptions po) {
  if (w.steps < 0) throw InputError("--steps must be 1 or more (got " + std::to_string(w.steps) + ")");
  if (w.gpu_hour_cost < 0) throw InputError("--gpu-hour-cost must be 0 or more");
  for (const auto& s : w.changes) po.analyze.whatif.changes.push_back(whatif::parse_change(s));
  po.analyze.whatif.timeline_events = w.timeline_events;
  po.keep_trace = false;
  po.analyze.with_drilldown = false;
  DiagnosedResult r = analyze_paths(paths, po).result;
  if (w.steps > 0) price_plan(r.diagnosis.plan, w.steps, w.gpu_hour_cost);
  return r;
}

}  // namespace stepscope
