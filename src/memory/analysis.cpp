// The memory analysis of one snapshot: lifetimes from the trace, phases from the stacks, the
// class of every allocation from both, then the peak, fragmentation, the OOM and the levers.
#include "stepscope/memory/analysis.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>

#include "memory/phases.hpp"

namespace stepscope::memory {

namespace {

constexpr std::int64_t kNever = INT64_MAX;
constexpr std::int64_t kSmallRequest = std::int64_t{1} << 20;  // the small pool serves requests up to 1 MiB
constexpr std::int64_t kSmallSegment = std::int64_t{2} << 20;
constexpr std::int64_t kMaxSize = std::int64_t{1} << 50;       // a size beyond this is no allocation
constexpr std::uint32_t kNoRun = UINT32_MAX;

std::int64_t add_sat(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
  return out;
}

std::int64_t sane_size(std::int64_t s) { return std::clamp<std::int64_t>(s, 0, kMaxSize); }
std::int64_t block_extent(std::int64_t s) { return s < 512 ? 512 : add_sat(s, 511) / 512 * 512; }

struct Alloc {
  std::uint64_t addr = 0;
  std::int64_t size = 0;
  std::int64_t born = -1;  // entry index; -1: alive before the recording began
  std::int64_t died = kNever;
  StackId stack = 0;
  Phase phase = Phase::none;
  std::uint32_t run = kNoRun;
  bool cut = false;  // alive when its phase was cut short by an OOM or by the end of the recording
  MemClass cls = MemClass::unknown;
  Reason reason = Reason::no_phase;
  int step = 0;
};

// A stretch of the trace whose allocations share one phase: [start, end) in entry indices.
struct Run {
  Phase phase = Phase::none;
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool cut = false;
};

struct SegmentInfo {
  std::int64_t size = 0;
  bool small = false;
};

MemClass class_of_phase(Phase p) {
  switch (p) {
    case Phase::model_setup: return MemClass::parameters;
    case Phase::forward: return MemClass::activations;
    case Phase::backward: case Phase::zero_grad: return MemClass::gradients;
    case Phase::optimizer: return MemClass::optimizer_state;
    case Phase::none: return MemClass::unknown;
  }
  return MemClass::unknown;
}

Reason kept_reason(Phase p) {
  switch (p) {
    case Phase::model_setup: return Reason::setup_kept;
    case Phase::forward: return Reason::forward_kept;
    case Phase::backward: case Phase::zero_grad: return Reason::backward_kept;
    case Phase::optimizer: return Reason::optimizer_kept;
    case Phase::none: return Reason::no_phase;
  }
  return Reason::no_phase;
}

class DeviceAnalyzer {
 public:
  DeviceAnalyzer(const Snapshot& s, const DeviceTrace* trace, int device) : s_(s), device_(device) {
    if (trace) entries_ = &trace->entries;
    phase_cache_.assign(s.stacks.size(), -1);
  }

  DeviceMemory run() {
    DeviceMemory d;
    d.device = device_;
    d.entries = static_cast<std::int64_t>(n());
    d.expandable_segments = s_.expandable_segments;
    initial_segments();
    lifetimes();
    make_runs();
    classify();
    find_steps();
    d.steps = static_cast<int>(step_starts_.size());
    replay(d);
    d.at_peak = fragmentation_at(d.peak.entry);
    oom(d);
    d.allocations = std::count_if(allocs_.begin(), allocs_.end(), [](const Alloc& a) { return a.born >= 0; });
    evidence(d);
    levers(d);
    d.headline = headline(d);
    return d;
  }

 private:
  std::size_t n() const { return entries_ ? entries_->size() : 0; }
  const TraceEntry& at(std::size_t i) const { return (*entries_)[i]; }

  Phase phase(StackId id) {
    if (id >= phase_cache_.size()) return Phase::none;
    if (phase_cache_[id] < 0) phase_cache_[id] = static_cast<std::int8_t>(phase_of_stack(s_.frames, s_.stacks[id]));
    return static_cast<Phase>(phase_cache_[id]);
  }

  // The segments before the first entry: those of the dump, less the ones the trace allocated,
  // plus the ones it released, walking the trace backwards.
  void initial_segments() {
    for (const auto& seg : s_.segments) {
      if (seg.device != device_) continue;
      const bool small = seg.segment_type.empty() ? seg.total_size <= kSmallSegment : seg.segment_type == "small";
      final_type_[seg.address] = small;
      initial_segments_[seg.address] = {sane_size(seg.total_size), small};
    }
    for (std::size_t i = n(); i-- > 0;) {
      const TraceEntry& e = at(i);
      if (e.action == Action::segment_alloc || e.action == Action::segment_map) initial_segments_.erase(e.addr);
      else if (e.action == Action::segment_free || e.action == Action::segment_unmap)
        initial_segments_[e.addr] = {sane_size(e.size), small_segment(e.addr, sane_size(e.size))};
    }
  }

  bool small_segment(std::uint64_t addr, std::int64_t size) const {
    auto it = final_type_.find(addr);
    return it != final_type_.end() ? it->second : size <= kSmallSegment;
  }

  // Every allocation with its birth and death; frees of blocks the trace never saw allocated, and
  // blocks of the dump it never saw at all, were alive before the recording began.
  void lifetimes() {
    bool completed = false;
    for (std::size_t i = 0; i < n(); ++i) completed |= at(i).action == Action::free_completed;
    const Action free_action = completed ? Action::free_completed : Action::free_requested;
    born_at_.assign(n(), -1);
    died_at_.assign(n(), -1);
    std::unordered_map<std::uint64_t, std::size_t> alive;
    for (std::size_t i = 0; i < n(); ++i) {
      const TraceEntry& e = at(i);
      if (e.action == Action::alloc) {
        if (auto it = alive.find(e.addr); it != alive.end()) {  // never freed in the trace: a lost entry
          allocs_[it->second].died = static_cast<std::int64_t>(i);
          died_at_[i] = static_cast<std::int64_t>(it->second);
        }
        Alloc a;
        a.addr = e.addr;
        a.size = sane_size(e.size);
        a.born = static_cast<std::int64_t>(i);
        a.stack = e.stack;
        a.phase = phase(e.stack);
        alive[e.addr] = allocs_.size();
        born_at_[i] = static_cast<std::int64_t>(allocs_.size());
        allocs_.push_back(a);
      } else if (e.action == free_action) {
        auto it = alive.find(e.addr);
        if (it != alive.end()) {
          allocs_[it->second].died = static_cast<std::int64_t>(i);
          died_at_[i] = static_cast<std::int64_t>(it->second);
          alive.erase(it);
        } else {
          Alloc a;
          a.addr = e.addr;
          a.size = sane_size(e.size);
          a.died = static_cast<std::int64_t>(i);
          died_at_[i] = static_cast<std::int64_t>(allocs_.size());
          allocs_.push_back(a);
        }
      }
    }
    for (const auto& seg : s_.segments) {
      if (seg.device != device_) continue;
      for (const auto& b : seg.blocks) {
        if (b.state.rfind("active", 0) != 0 || alive.count(b.address)) continue;
        Alloc a;
        a.addr = b.address;
        a.size = sane_size(b.requested_size > 0 ? b.requested_size : b.size);
        a.stack = b.stack;
        a.phase = phase(b.stack);
        allocs_.push_back(a);
        alive[b.address] = allocs_.size() - 1;
      }
    }
  }

  // Runs of one phase; an OOM ends the run it interrupts, and the last run is cut by the dump.
  void make_runs() {
    bool open = false;
    for (std::size_t i = 0; i < n(); ++i) {
      const TraceEntry& e = at(i);
      const auto idx = static_cast<std::int64_t>(i);
      if (e.action == Action::oom) {
        if (open) {
          runs_.back().end = idx;
          runs_.back().cut = true;
          open = false;
        }
        continue;
      }
      if (e.action != Action::alloc || born_at_[i] < 0) continue;
      const Phase p = allocs_[static_cast<std::size_t>(born_at_[i])].phase;
      if (p != Phase::none && (!open || runs_.back().phase != p)) {
        if (open) runs_.back().end = idx;
        runs_.push_back({p, idx, idx, false});
        open = true;
      }
      if (open) allocs_[static_cast<std::size_t>(born_at_[i])].run = static_cast<std::uint32_t>(runs_.size() - 1);
    }
    if (open) {
      runs_.back().end = static_cast<std::int64_t>(n());
      runs_.back().cut = true;
    }
  }

  void classify_complete(Alloc& a) {
    if (a.born < 0) {
      a.cls = class_of_phase(a.phase);
      a.reason = Reason::before_recording;
      return;
    }
    if (a.run == kNoRun) {
      a.cls = MemClass::unknown;
      a.reason = Reason::no_phase;
      return;
    }
    const Run& r = runs_[a.run];
    if (a.died < r.end) {
      a.cls = MemClass::temporaries;
      a.reason = Reason::same_phase;
      return;
    }
    a.cut = r.cut && a.died > r.end;  // the OOM entry itself frees nothing
    a.cls = class_of_phase(a.phase);
    a.reason = kept_reason(a.phase);
  }

  static bool long_lived(MemClass c) {
    return c == MemClass::parameters || c == MemClass::gradients || c == MemClass::optimizer_state;
  }

  std::int64_t run_of_entry(std::int64_t entry) const {
    auto it = std::upper_bound(runs_.begin(), runs_.end(), entry, [](std::int64_t e, const Run& r) { return e < r.start; });
    if (it == runs_.begin()) return -1;
    --it;
    return entry < it->end ? it - runs_.begin() : -1;
  }

  // A block kept past its phase that takes the place of a long-lived block of the same size freed
  // in that phase is what it replaced: runs in order, so a chain of replacements keeps the class.
  void inherit_replaced() {
    std::vector<std::vector<std::size_t>> freed_in(runs_.size()), born_in(runs_.size());
    for (std::size_t i = 0; i < allocs_.size(); ++i) {
      const Alloc& a = allocs_[i];
      if (a.run != kNoRun && a.reason != Reason::same_phase) born_in[a.run].push_back(i);
      if (a.died == kNever) continue;
      const std::int64_t r = run_of_entry(a.died);
      if (r >= 0 && a.born < runs_[static_cast<std::size_t>(r)].start) freed_in[static_cast<std::size_t>(r)].push_back(i);
    }
    for (std::size_t r = 0; r < runs_.size(); ++r)
      if (!freed_in[r].empty()) pair_in_run(born_in[r], freed_in[r]);
  }

  // In trace order, a kept block and a long-lived block of the same size freed next to it (the
  // new value is made, then the old one let go, or the other way round) are paired: a block
  // freed later in the phase (gradients let go by zero_grad) finds every new block taken.
  void pair_in_run(const std::vector<std::size_t>& born, const std::vector<std::size_t>& freed) {
    std::vector<std::pair<std::int64_t, std::ptrdiff_t>> events;  // entry, +(i+1) born / -(i+1) freed
    for (std::size_t i : born) events.push_back({allocs_[i].born, static_cast<std::ptrdiff_t>(i) + 1});
    for (std::size_t i : freed)
      if (long_lived(allocs_[i].cls)) events.push_back({allocs_[i].died, -static_cast<std::ptrdiff_t>(i) - 1});
    std::sort(events.begin(), events.end());
    std::unordered_map<std::int64_t, std::vector<std::size_t>> waiting_born, waiting_freed;
    auto inherit = [&](std::size_t to, std::size_t from) {
      allocs_[to].cls = allocs_[from].cls;
      allocs_[to].reason = Reason::replaces;
    };
    for (const auto& [entry, code] : events) {
      const auto i = static_cast<std::size_t>(code > 0 ? code - 1 : -code - 1);
      auto& same_freed = waiting_freed[allocs_[i].size];
      auto& same_born = waiting_born[allocs_[i].size];
      if (code > 0) {
        if (!same_freed.empty()) {
          inherit(i, same_freed.back());
          same_freed.pop_back();
        } else {
          same_born.push_back(i);
        }
      } else if (!same_born.empty()) {
        inherit(same_born.back(), i);
        same_born.pop_back();
      } else {
        same_freed.push_back(i);
      }
    }
  }

  // The class of each allocation; one cut short takes the class its allocation site had where
  // the phase ran to its end (a temporary interrupted by an OOM is still a temporary).
  void classify() {
    for (Alloc& a : allocs_) classify_complete(a);
    inherit_replaced();
    std::unordered_map<StackId, std::array<std::int64_t, kMemClasses>> site;
    for (Alloc& a : allocs_) {
      if (!a.cut && a.born >= 0 && a.reason != Reason::no_phase && a.stack != 0) site[a.stack][static_cast<std::size_t>(a.cls)]++;
    }
    for (Alloc& a : allocs_) {
      if (!a.cut) continue;
      auto it = site.find(a.stack);
      if (it == site.end()) continue;
      const auto& counts = it->second;
      const auto best = static_cast<std::size_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
      a.cls = static_cast<MemClass>(best);
      a.reason = Reason::site_history;
    }
  }

  // A step starts with each forward that follows a backward or an optimizer step; the first
  // forward starts step 1. Without a backward there are no steps to see.
  void find_steps() {
    bool backward = false;
    for (const Run& r : runs_) backward |= r.phase == Phase::backward;
    if (!backward) return;
    Phase last = Phase::none;
    for (const Run& r : runs_) {
      if (r.phase == Phase::forward && (step_starts_.empty() || last == Phase::backward || last == Phase::optimizer))
        step_starts_.push_back(r.start);
      if (r.phase != Phase::zero_grad) last = r.phase;
    }
    for (Alloc& a : allocs_) a.step = a.born < 0 ? 0 : step_of(a.born);
  }

  int step_of(std::int64_t entry) const {
    auto it = std::upper_bound(step_starts_.begin(), step_starts_.end(), entry);
    return static_cast<int>(it - step_starts_.begin());
  }

  Phase phase_at(std::int64_t entry) const {
    auto it = std::upper_bound(runs_.begin(), runs_.end(), entry, [](std::int64_t e, const Run& r) { return e < r.start; });
    if (it == runs_.begin()) return Phase::none;
    --it;
    return entry < it->end ? it->phase : Phase::none;
  }

  void add(MemoryMoment& m, const Alloc& a, int sign) {
    const std::int64_t s = sign > 0 ? a.size : -a.size;
    m.allocated_bytes = add_sat(m.allocated_bytes, s);
    auto& c = m.by_class[static_cast<std::size_t>(a.cls)];
    c = add_sat(c, s);
  }

  // One pass in trace order: the peak, each step's peak, the reserved bytes and the timeline.
  void replay(DeviceMemory& d) {
    MemoryMoment m;
    for (const auto& [addr, seg] : initial_segments_) m.reserved_bytes = add_sat(m.reserved_bytes, seg.size);
    for (const Alloc& a : allocs_)
      if (a.born < 0) add(m, a, +1);
    d.peak = m;
    d.step_peaks.assign(step_starts_.size(), MemoryMoment{});
    const std::size_t bucket = std::max<std::size_t>(1, (n() + kTimelinePoints - 1) / kTimelinePoints);
    std::optional<MemoryMoment> best_in_bucket;
    d.timeline.push_back(m);
    for (std::size_t i = 0; i < n(); ++i) {
      const TraceEntry& e = at(i);
      const auto idx = static_cast<std::int64_t>(i);
      if (died_at_[i] >= 0) add(m, allocs_[static_cast<std::size_t>(died_at_[i])], -1);
      if (born_at_[i] >= 0) add(m, allocs_[static_cast<std::size_t>(born_at_[i])], +1);
      if (e.action == Action::segment_alloc || e.action == Action::segment_map) m.reserved_bytes = add_sat(m.reserved_bytes, sane_size(e.size));
      if (e.action == Action::segment_free || e.action == Action::segment_unmap) m.reserved_bytes = add_sat(m.reserved_bytes, -sane_size(e.size));
      m.entry = idx;
      m.time_us = e.time_us;
      if (e.action == Action::oom && !oom_moment_) oom_moment_ = m;
      if (born_at_[i] < 0 && died_at_[i] < 0 && e.action != Action::segment_alloc && e.action != Action::segment_free) continue;
      m.step = step_of(idx);
      m.phase = phase_at(idx);
      if (born_at_[i] >= 0 && m.allocated_bytes > d.peak.allocated_bytes) d.peak = m;
      if (born_at_[i] >= 0 && m.step > 0) {
        MemoryMoment& sp = d.step_peaks[static_cast<std::size_t>(m.step - 1)];
        if (sp.entry < 0 || m.allocated_bytes > sp.allocated_bytes) sp = m;
      }
      if (!best_in_bucket || m.allocated_bytes > best_in_bucket->allocated_bytes) best_in_bucket = m;
      if ((i + 1) % bucket == 0 || i + 1 == n()) {
        d.timeline.push_back(*best_in_bucket);
        best_in_bucket.reset();
      }
    }
    if (best_in_bucket) d.timeline.push_back(*best_in_bucket);
    d.peak.step = d.peak.entry >= 0 ? step_of(d.peak.entry) : 0;
  }

  // The segments and the live blocks inside them at one entry: cached free bytes, the largest
  // gap, segments by pool.
  Fragmentation fragmentation_at(std::int64_t entry) const {
    std::map<std::uint64_t, SegmentInfo> segs(initial_segments_.begin(), initial_segments_.end());
    for (std::size_t i = 0; i < n() && static_cast<std::int64_t>(i) <= entry; ++i) {
      const TraceEntry& e = at(i);
      if (e.action == Action::segment_alloc || e.action == Action::segment_map)
        segs[e.addr] = {sane_size(e.size), small_segment(e.addr, sane_size(e.size))};
      else if (e.action == Action::segment_free || e.action == Action::segment_unmap)
        segs.erase(e.addr);
    }
    std::map<std::uint64_t, std::int64_t> live;
    Fragmentation f;
    for (const Alloc& a : allocs_)
      if (a.born <= entry && a.died > entry) {
        live[a.addr] = a.size;
        f.allocated_bytes = add_sat(f.allocated_bytes, a.size);
      }
    for (const auto& entry_seg : segs) {  // no structured binding: lambdas below capture these
      const std::uint64_t addr = entry_seg.first;
      const SegmentInfo& seg = entry_seg.second;
      f.reserved_bytes = add_sat(f.reserved_bytes, seg.size);
      (seg.small ? f.small_segments : f.large_segments)++;
      auto& bytes = seg.small ? f.small_segment_bytes : f.large_segment_bytes;
      bytes = add_sat(bytes, seg.size);
      const std::uint64_t end = addr + static_cast<std::uint64_t>(seg.size);
      std::uint64_t cursor = addr;
      std::int64_t free_here = 0;
      auto gap = [&](std::uint64_t upto) {
        if (upto <= cursor) return;
        const auto g = static_cast<std::int64_t>(std::min<std::uint64_t>(upto - cursor, static_cast<std::uint64_t>(kMaxSize)));
        free_here = add_sat(free_here, g);
        f.free_blocks++;
        f.largest_free_block = std::max(f.largest_free_block, g);
        if (!seg.small) f.largest_free_block_large = std::max(f.largest_free_block_large, g);
      };
      for (auto it = live.lower_bound(addr); it != live.end() && it->first < end; ++it) {
        gap(it->first);
        cursor = std::max(cursor, it->first + static_cast<std::uint64_t>(block_extent(it->second)));
      }
      gap(end);
      auto& free_bytes = seg.small ? f.small_free_bytes : f.large_free_bytes;
      free_bytes = add_sat(free_bytes, free_here);
    }
    f.cached_free_bytes = std::max<std::int64_t>(0, f.reserved_bytes - f.allocated_bytes);
    return f;
  }

  std::vector<Frame> python_frames(StackId id) const {
    std::vector<Frame> out;
    if (id >= s_.stacks.size()) return out;
    for (std::uint32_t i : s_.stacks[id]) {
      const Frame& f = s_.frames[i];
      if (f.filename.size() >= 3 && f.filename.compare(f.filename.size() - 3, 3, ".py") == 0) out.push_back(f);
      if (out.size() == 8) break;
    }
    return out;
  }

  void oom(DeviceMemory& d) {
    for (std::size_t i = 0; i < n(); ++i) {
      const TraceEntry& e = at(i);
      if (e.action != Action::oom) continue;
      if (d.oom) {
        d.oom->count++;
        continue;
      }
      OomReport o;
      o.entry = static_cast<std::int64_t>(i);
      o.time_us = e.time_us;
      o.requested_bytes = sane_size(e.size);
      o.stream = e.stream;
      o.device_free_bytes = e.device_free;
      o.frames = python_frames(e.stack);
      if (oom_moment_) o.alive = *oom_moment_;
      o.alive.step = step_of(o.entry);
      o.alive.phase = phase_at(o.entry > 0 ? o.entry - 1 : 0);
      o.fragmentation = fragmentation_at(o.entry);
      const std::int64_t largest =
          o.requested_bytes <= kSmallRequest ? o.fragmentation.largest_free_block : o.fragmentation.largest_free_block_large;
      o.fragmentation_cause = o.fragmentation.cached_free_bytes >= o.requested_bytes && largest < o.requested_bytes;
      o.explanation = oom_explanation(o, largest);
      d.oom = std::move(o);
    }
  }

  static std::string oom_explanation(const OomReport& o, std::int64_t largest) {
    const std::string driver =
        o.device_free_bytes >= 0 ? fmt::format(", and the driver had {} left", human_bytes(o.device_free_bytes)) : "";
    if (o.fragmentation_cause)
      return fmt::format("fragmentation: {} was free in the allocator's cached segments, more than the {} asked for, "
                         "but the largest free block was {}{}",
                         human_bytes(o.fragmentation.cached_free_bytes), human_bytes(o.requested_bytes), human_bytes(largest), driver);
    return fmt::format("exhaustion: {} was allocated and only {} was free in cached segments (largest block {}){}: "
                       "the job needs more memory than the device has",
                       human_bytes(o.alive.allocated_bytes), human_bytes(o.fragmentation.cached_free_bytes), human_bytes(largest),
                       driver);
  }

  void evidence(DeviceMemory& d) const {
    std::map<std::pair<MemClass, Reason>, ClassEvidence> ev;
    const std::int64_t p = d.peak.entry;
    for (const Alloc& a : allocs_) {
      ClassEvidence& e = ev[{a.cls, a.reason}];
      e.cls = a.cls;
      e.reason = a.reason;
      if (a.born >= 0) e.allocations++;
      if (a.born <= p && a.died > p) e.peak_bytes = add_sat(e.peak_bytes, a.size);
    }
    for (auto& [key, e] : ev) d.evidence.push_back(e);
  }

  // Forward allocations alive at the peak that were made in an earlier step: references held
  // across steps (a loss, logits or outputs kept in a Python variable until the next step).
  std::int64_t held_across_steps(const DeviceMemory& d) const {
    if (d.peak.step <= 0) return 0;
    std::int64_t held = 0;
    for (const Alloc& a : allocs_)
      if (a.cls == MemClass::activations && a.born >= 0 && a.born <= d.peak.entry && a.died > d.peak.entry && a.step > 0 &&
          a.step < d.peak.step)
        held = add_sat(held, a.size);
    return held;
  }

  void count_segment_churn(DeviceMemory& d) const {
    bool released = false;
    std::int64_t last_oom = -1;
    for (std::size_t i = 0; i < n(); ++i) {
      const TraceEntry& e = at(i);
      if (e.action == Action::oom) last_oom = static_cast<std::int64_t>(i);
      if (e.action == Action::segment_free) {
        d.segment_frees++;
        released = true;
      }
      if (e.action == Action::segment_alloc && released && last_oom < 0) d.segment_reallocs++;
    }
  }

  void levers(DeviceMemory& d) const;
  std::string headline(const DeviceMemory& d) const;

  const Snapshot& s_;
  int device_;
  const std::vector<TraceEntry>* entries_ = nullptr;
  std::vector<std::int8_t> phase_cache_;
  std::map<std::uint64_t, SegmentInfo> initial_segments_;
  std::unordered_map<std::uint64_t, bool> final_type_;
  std::vector<Alloc> allocs_;
  std::vector<std::int64_t> born_at_, died_at_;
  std::vector<Run> runs_;
  std::vector<std::int64_t> step_starts_;
  std::optional<MemoryMoment> oom_moment_;
};

std::int64_t cls_bytes(const MemoryMoment& m, MemClass c) { return m.by_class[static_cast<std::size_t>(c)]; }

std::int64_t share(std::int64_t bytes, double f) { return static_cast<std::int64_t>(static_cast<double>(bytes) * f); }

std::string frees_text(std::int64_t frees, std::int64_t of, const char* what) {
  return fmt::format("frees about {} of the {} {}", human_bytes(frees), human_bytes(of), what);
}

void DeviceAnalyzer::levers(DeviceMemory& d) const {
  count_segment_churn(d);
  const MemoryMoment& p = d.peak;
  const std::int64_t peak = p.allocated_bytes;
  const std::int64_t act = cls_bytes(p, MemClass::activations), tmp = cls_bytes(p, MemClass::temporaries);
  const std::int64_t grads = cls_bytes(p, MemClass::gradients), opt = cls_bytes(p, MemClass::optimizer_state);
  const std::int64_t params = cls_bytes(p, MemClass::parameters);
  const bool backward = std::any_of(runs_.begin(), runs_.end(), [](const Run& r) { return r.phase == Phase::backward; });
  auto lever = [&](std::string id, std::string title, bool applies, std::int64_t frees, std::int64_t of, std::string pre,
                   std::string gain, std::string risk) {
    d.levers.push_back({std::move(id), std::move(title), applies, frees, of, std::move(pre), std::move(gain), std::move(risk)});
  };

  const std::int64_t cached = d.oom ? d.oom->fragmentation.cached_free_bytes : d.at_peak.cached_free_bytes;
  const std::int64_t reserved = d.oom ? d.oom->fragmentation.reserved_bytes : d.at_peak.reserved_bytes;
  const bool fragmented = (d.oom && d.oom->fragmentation_cause) || (reserved > 0 && cached * 5 >= reserved);
  lever("expandable_segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", fragmented && !d.expandable_segments, cached,
        reserved,
        d.expandable_segments ? "already on in allocator_settings"
                              : "fragmentation: cached free bytes are a fifth or more of the reserved bytes, or the OOM came from it",
        d.oom && d.oom->fragmentation_cause
            ? fmt::format("the failed {} request fits in the {} cached free once segments can grow in place; {}",
                          human_bytes(d.oom->requested_bytes), human_bytes(cached), frees_text(cached, reserved, "reserved"))
            : frees_text(cached, reserved, "reserved at the peak") + " (cached but unusable for larger requests)",
        "PyTorch 2.1 or later; allocations cost slightly more; not shared through CUDA IPC before 2.2");

  lever("activation_checkpointing", "activation checkpointing (torch.utils.checkpoint) of the repeated blocks",
        backward && act > 0, share(act, 2.0 / 3.0), peak,
        "activations alive at the peak, made in forward and freed in backward",
        frees_text(share(act, 2.0 / 3.0), peak, "peak") +
            " (estimate: two thirds of the activations; block inputs stay, the rest is recomputed)",
        "about one more forward per step (+20-35% step time); non-deterministic ops recompute differently");

  lever("micro_batch", "halve the micro-batch and accumulate gradients over two", act + tmp > 0, (act + tmp) / 2, peak,
        "activations or temporaries at the peak (they scale with the batch)",
        frees_text((act + tmp) / 2, peak, "peak") + " (activations and temporaries scale with the micro-batch)",
        "twice the steps per optimizer update: lower throughput on small batches; BatchNorm sees smaller batches");

  lever("bf16_autocast", "torch.autocast(dtype=torch.bfloat16) for forward", act > 0, act / 2, peak,
        "activations at the peak; the snapshot does not record dtypes, so this assumes they are fp32 now",
        frees_text(act / 2, peak, "peak") + " if the activations are fp32 (nothing if already 16-bit)",
        "numerics: check the loss curve; needs bf16 hardware (Ampere or later)");

  constexpr int kGpus = 8;
  const double sharded = 1.0 - 1.0 / kGpus;
  lever("zero1", "ZeRO stage 1: shard the optimizer state", opt > 0, share(opt, sharded), peak,
        "optimizer state alive at the peak and data-parallel replicas",
        frees_text(share(opt, sharded), peak, "peak") + fmt::format(" over {} GPUs ((1 - 1/N) of the optimizer state)", kGpus),
        "a reduce-scatter and all-gather per step instead of an all-reduce: same volume, more collectives");
  lever("zero2", "ZeRO stage 2: shard the optimizer state and gradients", opt + grads > 0, share(opt + grads, sharded), peak,
        "optimizer state or gradients alive at the peak and data-parallel replicas",
        frees_text(share(opt + grads, sharded), peak, "peak") + fmt::format(" over {} GPUs", kGpus),
        "gradient accumulation needs a reduce-scatter per micro-batch");
  lever("fsdp", "FSDP / ZeRO stage 3: shard parameters too", opt + grads + params > 0, share(opt + grads + params, sharded), peak,
        "parameters, gradients or optimizer state alive at the peak and data-parallel replicas",
        frees_text(share(opt + grads + params, sharded), peak, "peak") + fmt::format(" over {} GPUs", kGpus),
        "an all-gather of each layer's parameters in forward and backward: +50% communication volume");
  lever("optimizer_8bit", "8-bit optimizer states (bitsandbytes Adam8bit)", opt > 0, share(opt, 0.75), peak,
        "optimizer state alive at the peak (Adam keeps two fp32 states per parameter)",
        frees_text(share(opt, 0.75), peak, "peak") + " (8-bit states are a quarter of fp32)",
        "an extra dependency; quantised states can slow convergence on some models");

  const bool grads_in_forward = grads > 0 && p.phase == Phase::forward;
  lever("zero_grad_set_to_none", "optimizer.zero_grad(set_to_none=True)", grads_in_forward, grads_in_forward ? grads : 0, peak,
        "gradients alive at a peak that falls in forward: zeroed, not freed, since the last step",
        frees_text(grads_in_forward ? grads : 0, peak, "peak") + " (gradients are made again in backward)",
        "code that reads .grad before backward must handle None");

  const std::int64_t held = held_across_steps(d);
  lever("held_references", "drop references held across steps (del loss/outputs, .item() for logging)", held > 0, held, peak,
        "forward outputs of an earlier step still alive at the peak", frees_text(held, peak, "peak"),
        "none, once the values are logged as Python numbers");

  lever("empty_cache", "remove torch.cuda.empty_cache() calls", d.segment_reallocs > 0, 0, peak,
        "segments released and then allocated again",
        fmt::format("frees nothing: {} segments were released and {} allocated again, each a cudaFree/cudaMalloc with a "
                    "device synchronisation: only time is lost",
                    d.segment_frees, d.segment_reallocs),
        "none; keep it only where another process needs the memory back");

  std::stable_sort(d.levers.begin(), d.levers.end(), [](const MemLever& a, const MemLever& b) {
    if (a.applies != b.applies) return a.applies;
    return a.frees_bytes > b.frees_bytes;
  });
}

std::string DeviceAnalyzer::headline(const DeviceMemory& d) const {
  std::vector<std::pair<std::int64_t, MemClass>> parts;
  for (std::size_t c = 0; c < kMemClasses; ++c)
    if (d.peak.by_class[c] > 0) parts.push_back({d.peak.by_class[c], static_cast<MemClass>(c)});
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string split;
  for (std::size_t i = 0; i < parts.size() && i < 3; ++i)
    split += fmt::format("{}{} {:.0f}%", i ? ", " : "", class_name(parts[i].second),
                         100.0 * static_cast<double>(parts[i].first) / static_cast<double>(std::max<std::int64_t>(1, d.peak.allocated_bytes)));
  std::string out = fmt::format("device {}: peak {} allocated of {} reserved{}", d.device, human_bytes(d.peak.allocated_bytes),
                                human_bytes(d.peak.reserved_bytes), split.empty() ? "" : " (" + split + ")");
  if (d.oom)
    out += fmt::format("; out of memory on a {} request, by {}", human_bytes(d.oom->requested_bytes),
                       d.oom->fragmentation_cause ? "fragmentation" : "exhaustion");
  return out;
}

}  // namespace

std::string_view class_name(MemClass c) {
  static constexpr std::array<std::string_view, kMemClasses> kNames{"parameters", "gradients", "optimizer_state",
                                                                   "activations", "temporaries", "unknown"};
  return kNames[static_cast<std::size_t>(c)];
}

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::none: return "none";
    case Phase::model_setup: return "model_setup";
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
    case Phase::zero_grad: return "zero_grad";
  }
  return "none";
}

std::string_view reason_name(Reason r) {
  static constexpr std::array<std::string_view, kReasons> kNames{"setup_kept", "backward_kept", "optimizer_kept",
                                                                "forward_kept", "same_phase", "site_history",
                                                                "before_recording", "no_phase", "replaces"};
  return kNames[static_cast<std::size_t>(r)];
}

std::string_view reason_text(Reason r) {
  static constexpr std::array<std::string_view, kReasons> kTexts{
      "made while the model was built or moved (a module's __init__, .to(), _apply) and kept",
      "made in backward (autograd engine, AccumulateGrad) and alive after it",
      "made by the optimizer (torch/optim, _init_group, step) and kept past its step",
      "made in forward and alive after it (freed in backward or later)",
      "made and freed within one phase (forward, backward or optimizer step)",
      "alive when an OOM or the dump cut its phase short: classed as its allocation site was in complete phases",
      "alive before the recording began: classed by the phase of its block's stack",
      "no model building, forward, backward or optimizer frame in its stack",
      "kept, and the same size as a parameter, gradient or optimizer state freed in the same phase: it takes its place "
      "(an out-of-place update)"};
  return kTexts[static_cast<std::size_t>(r)];
}

std::int64_t total(const ByClass& b) {
  std::int64_t t = 0;
  for (auto v : b) t = add_sat(t, v);
  return t;
}

std::string human_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  const double a = b < 0 ? -b : b;
  if (a >= double(1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (a >= double(1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
  if (a >= 1024) return fmt::format("{:.1f} KiB", b / 1024);
  return fmt::format("{} B", bytes);
}

SnapshotAnalysis analyze_snapshot(const Snapshot& s) {
  SnapshotAnalysis out;
  out.path = s.path;
  out.alloc_conf = s.alloc_conf;
  out.expandable_segments = s.expandable_segments;
  std::map<int, const DeviceTrace*> devices;
  for (const auto& t : s.devices)
    if (!t.entries.empty()) devices[t.device] = &t;
  for (const auto& seg : s.segments)
    if (seg.device >= 0 && seg.device < 1024 && !devices.count(static_cast<int>(seg.device))) devices[static_cast<int>(seg.device)] = nullptr;
  for (const auto& [device, trace] : devices) out.devices.push_back(DeviceAnalyzer(s, trace, device).run());
  if (out.devices.empty()) out.warnings.push_back({WarningId::SnapshotEmpty, "the snapshot holds no segment and no trace entry: nothing was recorded"});
  if (std::all_of(s.devices.begin(), s.devices.end(), [](const DeviceTrace& t) { return t.entries.empty(); }) && !out.devices.empty())
    out.warnings.push_back({WarningId::SnapshotNoHistory,
                            "no allocation history (record with torch.cuda.memory._record_memory_history()): only the "
                            "dump's blocks, classed by their stacks"});
  for (const auto& d : out.devices) {
    if (d.steps == 0 && d.entries > 0)
      out.warnings.push_back({WarningId::SnapshotNoBackward,
                              fmt::format("device {}: no backward in the recording: steps are not visible, and forward "
                                          "allocations alive at its end count as activations",
                                          d.device)});
    if (!out.headline.empty()) out.headline += "; ";
    out.headline += d.headline;
  }
  return out;
}

SnapshotAnalysis analyze_snapshot_file(const std::string& path) { return analyze_snapshot(read_snapshot_file(path)); }

}  // namespace stepscope::memory
