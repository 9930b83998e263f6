// Sync points: runtime calls that block the host until the GPU has drained (explicit
// synchronisation and blocking copies). Each costs twice: the host waits for the call, and once
// the queue is empty the GPU idles until the host launches again.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>

#include "gpu_timeline_internal.hpp"

namespace stepscope::detail {

namespace {

// Counted first, so that the spans (millions in a long trace) are allocated once, not grown.
std::vector<Span> gpu_busy(const RankTrace& rank) {
  const EventTable& ev = rank.events;
  std::size_t count = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) count += is_gpu_work(ev, i);
  std::vector<Span> spans;
  spans.reserve(count);
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (is_gpu_work(ev, i)) spans.push_back({ev.ts[i], ev.end(i)});
  return union_of(std::move(spans));
}

// The GPU gap the call sits in: from when the GPU went idle (but not before the call began) to
// the next GPU work. If the GPU is still busy when the call returns (another stream), the gap
// starts when that work ends. Nothing after the call: no gap (the trace ended).
ns_t idle_after(const std::vector<Span>& busy, ns_t call_start, ns_t call_end) {
  auto next = std::upper_bound(busy.begin(), busy.end(), call_end,
                               [](ns_t t, const Span& s) { return t < s.start; });
  if (next == busy.end()) return 0;
  ns_t gap_start = next == busy.begin() ? call_start : std::prev(next)->end;
  gap_start = std::max(gap_start, call_start);
  return std::max<ns_t>(0, next->start - gap_start);
}

}  // namespace

SyncPoints sync_points(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                       const GpuTimelineOptions& opts) {
  const EventTable& ev = rank.events;
  std::vector<Span> busy = gpu_busy(rank);
  SyncPoints out;
  out.count_per_step.assign(steps.size(), 0);
  std::map<std::string_view, SyncByName> by_name;
  std::vector<SyncCall> calls;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev.phase[i] != Phase::Complete) continue;
    if (ev.kind[i] != Kind::Runtime && ev.kind[i] != Kind::Driver) continue;
    // Explicit synchronisation and blocking copies (the facts layer's kNameBlockingCall).
    if (!facts.of(ev.name[i]).has(kNameBlockingCall)) continue;
    std::string_view n = rank.name_of(i);
    SyncCall c;
    c.event = static_cast<std::uint32_t>(i);
    c.ts = ev.ts[i];
    c.host_blocked = ev.dur[i];
    c.gpu_idle_after = idle_after(busy, ev.ts[i], ev.end(i));
    int s = step_index(steps, ev.ts[i]);
    if (s >= 0) {
      c.step = steps[static_cast<std::size_t>(s)].number;
      ++out.count_per_step[static_cast<std::size_t>(s)];
    }
    SyncByName& b = by_name[n];
    b.name = std::string(n);
    ++b.count;
    b.host_blocked += c.host_blocked;
    b.gpu_idle_after += c.gpu_idle_after;
    ++out.count;
    out.host_blocked += c.host_blocked;
    out.gpu_idle_after += c.gpu_idle_after;
    calls.push_back(c);
  }
  out.per_step = steps.empty() ? std::numeric_limits<double>::quiet_NaN()
                               : [&] {
                                   std::int64_t in_steps = 0;
                                   for (auto c : out.count_per_step) in_steps += c;
                                   return static_cast<double>(in_steps) / static_cast<double>(steps.size());
                                 }();
  for (auto& [n, b] : by_name) out.by_name.push_back(b);
  std::stable_sort(out.by_name.begin(), out.by_name.end(),
                   [](const SyncByName& a, const SyncByName& b) { return a.host_blocked > b.host_blocked; });
  std::stable_sort(calls.begin(), calls.end(), [](const SyncCall& a, const SyncCall& b) {
    return a.gpu_idle_after + a.host_blocked > b.gpu_idle_after + b.host_blocked;
  });
  if (calls.size() > static_cast<std::size_t>(std::max(0, opts.top_events)))
    calls.resize(static_cast<std::size_t>(std::max(0, opts.top_events)));
  out.worst = std::move(calls);
  return out;
}

}  // namespace stepscope::detail
