// Shared pieces of the GPU timeline figures: profiler steps, interval unions, statistics.
#include <algorithm>
#include <unordered_set>

#include "gpu_timeline_internal.hpp"
#include "hta_view.hpp"

namespace stepscope::detail {

// Steps are the host's ProfilerStep#N ranges (cpu_op or user_annotation). The GPU-side copies
// Kineto writes as gpu_user_annotation are left out: they would double every step.
std::vector<StepWindow> profiler_steps(const RankTrace& rank, const RankFacts& facts) {
  const EventTable& ev = rank.events;
  std::vector<StepWindow> steps;
  std::unordered_set<std::int64_t> seen;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev.phase[i] != Phase::Complete) continue;
    if (ev.kind[i] != Kind::UserAnnotation && ev.kind[i] != Kind::CpuOp) continue;
    if (!facts.of(ev.name[i]).has(kNameProfilerStep)) continue;
    std::int64_t n = profiler_step_number(rank.name_of(i));
    if (n < 0 || !seen.insert(n).second) continue;
    steps.push_back({n, ev.ts[i], ev.end(i)});
  }
  std::sort(steps.begin(), steps.end(), [](const StepWindow& a, const StepWindow& b) { return a.start < b.start; });
  return steps;
}

// Not the facts' event steps: the GPU timeline's figures (and the drill-down's memory series,
// which read the same windows) are per ProfilerStep#N range on the host, as HTA counts them: no
// GPU tail, no --step-range, no warm-up. They are computed without the partition.
int step_index(const std::vector<StepWindow>& steps, ns_t ts) {
  auto it = std::upper_bound(steps.begin(), steps.end(), ts,
                             [](ns_t t, const StepWindow& s) { return t < s.start; });
  if (it == steps.begin()) return -1;
  --it;
  return ts < it->end ? static_cast<int>(it - steps.begin()) : -1;
}

// Written over the sorted spans (the union's k-th span never lies past the k-th span), so that
// the union takes no second list.
std::vector<Span> union_of(std::vector<Span> spans) {
  auto by_start = [](const Span& a, const Span& b) { return a.start < b.start; };
  if (!std::is_sorted(spans.begin(), spans.end(), by_start)) std::sort(spans.begin(), spans.end(), by_start);
  std::size_t n = 0;
  for (const Span& s : spans) {
    if (s.end < s.start) continue;
    if (n > 0 && s.start <= spans[n - 1].end)
      spans[n - 1].end = std::max(spans[n - 1].end, s.end);
    else
      spans[n++] = s;
  }
  spans.resize(n);
  if (spans.capacity() > 2 * n + 1024) spans.shrink_to_fit();
  return spans;
}

bool overlaps(const std::vector<Span>& u, ns_t start, ns_t end) {
  // First span ending after `start`; it overlaps if it begins before `end` (or, for an instant,
  // strictly contains it).
  auto it = std::upper_bound(u.begin(), u.end(), start, [](ns_t t, const Span& s) { return t < s.end; });
  if (it == u.end()) return false;
  return end > start ? it->start < end : it->start < start;
}

SampleStats summarize(std::vector<double> values) { return hta::describe(std::move(values)); }

}  // namespace stepscope::detail
