// HTA's counter time series (hta/analyzers/trace_counters.py): the launch queue length of each
// stream and the memory bandwidth of each copy type, on HTA's view of the rank (its kept rows and
// time rounding, see hta_view.hpp).
#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "analysis/drilldown_internal.hpp"
#include "analysis/hta_view.hpp"
#include "stepscope/correlation_table.hpp"
#include "stepscope/drilldown.hpp"

namespace stepscope {
namespace {

// One stream's +1 and -1 rows as view row numbers: its launch calls (one entry a GPU record of the
// call on the stream) and its GPU records, each list in HTA's concatenation order (launches
// first, then GPU records, each in row order) until sort() puts it in ts order, stably.
struct StreamChanges {
  std::vector<std::uint32_t> launches, records;
};
// The distinct streams of the view's GPU rows, ascending: the ids a stream's place numbers.
std::vector<std::int64_t> gpu_streams(const RankTrace& rank, const hta::View& v) {
  std::vector<std::int64_t> streams;
  std::int64_t last = -1;  // GPU rows come in runs of one stream: most need no search
  for (const hta::Row& row : v.rows) {
    if (!row.gpu()) continue;
    const std::int64_t stream = row.stream(rank.events);
    if (stream == last) continue;
    last = stream;
    streams.push_back(stream);
  }
  // Sorted and made unique once: a search per new run grows with the square of the streams.
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  return streams;
}

std::uint32_t stream_place(const std::vector<std::int64_t>& streams, std::int64_t stream) {
  return static_cast<std::uint32_t>(std::lower_bound(streams.begin(), streams.end(), stream) - streams.begin());
}

// Each stream's changes (indexed by its place in `streams`), counted first so that each list is
// allocated once.
//   a launch at 10 µs and its kernel at 14 µs on stream 7, then a launch at 12 µs whose kernel
//   starts at 20 µs: stream 7's launches [10, 12], records [14, 20]
std::vector<StreamChanges> stream_changes(const RankTrace& rank, const hta::View& v, const std::vector<std::int64_t>& streams) {
  auto is_launch = [&](const hta::Row& row) {
    return !row.gpu() && row.correlated() && hta::is_queue_launch(rank.str(row.name(rank.events)));
  };
  // Launch calls per correlation id. HTA joins every launch of an id with every GPU record of it;
  // an id shared by thousands of launches (a malformed or merged trace, id 0) would make that
  // join grow with the square of the input, so such launches take one record each.
  CorrelationTable<std::uint32_t> launches_of(rank.correlations, 0);
  for (const hta::Row& row : v.rows)
    if (is_launch(row)) ++launches_of[row.correlation(rank.events)];
  // The launch calls with a GPU partner; the others are not launch rows for HTA.
  auto for_each_launch = [&](auto&& f) {
    for (std::size_t k = 0; k < v.rows.size(); ++k) {
      const hta::Row& row = v.rows[k];
      if (!is_launch(row)) continue;
      const std::int64_t corr = row.correlation(rank.events);
      auto partners = v.gpu_by_correlation.find(corr);
      if (partners.empty()) continue;
      if (launches_of[corr] > 1) partners = partners.subspan(k % partners.size(), 1);
      f(k, corr, partners);
    }
  };
  CorrelationTable<char> launched(rank.correlations, 0);
  std::vector<std::size_t> launch_count(streams.size(), 0), record_count(streams.size(), 0);
  auto place_of = [&](const hta::Row& row) { return stream_place(streams, row.stream(rank.events)); };
  for_each_launch([&](std::size_t, std::int64_t corr, std::span<const std::uint32_t> partners) {
    launched[corr] = 1;
    for (std::uint32_t g : partners) ++launch_count[place_of(v.rows[g])];
  });
  auto for_each_record = [&](auto&& f) {
    for (std::size_t k = 0; k < v.rows.size(); ++k) {
      const hta::Row& row = v.rows[k];
      if (row.gpu() && row.correlated() && launched.contains(row.correlation(rank.events))) f(k, place_of(row));
    }
  };
  for_each_record([&](std::size_t, std::uint32_t place) { ++record_count[place]; });
  std::vector<StreamChanges> out(streams.size());
  for (std::size_t s = 0; s < out.size(); ++s) {
    out[s].launches.reserve(launch_count[s]);
    out[s].records.reserve(record_count[s]);
  }
  // The launch takes the stream of its GPU record (a join: one row per partner).
  for_each_launch([&](std::size_t k, std::int64_t, std::span<const std::uint32_t> partners) {
    for (std::uint32_t g : partners) out[place_of(v.rows[g])].launches.push_back(static_cast<std::uint32_t>(k));
  });
  for_each_record([&](std::size_t k, std::uint32_t place) { out[place].records.push_back(static_cast<std::uint32_t>(k)); });
  return out;
}

// One stream's queue from its changes in HTA's order, fed a row at a time (add), so that neither
// the series nor its values are held whole: the summary comes from a count per length, the
// series is thinned as it goes.
class QueueSeries {
 public:
  QueueSeries(std::int64_t stream, std::size_t rows, std::size_t max_points)
      : thin_(rows, max_points, [](const QueuePoint& x) { return x.value; }) {
    q_.stream = stream;
  }

  // The queue is `length` long from `ts` on.
  void add(ns_t ts, std::int64_t length) {
    // get_time_spent_blocked_on_full_queue: the time to the next row, at or past the limit.
    if (any_ && value_ >= kMaxLaunchQueue) q_.time_at_max += ts - last_ts_;
    value_ = length;
    any_ = true;
    last_ts_ = ts;
    lengths_.add(value_);
    thin_.add({ts, value_});
  }

  StreamQueue finish() {
    q_.summary = lengths_.describe();
    q_.series = thin_.take();
    return std::move(q_);
  }

 private:
  using Value = std::int64_t (*)(const QueuePoint&);
  StreamQueue q_;
  std::int64_t value_ = 0;
  ns_t last_ts_ = 0;
  bool any_ = false;
  hta::WholeNumberCounts lengths_;
  SeriesThinner<QueuePoint, Value> thin_;
};

// pandas sorts the concatenation by ts, then groups by stream (ascending) and sums in order. Its
// sort is numpy's quicksort: stable below 17 rows (insertion sort), arbitrary on equal times
// above; we keep HTA's concatenation order on ties (hta::for_each_queue_change).
StreamQueue stream_queue(const hta::View& v, std::int64_t stream, StreamChanges& c, std::size_t max_points) {
  QueueSeries q(stream, c.launches.size() + c.records.size(), max_points);
  hta::for_each_queue_change(
      c.launches, c.records, [&](std::uint32_t row) { return v.clock.ts(v.rows[row]); },
      [&](std::uint32_t, ns_t ts, std::int64_t length) { q.add(ts, length); });
  return q.finish();
}

// get_memory_kernel_type: "Memset", the first 11 characters of a "Memcpy..." name ("Memcpy HtoD"),
// else "Memcpy Unknown" (MTIA's dma rows).
std::string copy_type(std::string_view name) {
  if (name.starts_with("Memset")) return "Memset";
  if (name.starts_with("Memcpy")) return std::string(name.substr(0, 11));
  return "Memcpy Unknown";
}

// Ties of ts keep the rows' order of insertion, as in the queue length.
struct BandwidthRow {
  ns_t ts;
  double delta;
};

CopyBandwidth copy_bandwidth(std::string name, std::vector<BandwidthRow> rows, std::size_t max_points) {
  std::stable_sort(rows.begin(), rows.end(), [](const BandwidthRow& a, const BandwidthRow& b) { return a.ts < b.ts; });
  CopyBandwidth c;
  c.name = std::move(name);
  std::vector<BandwidthPoint> series;
  series.reserve(rows.size());
  std::vector<double> positive;
  double total = 0;
  // A running float sum, as pandas' cumsum: it does not return to exactly 0 after overlapping
  // copies, and HTA's summary counts those residues as positive rows.
  for (const BandwidthRow& r : rows) {
    total += r.delta;
    series.push_back({r.ts, total});
    if (total > 0) positive.push_back(total);
  }
  c.summary = hta::describe(std::move(positive));
  c.series = thinned(std::move(series), max_points, [](const BandwidthPoint& x) { return x.gbps; });
  return c;
}

}  // namespace

QueueLength hta_queue_length(const RankTrace& rank, std::size_t max_points) {
  return hta_queue_length_with(rank, hta::build_view(rank, GpuTimelineOptions{}), max_points);
}

QueueLength hta_queue_length_with(const RankTrace& rank, const hta::View& v, std::size_t max_points) {
  QueueLength out;
  const std::vector<std::int64_t> streams = gpu_streams(rank, v);
  std::vector<StreamChanges> changes = stream_changes(rank, v, streams);
  for (std::size_t s = 0; s < streams.size(); ++s) {
    if (changes[s].launches.empty() && changes[s].records.empty()) continue;
    out.streams.push_back(stream_queue(v, streams[s], changes[s], max_points));
    changes[s] = StreamChanges{};
  }
  out.available = !out.streams.empty();
  if (!out.available) out.note = "no launch with a GPU record on a stream";
  return out;
}

// Example: a 2 µs HtoD copy at 5 µs at 10 GB/s and a 0 µs Memset at 6 µs at 1 GB/s (HTA takes
// it as 1 µs) give "Memcpy HtoD" rows 5:10, 7:0 and "Memset" rows 6:1, 7:0.
MemoryBandwidth hta_memory_bandwidth(const RankTrace& rank, std::size_t max_points) {
  return hta_memory_bandwidth_with(rank, hta::build_view(rank, GpuTimelineOptions{}), max_points);
}

MemoryBandwidth hta_memory_bandwidth_with(const RankTrace& rank, const hta::View& v, std::size_t max_points) {
  MemoryBandwidth out;
  std::map<std::string, std::vector<BandwidthRow>> by_type;
  std::vector<std::pair<const hta::Row*, std::string>> copies;
  for (const hta::Row& row : v.rows)
    if (row.gpu() && row.type == HtaKernelType::Memory) copies.emplace_back(&row, copy_type(rank.str(row.name(rank.events))));
  // Starts first, then ends, as HTA concatenates them before sorting.
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& [row, type] : copies) {
      const std::optional<EventExtra> x = rank.extra_of(row->event);
      const double bw = x && x->bandwidth_gbps >= 0 ? x->bandwidth_gbps : 0.0;  // a missing arg is 0
      const ns_t ts = v.clock.ts(*row), recorded = v.clock.dur(*row);
      const ns_t dur = recorded == 0 ? 1000 : recorded;  // as HTA does (its GitHub issue 20): a 0 µs copy lasts 1 µs
      by_type[type].push_back(pass == 0 ? BandwidthRow{ts, bw} : BandwidthRow{ts + dur, -bw});
    }
  if (by_type.empty()) {
    out.note = "no memcpy or memset on the GPU";
    return out;
  }
  for (auto& [name, rows] : by_type) out.types.push_back(copy_bandwidth(name, std::move(rows), max_points));
  out.available = true;
  return out;
}

}  // namespace stepscope
