// The event facts' step phase: each event's step and steady flag, once, for every figure that
// asks which step an event is in (the partition's mix, sync and overhead counts, the footgun scan,
// the diff's kernel table).
#include <algorithm>
#include <limits>

#include "stepscope/facts.hpp"

namespace stepscope {
namespace {

// Windows in start order, with the latest end among each window and those before it: a window
// extended by its GPU tail can reach past the next ones' starts, so the search looks back until
// no earlier window reaches `ts`.
class WindowIndex {
 public:
  explicit WindowIndex(const std::vector<StepSpan>& steps) : steps_(steps) {
    reach_.reserve(steps.size());
    ns_t reach = std::numeric_limits<ns_t>::min();
    for (const StepSpan& s : steps) reach_.push_back(reach = std::max(reach, s.end));
  }

  // The latest-starting window holding `ts`, or kNoStep.
  std::int32_t holding(ns_t ts) const {
    auto it = std::upper_bound(steps_.begin(), steps_.end(), ts, [](ns_t v, const StepSpan& s) { return v < s.start; });
    for (auto k = it - steps_.begin(); k-- > 0 && reach_[static_cast<std::size_t>(k)] > ts;)
      if (ts < steps_[static_cast<std::size_t>(k)].end) return static_cast<std::int32_t>(k);
    return kNoStep;
  }

  // The step whose host span holds `ts` (host spans do not overlap), or kNoStep.
  std::int32_t host_span(ns_t ts) const {
    auto it = std::upper_bound(steps_.begin(), steps_.end(), ts,
                               [](ns_t v, const StepSpan& s) { return v < s.host_start; });
    if (it == steps_.begin()) return kNoStep;
    --it;
    return ts < it->host_end ? static_cast<std::int32_t>(it - steps_.begin()) : kNoStep;
  }

 private:
  const std::vector<StepSpan>& steps_;
  std::vector<ns_t> reach_;
};

// Where the host runs ahead, GPU work follows the call that launched it; work no call launched
// (or launched outside every host span) takes the GPU-side window holding its start.
std::int32_t gpu_step_by_launch(const RankTrace& t, const WindowIndex& w, std::size_t i) {
  const auto corr = t.events.correlation[i];
  if (corr != kNone) {
    const std::uint32_t call = t.correlations.launch(corr);
    if (call != CorrelationIndex::kNoEvent)
      if (const std::int32_t k = w.host_span(t.events.ts[call]); k != kNoStep) return k;
  }
  return w.holding(t.events.ts[i]);
}

}  // namespace

EventSteps event_steps(const RankTrace& t, const std::vector<StepSpan>& steps, bool host_runs_ahead) {
  EventSteps out;
  out.step_steady.reserve(steps.size());
  for (const StepSpan& s : steps) out.step_steady.push_back(s.steady);
  out.step.assign(t.events.size(), kNoStep);
  if (steps.empty()) return out;
  const WindowIndex w(steps);
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const ns_t ts = t.events.ts[i];
    if (!host_runs_ahead) out.step[i] = w.holding(ts);
    else if (is_gpu_kind(t.events.kind[i])) out.step[i] = gpu_step_by_launch(t, w, i);
    else out.step[i] = w.host_span(ts);
  }
  return out;
}

}  // namespace stepscope
