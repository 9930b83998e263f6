#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <tuple>
#include <utility>

#include "stepscope/trace.hpp"

namespace stepscope {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::CpuOp: return "cpu_op";
    case Kind::UserAnnotation: return "user_annotation";
    case Kind::PythonFunction: return "python_function";
    case Kind::Runtime: return "runtime";
    case Kind::Driver: return "driver";
    case Kind::Kernel: return "kernel";
    case Kind::Memcpy: return "memcpy";
    case Kind::Memset: return "memset";
    case Kind::GpuAnnotation: return "gpu_user_annotation";
    case Kind::GpuSync: return "gpu_sync";
    case Kind::CpuInstant: return "cpu_instant_event";
    case Kind::Flow: return "flow";
    case Kind::TraceSpan: return "trace_span";
    case Kind::Overhead: return "overhead";
    case Kind::Other: return "other";
  }
  return "other";
}

bool is_gpu_kind(Kind k) {
  return k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset || k == Kind::GpuAnnotation ||
         k == Kind::GpuSync;
}

const char* stream_type_name(StreamType t) {
  switch (t) {
    case StreamType::Unknown: return "unknown";
    case StreamType::Default: return "default";
    case StreamType::NonBlocking: return "non-blocking";
    case StreamType::Null: return "null";
  }
  return "unknown";
}

const char* copy_kind_name(CopyKind c) {
  switch (c) {
    case CopyKind::None: return "none";
    case CopyKind::HtoD: return "HtoD";
    case CopyKind::DtoH: return "DtoH";
    case CopyKind::DtoD: return "DtoD";
    case CopyKind::HtoH: return "HtoH";
    case CopyKind::PtoP: return "PtoP";
    case CopyKind::Other: return "other";
  }
  return "other";
}

namespace {

// The columns, for the operations that treat them all alike. A new column goes here, in EventRow
// and in EventTable::append(const EventRow&) (trace.hpp).
template <class Table>
auto columns(Table& t) {
  return std::tie(t.ts, t.dur, t.name, t.category, t.kind, t.phase, t.copy_kind, t.host_mem, t.track,
                  t.correlation, t.external_id, t.stream, t.device, t.kernel_args, t.extra);
}
constexpr std::size_t kNarrowColumns = 6;  // dur, track, correlation, external_id, stream, device
constexpr std::size_t kDictColumns = 1;    // category
constexpr std::size_t kSparseColumns = 4;  // copy_kind, host_mem, kernel_args, extra
static_assert(sizeof(EventTable) == std::tuple_size_v<decltype(columns(std::declval<EventTable&>()))> *
                                            sizeof(std::vector<char>) +
                                        kNarrowColumns * (sizeof(NarrowColumn<ns_t, std::int32_t>) - sizeof(std::vector<char>)) +
                                        kDictColumns * (sizeof(DictColumn<StrId, std::uint8_t>) - sizeof(std::vector<char>)) +
                                        kSparseColumns * (sizeof(SparseColumn) - sizeof(std::vector<char>)) +
                                        sizeof(TrackKeys),
              "a column of EventTable is missing from columns()");

template <class T>
void append_column(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}
template <class Column>
void append_column(Column& to, const Column& from) {
  to.append(from);
}

template <class F>
void for_each_column(EventTable& t, F&& f) {
  std::apply([&f](auto&... col) { (f(col), ...); }, columns(t));
}

// Calls f(dst_column, src_column) for each column of the two tables.
template <class F>
void for_each_column_pair(EventTable& dst, const EventTable& src, F&& f) {
  auto d = columns(dst);
  auto s = columns(src);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::get<I>(d), std::get<I>(s)), ...);
  }(std::make_index_sequence<std::tuple_size_v<decltype(d)>>{});
}

// Events that occupy time on a track (not flows, counters or metadata).
bool is_timed(Phase p) { return p == Phase::Complete || p == Phase::Instant || p == Phase::Begin; }

bool is_host_kind(Kind k) {
  return k == Kind::CpuOp || k == Kind::UserAnnotation || k == Kind::PythonFunction ||
         k == Kind::Runtime || k == Kind::Driver || k == Kind::CpuInstant || k == Kind::Overhead;
}
}  // namespace

void EventTable::append(const EventTable& rows) {
  const std::size_t base = size();
  for_each_column_pair(*this, rows,
                       [](auto& to, const auto& from) { append_column(to, from); });
  std::vector<std::uint32_t> key_of(rows.keys.size());
  for (std::uint32_t k = 0; k < key_of.size(); ++k) key_of[k] = keys.intern(rows.keys.at(k).pid, rows.keys.at(k).tid);
  for (std::size_t i = base; i < size(); ++i) track.set(i, key_of[track[i]]);
}

template <class T, class Code>
std::uint32_t DictColumn<T, Code>::look_up(T v) {
  auto [it, added] = index_.try_emplace(v, static_cast<std::uint32_t>(values_.size()));
  if (added) values_.push_back(v);
  return it->second;
}
template class DictColumn<StrId, std::uint8_t>;

namespace {

// Whether `x` sets no field outside those of the narrow shapes (an op's and a copy's).
bool only_narrow_fields(const EventExtra& x) {
  const EventExtra unset;
  EventExtra rest = x;
  rest.sequence_number = unset.sequence_number, rest.fwd_thread_id = unset.fwd_thread_id;
  rest.input_dims = unset.input_dims, rest.input_type = unset.input_type;
  rest.bytes = unset.bytes, rest.bandwidth_gbps = unset.bandwidth_gbps;
  return std::memcmp(&rest, &unset, sizeof rest) == 0;
}

}  // namespace

std::int32_t ExtraStore::add(const EventExtra& x) {
  const EventExtra unset;
  const bool op_set = x.sequence_number != unset.sequence_number || x.fwd_thread_id != unset.fwd_thread_id ||
                      x.input_dims != unset.input_dims || x.input_type != unset.input_type;
  const bool copy_set = x.bytes != unset.bytes || x.bandwidth_gbps != unset.bandwidth_gbps;
  const bool narrow = only_narrow_fields(x);
  if (narrow && !copy_set) {
    ops_.push_back({x.sequence_number, x.fwd_thread_id, x.input_dims, x.input_type});
    return static_cast<std::int32_t>((ops_.size() - 1) << 2 | kOp);
  }
  if (narrow && !op_set) {
    copies_.push_back({x.bytes, x.bandwidth_gbps});
    return static_cast<std::int32_t>((copies_.size() - 1) << 2 | kCopy);
  }
  whole_.push_back(x);
  return static_cast<std::int32_t>((whole_.size() - 1) << 2 | kWhole);
}

EventExtra ExtraStore::get(std::int32_t ref) const {
  const auto at = static_cast<std::size_t>(ref >> 2);
  switch (ref & 3) {
    case kOp: {
      EventExtra x;
      const OpRecord& r = ops_[at];
      x.sequence_number = r.sequence_number, x.fwd_thread_id = r.fwd_thread_id;
      x.input_dims = r.input_dims, x.input_type = r.input_type;
      return x;
    }
    case kCopy: {
      EventExtra x;
      x.bytes = copies_[at].bytes, x.bandwidth_gbps = copies_[at].bandwidth_gbps;
      return x;
    }
    default: return whole_[at];
  }
}

ExtraStore::Bases ExtraStore::append(const ExtraStore& o) {
  const Bases b{static_cast<std::int32_t>(ops_.size()), static_cast<std::int32_t>(copies_.size()),
                static_cast<std::int32_t>(whole_.size())};
  ops_.insert(ops_.end(), o.ops_.begin(), o.ops_.end());
  copies_.insert(copies_.end(), o.copies_.begin(), o.copies_.end());
  whole_.insert(whole_.end(), o.whole_.begin(), o.whole_.end());
  return b;
}

std::int32_t ExtraStore::rebase(std::int32_t ref, const Bases& b) {
  const std::int32_t shape = ref & 3;
  const std::int32_t base = shape == kOp ? b.op : shape == kCopy ? b.copy : b.whole;
  return ((ref >> 2) + base) << 2 | shape;
}

namespace {

// The bits of every field, so that equal hashes and equal records agree on doubles too (0.0 and
// -0.0 differ, a NaN equals itself).
std::array<std::uint64_t, 7> kernel_args_bits(const KernelArgs& a) {
  const auto u = [](std::int32_t v) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(v)); };
  return {u(a.grid[0]) << 32 | u(a.grid[1]),
          u(a.grid[2]) << 32 | u(a.block[0]),
          u(a.block[1]) << 32 | u(a.block[2]),
          u(a.registers_per_thread) << 32 | static_cast<std::uint64_t>(a.shared_memory),
          std::bit_cast<std::uint64_t>(a.warps_per_sm),
          std::bit_cast<std::uint64_t>(a.blocks_per_sm),
          std::bit_cast<std::uint64_t>(a.est_occupancy_pct)};
}

}  // namespace

std::int32_t KernelArgsStore::add(const KernelArgs& a) {
  const std::array<std::uint64_t, 7> bits = kernel_args_bits(a);
  std::uint64_t h = 0;
  for (std::uint64_t b : bits) h = (h ^ b) * 0x9E3779B97F4A7C15ULL;  // a mix per field: any field changes it
  std::int32_t& newest = first_[static_cast<std::int64_t>(h)];
  for (std::int32_t k = newest - 1; k >= 0; k = next_[static_cast<std::size_t>(k)])
    if (kernel_args_bits(records_[static_cast<std::size_t>(k)]) == bits) return k;
  const auto added = static_cast<std::int32_t>(records_.size());
  records_.push_back(a);
  next_.push_back(newest - 1);
  newest = added + 1;
  return added;
}

std::vector<std::int32_t> KernelArgsStore::append(const KernelArgsStore& o) {
  std::vector<std::int32_t> here(o.records_.size());
  for (std::size_t k = 0; k < o.records_.size(); ++k) here[k] = add(o.records_[k]);
  return here;
}

namespace {
// The index's key for a track: pid and tid mixed, so that 400k processes sharing one thread id
// (or one process with many threads) spread over the buckets instead of sharing one list that
// each new track scans (quadratic). A mix that collides only lengthens one short list.
std::int64_t track_mix(std::int64_t pid, std::int64_t tid) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(tid) ^ (static_cast<std::uint64_t>(pid) * 0x9E3779B97F4A7C15ULL));
}
}  // namespace

std::uint32_t TrackKeys::intern(std::int64_t pid, std::int64_t tid) {
  if (last_ < keys_.size() && keys_[last_].pid == pid && keys_[last_].tid == tid) return last_;
  std::vector<std::uint32_t>& same = by_tid_[track_mix(pid, tid)];
  for (std::uint32_t k : same)
    if (keys_[k].pid == pid && keys_[k].tid == tid) return last_ = k;
  keys_.push_back({pid, tid});
  same.push_back(static_cast<std::uint32_t>(keys_.size() - 1));
  return last_ = static_cast<std::uint32_t>(keys_.size() - 1);
}

void TrackKeys::rebuild_index() {
  by_tid_.clear();
  for (std::uint32_t k = 0; k < keys_.size(); ++k) by_tid_[track_mix(keys_[k].pid, keys_[k].tid)].push_back(k);
  last_ = 0;
}

void EventTable::reserve(std::size_t n) {
  for_each_column(*this, [n](auto& col) { col.reserve(n); });
}

ns_t RankTrace::first_ts() const {
  ns_t best = 0;
  bool any = false;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!is_timed(events.phase[i]) || events.kind[i] == Kind::TraceSpan) continue;
    if (!any || events.ts[i] < best) best = events.ts[i];
    any = true;
  }
  return best;
}

ns_t RankTrace::last_end() const {
  ns_t best = 0;
  bool any = false;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!is_timed(events.phase[i]) || events.kind[i] == Kind::TraceSpan) continue;
    if (!any || events.end(i) > best) best = events.end(i);
    any = true;
  }
  return best;
}

namespace {

// Host tracks, numbered by the events' own (pid, tid) key index, created on first use.
class HostTracks {
 public:
  explicit HostTracks(std::vector<Track>& tracks) : tracks_(tracks) {}
  Track& at(std::uint32_t key, const TrackKey& k) {
    if (key >= slot_.size()) slot_.resize(key + 1, kNoTrack);
    if (slot_[key] == kNoTrack) {
      slot_[key] = static_cast<std::uint32_t>(tracks_.size());
      tracks_.push_back(Track{k.pid, k.tid, false, {}, {}});
    }
    return tracks_[slot_[key]];
  }

 private:
  static constexpr std::uint32_t kNoTrack = UINT32_MAX;
  std::vector<Track>& tracks_;
  std::vector<std::uint32_t> slot_;
};

// Calls f(i, gpu, track, correlated) for each timed host or GPU event, in file order: `track` is
// a host event's key index, or a GPU event's (device, stream) index in gpu_keys (numbered in
// first-seen order); `correlated` says the event enters the correlation index (a runtime or
// driver call, or a GPU record other than an annotation, with an id).
template <class F>
void route_events(const EventTable& events, TrackKeys& gpu_keys, F&& f) {
  for (std::uint32_t i = 0; i < events.size(); ++i) {
    const Kind k = events.kind[i];
    if (!is_timed(events.phase[i])) continue;
    const bool has_id = events.correlation[i] != kNone;
    if (is_gpu_kind(k)) {
      // GPU rows: pid is the device and tid the stream, but args say it better (sync rows may
      // sit on tid = stream + 1,000,000).
      const std::int64_t device = events.device[i] >= 0 ? events.device[i] : events.pid(i);
      const std::int64_t stream = events.stream[i] >= 0 ? events.stream[i] : events.tid(i);
      f(i, true, gpu_keys.intern(device, stream), has_id && k != Kind::GpuAnnotation);
    } else if (is_host_kind(k)) {
      f(i, false, events.track[i], has_id && (k == Kind::Runtime || k == Kind::Driver));
    }
  }
}

}  // namespace

// Two passes over the events: the first counts each track's events and the correlated ones, so
// that every list is allocated once at its size. Grown by doubling instead, the lists of a 1 GB
// trace touched about twice their size in fresh pages, and a fresh page costs more than the
// pass (several microseconds on some virtual machines).
void RankTrace::build_indexes() {
  host_tracks.clear();
  gpu_tracks.clear();
  TrackKeys gpu_keys;  // (device, stream): its index is the GPU track's, both numbered in first-seen order
  std::vector<std::uint32_t> host_size(events.keys.size(), 0), gpu_size;
  std::size_t launch_count = 0, gpu_record_count = 0;
  route_events(events, gpu_keys, [&](std::uint32_t, bool gpu, std::uint32_t track, bool correlated) {
    if (!gpu) {
      ++host_size[track];
      launch_count += correlated;
      return;
    }
    if (track == gpu_size.size()) gpu_size.push_back(0);
    ++gpu_size[track];
    gpu_record_count += correlated;
  });
  HostTracks host_ix(host_tracks);
  std::vector<std::uint32_t> launches, gpu_records;  // event indexes
  launches.reserve(launch_count);
  gpu_records.reserve(gpu_record_count);
  route_events(events, gpu_keys, [&](std::uint32_t i, bool gpu, std::uint32_t track, bool correlated) {
    if (gpu) {
      if (track == gpu_tracks.size()) {
        gpu_tracks.push_back(Track{gpu_keys.at(track).pid, gpu_keys.at(track).tid, true, {}, {}});
        gpu_tracks.back().events.reserve(gpu_size[track]);
      }
      gpu_tracks[track].events.push_back(i);
      if (correlated) gpu_records.push_back(i);
      return;
    }
    Track& t = host_ix.at(track, events.keys.at(track));
    if (t.events.empty()) t.events.reserve(host_size[track]);
    t.events.push_back(i);
    if (correlated) launches.push_back(i);
  });
  correlations.build(events, launches, gpu_records);
  auto by_time = [this](std::uint32_t a, std::uint32_t b) {
    if (events.ts[a] != events.ts[b]) return events.ts[a] < events.ts[b];
    return events.dur[a] > events.dur[b];
  };
  for (auto* tracks : {&host_tracks, &gpu_tracks}) {
    for (auto& t : *tracks) {
      // Most tracks are written in time order already; the check spares the sort's buffer.
      if (!std::is_sorted(t.events.begin(), t.events.end(), by_time))
        std::stable_sort(t.events.begin(), t.events.end(), by_time);
      if (auto it = thread_names.find(t.tid); it != thread_names.end() && !t.gpu) t.name = it->second;
    }
    std::sort(tracks->begin(), tracks->end(), [](const Track& a, const Track& b) {
      return std::tie(a.pid, a.tid) < std::tie(b.pid, b.tid);
    });
  }
}

}  // namespace stepscope
