// HTA's rows of one rank as the critical path reads them: the loader's filtering and rounding
// (shared with the GPU-timeline figures through build_view), index_correlation, the queue
// length series, and the window.
#include <algorithm>
#include <deque>
#include <unordered_map>
#include <limits>
#include <memory>
#include <string_view>

#include <re2/re2.h>

#include "analysis/critical_path_internal.hpp"
#include "analysis/hta_view.hpp"
#include "stepscope/correlation_table.hpp"
#include "stepscope/id_map.hpp"

namespace stepscope::cp {

namespace {

// CPGraph.BLOCKING_SYNC_CALLS (critical_path_analysis.py:166): the call-stack edge into their
// end node weighs 0. For cudaMemcpyAsync, a runtime-lock call, that is only an edge from a child's
// end: its span edge comes from the lock chain (full weight), the call stack leaves it out.
bool is_blocking_name(std::string_view n) {
  for (std::string_view l : {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery",
                             "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync"})
    if (n == l) return true;
  return false;
}

// Our own Sync kind: host calls that wait for the device (CUDA and HIP spellings).
bool is_host_sync_name(std::string_view n) {
  for (std::string_view l : {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                             "cudaEventQuery", "cudaStreamQuery", "cudaMemcpy", "cudaMemset",
                             "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize",
                             "hipEventQuery", "hipStreamQuery", "hipMemcpy", "hipMemset"})
    if (n == l) return true;
  return false;
}

std::uint16_t row_name_flags(std::string_view n) {
  std::uint16_t f = 0;
  if (hta::is_queue_launch(n)) f |= kLaunchName;
  if (is_blocking_name(n)) f |= kBlockingName;
  if (is_host_sync_name(n)) f |= kHostSyncName;
  if (n == "Event Sync") f |= kEventSyncName;
  if (n == "Context Sync") f |= kContextSyncName;
  if (n == "Stream Sync") f |= kStreamSyncName;
  if (n == "Stream Wait Event") f |= kStreamWaitName;
  if (n == "cudaEventRecord") f |= kEventRecordName;
  if (n == "cudaStreamWaitEvent") f |= kStreamWaitCall;
  return f;
}

std::uint16_t category_flags(std::string_view c) {
  std::uint16_t f = 0;
  if (c == "cpu_op" || c == "cuda_runtime" || c == "cuda_driver") f |= kNodeCategory;
  if (c == "cuda_sync") f |= kSyncCategory;
  return f;
}

// Flags per distinct string, computed on first use.
class FlagCache {
 public:
  FlagCache(const RankTrace& r, const std::vector<std::unique_ptr<RE2>>& data_load)
      : r_(r), data_load_(data_load), known_(r.strings.size(), 0), name_(r.strings.size(), 0), cat_(r.strings.size(), 0) {}
  std::uint16_t of(StrId name, StrId cat) {
    learn(name);
    learn(cat);
    return static_cast<std::uint16_t>(name_[name] | cat_[cat]);
  }

 private:
  void learn(StrId id) {
    if (known_[id]) return;
    std::string_view s = r_.str(id);
    name_[id] = row_name_flags(s);
    for (const auto& re : data_load_)
      if (re->ok() && RE2::PartialMatch(s, *re)) name_[id] |= kDataLoad;
    cat_[id] = category_flags(s);
    known_[id] = 1;
  }
  const RankTrace& r_;
  const std::vector<std::unique_ptr<RE2>>& data_load_;
  std::vector<std::uint8_t> known_;
  std::vector<std::uint16_t> name_, cat_;
};

// transform_correlation_to_index (hta/common/trace.py): rows with a correlation split into GPU
// rows (GPUKernelFilter: stream >= 0 with a correlation, or Event/Context Sync) and the others;
// an inner merge on correlation points each side at the other. With several partners the last
// assignment wins: a host row names the last GPU row (file order) of its correlation, a GPU row
// the last host row.
// One side at a time, so that one table is held at once.
void link_correlations(const RankTrace& rank, std::vector<CpRow>& rows) {
  for (const bool gpu_side : {true, false}) {
    CorrelationTable<std::int32_t> last(rank.correlations, -1);  // of the side's rows
    for (std::size_t k = 0; k < rows.size(); ++k)
      if (rows[k].has_corr && rows[k].gpu_for_filter == gpu_side)
        last[correlation_of(rank, rows[k])] = static_cast<std::int32_t>(k);
    for (CpRow& r : rows)
      if (r.has_corr && r.gpu_for_filter != gpu_side)
        if (const std::int32_t* row = last.find(correlation_of(rank, r))) r.partner = *row;
  }
}

// Whether a row's name contains the window's annotation, looked up once per distinct name.
class AnnotationNames {
 public:
  AnnotationNames(const RankTrace& rank, std::string_view annotation)
      : rank_(rank), annotation_(annotation), named_(annotation.empty() ? 0 : rank.strings.size(), -1) {}
  bool operator()(StrId name) {
    std::int8_t& n = named_[name];
    if (n < 0) n = rank_.str(name).find(annotation_) != std::string_view::npos;
    return n != 0;
  }

 private:
  const RankTrace& rank_;
  std::string_view annotation_;
  std::vector<std::int8_t> named_;
};

// A row with neither stream nor correlation nor a sync name: most cpu_ops. Such rows enter the
// graph only through clip_rows, as rows starting inside the window; every other row takes part
// in the whole-trace steps (partner links, the last-step filter, queue lengths, launch order).
bool is_plain(const CpRow& r) { return !r.on_stream() && !r.has_corr && !r.gpu_for_filter; }

// Builds the rows in two passes so that plain rows are kept only inside the window: the first
// keeps every other row and the plain rows naming the annotation (they place the window), the
// second adds the plain rows that start inside it. A long trace has most of its rows plain.
//   100 steps, annotation "ProfilerStep#50": pass 1 keeps launches, GPU rows and the step rows;
//   pass 2 adds step 50's cpu_ops, not the other 99 steps' ones.
class RowBuilder {
 public:
  RowBuilder(const RankTrace& rank, const CriticalPathOptions& opts, const HtaLoad& load)
      : rank_(rank), opts_(opts), load_(load), named_(rank, opts.annotation) {
    for (const std::string& p : opts.data_load_patterns) data_load_.push_back(std::make_unique<RE2>(p, RE2::Quiet));
    flags_ = std::make_unique<FlagCache>(rank, data_load_);
    // _filter_irrelevant_gpu_kernels (below): with two or more step names, host rows from the
    // last step on go, and so do GPU rows whose correlation no kept host row has.
    filter_ = load.last_step_dropped || (opts.include_last_profiler_step && load.profiler_step_names >= 2);
  }

  Rows build() {
    Rows out;
    out.clock = clock_;
    out.rows = first_pass();
    link_correlations(rank_, out.rows);
    apply_filter(out.rows);
    out.window = pick_window(out, rank_, opts_);
    if (out.window.ok && !opts_.annotation.empty()) add_plain_rows(out.rows, out.window);
    for (const CpRow& r : out.rows)
      if (r.on_stream()) out.has_gpu = true;
    return out;
  }

 private:
  bool host_row_kept(ns_t ts) const {
    return !filter_ || (opts_.include_last_profiler_step ? ts <= load_.cutoff_ts : ts < load_.cutoff_ts);
  }

  CpRow row_of(std::size_t i) {
    const EventTable& ev = rank_.events;
    CpRow row;
    row.event = static_cast<std::uint32_t>(i);
    row.has_corr = ev.correlation[i] >= 0;
    row.flags = flags_->of(ev.name[i], ev.category[i]);
    if (hta::hta_stream(ev, i) != -1) row.flags |= kOnStream;
    row.gpu_for_filter = (row.on_stream() && row.has_corr) || (row.flags & (kEventSyncName | kContextSyncName));
    return row;
  }

  // Without an annotation the window is the whole trace: every row is kept at once. A plain row
  // left out is timed only while no earlier one has been found that the filter keeps.
  std::vector<CpRow> first_pass() {
    const EventTable& ev = rank_.events;
    std::vector<CpRow> all;
    all.reserve(ev.size());  // pages past the rows kept are never touched
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (!hta::is_hta_row(rank_, i)) continue;
      const CpRow row = row_of(i);
      if (is_plain(row) && !opts_.annotation.empty() && !named_(ev.name[i])) {
        plain_left_out_kept_ = plain_left_out_kept_ || host_row_kept(clock_.ts_of(i));
        continue;
      }
      all.push_back(row);
    }
    return all;
  }

  // The filter's rows dropped, the kept ones moved down in place (a trace has millions). A plain
  // row left out that the filter keeps still counts: its correlation -1 keeps the GPU rows
  // without one.
  // The kept rows are a counting bitmap, whose rank of a row is its new place: a quarter of a byte
  // a row, where a flag and a new index took five (at the critical path's peak).
  void apply_filter(std::vector<CpRow>& all) const {
    if (!filter_) return;
    RankBitmap keep;
    keep.build(all.size(), [&](auto&& mark) {
      CorrelationTable<char> host_corr(rank_.correlations, 0);
      if (plain_left_out_kept_) host_corr[-1] = 1;
      for (std::size_t k = 0; k < all.size(); ++k) {
        if (all[k].gpu_for_filter || !host_row_kept(clock_.ts(all[k]))) continue;
        mark(k);
        host_corr[correlation_of(rank_, all[k])] = 1;
      }
      for (std::size_t k = 0; k < all.size(); ++k)
        if (all[k].gpu_for_filter && host_corr.contains(correlation_of(rank_, all[k]))) mark(k);
    });
    for (std::size_t k = 0; k < all.size(); ++k)
      if (keep.test(k)) all[keep.rank(k)] = all[k];
    all.resize(keep.count());
    for (CpRow& r : all)
      if (r.partner >= 0) {
        const auto p = static_cast<std::uint64_t>(r.partner);
        r.partner = keep.test(p) ? static_cast<std::int32_t>(keep.rank(p)) : -1;
      }
  }

  // The plain rows starting inside the window that the filter keeps (those naming the
  // annotation are in already), merged into `rows` in event order; the window's annotation row
  // renumbered.
  void add_plain_rows(std::vector<CpRow>& rows, Window& w) {
    const EventTable& ev = rank_.events;
    std::vector<CpRow> added;
    // HTA's rounding moves a start by under 3 µs (ceil to the µs of a double that resolves 2 µs
    // at the largest times): events a millisecond outside the window are passed over unrounded.
    constexpr ns_t kMargin = 1000000;
    const ns_t lo = w.start > std::numeric_limits<ns_t>::min() + kMargin ? w.start - kMargin : w.start;
    const ns_t hi = w.open_end || w.end > std::numeric_limits<ns_t>::max() - kMargin ? std::numeric_limits<ns_t>::max() : w.end + kMargin;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (ev.ts[i] < lo || ev.ts[i] > hi) continue;
      if (!hta::is_hta_row(rank_, i) || named_(ev.name[i])) continue;
      const ns_t ts = clock_.ts_of(i);
      if (ts < w.start || (!w.open_end && ts > w.end) || !host_row_kept(ts)) continue;
      const CpRow row = row_of(i);
      if (is_plain(row)) added.push_back(row);
    }
    if (added.empty()) return;
    const std::vector<std::int32_t> moved = merge_in_place(rows, added);
    if (w.annotation_row >= 0) w.annotation_row = moved[static_cast<std::size_t>(w.annotation_row)];
  }

  // Merges `added` (plain rows, no partners) into `rows` by event, both ascending, from the back
  // of `rows` grown in place: a second copy of every row would double the rows' peak, and
  // first_pass reserved room for all events. Partners are renumbered to the rows' new places,
  // which are returned (by old place).
  //   rows [e2 (partner 1), e7 (partner 0)] + added [e5]  ->  [e2 (partner 2), e5, e7 (partner 0)]
  static std::vector<std::int32_t> merge_in_place(std::vector<CpRow>& rows, const std::vector<CpRow>& added) {
    const std::size_t old_size = rows.size();
    std::vector<std::int32_t> new_index(old_size);
    rows.resize(old_size + added.size());
    std::size_t k = old_size, a = added.size(), out = rows.size();
    while (a > 0) {
      if (k > 0 && rows[k - 1].event > added[a - 1].event) {
        --k;
        new_index[k] = static_cast<std::int32_t>(--out);
        rows[out] = rows[k];
      } else {
        rows[--out] = added[--a];
      }
    }
    for (std::size_t i = 0; i < k; ++i) new_index[i] = static_cast<std::int32_t>(i);  // rows before every added one stay
    for (CpRow& r : rows)
      if (r.partner >= 0) r.partner = new_index[static_cast<std::size_t>(r.partner)];
    return new_index;
  }

  const RankTrace& rank_;
  const CriticalPathOptions& opts_;
  const HtaLoad& load_;
  const RowClock clock_{rank_.events, load_.rounded_to_us};
  std::vector<std::unique_ptr<RE2>> data_load_;
  std::unique_ptr<FlagCache> flags_;
  AnnotationNames named_;
  bool filter_ = false;
  bool plain_left_out_kept_ = false;
};

}  // namespace

Rows build_rows(const RankTrace& rank, const CriticalPathOptions& opts, const HtaLoad& load) {
  return RowBuilder(rank, opts, load).build();
}

void stable_sort_rows_by_ts(std::vector<std::int32_t>& order, const Rows& rows) {
  const auto earlier = [&](std::int32_t a, std::int32_t b) {
    return rows.clock.ts(rows.rows[static_cast<std::size_t>(a)]) < rows.clock.ts(rows.rows[static_cast<std::size_t>(b)]);
  };
  if (!std::is_sorted(order.begin(), order.end(), earlier)) std::stable_sort(order.begin(), order.end(), earlier);
}

namespace {

// Where a stream's rows of the series go: streams are few, so a short list is searched. Rows are
// counted first (count(), then reserve_counted()), so that each list is allocated once.
class StreamLists {
 public:
  std::vector<std::int32_t>& of(std::int64_t stream) { return lists_[place(stream)]; }
  void count(std::int64_t stream) { ++counts_[place(stream)]; }
  void reserve_counted() {
    for (std::size_t k = 0; k < ids_.size(); ++k) lists_[k].reserve(counts_[k]);
  }
  std::size_t size() const { return ids_.size(); }
  std::int64_t id(std::size_t k) const { return ids_[k]; }
  std::vector<std::int32_t>& list(std::size_t k) { return lists_[k]; }

 private:
  // Streams keep the order they were first seen in; a hash index finds them, since a scan per
  // row grows with rows x streams (400k streams took minutes).
  std::size_t place(std::int64_t stream) {
    const auto [it, added] = index_.try_emplace(stream, ids_.size());
    if (!added) return it->second;
    ids_.push_back(stream);
    counts_.push_back(0);
    lists_.emplace_back();
    return ids_.size() - 1;
  }
  std::unordered_map<std::int64_t, std::size_t> index_;
  std::vector<std::int64_t> ids_;
  std::vector<std::size_t> counts_;
  std::deque<std::vector<std::int32_t>> lists_;  // a deque: references stay valid as it grows
};

}  // namespace

QueueLengths::QueueLengths(std::vector<std::int32_t> asked) : rows_(std::move(asked)), lengths_(rows_.size(), -1) {}

std::int32_t QueueLengths::at(std::int32_t row) const {
  const auto it = std::lower_bound(rows_.begin(), rows_.end(), row);
  return it != rows_.end() && *it == row ? lengths_[static_cast<std::size_t>(it - rows_.begin())] : -1;
}

void QueueLengths::set(std::int32_t row, std::int32_t length) {
  const auto it = std::lower_bound(rows_.begin(), rows_.end(), row);
  if (it != rows_.end() && *it == row) lengths_[static_cast<std::size_t>(it - rows_.begin())] = length;
}

// trace_counters.py:18-95 (_get_queue_length_time_series_for_rank): +1 at each launch call that
// has a GPU partner, on the partner's stream; -1 at the start of each GPU row whose correlation
// is a launch's; sorted by ts, grouped by stream, cumulated (hta::for_each_queue_change). Each
// stream's launches and GPU rows are kept as row numbers, 4 bytes a change.
QueueLengths queue_length_at_rows(const RankTrace& rank, const Rows& rows, std::vector<std::int32_t> asked) {
  const std::vector<CpRow>& r = rows.rows;
  StreamLists launches, gpu;
  CorrelationTable<char> launch_corr(rank.correlations, 0);
  auto for_each_launch = [&](auto&& f) {
    for (std::size_t k = 0; k < r.size(); ++k) {
      const CpRow& x = r[k];
      if (x.on_stream() || !(x.flags & kLaunchName) || x.partner < 0) continue;
      f(k, stream_of(rank, r[static_cast<std::size_t>(x.partner)]));
    }
  };
  auto for_each_gpu_row = [&](auto&& f) {
    for (std::size_t k = 0; k < r.size(); ++k) {
      const CpRow& x = r[k];
      if (!x.on_stream() || !launch_corr.contains(correlation_of(rank, x))) continue;
      f(k, stream_of(rank, x));
    }
  };
  for_each_launch([&](std::size_t k, std::int64_t stream) {
    launches.count(stream);
    launch_corr[correlation_of(rank, r[k])] = 1;
  });
  for_each_gpu_row([&](std::size_t, std::int64_t stream) { gpu.count(stream); });
  launches.reserve_counted();
  gpu.reserve_counted();
  for_each_launch([&](std::size_t k, std::int64_t stream) { launches.of(stream).push_back(static_cast<std::int32_t>(k)); });
  for_each_gpu_row([&](std::size_t k, std::int64_t stream) { gpu.of(stream).push_back(static_cast<std::int32_t>(k)); });
  std::vector<bool> is_asked(r.size(), false);  // spares the search for the rows not asked for
  for (std::int32_t k : asked) is_asked[static_cast<std::size_t>(k)] = true;
  QueueLengths q(std::move(asked));
  for (std::size_t s = 0; s < gpu.size(); ++s) launches.of(gpu.id(s));  // a stream with GPU rows only
  for (std::size_t s = 0; s < launches.size(); ++s) {
    hta::for_each_queue_change(
        launches.list(s), gpu.of(launches.id(s)), [&](std::int32_t row) { return rows.clock.ts(r[static_cast<std::size_t>(row)]); },
        [&](std::int32_t row, ns_t, std::int64_t length) {
          if (is_asked[static_cast<std::size_t>(row)]) q.set(row, static_cast<std::int32_t>(length));  // below the row count
        });
  }
  return q;
}

// critical_path_analysis.py:1838-1892. Annotation rows are those whose name contains the
// string; instances are picked by position in row order; the window is [min ts, max end]. For
// "" the window is the whole trace and its end is HTA's unshifted `end` column, i.e. open.
Window pick_window(const Rows& rows, const RankTrace& rank, const CriticalPathOptions& opts) {
  Window w;
  const auto& r = rows.rows;
  if (opts.annotation.empty()) {
    if (r.empty()) {
      w.error = "no event has a \"cat\" field, and HTA reads only events that do";
      return w;
    }
    w.start = std::numeric_limits<ns_t>::max();
    for (const CpRow& x : r) w.start = std::min(w.start, rows.clock.ts(x));
    w.end = std::numeric_limits<ns_t>::max();
    w.open_end = true;
    w.ok = true;
    return w;
  }
  std::vector<std::int32_t> matches;
  for (std::size_t k = 0; k < r.size(); ++k)
    if (rank.str(name_of(rank, r[k])).find(opts.annotation) != std::string_view::npos) matches.push_back(static_cast<std::int32_t>(k));
  if (matches.empty()) {
    w.error = "annotation \"" + opts.annotation + "\" not found in the trace";
    return w;
  }
  const int first = std::max(0, opts.instance_first);
  const int last = std::min<int>(opts.instance_last, static_cast<int>(matches.size()) - 1);
  if (first > last) {
    w.error = "annotation \"" + opts.annotation + "\" has no instance " + std::to_string(opts.instance_first);
    return w;
  }
  w.start = std::numeric_limits<ns_t>::max();
  w.end = std::numeric_limits<ns_t>::min();
  for (int k = first; k <= last; ++k) {
    const CpRow& x = r[static_cast<std::size_t>(matches[static_cast<std::size_t>(k)])];
    w.start = std::min(w.start, rows.clock.ts(x));
    w.end = std::max(w.end, rows.clock.end(x));
  }
  w.annotation_row = matches[static_cast<std::size_t>(first)];
  w.ok = true;
  return w;
}

// Host rows starting in the window with dur > 0; GPU rows whose launching host row (a host row
// naming it as its partner) starts in the window with dur > 0; every "Stream Wait Event". The
// result is in row order (HTA takes Index.union, which sorts).
std::vector<std::int32_t> clip_rows(const Rows& rows, const Window& w) {
  const auto& r = rows.rows;
  std::vector<char> keep(r.size(), 0);
  auto in_window = [&](const CpRow& x) {
    const ns_t ts = rows.clock.ts(x);
    return ts >= w.start && (w.open_end || ts <= w.end) && rows.clock.dur(x) > 0;
  };
  for (std::size_t k = 0; k < r.size(); ++k) {
    const CpRow& x = r[k];
    if (!x.on_stream()) {
      if (in_window(x)) keep[k] = 1;
      if (x.partner >= 0 && r[static_cast<std::size_t>(x.partner)].on_stream() && in_window(x))
        keep[static_cast<std::size_t>(x.partner)] = 1;
    } else if (x.flags & kStreamWaitName) {
      keep[k] = 1;
    }
  }
  std::vector<std::int32_t> out;
  for (std::size_t k = 0; k < r.size(); ++k)
    if (keep[k]) out.push_back(static_cast<std::int32_t>(k));
  return out;
}

}  // namespace stepscope::cp
