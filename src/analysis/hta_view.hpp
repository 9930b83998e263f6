// HTA's view of one rank: the rows its loader keeps, with its time rounding, and the helpers
// (interval merging, pandas-style statistics) the HTA-compatible figures are built from.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <cstdint>
#include <utility>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "stepscope/gpu_timeline.hpp"
#include "stepscope/id_map.hpp"
#include "stepscope/kernel_class.hpp"
#include "stepscope/trace.hpp"

namespace stepscope::hta {

// What a row's name and category say, looked up once per distinct string.
enum RowFlag : std::uint8_t {
  kIdleCategory = 1,   // cat is a kernel/copy/memset category (idle breakdown)
  kLaunchKernel = 2,   // name is a kernel launch call HTA's launch stats count
  kLaunchMemory = 4,   // name is cudaMemcpyAsync / cudaMemsetAsync
  kStepName = 8,       // name contains "ProfilerStep"
  kSyncName = 16,      // name is "Event Sync" or "Context Sync" (GPU rows without a stream)
  kCorrelated = 32,    // the row has a correlation id (>= 0)
  kGpu = 64,           // HTA's stream column is not -1: a GPU row
};

// One kept row. 8 bytes: a trace has millions. The name, stream, correlation and times are read
// from the event table through `event` (the times through View::clock).
struct Row {
  std::uint32_t event = 0;                    // index into the rank's EventTable
  HtaKernelType type = HtaKernelType::Other;  // of the name
  std::uint8_t flags = 0;                     // RowFlag bits
  bool gpu() const { return flags & kGpu; }
  bool correlated() const { return flags & kCorrelated; }
  StrId name(const EventTable& ev) const { return ev.name[event]; }
  // HTA's stream column (hta_stream): args.stream of a GPU row, -1 for the others.
  std::int64_t stream(const EventTable& ev) const { return gpu() ? ev.stream[event] : -1; }
  // HTA's correlation column: the event's id, -1 for none (negative ids read as none).
  std::int64_t correlation(const EventTable& ev) const { return correlated() ? ev.correlation[event] : -1; }
};
static_assert(sizeof(Row) == 8);

// Event i's times in HTA's rows: ts rounded up and ts + dur rounded down to whole µs, with
// Python's double arithmetic, when `rounded` (the trace has sub-µs times: HtaLoad::rounded_to_us);
// else as recorded. A rounded sub-µs row can end before it starts; HTA keeps it.
// Inline, as the views' sorts and sweeps read times through them millions of times.
inline void row_times(const EventTable& ev, std::size_t i, bool rounded, ns_t& ts, ns_t& end);
inline ns_t rounded_start(ns_t ts_ns);  // ts of row_times, rounded, alone

// The times of rows (anything with an `event`) as row_times gives them, computed on each read:
// rows that held their times would be three times the size, and most are read once or twice.
//   rounded, event at ts 1'500'400 ns lasting 999 ns  ->  ts 1'501'000, end 1'501'000
class RowClock {
 public:
  RowClock() = default;
  RowClock(const EventTable& ev, bool rounded) : ev_(&ev), rounded_(rounded) {}
  ns_t ts_of(std::size_t event) const { return rounded_ ? rounded_start(ev_->ts[event]) : ev_->ts[event]; }
  template <class R>
  ns_t ts(const R& r) const {
    return ts_of(r.event);
  }
  template <class R>
  ns_t end(const R& r) const {
    return times(r.event).second;
  }
  template <class R>
  ns_t dur(const R& r) const {
    const auto [ts, end] = times(r.event);
    return end - ts;
  }

 private:
  std::pair<ns_t, ns_t> times(std::size_t event) const {
    ns_t ts = 0, end = 0;
    row_times(*ev_, event, rounded_, ts, end);
    return {ts, end};
  }
  const EventTable* ev_ = nullptr;
  bool rounded_ = false;
};

// [ts, end) interval; `end < ts` is possible (HTA's rounding makes sub-µs rows negative).
struct Interval {
  ns_t ts, end;
};

// HTA's GPU rows (stream != -1) with a correlation id, grouped by it in row order: the partner
// lookup of the launch stats, queue length and kernel sequences, built once with the view.
//   rows [gpu corr 5, host corr 5, gpu corr 5, gpu corr 9]  ->  find(5) == {0, 2} (row indexes)
class GpuRowsByCorrelation {
 public:
  GpuRowsByCorrelation() = default;
  GpuRowsByCorrelation(const EventTable& ev, const std::vector<Row>& rows);
  std::span<const std::uint32_t> find(std::int64_t corr) const {
    const std::size_t s = slots_.slot(corr);
    return s == IdSlots::kNoSlot ? std::span<const std::uint32_t>{} : rows_.of(s);
  }

 private:
  IdSlots slots_;
  SlotGroups rows_;
};

struct View {
  HtaLoad load;
  RowClock clock;  // the rows' times
  // Kept rows in file order, except host rows with neither stream nor correlation (plain host
  // ops), which no figure reads: they are only counted in load.rows_kept.
  std::vector<Row> rows;
  // merge_intervals of the GPU rows: of all of them only what the temporal breakdown reads (the
  // start of the first group, the end of the last, their total length), and per HtaKernelType
  // (indexed by its value) the groups.
  struct AllGpuRows {
    bool any = false;
    ns_t first_ts = 0, last_end = 0, length = 0;
  } merged_all;
  std::array<std::vector<Interval>, 4> merged_by_type;
  GpuRowsByCorrelation gpu_by_correlation;  // over `rows`
};

View build_view(const RankTrace& rank, const GpuTimelineOptions& opts);
// Frees the merged intervals, which only the GPU timeline's figures read, for the readers after
// it (queue length, bandwidth, kernel sequences) that keep the rows.
void drop_merged_intervals(View& v);

// trace_symbol_table.py get_runtime_launch_events_mask (and trace_counters.py:18-95): the calls
// that enqueue work on a stream, HTA's literal list. cudaMemcpy/cudaMemset (synchronous),
// hipModuleLaunchKernel and cudaGraphLaunch are not in it.
bool is_queue_launch(std::string_view name);

// The pieces of HTA's loader that build_view applies row by row, for analyses that need rows
// build_view leaves out (plain host ops). round_like_hta gives HTA's times of an event whose
// trace has sub-µs times (HtaLoad::rounded_to_us): ts rounded up and ts + dur rounded down to
// whole µs, with Python's double arithmetic.
bool is_hta_row(const RankTrace& rank, std::size_t i);

double python_us_far(ns_t ns);

// The double Python's json.loads makes of the decimal text Kineto wrote for `ns` (µs with three
// decimals): the double nearest to ns / 1000. Below 2^53 both operands of the division are
// exact and IEEE division rounds correctly. Absolute epoch timestamps (~1.7e18 ns) are beyond
// 2^53, where python_us_far forms the quotient with more precision. This matters: at 1.7e15 µs a
// double only resolves 0.25 µs, so HTA's ceil() of such a timestamp can land a µs away from
// the exact one.
inline double python_us(ns_t ns) {
  constexpr ns_t kExact = ns_t{1} << 53;
  if (ns > -kExact && ns < kExact) return static_cast<double>(ns) / 1000.0;
  return python_us_far(ns);
}

// round_down_time_stamps: ts := ceil(ts); end := floor(ts + dur), in µs, with Python's doubles
// (the sum is the same IEEE addition HTA performs). A sub-µs row can come out with end < ts
// (negative duration); HTA keeps it.
inline void round_like_hta(ns_t ts_ns, ns_t dur_ns, ns_t& ts_out, ns_t& end_out) {
  const double ts_us = python_us(ts_ns);
  const double dur_us = python_us(dur_ns);
  ts_out = static_cast<ns_t>(std::ceil(ts_us)) * 1000;
  end_out = static_cast<ns_t>(std::floor(ts_us + dur_us)) * 1000;
}

inline ns_t rounded_start(ns_t ts_ns) { return static_cast<ns_t>(std::ceil(python_us(ts_ns))) * 1000; }

inline void row_times(const EventTable& ev, std::size_t i, bool rounded, ns_t& ts, ns_t& end) {
  if (rounded) {
    round_like_hta(ev.ts[i], ev.dur[i], ts, end);
  } else {
    ts = ev.ts[i];
    end = ev.ts[i] + ev.dur[i];
  }
}
std::int64_t hta_stream(const EventTable& ev, std::size_t i);

// hta/utils/utils.py::merge_kernel_intervals: sort by ts; a row starts a new group iff its ts
// is greater than the running max of all previous ends (touching rows merge); a group spans
// min ts .. max end. Negative rows are kept as HTA keeps them.
std::vector<Interval> merge_intervals(std::vector<Interval> rows);
ns_t total_length(const std::vector<Interval>& merged);

// One stream's launch queue (trace_counters.py:18-95): +1 at each of its launches, -1 at each of
// its GPU records, in the order of pandas' sort of the concatenation (launches first) by ts,
// ties kept as concatenated: each list stably in ts order, then merged with launches first on a
// tie. Calls f(row, ts, length after the change) per change; `ts_of(row)` is a row's ts.
//   launches at ts 1, 3; records at 2, 3  ->  f(.., 1, 1), f(.., 2, 0), f(.., 3, 1), f(.., 3, 0)
template <class Row, class TsOf, class F>
void for_each_queue_change(std::vector<Row>& launches, std::vector<Row>& records, const TsOf& ts_of, F&& f) {
  const auto earlier = [&](Row a, Row b) { return ts_of(a) < ts_of(b); };
  for (std::vector<Row>* list : {&launches, &records})
    if (!std::is_sorted(list->begin(), list->end(), earlier)) std::stable_sort(list->begin(), list->end(), earlier);
  std::int64_t length = 0;
  std::size_t u = 0, d = 0;
  while (u < launches.size() || d < records.size()) {
    const bool launch_next = d == records.size() || (u < launches.size() && ts_of(launches[u]) <= ts_of(records[d]));
    const Row row = launch_next ? launches[u++] : records[d++];
    length += launch_next ? 1 : -1;
    f(row, ts_of(row), length);
  }
}

// pandas statistics over a sample (NaN where pandas gives NaN).
SampleStats describe(std::vector<double> values);

// describe() of a sample of whole numbers with few distinct values (a queue's lengths), kept as a
// count per value instead of the sample: the same figures, to the last bit, as describe() of the
// values in the order added, as long as every partial sum is a whole number below 2^53.
//   add 2, 0, 2  ->  counts {0: 1, 2: 2}; describe(): count 3, sum 4, median 2
class WholeNumberCounts {
 public:
  void add(std::int64_t value);
  SampleStats describe() const;

 private:
  std::map<std::int64_t, std::size_t> counts_;
  double sum_ = 0;
  std::size_t n_ = 0;
};
double quantile_linear(const std::vector<double>& sorted, double q);

}  // namespace stepscope::hta

