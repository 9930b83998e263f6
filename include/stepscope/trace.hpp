// The trace model: what every importer fills and every analysis reads.
//
// One RankTrace per profiled process (rank). Events are stored column-wise (one vector per field)
// so that analyses scan only the columns they need; names are interned. Times are int64
// nanoseconds on the trace's own clock (Kineto's microsecond text is converted exactly, once).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stepscope/id_map.hpp"
#include "stepscope/ingest_warning.hpp"

namespace stepscope {

using ns_t = std::int64_t;
using StrId = std::uint32_t;
inline constexpr StrId kNoStr = 0;  // id 0 is always the empty string
inline constexpr std::int64_t kNone = -1;  // absent integer argument

// Interned strings: ids are dense, stable, and `view` stays valid as the table grows.
class StringTable {
 public:
  StringTable();
  StrId intern(std::string_view s);
  std::string_view view(StrId id) const { return views_[id]; }
  std::optional<StrId> find(std::string_view s) const;
  std::size_t size() const { return views_.size(); }

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t block_used_ = 0, block_cap_ = 0;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StrId> index_;
  // Recently interned ids by a cheap hash of the text: a trace repeats a few categories and
  // names in runs, and a hit costs one compare instead of hashing the whole (often long) name.
  static constexpr std::size_t kRecent = 256;
  std::array<StrId, kRecent> recent_;
};

// Chrome trace phase of an event.
enum class Phase : std::uint8_t {
  Complete,   // X
  Begin,      // B (paired into Complete by the importer when its E is found)
  End,        // E (unpaired)
  Instant,    // i / I
  FlowStart,  // s
  FlowStep,   // t
  FlowEnd,    // f
  Counter,    // C
  Metadata,   // M
  Other,
};

// What an event is, independent of the vendor spelling of its category.
enum class Kind : std::uint8_t {
  CpuOp,              // cpu_op, legacy autograd-profiler ops
  UserAnnotation,     // user_annotation (record_function, ProfilerStep#N)
  PythonFunction,     // python_function
  Runtime,            // cuda_runtime / hip runtime / mtia_runtime / Runtime (old dialect)
  Driver,             // cuda_driver (cuLaunchKernel ...)
  Kernel,             // kernel / Kernel (old dialect) / mtia_ccp_events
  Memcpy,             // gpu_memcpy
  Memset,             // gpu_memset
  GpuAnnotation,      // gpu_user_annotation
  GpuSync,            // cuda_sync (Stream Sync, Event Sync, ...)
  CpuInstant,         // cpu_instant_event ([memory], ...)
  Flow,               // ac2g / async_cpu_to_gpu / fwdbwd
  TraceSpan,          // cat "Trace" (the profiler's own span)
  Overhead,           // overhead
  Other,              // anything else; its raw category is kept in `category`
};
const char* kind_name(Kind k);
bool is_gpu_kind(Kind k);  // Kernel, Memcpy, Memset, GpuAnnotation, GpuSync

// Direction of a memcpy, decoded from its name ("Memcpy HtoD (Pageable -> Device)").
enum class CopyKind : std::uint8_t { None, HtoD, DtoH, DtoD, HtoH, PtoP, Other };
const char* copy_kind_name(CopyKind c);
// Host memory side of a copy: pageable copies are staged by the driver and block the host.
enum class HostMem : std::uint8_t { Unknown, Pageable, Pinned };

// Kernel launch configuration and occupancy, present for CUDA kernels (sparse).
struct KernelArgs {
  std::int32_t grid[3] = {0, 0, 0};
  std::int32_t block[3] = {0, 0, 0};
  std::int32_t registers_per_thread = -1;
  std::int64_t shared_memory = -1;
  double warps_per_sm = -1;
  double blocks_per_sm = -1;
  double est_occupancy_pct = -1;
};

// The kernels' launch configurations, each distinct one stored once: a training run launches the
// same kernel with the same grid and block thousands of times, and a record takes 56 bytes.
// Records are equal when every field is, bit for bit.
//   add(a) -> 0, add(b) -> 1, add(a) -> 0;  size() == 2, [0] == a
class KernelArgsStore {
 public:
  std::int32_t add(const KernelArgs& a);
  const KernelArgs& operator[](std::size_t i) const { return records_[i]; }
  std::size_t size() const { return records_.size(); }
  // Every record of `o` added here; the result gives, for each of o's indexes, its index here.
  std::vector<std::int32_t> append(const KernelArgsStore& o);
  std::size_t bytes_used() const { return records_.size() * sizeof(KernelArgs); }

 private:
  std::vector<KernelArgs> records_;
  // A chain of records per hash of their fields, flat so that a trace whose configurations are
  // all distinct pays 28 bytes a record for them, not a node and a list each.
  IdMap<std::int32_t> first_;      // field hash -> 1 + its newest record (0: none)
  std::vector<std::int32_t> next_;  // per record: the older record of its hash, or -1
};

// Arguments that only some events carry, kept out of the dense columns to keep memory per
// event low: flows, autograd ops, copies and [memory] events.
struct EventExtra {
  std::int64_t sequence_number = kNone;  // args["Sequence number"]
  std::int64_t fwd_thread_id = kNone;    // args["Fwd thread id"]
  std::int64_t bytes = kNone;            // args.bytes (copies, memsets), args.Bytes ([memory])
  std::int64_t total_allocated = kNone;  // [memory] args["Total Allocated"]
  std::int64_t total_reserved = kNone;   // [memory] args["Total Reserved"]
  std::int32_t device_type = -1;         // [memory] args["Device Type"]
  std::int32_t device_id = -1;           // [memory] args["Device Id"]
  StrId input_dims = kNoStr;             // raw JSON text of args["Input Dims"]
  StrId input_type = kNoStr;             // raw JSON text of args["Input type"]
  double bandwidth_gbps = -1;            // copies, memsets: args["memory bandwidth (GB/s)"]
  // CUDA event synchronisation (cuda_sync "Event Sync" / "Stream Wait Event"): the stream the
  // awaited event was recorded on and the correlation id of its cudaEventRecord call.
  std::int64_t wait_on_stream = kNone;                 // args.wait_on_stream
  std::int64_t wait_on_event_record_corr = kNone;      // args.wait_on_cuda_event_record_corr_id
  // A collective's place in its process group, as PyTorch's record_param_comms writes it on the
  // op and on its NCCL kernel (newer releases): the same (group, seq) on every rank of the group.
  std::int64_t collective_seq = kNone;  // args.Seq
  StrId process_group = kNoStr;         // args["Process Group Name"] ("0" is the default group)
  // The source's other spelling, where it has one: an nsys kernel's shortName, an nsys runtime
  // call's versioned name ("cudaMalloc_v3020", the model's name being "cudaMalloc"), a PyTorch
  // NVTX range's full text ("aten::mm, seq = 3, op_id = 7, sizes = [...]"). Beside the other
  // 4-byte field, so that neither is padded.
  StrId alt_name = kNoStr;
};
static_assert(sizeof(EventExtra) == 96, "a new field of EventExtra: place it where it leaves no padding");

// The events' EventExtra records, each stored in the narrowest shape that holds what it sets:
// an autograd op's sequence number, forward thread and input shapes and types take 24 bytes, a
// copy's bytes and bandwidth 16, any other record the whole 96. A reference names the shape in
// its two low bits and the record above them.
//   add({.sequence_number = 5})  ->  0 << 2 | kOp;  get(1) == that record, every other field unset
//   add({.bytes = 64, .bandwidth_gbps = 2})  ->  0 << 2 | kCopy
class ExtraStore {
 public:
  std::int32_t add(const EventExtra& x);
  EventExtra get(std::int32_t ref) const;
  // Every record of `o` after this store's; `rebase` then turns one of o's references into the
  // reference of the same record here.
  struct Bases {
    std::int32_t op = 0, copy = 0, whole = 0;
  };
  Bases append(const ExtraStore& o);
  static std::int32_t rebase(std::int32_t ref, const Bases& b);
  // Applies f to every StrId field (shapes, types, names), as when strings are renumbered.
  template <class F>
  void rewrite_strings(F&& f) {
    for (OpRecord& r : ops_) r.input_dims = f(r.input_dims), r.input_type = f(r.input_type);
    for (EventExtra& x : whole_)
      x.input_dims = f(x.input_dims), x.input_type = f(x.input_type), x.alt_name = f(x.alt_name),
      x.process_group = f(x.process_group);
  }
  std::size_t size() const { return ops_.size() + copies_.size() + whole_.size(); }
  std::size_t bytes_used() const {
    return ops_.size() * sizeof(OpRecord) + copies_.size() * sizeof(CopyRecord) + whole_.size() * sizeof(EventExtra);
  }

 private:
  enum Shape : std::int32_t { kWhole = 0, kOp = 1, kCopy = 2 };
  struct OpRecord {
    std::int64_t sequence_number, fwd_thread_id;
    StrId input_dims, input_type;
  };
  struct CopyRecord {
    std::int64_t bytes;
    double bandwidth_gbps;
  };
  std::vector<OpRecord> ops_;
  std::vector<CopyRecord> copies_;
  std::vector<EventExtra> whole_;
};

// One event as an importer hands it to EventTable::append: the fields of one row of every
// column, with the defaults an event has when its source says nothing. The Kineto event
//   {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
//    "tid": 7, "ts": 1.5, "dur": 2.25, "args": {"device": 0, "stream": 7, "correlation": 42}}
// becomes
//   {.ts = 1500, .dur = 2250, .name = <"Memcpy HtoD (Pageable -> Device)">, .category =
//    <"gpu_memcpy">, .kind = Kind::Memcpy, .phase = Phase::Complete, .copy_kind = CopyKind::HtoD,
//    .host_mem = HostMem::Pageable, .pid = 0, .tid = 7, .correlation = 42, .stream = 7,
//    .device = 0}
// with external_id = kNone and kernel_args = extra = -1 left at their defaults (<"x"> is the id
// the rank's string table gives "x").
struct EventRow {
  ns_t ts = 0;
  ns_t dur = 0;
  StrId name = kNoStr;
  StrId category = kNoStr;
  Kind kind = Kind::Other;
  Phase phase = Phase::Complete;
  CopyKind copy_kind = CopyKind::None;
  HostMem host_mem = HostMem::Unknown;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::int64_t correlation = kNone;
  std::int64_t external_id = kNone;
  std::int64_t stream = kNone;
  std::int32_t device = -1;
  std::int32_t kernel_args = -1;  // from RankTrace::add_kernel_args
  std::int32_t extra = -1;        // from RankTrace::add_extra
};

// The (pid, tid) pairs a table's events name, each stored once: a rank has a few dozen threads
// and streams and millions of events, so a row keeps a 4-byte index instead of two 8-byte ids.
//   intern(7, 100) -> 0, intern(7, 101) -> 1, intern(7, 100) -> 0;  at(1) == {7, 101}
struct TrackKey {
  std::int64_t pid = 0, tid = 0;
  bool operator==(const TrackKey&) const = default;
};

class TrackKeys {
 public:
  std::uint32_t intern(std::int64_t pid, std::int64_t tid);
  const TrackKey& at(std::uint32_t k) const { return keys_[k]; }
  std::size_t size() const { return keys_.size(); }
  const std::vector<TrackKey>& keys() const { return keys_; }
  // Rewrites every key through f (which must keep distinct keys distinct), as when a part's
  // interned string ids change tables.
  template <class F>
  void rewrite(F&& f) {
    for (TrackKey& k : keys_) k = f(k);
    rebuild_index();
  }

 private:
  void rebuild_index();
  std::vector<TrackKey> keys_;
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> by_tid_;  // tid -> keys with it
  std::uint32_t last_ = 0;                                               // the last key asked for
};

// A column of integers stored narrow: each row takes sizeof(Narrow) bytes, and the rare value
// that does not fit (an epoch-sized id, a step longer than 2.1 s, a corrupt stream number) is
// kept exactly in a side list, its cell holding the marker kWide. Reads give the value as
// stored; cells change through `set`, as a read returns a value, not a reference.
//   push_back(7); push_back(int64_t{1} << 40)  ->  cells {7, kWide}, wide {{1, 1 << 40}}
//   [0] == 7, [1] == 1 << 40;  set(1, 3)  ->  cells {7, 3}, wide {}
template <class Wide, class Narrow>
class NarrowColumn {
 public:
  // The value a cell never holds: the lowest of a signed type, the highest of an unsigned one
  // (so that 0, an unsigned column's most common value, stays narrow).
  static constexpr Narrow kWide =
      std::is_signed_v<Narrow> ? std::numeric_limits<Narrow>::min() : std::numeric_limits<Narrow>::max();

  Wide operator[](std::size_t i) const {
    const Narrow v = cells_[i];
    return v != kWide ? static_cast<Wide>(v) : wide_[wide_slot(i)].second;
  }
  void push_back(Wide v) {
    if (fits(v)) {
      cells_.push_back(static_cast<Narrow>(v));
    } else {
      wide_.push_back({cells_.size(), v});
      cells_.push_back(kWide);
    }
  }
  void set(std::size_t i, Wide v) {
    const auto it = wide_.begin() + static_cast<std::ptrdiff_t>(wide_slot(i));
    const bool was_wide = cells_[i] == kWide;
    if (fits(v)) {
      if (was_wide) wide_.erase(it);
      cells_[i] = static_cast<Narrow>(v);
    } else {
      if (was_wide) it->second = v;
      else wide_.insert(it, {i, v});
      cells_[i] = kWide;
    }
  }
  // Every row of `o` after this column's rows.
  void append(const NarrowColumn& o) {
    const std::size_t base = cells_.size();
    cells_.insert(cells_.end(), o.cells_.begin(), o.cells_.end());
    for (const auto& [i, v] : o.wide_) wide_.push_back({base + i, v});
  }
  std::size_t size() const { return cells_.size(); }
  std::size_t capacity() const { return cells_.capacity(); }
  void reserve(std::size_t n) { cells_.reserve(n); }
  std::size_t wide_count() const { return wide_.size(); }
  // Bytes in use: the cells written and the side list's entries.
  std::size_t bytes_used() const { return cells_.size() * sizeof(Narrow) + wide_.size() * sizeof(wide_[0]); }

 private:
  static bool fits(Wide v) { return std::in_range<Narrow>(v) && static_cast<Narrow>(v) != kWide; }
  // Where row i's entry is, or would go, in the side list (rows ascending).
  std::size_t wide_slot(std::size_t i) const {
    const auto it = std::lower_bound(wide_.begin(), wide_.end(), i,
                                     [](const std::pair<std::size_t, Wide>& w, std::size_t r) { return w.first < r; });
    return static_cast<std::size_t>(it - wide_.begin());
  }
  std::vector<Narrow> cells_;
  std::vector<std::pair<std::size_t, Wide>> wide_;  // (row, value) of the cells marked kWide
};

// A column of indexes that most rows lack (-1): a bit per row says which rows have one, and only
// their values are stored, each found by counting the set bits before its row (a RankBitmap). A
// row costs 0.19 bytes and a value 4, where a plain column costs 4 a row: kernel configurations
// and extra records belong to a tenth of a trace's events each.
//   push_back(-1); push_back(7); push_back(-1); push_back(9)  ->  bits 0b1010, values {7, 9}
//   [1] == 7, [2] == -1, [3] == 9;  set(2, 5)  ->  bits 0b1110, values {7, 5, 9}
// The same for values other than indexes that most rows lack: a memcpy's direction and host side
// (a byte each where plain columns took one a row).
template <class T, T kAbsentValue>
class BasicSparseColumn {
 public:
  static constexpr T kAbsent = kAbsentValue;

  T operator[](std::size_t i) const { return present_.test(i) ? values_[present_.rank(i)] : kAbsent; }
  void push_back(T v) {
    present_.push_back(v != kAbsent);
    if (v != kAbsent) values_.push_back(v);
  }
  // Row i's value changed in place; a row gaining or losing one moves the values after it.
  void set(std::size_t i, T v) {
    const bool had = present_.test(i), has = v != kAbsent;
    const auto at = values_.begin() + static_cast<std::ptrdiff_t>(present_.rank(i));
    if (had && has) *at = v;
    else if (had) values_.erase(at);
    else if (has) values_.insert(at, v);
    present_.set(i, has);
  }
  // Every row of `o` after this column's rows.
  void append(const BasicSparseColumn& o) {
    for (std::size_t i = 0; i < o.size(); ++i) push_back(o[i]);
  }
  std::size_t size() const { return static_cast<std::size_t>(present_.size()); }
  std::size_t capacity() const { return static_cast<std::size_t>(present_.capacity()); }
  void reserve(std::size_t n) { present_.reserve(n); }
  std::size_t bytes_used() const { return present_.bytes_used() + values_.size() * sizeof(T); }

 private:
  RankBitmap present_;  // bit i: row i has a value, values_[rank(i)]
  std::vector<T> values_;
};
using SparseColumn = BasicSparseColumn<std::int32_t, -1>;

// A column of values drawn from a few distinct ones (a trace's categories): each row holds the
// value's number in a dictionary, one byte while there are fewer than 255 of them; a value
// numbered past that is kept whole by the NarrowColumn of numbers. Reads give the value.
//   push_back(40); push_back(9); push_back(40)  ->  dictionary {40, 9}, numbers {0, 1, 0}
//   rewrite(f) maps the dictionary's values: a whole column renamed at the dictionary's size
template <class T, class Code>
class DictColumn {
 public:
  T operator[](std::size_t i) const { return values_[codes_[i]]; }
  void push_back(T v) { codes_.push_back(code_of(v)); }
  void set(std::size_t i, T v) { codes_.set(i, code_of(v)); }
  // Every row of `o` after this column's rows.
  void append(const DictColumn& o) {
    std::vector<std::uint32_t> code(o.values_.size());
    for (std::size_t k = 0; k < code.size(); ++k) code[k] = code_of(o.values_[k]);
    codes_.reserve(codes_.size() + o.size());
    for (std::size_t i = 0; i < o.size(); ++i) codes_.push_back(code[o.codes_[i]]);
  }
  template <class F>
  void rewrite(F&& f) {
    for (T& v : values_) v = f(v);
    index_.clear();
    for (std::size_t k = values_.size(); k-- > 0;) index_[values_[k]] = static_cast<std::uint32_t>(k);
    last_ = 0;
  }
  std::size_t size() const { return codes_.size(); }
  std::size_t capacity() const { return codes_.capacity(); }
  void reserve(std::size_t n) { codes_.reserve(n); }
  std::size_t bytes_used() const { return codes_.bytes_used() + values_.size() * sizeof(T); }

 private:
  std::uint32_t code_of(T v) {
    if (last_ < values_.size() && values_[last_] == v) return last_;
    return last_ = look_up(v);
  }
  // Out of line, in event_table.cpp: the event parser built for AVX2 inlines the rest of this
  // class, and a hash map instantiated there could be the copy that every caller links to.
  std::uint32_t look_up(T v);
  NarrowColumn<std::uint32_t, Code> codes_;
  std::vector<T> values_;
  std::unordered_map<T, std::uint32_t> index_;  // value -> its first number
  std::uint32_t last_ = 0;                       // the number last asked for
};

// Columnar event store. Row i of every column describes event i. Events keep file order; the
// indexes of RankTrace give time order per track. New rows come through `append`, which keeps
// every column the same length; cells of existing rows may be changed in place.
//
// Columns whose values fit 32 bits or fewer on real traces are NarrowColumns (8 bits for devices,
// 16 for streams and tracks), and the category a DictColumn of one byte: together they save 26
// of the 68 bytes a row took as plain columns of 64-bit values and 32-bit ids. The references to
// side records, which few rows have, are SparseColumns.
struct EventTable {
  std::vector<ns_t> ts;
  NarrowColumn<ns_t, std::int32_t> dur;  // 0 for instants, flows, counters
  std::vector<StrId> name;
  DictColumn<StrId, std::uint8_t> category;  // raw `cat` text (kNoStr when absent)
  std::vector<Kind> kind;
  std::vector<Phase> phase;
  BasicSparseColumn<CopyKind, CopyKind::None> copy_kind;  // memcpy direction, from the name
  BasicSparseColumn<HostMem, HostMem::Unknown> host_mem;  // memcpy host side, from the name
  NarrowColumn<std::uint32_t, std::uint16_t> track;  // the event's (pid, tid), an index into `keys`
  NarrowColumn<std::int64_t, std::int32_t> correlation;  // args.correlation (flows: their id), or kNone
  NarrowColumn<std::int64_t, std::int32_t> external_id;  // args["External id"], or kNone
  NarrowColumn<std::int64_t, std::int16_t> stream;       // args.stream, or -1 (old traces write 4294967295)
  NarrowColumn<std::int32_t, std::int8_t> device;        // args.device, or -1
  SparseColumn kernel_args;  // index into RankTrace::kernel_args (shared by equal ones), or -1
  SparseColumn extra;        // reference into RankTrace::extras, or -1

  TrackKeys keys;                     // not a column: one entry per distinct (pid, tid)

  std::size_t size() const { return ts.size(); }
  ns_t end(std::size_t i) const { return ts[i] + dur[i]; }
  // String pids and tids are interned: see string_track_id.
  std::int64_t pid(std::size_t i) const { return keys.at(track[i]).pid; }
  std::int64_t tid(std::size_t i) const { return keys.at(track[i]).tid; }
  std::uint32_t append(const EventRow& row);  // the new row's index
  void append(const EventTable& rows);         // every row of `rows`, in order, as they are
  void reserve(std::size_t n);
};

// In the header so that the readers' per-event loops inline it. A new column goes here, in
// EventRow, and in `columns` of event_table.cpp.
// Always inlined: the event parser built for AVX2 calls it per event, and an out-of-line copy
// made there would carry AVX2 code under this class's name.
[[gnu::always_inline]] inline std::uint32_t EventTable::append(const EventRow& r) {
  const auto index = static_cast<std::uint32_t>(size());
  ts.push_back(r.ts);
  dur.push_back(r.dur);
  name.push_back(r.name);
  category.push_back(r.category);
  kind.push_back(r.kind);
  phase.push_back(r.phase);
  copy_kind.push_back(r.copy_kind);
  host_mem.push_back(r.host_mem);
  track.push_back(keys.intern(r.pid, r.tid));
  correlation.push_back(r.correlation);
  external_id.push_back(r.external_id);
  stream.push_back(r.stream);
  device.push_back(r.device);
  kernel_args.push_back(r.kernel_args);
  extra.push_back(r.extra);
  return index;
}

// One counter sample (ph "C"): a named series with one or more values.
struct CounterSample {
  ns_t ts;
  StrId name;
  StrId series;
  double value;
};

// How a CUDA stream was created (CUPTI's stream flag, from nsys' TARGET_INFO_CUDA_STREAM). Work
// on the legacy NULL stream serialises with every other blocking stream of its context.
enum class StreamType : std::uint8_t { Unknown, Default, NonBlocking, Null };
const char* stream_type_name(StreamType t);  // "unknown", "default", "non-blocking", "null"

struct StreamInfo {
  std::int64_t stream = -1;
  std::int64_t context = -1;
  int priority = 0;  // lower is more urgent (CUDA's convention)
  StreamType type = StreamType::Unknown;
};

struct DeviceProperties {
  std::int64_t id = -1;
  std::string name;
  std::int64_t total_global_mem = -1;
  int compute_major = -1, compute_minor = -1;
  int num_sms = -1;
  int max_threads_per_sm = -1;
  int regs_per_sm = -1;
  std::int64_t shared_mem_per_sm = -1;
  int warp_size = -1;
};

struct ProcessGroup {
  std::string name, desc, backend_config;
  int size = -1;
  std::vector<int> ranks;
};

struct DistributedInfo {
  bool present = false;
  std::optional<int> rank;
  std::optional<std::int64_t> rank_out_of_range;  // a "rank" no int holds: the reader refuses the file
  std::optional<int> world_size;
  std::string backend;
  std::string nccl_version;
  std::vector<ProcessGroup> groups;
};

// A host thread or GPU stream: events on it in time order (start asc, longer first on ties,
// so enclosing events precede what they enclose).
struct Track {
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  bool gpu = false;
  std::string name;          // from thread_name / process_name metadata when present
  std::vector<std::uint32_t> events;
};

enum class TraceLayout : std::uint8_t { Kineto, LegacyArray, NsysSqlite };

// Correlation id -> the host call that launched GPU work, and the GPU records it made. CUPTI
// numbers correlations with one counter, so a rank's ids usually lie in a range a few times their
// count and are numbered through a bitmap of that range (IdSlots); a sparse id set (ids far
// apart: traces joined from several runs) is numbered through an IdMap instead. The tables are
// flat arrays by slot: 8 bytes per id and 4 per GPU record, plus the numbering (at most 12 bytes
// an id as a bitmap, 24 to 48 through the IdMap), where a hash map of vectors cost about 100
// bytes per id and an allocation each.
//   build({{42, 2}}, {{42, 1}, {43, 5}})  ->  launch(42) == 2, gpu(42) == {1}, gpu(43) == {5},
//                                             launch(43) == kNoEvent, gpu(7) == {}
class CorrelationIndex {
 public:
  static constexpr std::uint32_t kNoEvent = UINT32_MAX;
  using Entry = std::pair<std::int64_t, std::uint32_t>;  // (correlation id, event index)

  // `launches` and `gpu` in file order: a repeated launch id keeps its first call, a GPU id keeps
  // every record in that order. Ids equal to kNone are not indexed.
  void build(const std::vector<Entry>& launches, const std::vector<Entry>& gpu);
  // The same from event indexes in file order, whose ids are `events.correlation`: 4 bytes an
  // entry where a pair takes 16, at the end of the read, when no freed memory is left to reuse.
  void build(const EventTable& events, const std::vector<std::uint32_t>& launches, const std::vector<std::uint32_t>& gpu);
  // The runtime/driver call with this id, or kNoEvent.
  std::uint32_t launch(std::int64_t corr) const {
    std::size_t s = slot(corr);
    return s == kNoSlot ? kNoEvent : launch_[s];
  }
  bool has_launch(std::int64_t corr) const { return launch(corr) != kNoEvent; }
  // The GPU records (kernels, copies, sets, syncs; not annotations) with this id.
  std::span<const std::uint32_t> gpu(std::int64_t corr) const {
    std::size_t s = slot(corr);
    if (s == kNoSlot) return {};
    return gpu_.of(s);
  }
  bool has_gpu(std::int64_t corr) const { return !gpu(corr).empty(); }
  std::size_t launch_count() const { return launches_; }
  std::size_t gpu_count() const { return gpu_.size(); }
  // The dense number of an indexed id (one a launch or GPU record carries), or kNoSlot; slots are
  // below slot_count(). Per-correlation tables of the analyses are flat arrays over them
  // (CorrelationTable).
  static constexpr std::size_t kNoSlot = IdSlots::kNoSlot;
  std::size_t slot(std::int64_t corr) const { return slots_.slot(corr); }
  std::size_t slot_count() const { return slots_.size(); }

 private:
  // `each_launch(f)` and `each_gpu(f)` call f(id, event) per entry, the same way on each call.
  template <class EachLaunch, class EachGpu>
  void build_from(EachLaunch&& each_launch, EachGpu&& each_gpu, std::size_t distinct);
  IdSlots slots_;
  std::size_t launches_ = 0;
  std::vector<std::uint32_t> launch_;       // per slot: the launch call, or kNoEvent
  SlotGroups gpu_;                          // per slot: the GPU records
};

// Everything read from one trace file.
struct RankTrace {
  std::string path;
  int rank = 0;
  enum class RankSource : std::uint8_t { DistributedInfo, FileName, FileOrder } rank_source =
      RankSource::FileOrder;
  TraceLayout layout = TraceLayout::Kineto;
  int schema_version = -1;
  std::optional<std::int64_t> base_time_ns;  // baseTimeNanoseconds, when written
  std::string display_time_unit;
  std::string trace_name;
  DistributedInfo distributed;
  std::vector<DeviceProperties> devices;
  std::vector<StreamInfo> stream_info;  // streams as created (nsys exports only)
  std::vector<std::pair<std::string, std::string>> metadata;  // other top-level scalars

  StringTable strings;
  EventTable events;
  KernelArgsStore kernel_args;
  ExtraStore extras;
  std::vector<CounterSample> counters;
  // Launch flows (ac2g, older async_cpu_to_gpu) are counted per category, not stored: their id
  // is the correlation id that the launch and its GPU activity already carry, and they are a
  // third of a CUDA trace's events.
  std::unordered_map<StrId, std::uint64_t> launch_flow_counts;
  std::unordered_map<std::int64_t, std::string> process_names;  // pid -> name
  std::unordered_map<std::int64_t, std::string> thread_names;   // tid -> name

  // Indexes, built by `build_indexes` once all events are in.
  std::vector<Track> host_tracks;  // one per (pid, tid) of host events
  std::vector<Track> gpu_tracks;   // one per (device, stream) of GPU activity
  CorrelationIndex correlations;  // launch calls (runtime/driver) and GPU records by correlation id

  std::uint64_t bytes_read = 0;       // uncompressed JSON bytes consumed
  std::uint64_t bytes_lost = 0;       // bytes after the last complete event of a truncated file
  bool truncated = false;
  std::vector<IngestWarning> warnings;

  std::string_view str(StrId id) const { return strings.view(id); }
  std::string_view name_of(std::size_t i) const { return strings.view(events.name[i]); }
  std::optional<EventExtra> extra_of(std::size_t i) const {
    const std::int32_t ref = events.extra[i];
    return ref < 0 ? std::nullopt : std::optional<EventExtra>(extras.get(ref));
  }
  const KernelArgs* kernel_args_of(std::size_t i) const {
    auto k = events.kernel_args[i];
    return k < 0 ? nullptr : &kernel_args[static_cast<std::size_t>(k)];
  }
  // Side records of a row about to be appended: the index to put in its EventRow.
  std::int32_t add_kernel_args(const KernelArgs& a) { return kernel_args.add(a); }
  std::int32_t add_extra(const EventExtra& x) { return extras.add(x); }
  std::int64_t bytes_of(std::size_t i) const {
    const std::optional<EventExtra> e = extra_of(i);
    return e ? e->bytes : kNone;
  }
  ns_t first_ts() const;  // earliest start over timed events, or 0
  ns_t last_end() const;  // latest end over timed events, or 0
  void build_indexes();
};

// The rank a process name states, as trace-merging tools name the processes of a job written
// into one file; -1 when it states none.
//   "RANK 2 - GPU 0" -> 2, "rank3" -> 3, "Rank_1 python" -> 1, "python3" -> -1, "ranker 4" -> -1
int rank_in_process_name(std::string_view name);

// A whole job: every rank read, in rank order.
struct Trace {
  std::vector<RankTrace> ranks;
  std::vector<IngestWarning> warnings;  // about the set as a whole (rank numbering, ...)
};

// Encoding of string pids/tids ("Spans", "CPU functions") in the int64 columns. Numeric ids can
// be negative (32-bit thread ids written signed), so strings live far above any real id.
inline constexpr std::int64_t kStringTrackBase = std::int64_t{1} << 62;
inline std::int64_t string_track_id(StrId s) { return kStringTrackBase + static_cast<std::int64_t>(s); }
inline bool is_string_track_id(std::int64_t v) { return v >= kStringTrackBase; }
inline StrId track_string(std::int64_t v) { return static_cast<StrId>(v - kStringTrackBase); }

}  // namespace stepscope
