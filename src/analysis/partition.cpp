// The step partition of one rank: a single sweep over the rank's timeline assigns one category
// to every instant; each step window then sums the categories it covers.
#include "stepscope/partition.hpp"

#include <algorithm>
#include <fmt/core.h>

#include "analysis/partition_rules.hpp"
#include "stepscope/steps.hpp"

namespace stepscope {
namespace {

using namespace partition_detail;

// Sweep channels: each counts the intervals of one kind active at an instant.
enum Channel : int {
  kGpuStage0 = 0,  // + stage (forward, backward, optimizer, other): compute kernels
  kGpuComm = 4,
  kGpuHtoD,
  kGpuDtoH,
  kGpuMemset,
  kMainRole0,                           // + Role on the main thread
  kMainStage0 = kMainRole0 + kRoleCount,  // + Stage of main-thread ops
  kAuxRole0 = kMainStage0 + kStageCount,  // the autograd thread(s)
  kAuxStage0 = kAuxRole0 + kRoleCount,
  kSyncTail = kAuxStage0 + kStageCount,
  kChannelCount
};
using Counts = std::array<int, kChannelCount>;

struct Edge {
  ns_t t;
  int channel;
  int delta;
};

void add_interval(std::vector<Edge>& edges, ns_t a, ns_t b, int channel) {
  if (b <= a) return;
  edges.push_back({a, channel, +1});
  edges.push_back({b, channel, -1});
}

// Per-rank facts the sweep needs, computed once.
struct RankFacts {
  std::vector<std::int8_t> role;   // per event: Role, or kMarker / -2 for events not counted
  std::vector<std::int8_t> stage;  // per host event: inherited stage, or kNoStage
  std::vector<int> aux_tracks;     // threads running backward besides the main thread
  bool gpu = false;
  bool has_forward_marker = false;
};

bool is_host_op_kind(Kind k) {
  return k == Kind::CpuOp || k == Kind::UserAnnotation || k == Kind::PythonFunction ||
         k == Kind::Runtime || k == Kind::Driver;
}

bool is_gpu_activity(Kind k) { return k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset; }

// Roles and own stage markers by name, user rules first; cached per interned name.
class NameRules {
 public:
  NameRules(const RankTrace& t, const std::vector<CompiledRule>& rules)
      : t_(t), rules_(rules), role_(t.strings.size(), -3), stage_(t.strings.size(), -3) {}

  int role(StrId id) {
    if (role_[id] == -3) resolve(id);
    return role_[id];
  }
  int stage(StrId id) {
    if (stage_[id] == -3) resolve(id);
    return stage_[id];
  }

 private:
  void resolve(StrId id) {
    std::string name(t_.str(id));
    role_[id] = static_cast<std::int8_t>(role_by_name(name));
    stage_[id] = static_cast<std::int8_t>(stage_by_name(name));
    for (const auto& r : rules_) {
      if (!std::regex_search(name, r.re)) continue;
      if (r.stage != kNoStage) stage_[id] = static_cast<std::int8_t>(r.stage);
      else role_[id] = static_cast<std::int8_t>(r.role);
      break;
    }
  }
  const RankTrace& t_;
  const std::vector<CompiledRule>& rules_;
  std::vector<std::int8_t> role_, stage_;
};

// Each host op inherits the stage of its innermost ancestor that marks one.
void inherit_stages(const RankTrace& t, const Track& track, NameRules& names, RankFacts& f) {
  std::vector<std::pair<ns_t, std::int8_t>> stack;  // (end, stage)
  for (auto i : track.events) {
    if (f.role[i] == -2) continue;
    while (!stack.empty() && stack.back().first <= t.events.ts[i]) stack.pop_back();
    std::int8_t own = static_cast<std::int8_t>(names.stage(t.events.name[i]));
    if (own == kForward) f.has_forward_marker = true;
    std::int8_t s = own != kNoStage ? own : (stack.empty() ? std::int8_t{kNoStage} : stack.back().second);
    f.stage[i] = s;
    stack.emplace_back(t.events.end(i), s);
  }
}

RankFacts rank_facts(const RankTrace& t, int main_track, const std::vector<CompiledRule>& rules) {
  RankFacts f;
  const std::size_t n = t.events.size();
  f.role.assign(n, -2);
  f.stage.assign(n, kNoStage);
  NameRules names(t, rules);
  for (const auto& tr : t.gpu_tracks)
    for (auto i : tr.events)
      if (is_gpu_activity(t.events.kind[i]) && t.events.dur[i] > 0) f.gpu = true;
  for (std::size_t k = 0; k < t.host_tracks.size(); ++k) {
    bool backward = false;
    for (auto i : t.host_tracks[k].events) {
      if (t.events.phase[i] != Phase::Complete || !is_host_op_kind(t.events.kind[i])) continue;
      int r = names.role(t.events.name[i]);
      const bool launches = (t.events.kind[i] == Kind::Runtime || t.events.kind[i] == Kind::Driver) &&
                            t.events.correlation[i] != kNone &&
                            t.gpu_by_correlation.count(t.events.correlation[i]) > 0;
      if (r == kOp && launches) r = kLaunch;
      f.role[i] = static_cast<std::int8_t>(r);
      backward = backward || names.stage(t.events.name[i]) == kBackward;
    }
    inherit_stages(t, t.host_tracks[k], names, f);
    if (backward && static_cast<int>(k) != main_track) f.aux_tracks.push_back(static_cast<int>(k));
  }
  return f;
}

// classify_kernel matches many name patterns; a trace repeats few kernel names millions of times.
class KernelClasses {
 public:
  explicit KernelClasses(const RankTrace& t)
      : t_(t), cls_(t.strings.size(), -1), softmax_(t.strings.size(), -1), low_(t.strings.size(), -1) {}
  KernelClass of(std::size_t i) {
    StrId id = t_.events.name[i];
    if (cls_[id] < 0) cls_[id] = static_cast<std::int8_t>(classify_kernel(t_.str(id)));
    return static_cast<KernelClass>(cls_[id]);
  }
  bool softmax(std::size_t i) {
    StrId id = t_.events.name[i];
    if (softmax_[id] < 0) {
      std::string_view n = t_.str(id);
      softmax_[id] = n.find("softmax") != std::string_view::npos || n.find("Softmax") != std::string_view::npos;
    }
    return softmax_[id] > 0;
  }
  bool low_precision(std::size_t i) {
    StrId id = t_.events.name[i];
    if (low_[id] < 0) low_[id] = has_low_precision_tag(t_.str(id));
    return low_[id] > 0;
  }

 private:
  const RankTrace& t_;
  std::vector<std::int8_t> cls_, softmax_, low_;
};

struct GpuActivity {
  ns_t start, end;
  int channel;
  std::size_t event;
};

int stage_channel(const RankTrace& t, const RankFacts& f, std::size_t i) {
  auto corr = t.events.correlation[i];
  if (corr != kNone) {
    auto it = t.launch_by_correlation.find(corr);
    if (it != t.launch_by_correlation.end() && f.stage[it->second] != kNoStage)
      return kGpuStage0 + f.stage[it->second];
  }
  return kGpuStage0 + 3;  // other
}

// Channel of a GPU activity, or -1 for rows that are not work (sync markers).
int gpu_channel(const RankTrace& t, const RankFacts& f, KernelClasses& classes, std::size_t i) {
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
  switch (classes.of(i)) {
    case KernelClass::Communication: return kGpuComm;
    case KernelClass::Sync: return -1;
    case KernelClass::MemcpyHtoD: return kGpuHtoD;
    case KernelClass::MemcpyDtoH: return kGpuDtoH;
    case KernelClass::Memset: return kGpuMemset;
    default: return stage_channel(t, f, i);
  }
}

std::vector<GpuActivity> gpu_activities(const RankTrace& t, const RankFacts& f, KernelClasses& classes) {
  std::vector<GpuActivity> out;
  for (const auto& tr : t.gpu_tracks)
    for (auto i : tr.events) {
      if (t.events.dur[i] <= 0 || !is_gpu_activity(t.events.kind[i])) continue;
      int ch = gpu_channel(t, f, classes, i);
      if (ch >= 0) out.push_back({t.events.ts[i], t.events.end(i), ch, i});
    }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  return out;
}

// The idle tail of a synchronising call: from its end until the GPU next starts any activity
// (possibly in a later step), or to the end of the last window when it never does.
void add_sync_tails(std::vector<Edge>& edges, const RankTrace& t, const RankFacts& f,
                    const std::vector<int>& tracks, const std::vector<GpuActivity>& gpu, ns_t last) {
  for (int k : tracks)
    for (auto i : t.host_tracks[static_cast<std::size_t>(k)].events) {
      if (f.role[i] != kSync) continue;
      ns_t from = t.events.end(i);
      auto it = std::lower_bound(gpu.begin(), gpu.end(), from,
                                 [](const GpuActivity& a, ns_t v) { return a.start < v; });
      add_interval(edges, from, it == gpu.end() ? std::max(last, from) : it->start, kSyncTail);
    }
}

// An op nested inside an op of the same role and stage changes no count that matters: its
// edges are skipped (a large share of a trace's host ops), which keeps the sweep's sort small.
void add_host_edges(std::vector<Edge>& edges, const RankTrace& t, const RankFacts& f,
                    const Track& track, int role0, int stage0) {
  struct Open {
    ns_t end;
    int role, stage;
  };
  std::vector<Open> stack;
  for (auto i : track.events) {
    int r = f.role[i];
    if (r < 0) continue;
    const ns_t ts = t.events.ts[i], end = t.events.end(i);
    while (!stack.empty() && stack.back().end <= ts) stack.pop_back();
    if (!stack.empty() && stack.back().end >= end && stack.back().role == r && stack.back().stage == f.stage[i])
      continue;
    add_interval(edges, ts, end, role0 + r);
    if (f.stage[i] != kNoStage) add_interval(edges, ts, end, stage0 + f.stage[i]);
    stack.push_back({end, r, f.stage[i]});
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
    if (role(kSide)) return static_cast<int>(Category::SideWork);
    if (gpu && role(kLaunch)) return static_cast<int>(Category::LaunchOverhead);
    if (!gpu) {
      // Without GPU events the model's own ops are the compute.
      for (int s = 0; s < kStageCount; ++s)
        if (any(c, stage0 + s)) return static_cast<int>(Category::ComputeForward) + s;
      if (ops_are_compute && (role(kOp) || role(kLaunch))) return static_cast<int>(Category::ComputeOther);
    }
    if (role(kOp) || role(kLaunch)) return static_cast<int>(Category::HostCompute);
    return -1;
  }

  Category classify(const Counts& c) const {
    if (gpu) {
      for (int s = 0; s < 4; ++s)
        if (any(c, kGpuStage0 + s)) return static_cast<Category>(static_cast<int>(Category::ComputeForward) + s);
      if (any(c, kGpuComm)) return Category::GradSyncExposed;
      if (any(c, kGpuHtoD)) return Category::H2DCopy;
      if (any(c, kGpuDtoH)) return Category::D2HCopy;
      if (any(c, kGpuMemset)) return Category::Memset;
    }
    int h = host_blame(c, kMainRole0, kMainStage0);
    if (h < 0) h = host_blame(c, kAuxRole0, kAuxStage0);
    if (h >= 0) return static_cast<Category>(h);
    return gpu && any(c, kSyncTail) ? Category::SyncStall : Category::Idle;
  }
};

// A run of the timeline with one category, from `start` to the next segment's start.
struct Segment {
  ns_t start;
  Category cat;
};

std::vector<Segment> sweep(std::vector<Edge>& edges, const Classifier& cls) {
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  std::vector<Segment> segs;
  Counts counts{};
  for (std::size_t i = 0; i < edges.size();) {
    const ns_t t = edges[i].t;
    for (; i < edges.size() && edges[i].t == t; ++i)
      counts[static_cast<std::size_t>(edges[i].channel)] += edges[i].delta;
    Category c = cls.classify(counts);
    if (segs.empty() || segs.back().cat != c) segs.push_back({t, c});
  }
  return segs;
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

CategoryTimes window_times(const std::vector<Segment>& segs, ns_t w0, ns_t w1) {
  CategoryTimes out{};
  for (const auto& r : window_runs(segs, w0, w1)) out[static_cast<std::size_t>(r.category)] += r.end - r.start;
  return out;
}

// Extends each step window to the end of the GPU work launched inside its host span.
void extend_windows(const RankTrace& t, const std::vector<GpuActivity>& gpu,
                    std::vector<StepPartition>& steps) {
  for (const auto& a : gpu) {
    auto corr = t.events.correlation[a.event];
    if (corr == kNone) continue;
    auto l = t.launch_by_correlation.find(corr);
    if (l == t.launch_by_correlation.end()) continue;
    ns_t ts = t.events.ts[l->second];
    auto it = std::upper_bound(steps.begin(), steps.end(), ts,
                               [](ns_t v, const StepPartition& s) { return v < s.start; });
    if (it == steps.begin()) continue;
    auto& s = *std::prev(it);
    if (ts < s.host_end) s.end = std::max(s.end, a.end);
  }
}

void mark_warmup(const RankTrace& t, std::vector<StepPartition>& steps, const Track* main) {
  if (steps.size() > 1) steps.front().warmup = true, steps.front().warmup_reason = "first step";
  if (!main) return;
  for (auto i : main->events) {
    if (!is_compilation(t.name_of(i))) continue;
    for (auto& s : steps)
      if (t.events.ts[i] >= s.start && t.events.ts[i] < s.end && !s.warmup)
        s.warmup = true, s.warmup_reason = "compilation";
  }
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

// Steps are in start order; a window extended by its GPU tail can overlap the next one.
bool in_steady(const std::vector<StepPartition>& steps, ns_t ts) {
  auto it = std::upper_bound(steps.begin(), steps.end(), ts,
                             [](ns_t v, const StepPartition& s) { return v < s.start; });
  for (int back = 0; back < 2 && it != steps.begin(); ++back) {
    --it;
    if (!it->warmup && ts < it->end) return true;
  }
  return false;
}

void compute_mix(const RankTrace& t, const std::vector<GpuActivity>& gpu, KernelClasses& classes,
                 RankPartition& r) {
  for (const auto& a : gpu) {
    if (a.channel > kGpuStage0 + 3 || t.events.kind[a.event] != Kind::Kernel) continue;
    if (!in_steady(r.steps, a.start)) continue;
    const KernelClass c = classes.of(a.event);
    const ns_t d = a.end - a.start;
    r.mix.class_ns[static_cast<std::size_t>(c)] += d;
    ++r.mix.kernels;
    if (classes.softmax(a.event)) r.mix.softmax_ns += d;
    if ((c == KernelClass::Gemm || c == KernelClass::Convolution) && classes.low_precision(a.event))
      (c == KernelClass::Gemm ? r.mix.low_precision_gemm_ns : r.mix.low_precision_conv_ns) += d;
  }
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
      "grad sync (exposed)", "H2D copy", "D2H copy", "memset", "batch wait", "sync stall",
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

// `keep`, when given, receives the timeline's category segments (for partition_runs).
RankPartition partition_impl(const RankTrace& t, const PartitionOptions& opts, std::vector<Segment>* keep) {
  RankPartition r;
  r.rank = t.rank;
  const StepDetection d = detect_steps(t, opts.step_range);
  r.source = d.source;
  r.source_detail = d.detail;
  r.main_thread = track_label(t, d.main_track);
  const auto rules = compile_rules(opts.stage_rules);
  const RankFacts f = rank_facts(t, d.main_track, rules);
  r.gpu = f.gpu;
  KernelClasses classes(t);
  const std::vector<GpuActivity> gpu = f.gpu ? gpu_activities(t, f, classes) : std::vector<GpuActivity>{};

  for (const auto& w : d.windows) {
    StepPartition s;
    s.number = w.number;
    s.name = w.name;
    s.start = w.start;
    s.end = s.host_end = std::max(w.end, w.start);
    r.steps.push_back(std::move(s));
  }
  if (d.source != StepSource::WholeTrace) extend_windows(t, gpu, r.steps);
  ns_t last = 0;
  for (const auto& s : r.steps) last = std::max(last, s.end);

  std::vector<Edge> edges;
  for (const auto& a : gpu) add_interval(edges, a.start, a.end, a.channel);
  std::vector<int> host_tracks;
  if (d.main_track >= 0) {
    add_host_edges(edges, t, f, t.host_tracks[static_cast<std::size_t>(d.main_track)], kMainRole0, kMainStage0);
    host_tracks.push_back(d.main_track);
  }
  for (int k : f.aux_tracks) {
    add_host_edges(edges, t, f, t.host_tracks[static_cast<std::size_t>(k)], kAuxRole0, kAuxStage0);
    host_tracks.push_back(k);
  }
  if (f.gpu) add_sync_tails(edges, t, f, host_tracks, gpu, last);
  const Classifier cls{f.gpu, !f.gpu && !f.has_forward_marker};
  const std::vector<Segment> segs = sweep(edges, cls);
  for (auto& s : r.steps) s.ns = window_times(segs, s.start, s.end);
  if (keep) *keep = segs;

  const Track* main = d.main_track >= 0 ? &t.host_tracks[static_cast<std::size_t>(d.main_track)] : nullptr;
  mark_warmup(t, r.steps, main);
  steady_state(r);
  compute_mix(t, gpu, classes, r);
  for (int k : host_tracks)
    for (auto i : t.host_tracks[static_cast<std::size_t>(k)].events) {
      if (f.role[i] == kSync && in_steady(r.steps, t.events.ts[i])) {
        ++r.sync_calls;
        if (t.name_of(i) == "aten::item") ++r.item_calls;
      }
      if (f.role[i] < 0) continue;
      if (!r.mix.recompute_seen && is_recompute(t.name_of(i))) r.mix.recompute_seen = true;
      if (!r.mix.fused_optimizer_seen && t.name_of(i).find("_fused_") != std::string_view::npos &&
          f.stage[i] == kOptimizer)
        r.mix.fused_optimizer_seen = true;
    }
  if (ns_t lag = max_overlap(r.steps); lag > 0)
    r.notes.push_back(fmt::format("the host runs ahead of the GPU: step windows overlap by up to {:.2f} ms "
                                  "(each window runs to the end of the GPU work it launched)",
                                  static_cast<double>(lag) / 1e6));
  if (d.source == StepSource::WholeTrace) r.notes.push_back(whole_trace_note(t, d));
  if (cls.ops_are_compute)
    r.notes.push_back("CPU-only trace without stage markers: host ops outside the loader, syncs and side work count as compute");
  return r;
}

}  // namespace

RankPartition partition_rank(const RankTrace& t, const PartitionOptions& opts) { return partition_impl(t, opts, nullptr); }

std::vector<std::vector<CategoryRun>> partition_runs(const RankTrace& t, const std::vector<StepPartition>& steps,
                                                     const PartitionOptions& opts) {
  std::vector<Segment> segs;
  partition_impl(t, opts, &segs);
  std::vector<std::vector<CategoryRun>> out;
  out.reserve(steps.size());
  for (const auto& s : steps) out.push_back(window_runs(segs, s.start, s.end));
  return out;
}

}  // namespace stepscope
