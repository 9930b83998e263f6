// HTA's loader, reproduced (hta/common/trace.py, trace_parser.py, trace_filter.py at f4d0062).
// Every HTA-compatible figure is computed on the rows this keeps, so each quirk below moves
// HTA's numbers and is reproduced on purpose.
#include "hta_view.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "stepscope/correlation_table.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::hta {

namespace {

constexpr ns_t kUs = 1000;

// HTA rounds only when the `ts` column is floating point, i.e. when the trace writes sub-µs
// times (Kineto's "%ld.%03ld" format). We see that as any time that is not a whole µs.
bool has_sub_us_times(const EventTable& ev) {
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (ev.ts[i] % kUs != 0 || ev.dur[i] % kUs != 0) return true;
  return false;
}

// HTA's rule (get_profiler_steps: "ProfilerStep" anywhere), kept literal, not the facts layer's.
bool is_profiler_step_name(std::string_view n) { return n.find("ProfilerStep") != n.npos; }

// cat ∈ {kernel, Kernel, gpu_memset, Memset, gpu_memcpy, Memcpy, mtia_ccp_events}: the rows
// HTA's idle breakdown looks at (cuda_sync rows excluded).
bool is_idle_category(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memset" || cat == "Memset" ||
         cat == "gpu_memcpy" || cat == "Memcpy" || cat == "mtia_ccp_events";
}

}  // namespace

bool is_queue_launch(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",   "cuLaunchKernelEx",
      "cudaMemcpyAsync",  "cudaMemsetAsync",     "hipLaunchKernel",  "hipExtModuleLaunchKernel",
      "hipMemcpyAsync",   "hipMemsetAsync",      "hipMemcpyWithStream",
      "runFunction - job_prep_and_submit_for_execution"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

namespace {

// The launch calls HTA's launch statistics count (see hta_launch.cpp): HTA's literal list, not the
// facts layer's launch flags.
std::uint8_t launch_flags(std::string_view n) {
  if (n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" ||
      n == "runFunction - job_prep_and_submit_for_execution")
    return kLaunchKernel;
  if (n == "cudaMemcpyAsync" || n == "cudaMemsetAsync") return kLaunchMemory;
  return 0;
}

// Per distinct string: its kernel type and flags, so each name is examined once. Every rule here
// is HTA's own, kept literal so the figures match HTA's (our own rules live in the facts layer).
class NameInfo {
 public:
  explicit NameInfo(const RankTrace& r) : rank_(r), known_(r.strings.size(), 0), type_(r.strings.size()), flags_(r.strings.size()) {}

  void fill(Row& row, StrId name, StrId category) {
    learn(name);
    learn(category);
    row.type = type_[name];
    row.flags = static_cast<std::uint8_t>((flags_[name] & ~kIdleCategory) | (flags_[category] & kIdleCategory));
  }

 private:
  void learn(StrId id) {
    if (id >= known_.size()) {
      known_.resize(id + 1, 0);
      type_.resize(id + 1);
      flags_.resize(id + 1);
    }
    if (known_[id]) return;
    std::string_view s = rank_.str(id);
    type_[id] = hta_kernel_type(s);
    flags_[id] = static_cast<std::uint8_t>(launch_flags(s) | (is_profiler_step_name(s) ? kStepName : 0) |
                                           (is_idle_category(s) ? kIdleCategory : 0) |
                                           (s == "Event Sync" || s == "Context Sync" ? kSyncName : 0));
    known_[id] = 1;
  }

  const RankTrace& rank_;
  std::vector<std::uint8_t> known_;
  std::vector<HtaKernelType> type_;
  std::vector<std::uint8_t> flags_;
};

// trace_filter._filter_gpu_kernels_with_cuda_sync: a GPU row for the CPU/GPU split is one with
// a stream and a correlation, plus the stream-less Event Sync / Context Sync rows.
bool is_gpu_for_filter(const Row& row) {
  return (row.gpu() && row.correlated()) || (row.flags & kSyncName);
}

// Most rows are host ops with no stream and no correlation (cpu_op, python_function, ...): no
// figure reads them beyond counting them and, for the last-step filter, their start. They are
// kept as start times only, which keeps the row table small.
bool is_silent(const Row& row) {
  return !row.gpu() && !row.correlated() && !(row.flags & (kStepName | kSyncName));
}

// The correlation ids of HTA's GPU rows (a stream and a correlation), before any filter.
CorrelationTable<char> gpu_row_correlations(const RankTrace& r) {
  const EventTable& ev = r.events;
  CorrelationTable<char> ids(r.correlations, 0);
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (ev.correlation[i] >= 0 && hta_stream(ev, i) != -1 && is_hta_row(r, i)) ids[ev.correlation[i]] = 1;
  return ids;
}

// A host row whose correlation no GPU row carries (cudaGetDevice, cudaStreamIsCapturing, a launch
// whose kernel was not recorded): every figure reads host rows only as the partners of GPU rows
// with their correlation, so these too are only counted, like the silent rows (on the 107 MB
// benchmark trace, 74k of the 123k runtime calls).
bool is_unpartnered(const EventTable& ev, const Row& row, const CorrelationTable<char>& gpu_ids) {
  return !row.gpu() && row.correlated() && !(row.flags & (kStepName | kSyncName)) &&
         !gpu_ids.contains(row.correlation(ev));
}

std::int64_t step_number(std::string_view n) {
  auto hash = n.find('#');
  if (hash == n.npos) return -1;
  // Step rows are any name holding "ProfilerStep", so only the digits right after the '#' count.
  const auto step = parse_int_prefix(n.substr(hash + 1));
  return step ? step->value : -1;
}

int count_step_names(const EventTable& ev, const std::vector<Row>& rows) {
  std::unordered_set<StrId> names;
  for (const Row& row : rows)
    if (row.flags & kStepName) names.insert(row.name(ev));
  return static_cast<int>(names.size());
}

// The host rows the last-step filter keeps (below): those starting before the last ProfilerStep
// row starts or, with include_last_profiler_step, no later than the last one ends.
class StepCutoff {
 public:
  explicit StepCutoff(bool include_last) : include_last_(include_last) {}
  void see_step(ns_t ts, ns_t end) {
    last_start_ = std::max(last_start_, ts);
    last_end_ = std::max(last_end_, end);
  }
  ns_t cutoff() const { return include_last_ ? last_end_ : last_start_; }
  bool keeps(ns_t ts) const { return include_last_ ? ts <= last_end_ : ts < last_start_; }

 private:
  bool include_last_;
  ns_t last_start_ = std::numeric_limits<ns_t>::min(), last_end_ = std::numeric_limits<ns_t>::min();
};

bool is_step_row(const Row& row) { return (row.flags & kStepName) && !is_gpu_for_filter(row); }

// The rows of one counted-only kind (silent, unpartnered) the last-step filter keeps, counted as
// they are read without storing them: a row the cutoff seen so far keeps is kept by the final
// one, which only moves later; the others wait as candidates for the final cutoff. In a trace
// written in time order, the candidates are about the rows of the last step, not all of them.
// `cut` is the reader's, which sees each step row as it is read.
class CountedRows {
 public:
  explicit CountedRows(const StepCutoff& cut) : cut_(cut) {}
  void add(ns_t ts) {
    ++total_;
    if (cut_.keeps(ts))
      ++kept_early_;
    else
      candidates_.push_back(ts);
  }
  std::int64_t total() const { return total_; }
  // Those kept by the final cutoff (after every step row has been seen).
  std::int64_t kept() const {
    return kept_early_ + std::count_if(candidates_.begin(), candidates_.end(), [&](ns_t ts) { return cut_.keeps(ts); });
  }

 private:
  const StepCutoff& cut_;
  std::int64_t total_ = 0, kept_early_ = 0;
  std::vector<ns_t> candidates_;
};

// _filter_irrelevant_gpu_kernels (only with >= 2 ProfilerStep names): host rows are kept when
// they start before the last ProfilerStep starts (or, with include_last_profiler_step, no
// later than the last one ends); GPU rows are kept when a kept host row shares their
// correlation. It is a pandas inner merge on correlation, so a GPU row appears once per kept
// host row with its correlation; we reproduce that multiplicity.
// Filters `rows` in place: only the kept GPU rows are copied aside (counted first, so allocated
// once), since a host row never moves up past where it was read. `cut` has seen every step row,
// `silent_kept` is the silent rows it keeps.
void drop_last_step(const RankTrace& r, std::vector<Row>& rows, const StepCutoff& cut, std::int64_t silent_kept,
                    HtaLoad& load) {
  load.cutoff_ts = cut.cutoff();
  const RowClock clock(r.events, load.rounded_to_us);
  auto kept_host = [&](const Row& row) { return !is_gpu_for_filter(row) && cut.keeps(clock.ts(row)); };
  // Kept host rows per correlation; 32 bits hold any count, as events are numbered in 32 bits.
  CorrelationTable<std::uint32_t> host_corr(r.correlations, 0);
  if (silent_kept > 0) host_corr[-1] += static_cast<std::uint32_t>(silent_kept);  // silent rows have no correlation
  for (const Row& row : rows)
    if (kept_host(row)) ++host_corr[row.correlation(r.events)];
  auto for_each_gpu_copy = [&](auto&& f) {
    for (const Row& row : rows) {
      if (!is_gpu_for_filter(row)) continue;
      const std::uint32_t* copies = host_corr.find(row.correlation(r.events));
      if (copies) f(row, *copies);
    }
  };
  std::size_t gpu_copies = 0;
  for_each_gpu_copy([&](const Row&, std::uint32_t copies) { gpu_copies += copies; });
  std::vector<Row> gpu_kept;
  gpu_kept.reserve(gpu_copies);
  for_each_gpu_copy([&](const Row& row, std::uint32_t copies) { gpu_kept.insert(gpu_kept.end(), copies, row); });
  std::size_t n = 0;
  for (std::size_t k = 0; k < rows.size(); ++k)
    if (kept_host(rows[k])) rows[n++] = rows[k];
  rows.resize(n);
  rows.insert(rows.end(), gpu_kept.begin(), gpu_kept.end());
}

std::vector<std::int64_t> kept_iterations(const RankTrace& r, const std::vector<Row>& rows) {
  std::vector<std::int64_t> its;
  for (const Row& row : rows) {
    if (!(row.flags & kStepName) || is_gpu_for_filter(row)) continue;
    if (auto v = step_number(r.str(row.name(r.events))); v >= 0) its.push_back(v);
  }
  std::sort(its.begin(), its.end());
  its.erase(std::unique(its.begin(), its.end()), its.end());
  return its;
}

// The GPU rows of one type (all of them for `type` -1) as intervals, counted first so that the
// list is allocated once.
std::vector<Interval> gpu_intervals(const View& v, int type) {
  auto wanted = [&](const Row& r) { return r.gpu() && (type < 0 || static_cast<int>(r.type) == type); };
  std::vector<Interval> out;
  out.reserve(static_cast<std::size_t>(std::count_if(v.rows.begin(), v.rows.end(), wanted)));
  for (const Row& r : v.rows)
    if (wanted(r)) out.push_back({v.clock.ts(r), v.clock.end(r)});
  return out;
}

// The bounds and length of the union of all GPU rows, from the unions of the four types (which
// share the rows out): without a reversed interval the union of the unions has the groups
// merging every row gives. Read from the four sorted lists in step, it needs no list of all
// the rows (16 bytes each) and no sort of it. Nothing when an interval is reversed.
//   {[0,10), [20,30)}, {[5,25)}: one group [0,30), length 30
std::optional<View::AllGpuRows> union_of_unions(const std::array<std::vector<Interval>, 4>& unions) {
  for (const std::vector<Interval>& u : unions)
    if (std::any_of(u.begin(), u.end(), [](const Interval& iv) { return iv.end < iv.ts; })) return std::nullopt;
  std::array<std::size_t, 4> at{};
  View::AllGpuRows all;
  ns_t lo = 0, hi = 0;
  for (;;) {
    std::size_t next = unions.size();
    for (std::size_t l = 0; l < unions.size(); ++l)
      if (at[l] < unions[l].size() && (next == unions.size() || unions[l][at[l]].ts < unions[next][at[next]].ts)) next = l;
    if (next == unions.size()) break;
    const Interval& iv = unions[next][at[next]++];
    if (!all.any) {
      all.any = true;
      all.first_ts = lo = iv.ts;
      hi = iv.end;
    } else if (iv.ts > hi) {
      all.length += hi - lo;
      lo = iv.ts, hi = iv.end;
    } else {
      hi = std::max(hi, iv.end);
    }
  }
  if (all.any) all.length += hi - lo, all.last_end = hi;
  return all;
}

// The unions every breakdown starts from, built once, one list at a time; of the union of all
// GPU rows only its bounds and length are kept.
void merge_gpu_rows(View& v) {
  for (std::size_t t = 0; t < v.merged_by_type.size(); ++t)
    v.merged_by_type[t] = merge_intervals(gpu_intervals(v, static_cast<int>(t)));
  if (const std::optional<View::AllGpuRows> all = union_of_unions(v.merged_by_type)) {
    v.merged_all = *all;
    return;
  }
  const std::vector<Interval> all = merge_intervals(gpu_intervals(v, -1));
  if (!all.empty()) v.merged_all = {true, all.front().ts, all.back().end, total_length(all)};
}

}  // namespace

namespace {

// r / 1000 in long double for every remainder r of a division by 1000 (-999..999), at r + 999:
// the x87 division cost more than the rest of python_us_far, which HTA's views call for every
// row of a trace with epoch timestamps (3% of analyze's CPU on the 107 MB benchmark trace).
const std::array<long double, 1999>& thousandths() {
  static const std::array<long double, 1999> table = [] {
    std::array<long double, 1999> t{};
    for (int r = -999; r <= 999; ++r) t[static_cast<std::size_t>(r + 999)] = static_cast<long double>(r) / 1000.0L;
    return t;
  }();
  return table;
}

}  // namespace

// Beyond 2^53 ns (python_us in hta_view.hpp), the quotient is formed in long double (64-bit
// mantissa, exact for q and precise to far below a µs-fraction step) and rounded once to double.
double python_us_far(ns_t ns) {
  ns_t q = ns / 1000, r = ns % 1000;
  return static_cast<double>(static_cast<long double>(q) + thousandths()[static_cast<std::size_t>(r + 999)]);
}

// Rows HTA keeps after parsing: complete events with a category, minus the profiler's own
// "Trace" span (_compress_df drops rows with null dur or cat, and cat == "Trace").
bool is_hta_row(const RankTrace& r, std::size_t i) {
  const EventTable& ev = r.events;
  if (ev.phase[i] != Phase::Complete) return false;
  if (ev.kind[i] == Kind::TraceSpan) return false;
  if (ev.category[i] == kNoStr) return false;
  // An importer maps cat "Trace" to TraceSpan; the text is checked only for unmapped kinds.
  return ev.kind[i] != Kind::Other || r.str(ev.category[i]) != "Trace";
}

// HTA's stream column is args.stream coerced to a number, -1 when absent or not numeric. A host
// row with a numeric stream counts as a GPU row, as in HTA: Triton writes "stream": 0 on the
// cpu_op that launches a compiled kernel, and HTA adds that op to the GPU time. Runtime and
// driver calls are the exception: ROCm writes "stream": "0x0" (a string, -1 for HTA) on them
// and an importer may decode that as stream 0.
std::int64_t hta_stream(const EventTable& ev, std::size_t i) {
  if (ev.kind[i] == Kind::Runtime || ev.kind[i] == Kind::Driver) return -1;
  std::int64_t s = ev.stream[i];
  return s < 0 ? -1 : s;
}

View build_view(const RankTrace& r, const GpuTimelineOptions& opts) {
  const EventTable& ev = r.events;
  View v;
  v.load.rounded_to_us = has_sub_us_times(ev);
  v.clock = RowClock(ev, v.load.rounded_to_us);
  std::vector<Row> rows;
  rows.reserve(ev.size());  // no copy as it grows; pages past the rows kept are never touched
  StepCutoff cut(opts.include_last_profiler_step);
  CountedRows silent(cut), unpartnered(cut);
  const CorrelationTable<char> gpu_ids = gpu_row_correlations(r);
  NameInfo names(r);
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (!is_hta_row(r, i)) continue;
    Row row;
    row.event = static_cast<std::uint32_t>(i);
    names.fill(row, ev.name[i], ev.category[i]);
    if (hta_stream(ev, i) != -1) row.flags |= kGpu;
    if (ev.correlation[i] >= 0) row.flags |= kCorrelated;
    if (is_step_row(row)) cut.see_step(v.clock.ts(row), v.clock.end(row));
    if (is_silent(row))
      silent.add(v.clock.ts(row));
    else if (is_unpartnered(ev, row, gpu_ids))
      unpartnered.add(v.clock.ts(row));
    else
      rows.push_back(row);
  }
  v.load.profiler_step_names = count_step_names(ev, rows);
  std::int64_t silent_kept = silent.total(), unpartnered_kept = unpartnered.total();
  if (v.load.profiler_step_names >= 2) {
    v.load.last_step_dropped = !opts.include_last_profiler_step;
    silent_kept = silent.kept();
    unpartnered_kept = unpartnered.kept();
    drop_last_step(r, rows, cut, silent_kept, v.load);
  }
  v.load.iterations = kept_iterations(r, rows);
  v.load.rows_kept = static_cast<std::int64_t>(rows.size()) + silent_kept + unpartnered_kept;
  v.load.gpu_rows = std::count_if(rows.begin(), rows.end(), [](const Row& x) { return x.gpu(); });
  v.rows = std::move(rows);
  merge_gpu_rows(v);
  v.gpu_by_correlation = GpuRowsByCorrelation(ev, v.rows);
  return v;
}

void drop_merged_intervals(View& v) {
  for (std::vector<Interval>& m : v.merged_by_type) std::vector<Interval>().swap(m);
}

// The groups are written over the sorted rows (group g never lies past row g), so the union takes
// no second list; its room is given back when the union is much shorter than the rows.
std::vector<Interval> merge_intervals(std::vector<Interval> rows) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.ts < b.ts; };
  if (!std::is_sorted(rows.begin(), rows.end(), by_start)) std::stable_sort(rows.begin(), rows.end(), by_start);
  std::size_t groups = 0;
  ns_t running_max_end = 0;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    // New group iff ts > cummax of all previous ends (the first row always opens a group).
    if (k == 0 || rows[k].ts > running_max_end) {
      rows[groups++] = rows[k];
    } else {
      rows[groups - 1].end = std::max(rows[groups - 1].end, rows[k].end);
    }
    running_max_end = k == 0 ? rows[k].end : std::max(running_max_end, rows[k].end);
  }
  rows.resize(groups);
  if (rows.capacity() > 2 * groups + 1024) rows.shrink_to_fit();
  return rows;
}

ns_t total_length(const std::vector<Interval>& merged) {
  ns_t t = 0;
  for (const Interval& iv : merged) t += iv.end - iv.ts;
  return t;
}

namespace {

// quantile_linear over a sorted sample of n values given by nth(i), the i-th smallest.
template <class Nth>
double quantile_of(std::size_t n, const Nth& nth, double q) {
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  double pos = q * static_cast<double>(n - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, n - 1);
  double t = pos - static_cast<double>(lo);
  double a = nth(lo), b = nth(hi), diff = b - a;
  // numpy's _lerp: interpolate from the nearer end to keep the result monotonic.
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

// describe() once the sample is sorted: n values whose sum (added in the sample's order) is
// `sum`, nth(i) the i-th smallest, each(f) calling f on every value in ascending order.
template <class Nth, class Each>
SampleStats describe_sorted(std::size_t n, double sum, const Nth& nth, const Each& each) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  SampleStats s;
  s.count = static_cast<std::int64_t>(n);
  s.sum = sum;
  if (n == 0) {
    s.mean = s.std = s.min = s.p25 = s.median = s.p75 = s.p95 = s.max = nan;
    return s;
  }
  const double count = static_cast<double>(n);
  s.mean = s.sum / count;
  if (n < 2) {
    s.std = nan;
  } else {
    double ss = 0;
    each([&](double x) { ss += (x - s.mean) * (x - s.mean); });
    s.std = std::sqrt(ss / (count - 1));
  }
  s.min = nth(0);
  s.max = nth(n - 1);
  s.p25 = quantile_of(n, nth, 0.25);
  s.median = quantile_of(n, nth, 0.5);
  s.p75 = quantile_of(n, nth, 0.75);
  s.p95 = quantile_of(n, nth, 0.95);
  return s;
}

}  // namespace

double quantile_linear(const std::vector<double>& sorted, double q) {
  return quantile_of(sorted.size(), [&](std::size_t i) { return sorted[i]; }, q);
}

namespace {

// The bits of a double as an unsigned key in the same order (negatives reversed below positives).
std::uint64_t order_key(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return (u & (std::uint64_t{1} << 63)) ? ~u : u | (std::uint64_t{1} << 63);
}

// Samples that are all whole numbers within a small range (queue lengths) are sorted by counting
// each value: no copy of the samples, where the radix sort takes two. -0.0 is left to the others
// (counting would write it back as +0.0).
bool sort_small_whole_numbers(std::vector<double>& v) {
  constexpr double kMaxRange = 1 << 16;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double d : v) {
    if (!std::isfinite(d) || d != std::floor(d) || (d == 0 && std::signbit(d))) return false;
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  if (v.empty() || hi - lo > kMaxRange) return false;
  std::vector<std::size_t> count(static_cast<std::size_t>(hi - lo) + 1, 0);
  for (double d : v) ++count[static_cast<std::size_t>(d - lo)];
  auto out = v.begin();
  for (std::size_t k = 0; k < count.size(); ++k) out = std::fill_n(out, count[k], lo + static_cast<double>(k));
  return true;
}

// Ascending order of NaN-free samples: a least-significant-digit radix sort on the keys, 16 bits
// a pass, for samples of tens of thousands (launch delays, kernel gaps) where a comparison sort
// was a visible cost; the same order as std::sort but for -0.0, which comes before +0.0.
void sort_samples(std::vector<double>& v) {
  constexpr std::size_t kRadixFrom = 4096;
  if (v.size() >= kRadixFrom && sort_small_whole_numbers(v)) return;
  if (v.size() < kRadixFrom || std::any_of(v.begin(), v.end(), [](double d) { return std::isnan(d); })) {
    std::sort(v.begin(), v.end());
    return;
  }
  std::vector<std::uint64_t> keys(v.size()), scratch(v.size());
  for (std::size_t k = 0; k < v.size(); ++k) keys[k] = order_key(v[k]);
  std::vector<std::size_t> count(1 << 16);
  for (int shift = 0; shift < 64; shift += 16) {
    std::fill(count.begin(), count.end(), 0);
    for (std::uint64_t key : keys) ++count[(key >> shift) & 0xffff];
    if (count[(keys[0] >> shift) & 0xffff] == keys.size()) continue;  // one digit: nothing moves
    std::size_t at = 0;
    for (std::size_t& c : count) at += std::exchange(c, at);
    for (std::uint64_t key : keys) scratch[count[(key >> shift) & 0xffff]++] = key;
    keys.swap(scratch);
  }
  for (std::size_t k = 0; k < v.size(); ++k) {
    const std::uint64_t u = (keys[k] & (std::uint64_t{1} << 63)) ? keys[k] & ~(std::uint64_t{1} << 63) : ~keys[k];
    std::memcpy(&v[k], &u, sizeof u);
  }
}

}  // namespace

SampleStats describe(std::vector<double> values) {
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  sort_samples(values);
  return describe_sorted(
      values.size(), sum, [&](std::size_t i) { return values[i]; },
      [&](auto&& f) {
        for (double x : values) f(x);
      });
}

void WholeNumberCounts::add(std::int64_t value) {
  ++counts_[value];
  sum_ += static_cast<double>(value);
  ++n_;
}

// The i-th smallest is found through the running counts: a sample has few distinct values.
SampleStats WholeNumberCounts::describe() const {
  std::vector<std::pair<std::size_t, double>> ends;  // (rows up to and with the value, the value)
  ends.reserve(counts_.size());
  std::size_t upto = 0;
  for (const auto& [value, rows] : counts_) ends.emplace_back(upto += rows, static_cast<double>(value));
  const auto nth = [&](std::size_t i) {
    return std::upper_bound(ends.begin(), ends.end(), i, [](std::size_t k, const auto& e) { return k < e.first; })->second;
  };
  const auto each = [&](auto&& f) {
    for (const auto& [value, rows] : counts_)
      for (std::size_t k = 0; k < rows; ++k) f(static_cast<double>(value));
  };
  return describe_sorted(n_, sum_, nth, each);
}

GpuRowsByCorrelation::GpuRowsByCorrelation(const EventTable& ev, const std::vector<Row>& rows) {
  auto for_each_gpu_row = [&](auto&& f) {
    for (std::size_t k = 0; k < rows.size(); ++k)
      if (rows[k].gpu() && rows[k].correlated()) f(k, rows[k].correlation(ev));
  };
  slots_.build([&](auto&& f) { for_each_gpu_row([&](std::size_t, std::int64_t corr) { f(corr); }); }, rows.size() / 4);
  rows_.build(slots_.size(), [&](auto&& f) {
    for_each_gpu_row([&](std::size_t k, std::int64_t corr) { f(slots_.slot(corr), static_cast<std::uint32_t>(k)); });
  });
}

}  // namespace stepscope::hta
