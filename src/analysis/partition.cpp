// The step partition of one rank: a single sweep over the rank's timeline assigns one category
// to every instant; each step window then sums the categories it covers.
#include "stepscope/partition.hpp"

#include <algorithm>
#include <fmt/core.h>
#include <limits>
#include <map>
#include <numeric>
#include <queue>

#include "stepscope/steps.hpp"

namespace stepscope {
namespace {

// The facts' host roles, and one of the partition's own: a user annotation (a record_function
// range) that would otherwise be an op. It holds the thread's time like an op, but does no work
// itself: where host-side communication runs on another thread meanwhile, the time is the wait.
constexpr int kRoleCount = kHostRoleCount + 1;
constexpr int kAnnot = kHostRoleCount;
constexpr int kStageCount = kStageHintCount;
constexpr int kLoader = static_cast<int>(HostRole::Loader), kSync = static_cast<int>(HostRole::Sync),
              kSide = static_cast<int>(HostRole::Side), kLaunch = static_cast<int>(HostRole::Launch),
              kOp = static_cast<int>(HostRole::Op), kComm = static_cast<int>(HostRole::Comm);
constexpr int kNoStage = static_cast<int>(StageHint::None);


// Sweep channels: each counts the intervals of one kind active at an instant.
enum Channel : int {
  kGpuStage0 = 0,  // + stage (forward, backward, optimizer, other): compute kernels
  kGpuComm = 4,
  kGpuHtoD,
  kGpuDtoH,
  kGpuMemset,
  kGpuSide,                             // GPU work launched inside side work (torch.save's copies)
  kMainRole0,                           // + Role on the main thread
  kMainStage0 = kMainRole0 + kRoleCount,  // + Stage of main-thread ops
  kAuxRole0 = kMainStage0 + kStageCount,  // the autograd thread(s)
  kAuxStage0 = kAuxRole0 + kRoleCount,
  kSyncTail = kAuxStage0 + kStageCount,
  kHostComm,  // host-side communication on another thread (gloo's worker threads)
  kLoaderGap,  // the loop thread's op-free time between two batch fetches (a new epoch's iterator)
  kChannelCount
};
using Counts = std::array<int, kChannelCount>;

// The sweep reads every interval as two edges, an opening at its start and a closing at its
// end. The intervals are produced twice through a sink (see partition_impl): once to learn
// their count and time span, once to store them, packed when the span allows.
struct Edge {
  ns_t t;
  int channel;
  int delta;
};

// First pass: how many edges, and the earliest and latest time.
struct EdgeBounds {
  std::size_t count = 0;
  ns_t first = std::numeric_limits<ns_t>::max(), last = std::numeric_limits<ns_t>::min();
  void add(ns_t a, ns_t b, int) {
    count += 2;
    first = std::min(first, a);
    last = std::max(last, b);
  }
};

// Second pass: each edge in 8 bytes, as (t - origin) << 7 | channel << 1 | opens, half the size
// of an Edge and sorted as plain integers. Sorting by the packed value orders by time first,
// and the sweep applies all edges of one instant before classifying it, so the order among
// them does not matter. For a span of at most 2^56 ns (2.2 years); wider spans use WideEdges.
//   origin 100: add(150, 170, 3) stores (50 << 7 | 3 << 1 | 1) and (70 << 7 | 3 << 1)
struct PackedEdges {
  static constexpr int kChannelBits = 6;
  static_assert(kChannelCount <= (1 << kChannelBits));
  static constexpr ns_t kMaxSpan = ns_t{1} << (63 - kChannelBits - 1);
  ns_t origin = 0;
  std::vector<std::uint64_t> edges;
  static std::uint64_t pack(ns_t offset, int channel, bool opens) {
    return static_cast<std::uint64_t>(offset) << (kChannelBits + 1) | static_cast<std::uint64_t>(channel) << 1 |
           (opens ? 1u : 0u);
  }
  void add(ns_t a, ns_t b, int channel) {
    edges.push_back(pack(a - origin, channel, true));
    edges.push_back(pack(b - origin, channel, false));
  }
  void sort() { std::sort(edges.begin(), edges.end()); }
  std::size_t size() const { return edges.size(); }
  ns_t time(std::size_t i) const { return origin + static_cast<ns_t>(edges[i] >> (kChannelBits + 1)); }
  int channel(std::size_t i) const { return static_cast<int>(edges[i] >> 1 & ((1u << kChannelBits) - 1)); }
  int delta(std::size_t i) const { return (edges[i] & 1) ? +1 : -1; }
};

struct WideEdges {
  std::vector<Edge> edges;
  void add(ns_t a, ns_t b, int channel) {
    edges.push_back({a, channel, +1});
    edges.push_back({b, channel, -1});
  }
  void sort() { std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.t < y.t; }); }
  std::size_t size() const { return edges.size(); }
  ns_t time(std::size_t i) const { return edges[i].t; }
  int channel(std::size_t i) const { return edges[i].channel; }
  int delta(std::size_t i) const { return edges[i].delta; }
};

// An interval of `channel` over [a, b); an empty or reversed one adds nothing.
template <class Sink>
void add_interval(Sink& edges, ns_t a, ns_t b, int channel) {
  if (b <= a) return;
  edges.add(a, b, channel);
}

// What the sweep needs of each event: the facts layer's role and stage (the user's rules applied),
// annotations told apart from ops.
struct SweepFacts {
  std::vector<std::int8_t> role;   // per event: HostRole or kAnnot, or kNotHostOp for events not counted
  // Per event: its StageHint.
  std::int8_t stage(std::size_t i) const { return static_cast<std::int8_t>((*fact_stage)[i]); }
  const std::vector<StageHint>* fact_stage = nullptr;
  // Bits, not bytes: the partition runs beside the drill-down's call tree, at the analysis' peak.
  std::vector<bool> in_side;       // per event: a side-work op or inside one on its thread
  std::vector<bool> in_compiled;   // per event: a torch.compile'd region or inside one
  std::vector<int> aux_tracks;     // threads running backward besides the main thread
  bool gpu = false;
  bool has_forward_marker = false;
};

bool is_host_op_kind(Kind k) {
  return k == Kind::CpuOp || k == Kind::UserAnnotation || k == Kind::PythonFunction ||
         k == Kind::Runtime || k == Kind::Driver;
}

bool is_gpu_activity(Kind k) { return k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset; }

// The facts' role of a host op, and the partition's own for an annotation that would be an op.
int host_role(const RankTrace& t, const RankFacts& facts, std::size_t i) {
  const int r = facts.event_role[i];
  return r == kOp && t.events.kind[i] == Kind::UserAnnotation ? kAnnot : r;
}

// Marks the host ops of one thread that `is_span(i)` holds for or that are nested inside such an
// op, through the facts' parent links (parents come first on the thread). Example, side work:
// checkpoint [0, 100) holding cudaMemcpyAsync [10, 12) -> both marked.
template <class IsSpan>
void mark_spans(const RankFacts& facts, const Track& track, IsSpan is_span, std::vector<bool>& marked) {
  for (auto i : track.events) {
    if (facts.event_role[i] == kNotHostOp) continue;
    const std::uint32_t up = facts.event_parent[i];
    if (is_span(i) || (up != kNoParent && marked[up])) marked[i] = true;
  }
}

SweepFacts sweep_facts(const RankTrace& t, const RankFacts& facts) {
  SweepFacts f;
  const std::size_t n = t.events.size();
  f.role.assign(n, kNotHostOp);
  f.in_side.assign(n, false);
  f.in_compiled.assign(n, false);
  f.fact_stage = &facts.event_stage;
  f.gpu = facts.gpu_records;
  for (std::size_t k = 0; k < t.host_tracks.size(); ++k) {
    for (auto i : t.host_tracks[k].events)
      if (facts.event_role[i] != kNotHostOp) f.role[i] = static_cast<std::int8_t>(host_role(t, facts, i));
    mark_spans(facts, t.host_tracks[k], [&](std::uint32_t i) { return f.role[i] == kSide; }, f.in_side);
    mark_spans(facts, t.host_tracks[k], [&](std::uint32_t i) { return facts.of_event(t, i).has(kNameCompiledRegion); },
               f.in_compiled);
    for (auto i : t.host_tracks[k].events)
      if (f.role[i] != kNotHostOp && f.stage(i) == static_cast<std::int8_t>(StageHint::Forward)) f.has_forward_marker = true;
    if (facts.track_role[k] == ThreadRole::Autograd && static_cast<int>(k) != facts.main_track)
      f.aux_tracks.push_back(static_cast<int>(k));
  }
  return f;
}

// A GPU record the sweep counts; its times are its event's (start(), end()), which keeps it at 8
// bytes: a trace has millions.
struct GpuActivity {
  std::uint32_t event;  // event indexes are 32-bit throughout the model (Track::events)
  int channel;
};

ns_t start(const RankTrace& t, const GpuActivity& a) { return t.events.ts[a.event]; }
ns_t end(const RankTrace& t, const GpuActivity& a) { return t.events.end(a.event); }

// The first activity of `gpu` (by start) starting at or after `ts`.
std::vector<GpuActivity>::const_iterator first_starting_from(const RankTrace& t, const std::vector<GpuActivity>& gpu, ns_t ts) {
  return std::lower_bound(gpu.begin(), gpu.end(), ts, [&](const GpuActivity& a, ns_t v) { return start(t, a) < v; });
}

int stage_channel(const RankTrace& t, const SweepFacts& f, std::size_t i) {
  auto corr = t.events.correlation[i];
  if (corr != kNone) {
    const std::uint32_t call = t.correlations.launch(corr);
    if (call != CorrelationIndex::kNoEvent && f.stage(call) != kNoStage) return kGpuStage0 + f.stage(call);
  }
  return kGpuStage0 + 3;  // other
}

// The channel of a GPU activity by what it is and the stage that launched it; -1 for rows that
// are not work (sync markers).
int work_channel(const RankTrace& t, const SweepFacts& f, const RankFacts& facts, std::size_t i) {
  switch (t.events.kind[i]) {
    case Kind::Memset: return kGpuMemset;
    case Kind::Memcpy:
      if (t.events.copy_kind[i] == CopyKind::HtoD) return kGpuHtoD;
      if (t.events.copy_kind[i] == CopyKind::DtoH) return kGpuDtoH;
      // Device-side copies (DtoD, peer) keep the GPU busy with work of the launching stage.
      return stage_channel(t, f, i);
    case Kind::Kernel: break;
    default: return -1;
  }
  switch (facts.of_event(t, i).cls) {
    case KernelClass::Communication: return kGpuComm;
    case KernelClass::Sync: return -1;
    case KernelClass::MemcpyHtoD: return kGpuHtoD;
    case KernelClass::MemcpyDtoH: return kGpuDtoH;
    case KernelClass::Memset: return kGpuMemset;
    default: return stage_channel(t, f, i);
  }
}

// Whether GPU record i was launched by a host call that `marked` holds (in_side, in_compiled).
bool launched_from(const RankTrace& t, const std::vector<bool>& marked, std::size_t i) {
  const auto corr = t.events.correlation[i];
  if (corr == kNone) return false;
  const std::uint32_t call = t.correlations.launch(corr);
  return call != CorrelationIndex::kNoEvent && marked[call];
}

// The sweep channel of a GPU activity, or -1. Work launched from inside side work (a
// checkpoint's device-to-host copies) is the side work's cost, not a copy or compute stage.
int gpu_channel(const RankTrace& t, const SweepFacts& f, const RankFacts& facts, std::size_t i) {
  const int ch = work_channel(t, f, facts, i);
  if (ch < 0 || ch == kGpuComm) return ch;
  return launched_from(t, f.in_side, i) ? kGpuSide : ch;
}

std::vector<GpuActivity> gpu_activities(const RankTrace& t, const SweepFacts& f, const RankFacts& facts) {
  std::vector<GpuActivity> out;
  std::size_t records = 0;
  for (const auto& tr : t.gpu_tracks) records += tr.events.size();
  out.reserve(records);  // at most one a record: room past the activities kept is never touched
  for (const auto& tr : t.gpu_tracks)
    for (auto i : tr.events) {
      if (t.events.dur[i] <= 0 || !is_gpu_activity(t.events.kind[i])) continue;
      int ch = gpu_channel(t, f, facts, i);
      if (ch >= 0) out.push_back({i, ch});
    }
  std::sort(out.begin(), out.end(), [&](const GpuActivity& a, const GpuActivity& b) { return start(t, a) < start(t, b); });
  return out;
}

// The idle tail of a synchronising call: from its end until the GPU next starts any activity
// (possibly in a later step), or to the end of the last window when it never does.
template <class Sink>
void add_sync_tails(Sink& edges, const RankTrace& t, const SweepFacts& f,
                    const std::vector<int>& tracks, const std::vector<GpuActivity>& gpu, ns_t last) {
  for (int k : tracks)
    for (auto i : t.host_tracks[static_cast<std::size_t>(k)].events) {
      if (f.role[i] != kSync) continue;
      ns_t from = t.events.end(i);
      const auto it = first_starting_from(t, gpu, from);
      add_interval(edges, from, it == gpu.end() ? std::max(last, from) : start(t, *it), kSyncTail);
    }
}

// Between two batch fetches of the loop thread with no launch, sync, side work or communication
// between them and ops filling at most this share of the gap, the gap is the loader's: a new
// epoch's iterator starting its workers (DataLoader.__iter__ records no op of its own).
// Example: __next__ [0, 20 ms) ends the epoch, the seed's aten::random_ and aten::item take 40 us,
// __next__ [53, 64 ms) -> [20, 53 ms) is batch wait wherever no op runs.
constexpr double kLoaderGapOpShare = 0.1;

template <class Sink>
void add_loader_gaps(Sink& edges, const RankTrace& t, const SweepFacts& f, int main_track) {
  if (main_track < 0) return;
  ns_t prev_end = -1, op_time = 0;
  bool work = false;
  for (auto i : t.host_tracks[static_cast<std::size_t>(main_track)].events) {
    const ns_t ts = t.events.ts[i];
    const int role = f.role[i];
    if (role == kLoader) {
      if (prev_end >= 0 && !work && ts > prev_end &&
          static_cast<double>(op_time) <= kLoaderGapOpShare * static_cast<double>(ts - prev_end))
        add_interval(edges, prev_end, ts, kLoaderGap);
      prev_end = std::max(prev_end, t.events.end(i));
      op_time = 0, work = false;
    } else if (prev_end >= 0 && ts >= prev_end && role >= 0) {
      work = work || (role != kOp && role != kAnnot);
      op_time += t.events.dur[i];
    }
  }
}

// Host-side collectives (gloo) often run on the backend's own threads: while the GPU idles and
// the step's threads record nothing, the step waits on them.
template <class Sink>
void add_host_comm(Sink& edges, const RankTrace& t, const SweepFacts& f, const std::vector<int>& swept) {
  for (std::size_t k = 0; k < t.host_tracks.size(); ++k) {
    if (std::find(swept.begin(), swept.end(), static_cast<int>(k)) != swept.end()) continue;
    for (auto i : t.host_tracks[k].events)
      if (f.role[i] == kComm) add_interval(edges, t.events.ts[i], t.events.end(i), kHostComm);
  }
}

bool any(const Counts& c, int ch) { return c[static_cast<std::size_t>(ch)] > 0; }

struct Classifier {
  bool gpu;
  bool ops_are_compute;  // CPU trace without stage markers: every model op is compute

  // What one host thread is doing; -1 when it records nothing.
  int host_blame(const Counts& c, int role0, int stage0) const {
    auto role = [&](int r) { return any(c, role0 + r); };
    if (role(kLoader)) return static_cast<int>(Category::BatchWait);
    if (role(kSync)) return static_cast<int>(Category::SyncStall);
    if (role(kComm)) return static_cast<int>(Category::GradSyncExposed);
    if (role(kSide)) return static_cast<int>(Category::SideWork);
    if (gpu && role(kLaunch)) return static_cast<int>(Category::LaunchOverhead);
    if (!gpu) {
      // Without GPU events the model's own ops are the compute.
      for (int s = 0; s < kStageCount; ++s)
        if (any(c, stage0 + s)) return static_cast<int>(Category::ComputeForward) + s;
      if (ops_are_compute && (role(kOp) || role(kLaunch) || role(kAnnot)))
        return static_cast<int>(Category::ComputeOther);
    }
    if (role(kOp) || role(kLaunch)) return static_cast<int>(Category::HostCompute);
    return role(kAnnot) ? kAnnotOnly : -1;
  }

  // host_blame's answer for a thread inside annotations only: host compute, unless host-side
  // communication runs elsewhere meanwhile (DDP over gloo: the loop waits inside its "backward"
  // range while the backend's threads all-reduce).
  static constexpr int kAnnotOnly = -2;

  Category classify(const Counts& c) const {
    if (gpu) {
      for (int s = 0; s < 4; ++s)
        if (any(c, kGpuStage0 + s)) return static_cast<Category>(static_cast<int>(Category::ComputeForward) + s);
      if (any(c, kGpuComm)) return Category::GradSyncExposed;
      if (any(c, kGpuSide)) return Category::SideWork;
      if (any(c, kGpuHtoD)) return Category::H2DCopy;
      if (any(c, kGpuDtoH)) return Category::D2HCopy;
      if (any(c, kGpuMemset)) return Category::Memset;
    }
    const int on_main = host_blame(c, kMainRole0, kMainStage0);
    const int on_aux = host_blame(c, kAuxRole0, kAuxStage0);
    if (on_main == kAnnotOnly && on_aux < 0 && any(c, kHostComm)) return Category::GradSyncExposed;
    int h = on_main == kAnnotOnly ? static_cast<int>(Category::HostCompute) : on_main;
    if (h < 0) h = on_aux == kAnnotOnly ? static_cast<int>(Category::HostCompute) : on_aux;
    if (h >= 0) return static_cast<Category>(h);
    if (any(c, kHostComm)) return Category::GradSyncExposed;
    if (any(c, kLoaderGap)) return Category::BatchWait;
    return gpu && any(c, kSyncTail) ? Category::SyncStall : Category::Idle;
  }
};

// A run of the timeline with one category, from `start` to the next segment's start.
struct Segment {
  ns_t start;
  Category cat;
};

// One host thread's intervals in start order, a call at a time. An op nested inside an op of the
// same role and stage changes no count that matters: it opens none (a large share of a trace's
// host ops). A call opens its role's interval, and its stage's when it has one.
class HostTrackStarts {
 public:
  HostTrackStarts(const RankTrace& t, const SweepFacts& f, const Track& track, int role0, int stage0)
      : t_(t), f_(f), events_(track.events), role0_(role0), stage0_(stage0) {
    settle();
  }

  ns_t next_start() const { return pos_ < events_.size() ? t_.events.ts[events_[pos_]] : kNever; }

  // Opens (through `open(start, end, channel)`) the intervals of every call starting at `time`.
  template <class OpenInterval>
  void start_at(ns_t time, OpenInterval&& open) {
    for (; pos_ < events_.size() && t_.events.ts[events_[pos_]] == time; ++pos_, settle()) {
      const auto i = events_[pos_];
      const int r = f_.role[i];
      const ns_t end = t_.events.end(i);
      open(time, end, role0_ + r);
      if (f_.stage(i) != kNoStage) open(time, end, stage0_ + f_.stage(i));
      stack_.push_back({end, r, f_.stage(i)});
    }
  }

 private:
  static constexpr ns_t kNever = std::numeric_limits<ns_t>::max();
  // Moves to the next call that opens intervals.
  void settle() {
    for (; pos_ < events_.size(); ++pos_) {
      const auto i = events_[pos_];
      const int r = f_.role[i];
      if (r < 0) continue;
      const ns_t ts = t_.events.ts[i], end = t_.events.end(i);
      while (!stack_.empty() && stack_.back().end <= ts) stack_.pop_back();
      if (stack_.empty() || stack_.back().end < end || stack_.back().role != r || stack_.back().stage != f_.stage(i)) return;
    }
  }
  struct Open {
    ns_t end;
    int role, stage;
  };
  const RankTrace& t_;
  const SweepFacts& f_;
  const std::vector<std::uint32_t>& events_;
  int role0_, stage0_;
  std::size_t pos_ = 0;
  std::vector<Open> stack_;
};

// The edges of the GPU activities and of the swept host threads, in time order, made as the
// sweep reaches them instead of stored and sorted: starts come from each source in its order,
// ends from a heap of the intervals open, which holds about one a stream and a call depth. Empty
// intervals add nothing, as in add_interval.
//   GPU [0, 5) ch 1, host [2, 3) ch 2  ->  0: +1; 2: +2; 3: -2; 5: -1
class StreamedEdges {
 public:
  StreamedEdges(const RankTrace& t, const std::vector<GpuActivity>& gpu, std::vector<HostTrackStarts> host)
      : t_(t), gpu_(gpu), host_(std::move(host)) {}

  ns_t next_time() const {
    ns_t next = std::numeric_limits<ns_t>::max();
    if (next_gpu_ < gpu_.size()) next = start(t_, gpu_[next_gpu_]);
    for (const HostTrackStarts& h : host_) next = std::min(next, h.next_start());
    if (!open_.empty()) next = std::min(next, open_.top().first);
    return next;
  }

  // Applies every edge at `time` (no edge is earlier).
  void apply(ns_t time, Counts& counts) {
    auto open = [&](ns_t start_ns, ns_t end_ns, int channel) {
      if (end_ns <= start_ns) return;
      ++counts[static_cast<std::size_t>(channel)];
      open_.emplace(end_ns, channel);
    };
    for (; next_gpu_ < gpu_.size() && start(t_, gpu_[next_gpu_]) == time; ++next_gpu_)
      open(time, end(t_, gpu_[next_gpu_]), gpu_[next_gpu_].channel);
    for (HostTrackStarts& h : host_) h.start_at(time, open);
    for (; !open_.empty() && open_.top().first == time; open_.pop())
      --counts[static_cast<std::size_t>(open_.top().second)];
  }

 private:
  using Open = std::pair<ns_t, int>;  // (end, channel)
  const RankTrace& t_;
  const std::vector<GpuActivity>& gpu_;
  std::size_t next_gpu_ = 0;
  std::vector<HostTrackStarts> host_;
  std::priority_queue<Open, std::vector<Open>, std::greater<>> open_;
};

// Hands each segment to `on_segment(start, cat)` as the sweep makes it, in time order: the first
// one, then each one whose category differs from the one before. `streamed` are the GPU's and
// the swept threads' edges, `edges` the others (sync tails, host-side collectives).
template <class Edges, class OnSegment>
void sweep(Edges& edges, StreamedEdges& streamed, const Classifier& cls, OnSegment& on_segment) {
  edges.sort();
  Counts counts{};
  bool first = true;
  Category last = Category::Idle;
  std::size_t i = 0;
  for (;;) {
    const ns_t next = streamed.next_time();
    if (i == edges.size() && next == std::numeric_limits<ns_t>::max()) break;
    const ns_t t = i < edges.size() ? std::min(edges.time(i), next) : next;
    for (; i < edges.size() && edges.time(i) == t; ++i)
      counts[static_cast<std::size_t>(edges.channel(i))] += edges.delta(i);
    streamed.apply(t, counts);
    const Category c = cls.classify(counts);
    if (!first && c == last) continue;
    on_segment(t, c);
    first = false;
    last = c;
  }
}

// The sweep over the streamed edges and the intervals `add_intervals(sink)` produces, these
// stored packed when their span allows (the common case: a trace spans seconds to days).
template <class AddIntervals, class OnSegment>
void sweep_intervals(const AddIntervals& add_intervals, StreamedEdges streamed, const Classifier& cls,
                     OnSegment& on_segment) {
  EdgeBounds bounds;
  add_intervals(bounds);
  ns_t span = 0;
  if (bounds.count > 0 && !__builtin_sub_overflow(bounds.last, bounds.first, &span) && span < PackedEdges::kMaxSpan) {
    PackedEdges packed;
    packed.origin = bounds.first;
    packed.edges.reserve(bounds.count);
    add_intervals(packed);
    sweep(packed, streamed, cls, on_segment);
    return;
  }
  WideEdges wide;
  wide.edges.reserve(bounds.count);
  add_intervals(wide);
  sweep(wide, streamed, cls, on_segment);
}

// The category runs of [w0, w1); before the first segment nothing is recorded.
std::vector<CategoryRun> window_runs(const std::vector<Segment>& segs, ns_t w0, ns_t w1) {
  std::vector<CategoryRun> out;
  auto it = std::upper_bound(segs.begin(), segs.end(), w0,
                             [](ns_t v, const Segment& s) { return v < s.start; });
  ns_t t = w0;
  Category cur = it == segs.begin() ? Category::Idle : std::prev(it)->cat;
  for (; t < w1; ++it) {
    ns_t next = it == segs.end() ? w1 : std::min(it->start, w1);
    if (next > t) {
      if (!out.empty() && out.back().category == cur) out.back().end = next;
      else out.push_back({t, next, cur});
    }
    t = next;
    if (it == segs.end()) break;
    cur = it->cat;
  }
  return out;
}

// Each window's time per category, summed from the segments as the sweep makes them, so that a
// trace's million segments are not kept. Before the first segment the time is idle, as in
// window_runs. Windows may overlap (GPU work draining into the next step): a piece of a segment
// counts in each window it falls in.
//   windows [0, 10) and [8, 20); segments compute from 5, idle from 9
//     -> [0, 10): idle 5 + 1, compute 4;  [8, 20): compute 1, idle 11
class WindowTimes {
 public:
  explicit WindowTimes(const std::vector<StepPartition>& steps) : steps_(steps), times_(steps.size(), CategoryTimes{}) {
    order_.resize(steps.size());
    std::iota(order_.begin(), order_.end(), std::size_t{0});
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) { return steps[a].start < steps[b].start; });
  }

  // A segment of category `cat` starts at `t` (times ascending).
  void operator()(ns_t t, Category cat) {
    credit(from_, t, cur_);
    from_ = t;
    cur_ = cat;
  }

  std::vector<CategoryTimes> finish() {
    credit(from_, std::numeric_limits<ns_t>::max(), cur_);
    return std::move(times_);
  }

 private:
  // [a, b) is `cat`'s. Windows enter once they start before b and leave once they end by a:
  // later pieces start at b or after.
  void credit(ns_t a, ns_t b, Category cat) {
    for (; next_ < order_.size() && steps_[order_[next_]].start < b; ++next_) active_.push_back(order_[next_]);
    for (std::size_t k = 0; k < active_.size();) {
      const StepPartition& w = steps_[active_[k]];
      if (w.end <= a) {
        active_[k] = active_.back();
        active_.pop_back();
        continue;
      }
      const ns_t piece = std::min(b, w.end) - std::max(a, w.start);
      if (piece > 0) times_[active_[k]][static_cast<std::size_t>(cat)] += piece;
      ++k;
    }
  }

  const std::vector<StepPartition>& steps_;
  std::vector<CategoryTimes> times_;
  std::vector<std::size_t> order_;   // windows by start
  std::size_t next_ = 0;             // the first window of order_ not yet active
  std::vector<std::size_t> active_;  // windows started, not known to be over
  ns_t from_ = std::numeric_limits<ns_t>::min();
  Category cur_ = Category::Idle;
};

// Extends each step window to the end of the GPU work launched inside its host span.
void extend_windows(const RankTrace& t, const std::vector<GpuActivity>& gpu,
                    std::vector<StepPartition>& steps) {
  for (const auto& a : gpu) {
    auto corr = t.events.correlation[a.event];
    if (corr == kNone) continue;
    const std::uint32_t call = t.correlations.launch(corr);
    if (call == CorrelationIndex::kNoEvent) continue;
    ns_t ts = t.events.ts[call];
    auto it = std::upper_bound(steps.begin(), steps.end(), ts,
                               [](ns_t v, const StepPartition& s) { return v < s.start; });
    if (it == steps.begin()) continue;
    auto& s = *std::prev(it);
    if (ts < s.host_end) s.end = std::max(s.end, end(t, a));
  }
}

bool holds(const StepPartition& s, ns_t ts) { return ts >= s.start && ts < s.end; }

// For a host event's time: its host span once the windows are measured on the GPU side.
bool holds_host(const StepPartition& s, ns_t ts, bool gpu_side) {
  return gpu_side ? ts >= s.host_start && ts < s.host_end : holds(s, ts);
}

// A first or last step shorter than this share of the median one (the upper median: of two steps,
// the longer) is a stub: the profiler started or stopped right by a step boundary. A short step
// between two others is real: a loader with two workers hands over batches in pairs, so every
// other step barely waits, and dropping those would leave only the slow half in the steady mean.
constexpr double kNearEmptyShare = 0.05;

void warm(StepPartition& s, const char* reason) {
  if (s.warmup) return;
  s.warmup = true;
  s.warmup_reason = reason;
}

// Steady-state steps are chosen by what they hold: compilation and one-time start-up calls make
// a step warm-up, and so does being nearly empty; the first step is warm-up by position only
// when at least two others remain.
void mark_warmup(const RankTrace& t, const RankFacts& facts, std::vector<StepPartition>& steps, const Track* main,
                 bool gpu_side) {
  if (main)
    for (auto i : main->events)
      if (facts.of_event(t, i).has(kNameCompile))
        for (auto& s : steps)
          if (holds_host(s, t.events.ts[i], gpu_side)) warm(s, "compilation");
  for (const auto& o : facts.startup)
    for (auto& s : steps)
      if (holds_host(s, o.start, gpu_side) && steps.size() > 1) warm(s, "start-up");
  for (auto& s : steps)
    if (auto id = t.strings.find(s.name); id && facts.of(*id).has(kNameWarmupRange)) warm(s, "harness warm-up");
  std::vector<ns_t> d;
  for (const auto& s : steps) d.push_back(s.duration());
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  const double median = d.empty() ? 0 : static_cast<double>(d[d.size() / 2]);
  if (steps.empty()) return;
  for (auto* s : {&steps.front(), &steps.back()})
    if (static_cast<double>(s->duration()) < kNearEmptyShare * median) warm(*s, "near-empty step");
  if (steps.size() >= 3) warm(steps.front(), "first step");
  if (std::all_of(steps.begin(), steps.end(), [](const auto& s) { return s.warmup; }))
    for (auto& s : steps) s.warmup = false, s.warmup_reason.clear();
}

void steady_state(RankPartition& r) {
  std::size_t n = 0;
  double total = 0;
  std::array<double, kCategoryCount> cats{};
  for (const auto& s : r.steps) {
    if (s.warmup) continue;
    ++n;
    total += static_cast<double>(s.duration());
    for (int c = 0; c < kCategoryCount; ++c) cats[static_cast<std::size_t>(c)] += static_cast<double>(s.ns[static_cast<std::size_t>(c)]);
  }
  r.steady_steps = n;
  if (n == 0) return;
  r.steady_mean_ns = total / static_cast<double>(n);
  for (int c = 0; c < kCategoryCount; ++c) r.steady_mean_category[static_cast<std::size_t>(c)] = cats[static_cast<std::size_t>(c)] / static_cast<double>(n);
}

// Scores of attention are batched matmuls: a softmax without them is a classifier's output.
// Per distinct name, not per event: names no event carries have no flags.
bool has_score_matmuls(const RankFacts& facts) {
  return std::any_of(facts.names.begin(), facts.names.end(), [](const NameFact& n) { return n.has(kNameBmm); });
}

void compute_mix(const RankTrace& t, const RankFacts& facts, const SweepFacts& f, const std::vector<GpuActivity>& gpu,
                 const EventSteps& steps, RankPartition& r) {
  const bool scores = has_score_matmuls(facts);
  for (const auto& a : gpu) {
    if (t.events.kind[a.event] != Kind::Kernel || !steps.steady(a.event)) continue;
    const NameFact& n = facts.of_event(t, a.event);
    const ns_t d = end(t, a) - start(t, a);
    if (n.cls == KernelClass::Communication) {
      r.mix.comm_ns_by_kind[static_cast<std::size_t>(n.comm)] += d;
      r.mix.comm_ns_by_role[static_cast<std::size_t>(facts.comm_role(a.event))] += d;
    }
    if (a.channel > kGpuStage0 + 3) continue;
    r.mix.class_ns[static_cast<std::size_t>(n.cls)] += d;
    ++r.mix.kernels;
    if (n.has(kNameSoftmax) && scores) r.mix.softmax_ns += d;
    const bool gemm = n.cls == KernelClass::Gemm || n.cls == KernelClass::GemmTensorCore;
    if (gemm) r.mix.gemm_ns_by_dtype[static_cast<std::size_t>(n.dtype)] += d;
    if (gemm && n.dtype == DataType::Fp32 && n.engine != Engine::TensorCore && !n.has(kNameGemv))
      r.mix.fp32_simt_gemm_ns += d;
    if (n.cls == KernelClass::Convolution && n.dtype == DataType::Fp32 && n.engine != Engine::TensorCore)
      r.mix.fp32_simt_conv_ns += d;
    if (launched_from(t, f.in_compiled, a.event)) {
      r.mix.compiled_ns += d;
      if (n.cls == KernelClass::Elementwise || n.cls == KernelClass::ReductionNorm) r.mix.compiled_eltwise_norm_ns += d;
    }
  }
}

// When the host runs ahead, step N's host span ends while the GPU still runs step N-1: windows
// that run to the end of their GPU work then overlap and count the same GPU time twice. Such
// steps are measured on the GPU: from the first GPU work step N launched to the first of step N+1.
//
// The start is read on the stream that ran most of the launched work: a side stream's work (a
// copy prefetching the next batch) starts as soon as it is launched, ahead of the queue the step
// waits on, and would pull every step back to the host's time. A step with no work on that
// stream starts at its first work on any.
// Example: step 4 launches a prefetch copy at 10 ms (it runs at once on the idle copy stream) and
// its GEMMs, which start at 24 ms behind step 3's -> step 4 starts at 24 ms, not 10 ms.
void gpu_side_windows(const RankTrace& t, const std::vector<GpuActivity>& gpu, std::vector<StepPartition>& steps) {
  constexpr ns_t kUnset = std::numeric_limits<ns_t>::max();
  // The step whose host span launched `a`, or steps.size().
  auto launching_step = [&](const GpuActivity& a) {
    auto corr = t.events.correlation[a.event];
    if (corr == kNone) return steps.size();
    const std::uint32_t call = t.correlations.launch(corr);
    if (call == CorrelationIndex::kNoEvent) return steps.size();
    const ns_t ts = t.events.ts[call];
    const std::int64_t k = host_span_step(steps, ts);
    return k < 0 ? steps.size() : static_cast<std::size_t>(k);
  };
  std::vector<ns_t> first(steps.size(), kUnset), first_on_clock(steps.size(), kUnset);
  std::vector<ns_t> last(steps.size(), std::numeric_limits<ns_t>::min());
  std::vector<ns_t> busy(t.events.keys.size(), 0);
  for (const auto& a : gpu) {
    const std::size_t k = launching_step(a);
    if (k == steps.size()) continue;
    busy[t.events.track[a.event]] += end(t, a) - start(t, a);
    first[k] = std::min(first[k], start(t, a));
    last[k] = std::max(last[k], end(t, a));
  }
  const auto clock = static_cast<std::uint32_t>(std::max_element(busy.begin(), busy.end()) - busy.begin());
  for (const auto& a : gpu)
    if (t.events.track[a.event] == clock)
      if (const std::size_t k = launching_step(a); k < steps.size())
        first_on_clock[k] = std::min(first_on_clock[k], start(t, a));
  for (std::size_t k = 0; k < steps.size(); ++k)
    if (first_on_clock[k] != kUnset) first[k] = first_on_clock[k];
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (first[k] == kUnset) continue;
    steps[k].start = k > 0 ? std::max(first[k], steps[k - 1].end) : std::min(steps[k].start, first[k]);
    ns_t next = kUnset;
    for (std::size_t j = k + 1; j < steps.size() && next == kUnset; ++j) next = first[j];
    steps[k].end = std::max(steps[k].start, next != kUnset ? next : last[k]);
  }
}

ns_t median_duration(const std::vector<StepPartition>& steps) {
  std::vector<ns_t> d;
  for (const auto& s : steps) d.push_back(s.host_end - s.start);
  if (d.empty()) return 0;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

// How far a window reaches into the next one's host span (GPU work still draining).
ns_t max_overlap(const std::vector<StepPartition>& steps) {
  ns_t lag = 0;
  for (std::size_t i = 1; i < steps.size(); ++i) lag = std::max(lag, steps[i - 1].end - steps[i].start);
  return lag;
}

std::string track_label(const RankTrace& t, int k) {
  if (k < 0) return "";
  const Track& tr = t.host_tracks[static_cast<std::size_t>(k)];
  auto id = [&](std::int64_t v) {
    return is_string_track_id(v) ? std::string(t.str(track_string(v))) : std::to_string(v);
  };
  std::string s = id(tr.pid) + "/" + id(tr.tid);
  return tr.name.empty() ? s : s + " (" + tr.name + ")";
}

}  // namespace

const char* category_name(Category c) {
  static constexpr const char* kNames[kCategoryCount] = {
      "compute_forward", "compute_backward", "compute_optimizer", "compute_other",
      "grad_sync_exposed", "h2d_copy", "d2h_copy", "memset", "batch_wait", "sync_stall",
      "side_work", "launch_overhead", "host_compute", "idle"};
  return kNames[static_cast<int>(c)];
}

const char* category_label(Category c) {
  static constexpr const char* kLabels[kCategoryCount] = {
      "compute: forward", "compute: backward", "compute: optimizer", "compute: other",
      "communication (exposed)", "H2D copy", "D2H copy", "memset", "batch wait", "sync stall",
      "side work", "launch overhead", "host compute", "idle (unknown)"};
  return kLabels[static_cast<int>(c)];
}

ns_t compute_ns(const CategoryTimes& t) { return t[0] + t[1] + t[2] + t[3]; }

ns_t total_ns(const CategoryTimes& t) {
  ns_t s = 0;
  for (ns_t v : t) s += v;
  return s;
}

ns_t ComputeMix::kernel_ns() const {
  ns_t s = 0;
  for (ns_t v : class_ns) s += v;
  return s;
}

const char* step_source_name(StepSource s) {
  switch (s) {
    case StepSource::ProfilerStep: return "ProfilerStep";
    case StepSource::Annotation: return "repeated annotation";
    case StepSource::OptimizerStep: return "optimizer step";
    case StepSource::WholeTrace: return "whole trace";
  }
  return "whole trace";
}

std::string step_source_text(const RankPartition& p) {
  std::string from = step_source_name(p.source);
  if (p.source == StepSource::Annotation) from += " '" + p.source_detail + "'";
  if (p.source == StepSource::WholeTrace && !p.source_detail.empty()) from += ": its " + p.source_detail;
  return from;
}

namespace {

std::string whole_trace_note(const RankTrace& t, const StepDetection& d) {
  constexpr std::string_view none = "no step markers, repeated annotations or optimizer steps";
  if (d.windows.size() != 1 || d.detail.empty()) return fmt::format("{}: the whole trace is one window", none);
  const HostWindow& w = d.windows.front();
  return fmt::format("{}: one window over the {}, {:.2f} ms; left out: {:.2f} ms before it (start-up: "
                     "context creation, allocations) and {:.2f} ms after it",
                     none, d.detail, static_cast<double>(w.end - w.start) / 1e6,
                     static_cast<double>(w.start - t.first_ts()) / 1e6, static_cast<double>(t.last_end() - w.end) / 1e6);
}

// Windows overlapping by more than this share of the median host step mean the host runs ahead.
constexpr double kRunAheadShare = 0.1;

std::vector<StepPartition> step_windows(const StepDetection& d) {
  std::vector<StepPartition> steps;
  for (const auto& w : d.windows) {
    StepPartition s;
    s.number = w.number;
    s.name = w.name;
    s.start = s.host_start = w.start;
    s.end = s.host_end = std::max(w.end, w.start);
    steps.push_back(std::move(s));
  }
  return steps;
}

// A whole-trace window starts after the last one-time start-up call: a cold first launch of a
// second, and everything before it, is not the job's steady state. Kept whole when no GPU work
// remains after it.
void skip_startup(const RankTrace& t, const RankFacts& facts, const std::vector<GpuActivity>& gpu, StepPartition& w) {
  if (facts.startup.empty()) return;
  const ns_t after = facts.startup.back().end;
  const bool work_after = std::any_of(gpu.begin(), gpu.end(), [&](const GpuActivity& a) { return end(t, a) > after; });
  if (after > w.start && after < w.end && (work_after || gpu.empty())) w.start = after;
}

void add_step_warnings(const RankTrace& t, const StepDetection& d, RankPartition& r, ns_t lag) {
  auto warn = [&](TrustCode code, TrustSeverity sev, std::string text, std::string advice,
                  std::map<std::string, double> figures) {
    r.trust.push_back({code, sev, t.rank, std::move(text), std::move(advice), std::move(figures)});
  };
  if (d.source == StepSource::WholeTrace)
    warn(TrustCode::NoStepMarkers, TrustSeverity::Info,
         "no ProfilerStep markers, repeated annotations or optimizer steps: the trace is read as one window",
         recording_advice(recorder_of(t.layout), "steps"), {});
  if (r.steady_steps == 1)
    warn(TrustCode::OneStep, TrustSeverity::Limits, "one steady-state step: its stability is unknown and one-off costs "
                                            "cannot be told from steady ones",
         recording_advice(recorder_of(t.layout), "more_steps"),
         {{"steady_steps", 1}});
  else if (r.steady_steps > 0 && r.steady_steps < 3)
    warn(TrustCode::FewSteps, TrustSeverity::Limits,
         fmt::format("{} steady-state steps: stability and spikes cannot be judged", r.steady_steps),
         recording_advice(recorder_of(t.layout), "more_steps"),
         {{"steady_steps", static_cast<double>(r.steady_steps)}});
  if (r.host_runs_ahead)
    warn(TrustCode::HostRunsAhead, TrustSeverity::Info,
         fmt::format("the host runs ahead of the GPU by up to {:.2f} ms: steps are measured on the GPU side, from "
                     "the first GPU work each step launched",
                     static_cast<double>(lag) / 1e6),
         "", {{"lag_ns", static_cast<double>(lag)}});
}

// Per device sync in steady steps: one count; whether it sits inside the model's forward or
// backward (where no CUDA graph can capture it); how long the host waited in it while the GPU
// worked, unless it is the trace's closing sync; and the refill: how long the GPU then idles until
// the host has queued work again, time the partition gives to the host's launches but that the
// sync caused.
void count_syncs(const RankTrace& t, const RankFacts& facts, const std::vector<GpuActivity>& gpu,
                 const EventSteps& steps, RankPartition& r) {
  ns_t refill = 0, wait = 0;
  for (std::size_t k = 0; k < facts.device_syncs.size(); ++k) {
    const auto i = facts.device_syncs[k];
    if (!steps.steady(i)) continue;
    ++r.sync_calls;
    if (facts.of_event(t, i).sync == SyncKind::ScalarRead) ++r.item_calls;
    const StageHint st = facts.event_stage[i];
    if (st == StageHint::Forward || st == StageHint::Backward) ++r.model_syncs;
    const ns_t call_end = t.events.end(i);
    const auto it = first_starting_from(t, gpu, call_end);
    // A sync that no GPU work follows waits for the trace's last work, which must finish anyway
    // (the profiler's own stop synchronises): no step can run ahead into what is not there.
    if (it == gpu.end()) continue;
    if (k < facts.device_sync_busy.size()) wait += facts.device_sync_busy[k];
    if (steps.steady(it->event)) refill += start(t, *it) - call_end;
  }
  if (!r.steady_steps) return;
  r.sync_refill_ns = static_cast<double>(refill) / static_cast<double>(r.steady_steps);
  r.sync_wait_ns = static_cast<double>(wait) / static_cast<double>(r.steady_steps);
}

// The profiler's own host cost per recorded event, a rough figure from PyTorch's profiler
// (recording an op and its runtime calls costs on the order of a microsecond of host time; a
// Python frame under with_stack, a shape list under record_shapes and an allocation event under
// profile_memory add a fraction of that each). Used only to warn, never to correct the partition.
constexpr double kOpCostNs = 500, kPythonFrameCostNs = 500, kShapesCostNs = 300, kMemoryEventCostNs = 300;
// Warn when the estimate reaches this share of the mean steady step.
constexpr double kOverheadShare = 0.2;

void profiler_overhead(const RankTrace& t, const EventSteps& steps, RankPartition& r) {
  if (!r.steady_steps) return;
  double ops = 0, frames = 0, shapes = 0, memory = 0;
  for (const auto& tr : t.host_tracks)
    for (auto i : tr.events) {
      if (!steps.steady(i)) continue;
      const Kind k = t.events.kind[i];
      if (k == Kind::PythonFunction) ++frames;
      else if (k == Kind::CpuInstant) ++memory;
      else if (is_host_op_kind(k)) {
        ++ops;
        if (const std::optional<EventExtra> x = t.extra_of(i); x && x->input_dims != kNoStr) ++shapes;
      }
    }
  const double per_step =
      (ops * kOpCostNs + frames * kPythonFrameCostNs + shapes * kShapesCostNs + memory * kMemoryEventCostNs) /
      static_cast<double>(r.steady_steps);
  r.profiler_overhead_ns = per_step;
  if (per_step < kOverheadShare * r.steady_mean_ns) return;
  std::string options;
  if (frames > 0) options += "with_stack";
  if (shapes > 0) options += options.empty() ? "record_shapes" : ", record_shapes";
  if (memory > 0) options += options.empty() ? "profile_memory" : ", profile_memory";
  const double events = (ops + frames + memory) / static_cast<double>(r.steady_steps);
  r.trust.push_back({TrustCode::ProfilerOverhead, TrustSeverity::Limits, t.rank,
                     fmt::format("{:.0f} profiler events per step{}: the profiler itself costs an estimated {:.2f} ms "
                                 "of host time per step ({:.0f}% of the step); host-side figures are inflated",
                                 events, options.empty() ? "" : " (" + options + ")", per_step / 1e6,
                                 100 * per_step / r.steady_mean_ns),
                     recording_advice(recorder_of(t.layout), "lean"),
                     {{"events_per_step", events}, {"overhead_ns_per_step", per_step}}});
}

void scan_flags(const RankTrace& t, const RankFacts& facts, const SweepFacts& f, const std::vector<int>& tracks,
                RankPartition& r) {
  for (int k : tracks)
    for (auto i : t.host_tracks[static_cast<std::size_t>(k)].events) {
      if (f.role[i] < 0) continue;
      const NameFact& n = facts.of_event(t, i);
      if (n.has(kNameRecompute)) r.mix.recompute_seen = true;
      if (n.has(kNameFusedOptimizer) && f.stage(i) == static_cast<std::int8_t>(StageHint::Optimizer))
        r.mix.fused_optimizer_seen = true;
    }
}

// `keep`, when given, receives the timeline's category segments (for partition_runs); `steps_out`
// the event facts' steps.
RankPartition partition_impl(const RankTrace& t, const RankFacts& facts, const PartitionOptions& opts,
                             std::vector<Segment>* keep, EventSteps* steps_out = nullptr) {
  RankPartition r;
  const StepDetection d = detect_steps(t, opts.step_range, facts.main_track, &facts);
  r.source = d.source;
  r.source_detail = d.detail;
  r.main_thread = track_label(t, d.main_track);
  const SweepFacts f = sweep_facts(t, facts);
  r.gpu = f.gpu;
  const std::vector<GpuActivity> gpu = f.gpu ? gpu_activities(t, f, facts) : std::vector<GpuActivity>{};

  r.steps = step_windows(d);
  ns_t lag = 0;
  if (d.source != StepSource::WholeTrace) {
    extend_windows(t, gpu, r.steps);
    lag = max_overlap(r.steps);
    if (r.steps.size() > 1 && static_cast<double>(lag) > kRunAheadShare * static_cast<double>(median_duration(r.steps))) {
      r.host_runs_ahead = true;
      gpu_side_windows(t, gpu, r.steps);
    }
  } else {
    const ns_t before = r.steps.front().start;
    skip_startup(t, facts, gpu, r.steps.front());
    r.startup_skipped_ns = r.steps.front().start - before;
  }
  ns_t last = 0;
  for (const auto& s : r.steps) last = std::max(last, s.end);

  std::vector<int> host_tracks;
  if (d.main_track >= 0) host_tracks.push_back(d.main_track);
  for (int k : f.aux_tracks) host_tracks.push_back(k);
  std::vector<HostTrackStarts> swept;
  for (std::size_t n = 0; n < host_tracks.size(); ++n) {
    const bool main_thread = n == 0 && d.main_track >= 0;
    swept.emplace_back(t, f, t.host_tracks[static_cast<std::size_t>(host_tracks[n])], main_thread ? kMainRole0 : kAuxRole0,
                       main_thread ? kMainStage0 : kAuxStage0);
  }
  const auto add_intervals = [&](auto& edges) {
    if (f.gpu) add_sync_tails(edges, t, f, host_tracks, gpu, last);
    add_host_comm(edges, t, f, host_tracks);
    add_loader_gaps(edges, t, f, d.main_track);
  };
  const Classifier cls{f.gpu, !f.gpu && !f.has_forward_marker};
  WindowTimes times(r.steps);
  auto on_segment = [&](ns_t start, Category cat) {
    times(start, cat);
    if (keep) keep->push_back({start, cat});
  };
  sweep_intervals(add_intervals, StreamedEdges(t, gpu, std::move(swept)), cls, on_segment);
  std::vector<CategoryTimes> ns = times.finish();
  for (std::size_t k = 0; k < r.steps.size(); ++k) r.steps[k].ns = ns[k];

  const Track* main = d.main_track >= 0 ? &t.host_tracks[static_cast<std::size_t>(d.main_track)] : nullptr;
  mark_warmup(t, facts, r.steps, main, r.host_runs_ahead);
  steady_state(r);
  EventSteps steps = event_steps(t, step_spans(r), r.host_runs_ahead);
  compute_mix(t, facts, f, gpu, steps, r);
  count_syncs(t, facts, gpu, steps, r);
  scan_flags(t, facts, f, host_tracks, r);
  profiler_overhead(t, steps, r);
  if (steps_out) *steps_out = std::move(steps);
  if (lag > 0 && !r.host_runs_ahead)
    r.notes.push_back({WarningId::GpuDrainsPastStep,
                       fmt::format("GPU work drains past the host's step end by up to {:.2f} ms (each window runs to "
                                   "the end of the GPU work it launched)",
                                   static_cast<double>(lag) / 1e6)});
  if (d.source == StepSource::WholeTrace) r.notes.push_back({WarningId::WholeTraceWindow, whole_trace_note(t, d)});
  if (cls.ops_are_compute)
    r.notes.push_back({WarningId::CpuOpsAsCompute,
                       "CPU-only trace without stage markers: host ops outside the loader, syncs and side work count as compute"});
  add_step_warnings(t, d, r, lag);
  return r;
}

}  // namespace

std::int64_t host_span_step(const std::vector<StepPartition>& steps, ns_t ts) {
  auto it = std::upper_bound(steps.begin(), steps.end(), ts,
                             [](ns_t v, const StepPartition& s) { return v < s.host_start; });
  if (it == steps.begin()) return -1;
  --it;
  return ts < it->host_end ? static_cast<std::int64_t>(it - steps.begin()) : -1;
}

namespace {

// The facts with the user's rules of `opts` applied: computed afresh (facts carrying other rules
// cannot be taken back to the names' own stages).
RankFacts ruled_facts(const RankTrace& t, const PartitionOptions& opts) {
  RankFacts f = compute_facts(t);
  apply_stage_rules(t, opts.stage_rules, f);
  return f;
}

}  // namespace

RankPartition partition_rank(const RankTrace& t, const RankFacts& facts, const PartitionOptions& opts) {
  if (facts.stage_rules != opts.stage_rules) return partition_impl(t, ruled_facts(t, opts), opts, nullptr);
  return partition_impl(t, facts, opts, nullptr);
}

RankPartition partition_rank(const RankTrace& t, const PartitionOptions& opts) {
  return partition_impl(t, ruled_facts(t, opts), opts, nullptr);
}

RankPartition partition_rank_into(const RankTrace& t, RankFacts& facts, const PartitionOptions& opts) {
  if (facts.stage_rules != opts.stage_rules) return partition_impl(t, ruled_facts(t, opts), opts, nullptr, &facts.event_steps);
  return partition_impl(t, facts, opts, nullptr, &facts.event_steps);
}

std::vector<StepSpan> step_spans(const RankPartition& p) {
  std::vector<StepSpan> out;
  out.reserve(p.steps.size());
  for (const StepPartition& s : p.steps) out.push_back({s.start, s.end, s.host_start, s.host_end, !s.warmup});
  return out;
}

const EventSteps& event_steps_of(const RankTrace& t, const RankFacts& facts, const RankPartition& p,
                                 EventSteps& computed) {
  if (!facts.event_steps.step.empty()) return facts.event_steps;
  computed = event_steps(t, step_spans(p), p.host_runs_ahead);
  return computed;
}

std::vector<std::vector<CategoryRun>> partition_runs(const RankTrace& t, const std::vector<StepPartition>& steps,
                                                     const PartitionOptions& opts) {
  std::vector<Segment> segs;
  partition_impl(t, ruled_facts(t, opts), opts, &segs);
  std::vector<std::vector<CategoryRun>> out;
  out.reserve(steps.size());
  for (const auto& s : steps) out.push_back(window_runs(segs, s.start, s.end));
  return out;
}

}  // namespace stepscope
