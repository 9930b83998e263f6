#include "stepscope/steps.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/core.h>

#include "stepscope/error.hpp"

namespace stepscope {
namespace {

bool is_timed_host(const RankTrace& t, std::uint32_t i) {
  return t.events.phase[i] == Phase::Complete;
}

bool is_annotation_kind(Kind k) { return k == Kind::UserAnnotation || k == Kind::CpuOp; }

// The facts of each host event's name: the rank's when the caller has them, else read from the
// name alone, once per distinct name (a trace repeats a few thousand names millions of times).
class HostNames {
 public:
  HostNames(const RankTrace& t, const RankFacts* facts) : t_(t), facts_(facts) {}

  const NameFact& of_event(std::uint32_t i) {
    if (facts_) return facts_->of_event(t_, i);
    const StrId id = t_.events.name[i];
    auto [it, fresh] = own_.try_emplace(id);
    if (fresh) it->second = host_name_fact(t_.str(id));
    return it->second;
  }

 private:
  const RankTrace& t_;
  const RankFacts* facts_;
  std::unordered_map<StrId, NameFact> own_;
};

bool is_loop_marker(const NameFact& f) { return f.has(kNameOptimizerStep) || f.role == HostRole::Loader; }

// The thread holding ProfilerStep markers; else the one holding the loop's own markers (optimizer
// steps, batch fetches: the autograd thread can hold more ops but never these); else the one
// with the most ops and annotations: the training loop runs there.
int find_main_track(const RankTrace& t, HostNames& names) {
  int best = -1;
  std::pair<std::size_t, std::size_t> best_score{0, 0};  // (loop markers, ops)
  for (std::size_t k = 0; k < t.host_tracks.size(); ++k) {
    std::pair<std::size_t, std::size_t> score{0, 0};
    for (auto i : t.host_tracks[k].events) {
      if (!is_timed_host(t, i) || !is_annotation_kind(t.events.kind[i])) continue;
      const NameFact& f = names.of_event(i);
      if (f.has(kNameProfilerStep)) return static_cast<int>(k);
      ++score.second;
      if (is_loop_marker(f)) ++score.first;
    }
    if (best < 0 || score > best_score) best = static_cast<int>(k), best_score = score;
  }
  return best;
}

std::vector<HostWindow> profiler_windows(const RankTrace& t, const Track& track, HostNames& names) {
  std::vector<HostWindow> w;
  for (auto i : track.events) {
    if (!is_timed_host(t, i) || !is_annotation_kind(t.events.kind[i])) continue;
    if (!names.of_event(i).has(kNameProfilerStep)) continue;
    w.push_back({profiler_step_number(t.name_of(i)), std::string(t.name_of(i)), t.events.ts[i], t.events.end(i)});
  }
  return w;
}

// Events of the track not enclosed by another (tracks list enclosing events first).
std::vector<std::uint32_t> top_level(const RankTrace& t, const Track& track) {
  std::vector<std::uint32_t> out;
  ns_t covered = INT64_MIN;
  for (auto i : track.events) {
    if (!is_timed_host(t, i)) continue;
    if (t.events.ts[i] >= covered) out.push_back(i);
    covered = std::max(covered, t.events.end(i));
  }
  return out;
}

// Windows opened by each occurrence of `name` among `tops`; each closes where the next opens,
// the last at the end of the top-level work that follows it.
std::vector<HostWindow> windows_between(const RankTrace& t, const std::vector<std::uint32_t>& tops,
                                        StrId name) {
  std::vector<HostWindow> w;
  for (auto i : tops) {
    if (t.events.name[i] != name) continue;
    if (!w.empty()) w.back().end = t.events.ts[i];
    w.push_back({static_cast<std::int64_t>(w.size()), std::string(t.str(name)), t.events.ts[i],
                 t.events.end(i)});
  }
  if (!w.empty())
    for (auto i : tops)
      if (t.events.ts[i] >= w.back().start) w.back().end = std::max(w.back().end, t.events.end(i));
  return w;
}

// The repeated top-level user annotation that comes first in the loop (e.g. "h2d" or "forward"
// of an instrumented step). Returns kNoStr when none repeats.
StrId first_repeated_annotation(const RankTrace& t, const std::vector<std::uint32_t>& tops) {
  std::map<StrId, std::pair<std::size_t, ns_t>> seen;  // count, first start
  for (auto i : tops) {
    if (t.events.kind[i] != Kind::UserAnnotation) continue;
    auto& s = seen.try_emplace(t.events.name[i], 0, t.events.ts[i]).first->second;
    ++s.first;
  }
  StrId best = kNoStr;
  ns_t best_first = INT64_MAX;
  for (const auto& [name, s] : seen)
    if (s.first >= 2 && s.second < best_first) best = name, best_first = s.second;
  return best;
}

// A repeated range is a step only when the work repeats in it: ten parameter moves followed by
// one forward pass are not ten steps. Rejected when one window holds several times the runtime
// calls of the median window.
constexpr double kTileFactor = 4;

// True when no window holds more than kTileFactor times the median window's events that `counts`
// picks (and two more).
template <class Counts>
bool evenly_spread(const RankTrace& t, const Track& track, const std::vector<HostWindow>& w, Counts&& counts) {
  std::vector<std::size_t> n(w.size(), 0);
  for (auto i : track.events) {
    if (!counts(t.events.kind[i])) continue;
    const ns_t ts = t.events.ts[i];
    auto it = std::upper_bound(w.begin(), w.end(), ts, [](ns_t v, const HostWindow& x) { return v < x.start; });
    if (it != w.begin() && ts < std::prev(it)->end) ++n[static_cast<std::size_t>(std::prev(it) - w.begin())];
  }
  std::vector<std::size_t> sorted = n;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const double median = static_cast<double>(sorted[sorted.size() / 2]);
  return static_cast<double>(*std::max_element(n.begin(), n.end())) <= kTileFactor * median + 2;
}

bool tiles_the_work(const RankTrace& t, const Track& track, const std::vector<HostWindow>& w) {
  return w.size() >= 2 && evenly_spread(t, track, w, [](Kind k) { return k == Kind::Runtime || k == Kind::Driver; });
}

// Steps closed by each Optimizer.step: the first opens at the first top-level op.
std::vector<HostWindow> optimizer_windows(const RankTrace& t, const std::vector<std::uint32_t>& tops,
                                          const Track& track, HostNames& names) {
  std::vector<std::uint32_t> opt;
  for (auto i : track.events)
    if (is_timed_host(t, i) && names.of_event(i).has(kNameOptimizerStep)) opt.push_back(i);
  std::vector<HostWindow> w;
  if (opt.size() < 2 || tops.empty()) return w;
  ns_t open = t.events.ts[tops.front()];
  for (auto i : opt) {
    if (t.events.end(i) <= open) continue;
    w.push_back({static_cast<std::int64_t>(w.size()), std::string(t.name_of(i)), open, t.events.end(i)});
    open = t.events.end(i);
  }
  return w;
}

// Steps must hold most of the work they stand for: ranges that repeat only at the end of an
// iteration (one NVTX range per gradient all-reduce after a single forward and backward) cover a
// sliver of it and are no steps.
bool covers_the_work(const RankTrace& t, const std::vector<std::uint32_t>& tops, const std::vector<HostWindow>& w) {
  if (w.empty() || tops.empty()) return false;
  const ns_t work = t.events.end(tops.back()) - t.events.ts[tops.front()];
  return static_cast<double>(w.back().end - w.front().start) >= 0.5 * static_cast<double>(work);
}

// Iterations of a loop without markers (ten forward passes, an op replayed): the top-level call
// that repeats at least kMinRepeats times and comes first. Its windows must hold about the same
// number of host events each (a repeated call inside a one-off setup does not), and cover most
// of the top-level work.
//   tops: to, conv2d, relu, linear, conv2d, relu, linear, conv2d, relu, linear -> 3 windows from conv2d
constexpr std::size_t kMinRepeats = 3;

StrId first_repeated_call(const RankTrace& t, const std::vector<std::uint32_t>& tops) {
  std::map<StrId, std::pair<std::size_t, ns_t>> seen;  // count, first start
  for (auto i : tops)
    if (is_annotation_kind(t.events.kind[i])) ++seen.try_emplace(t.events.name[i], 0, t.events.ts[i]).first->second.first;
  StrId best = kNoStr;
  ns_t best_first = INT64_MAX;
  for (const auto& [name, s] : seen)
    if (s.first >= kMinRepeats && s.second < best_first) best = name, best_first = s.second;
  return best;
}

// Passes of a loop each make the same top-level calls; the layers of one pass do not: the pass's
// head (a loss, a copy of the output) falls in the last layer's window only.
bool same_calls_in_each(const RankTrace& t, const std::vector<std::uint32_t>& tops, const std::vector<HostWindow>& w) {
  std::vector<std::vector<StrId>> calls(w.size());
  std::size_t k = 0;
  for (auto i : tops) {
    const ns_t ts = t.events.ts[i];
    while (k < w.size() && ts >= w[k].end) ++k;
    if (k == w.size()) break;
    if (ts >= w[k].start) calls[k].push_back(t.events.name[i]);
  }
  for (auto& c : calls) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  return std::all_of(calls.begin(), calls.end(), [&](const auto& c) { return c == calls.front(); });
}

// A CPU-only loop makes no runtime calls: its passes are compared by all their host events.
bool loop_windows(const RankTrace& t, const Track& track, const std::vector<std::uint32_t>& tops,
                  const std::vector<HostWindow>& w) {
  return w.size() >= kMinRepeats && !tops.empty() && evenly_spread(t, track, w, [](Kind) { return true; }) &&
         covers_the_work(t, tops, w) && same_calls_in_each(t, tops, w);
}

// Every `stride`-th occurrence of `name` among `tops` opens a window (windows_between for a call a
// pass makes more than once: the input copied in and the output copied out).
std::vector<HostWindow> every_nth(const RankTrace& t, const std::vector<std::uint32_t>& tops, StrId name,
                                  std::size_t stride) {
  std::vector<HostWindow> w = windows_between(t, tops, name);
  if (stride == 1) return w;
  std::vector<HostWindow> out;
  for (std::size_t k = 0; k < w.size(); k += stride) {
    HostWindow x = w[k];
    x.number = static_cast<std::int64_t>(out.size());
    x.end = w[std::min(k + stride, w.size()) - 1].end;
    out.push_back(std::move(x));
  }
  if (w.size() % stride != 0) out.pop_back();  // a pass cut short by the end of the capture
  return out;
}

// The passes of a loop opened by `name`, once or a few times per pass; none when no stride
// makes windows that look like passes.
constexpr std::size_t kMaxCallsPerPass = 4;

std::vector<HostWindow> loop_of(const RankTrace& t, const Track& track, const std::vector<std::uint32_t>& tops,
                                StrId name) {
  for (std::size_t stride = 1; stride <= kMaxCallsPerPass; ++stride)
    if (std::vector<HostWindow> w = every_nth(t, tops, name, stride); loop_windows(t, track, tops, w)) return w;
  return {};
}

// Every top-level occurrence of `name` on the track that holds the most of them.
StepDetection named_range_windows(const RankTrace& t, std::string_view name) {
  StepDetection d;
  auto id = t.strings.find(name);
  std::size_t best = 0;
  for (std::size_t k = 0; id && k < t.host_tracks.size(); ++k) {
    std::vector<HostWindow> w;
    for (auto i : t.host_tracks[k].events) {
      if (!is_timed_host(t, i) || t.events.name[i] != *id) continue;
      if (!w.empty() && t.events.ts[i] < w.back().end) continue;  // nested in the previous one
      w.push_back({static_cast<std::int64_t>(w.size()), std::string(name), t.events.ts[i], t.events.end(i)});
    }
    if (w.size() > best) best = w.size(), d.windows = std::move(w), d.main_track = static_cast<int>(k);
  }
  if (d.windows.empty())
    throw InputError(fmt::format("--step-range {}: {} holds no range of that name", name, t.path));
  d.source = StepSource::Annotation;
  d.detail = std::string(name);
  return d;
}

// An Nsight Systems capture runs from process start to exit: CUDA context creation, buffer
// allocation and tear-down would otherwise dominate a capture with no step ranges. Without
// steps, the window is the job's GPU work: from the first call that launched any of it to the
// end of the last kernel, copy or memset. Host work between those points stays in.
std::optional<HostWindow> gpu_work_window(const RankTrace& t) {
  ns_t start = std::numeric_limits<ns_t>::max(), end = std::numeric_limits<ns_t>::min();
  const auto& ev = t.events;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const Kind k = ev.kind[i];
    if (k != Kind::Kernel && k != Kind::Memcpy && k != Kind::Memset) continue;
    ns_t from = ev.ts[i];
    if (ev.correlation[i] != kNone) {
      if (auto call = t.correlations.launch(ev.correlation[i]); call != CorrelationIndex::kNoEvent)
        from = std::min(from, ev.ts[call]);
    }
    start = std::min(start, from);
    end = std::max(end, ev.end(i));
  }
  if (start >= end) return std::nullopt;
  return HostWindow{0, "GPU work", start, end};
}

// The whole trace's window: from the first to the last event with a duration. Instants (the
// profiler's "Record Window End", memory events) can lie far past the work.
HostWindow whole_trace_window(const RankTrace& t) {
  ns_t start = std::numeric_limits<ns_t>::max(), end = std::numeric_limits<ns_t>::min();
  const auto& ev = t.events;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev.phase[i] != Phase::Complete || ev.kind[i] == Kind::TraceSpan) continue;
    start = std::min(start, ev.ts[i]);
    end = std::max(end, ev.end(i));
  }
  if (start > end) return {0, "whole trace", t.first_ts(), t.last_end()};
  return {0, "whole trace", start, end};
}

// Each top-level harness range (warmup / measure repetitions) is one step.
std::vector<HostWindow> harness_windows(const RankTrace& t, const std::vector<std::uint32_t>& tops, const RankFacts& f) {
  std::vector<HostWindow> w;
  for (auto i : tops)
    if (f.of_event(t, i).has(kNameHarness))
      w.push_back({static_cast<std::int64_t>(w.size()), std::string(t.name_of(i)), t.events.ts[i], t.events.end(i)});
  if (w.size() < 2) w.clear();
  return w;
}

}  // namespace

StepDetection detect_steps(const RankTrace& t, std::string_view step_range, int main_track, const RankFacts* facts) {
  if (!step_range.empty()) return named_range_windows(t, step_range);
  StepDetection d;
  HostNames names(t, facts);
  d.main_track = main_track >= 0 ? main_track : find_main_track(t, names);
  if (d.main_track >= 0) {
    const Track& track = t.host_tracks[static_cast<std::size_t>(d.main_track)];
    d.windows = profiler_windows(t, track, names);
    if (!d.windows.empty()) {
      d.source = StepSource::ProfilerStep;
      return d;
    }
    const auto tops = top_level(t, track);
    if (facts) {
      d.windows = harness_windows(t, tops, *facts);
      if (!d.windows.empty()) {
        d.source = StepSource::Annotation;
        d.detail = "benchmark ranges";
        return d;
      }
    }
    if (StrId a = first_repeated_annotation(t, tops);
        a != kNoStr && tiles_the_work(t, track, windows_between(t, tops, a)) && covers_the_work(t, tops, windows_between(t, tops, a))) {
      d.windows = windows_between(t, tops, a);
      d.source = StepSource::Annotation;
      d.detail = std::string(t.str(a));
      return d;
    }
    d.windows = optimizer_windows(t, tops, track, names);
    if (!d.windows.empty()) {
      d.source = StepSource::OptimizerStep;
      return d;
    }
    if (StrId c = first_repeated_call(t, tops); c != kNoStr)
      if (std::vector<HostWindow> w = loop_of(t, track, tops, c); !w.empty()) {
        d.windows = std::move(w);
        d.source = StepSource::Annotation;
        d.detail = std::string(t.str(c));
        return d;
      }
  }
  d.source = StepSource::WholeTrace;
  d.windows = {whole_trace_window(t)};
  if (t.layout == TraceLayout::NsysSqlite) {
    if (auto w = gpu_work_window(t)) {
      d.windows = {*w};
      d.detail = "GPU work (first launch to last kernel, copy or memset)";
    }
  }
  return d;
}

}  // namespace stepscope
