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

// trace_symbol_table.py get_runtime_launch_events_mask: the calls that enqueue work on a stream.
// cudaMemcpy/cudaMemset (synchronous), hipModuleLaunchKernel and cudaGraphLaunch are not in it.
bool is_queue_launch(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",   "cuLaunchKernelEx",
      "cudaMemcpyAsync",  "cudaMemsetAsync",     "hipLaunchKernel",  "hipExtModuleLaunchKernel",
      "hipMemcpyAsync",   "hipMemsetAsync",      "hipMemcpyWithStream",
      "runFunction - job_prep_and_submit_for_execution"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

// One +1 / -1 row of a stream's queue. 16 bytes, a row per launch and GPU record: `stream` is
// the stream's place among the rank's GPU streams in ascending id order (so that it sorts as the
// id does), shifted left over the launch bit; `order` is the row's place in HTA's concatenation
// (launches first, then GPU records, each in row order), which ties of ts keep. Sorting by
// (stream, ts, order) is the stable sort by (stream, ts), without its buffer of half the rows.
struct QueueRow {
  ns_t ts;
  std::uint32_t stream;
  std::uint32_t order;
  QueueRow(ns_t t, std::uint32_t stream_place, bool launch, std::size_t place)
      : ts(t), stream(stream_place << 1 | (launch ? 1u : 0u)), order(static_cast<std::uint32_t>(place)) {}
  std::uint32_t stream_place() const { return stream >> 1; }
  int delta() const { return (stream & 1) ? +1 : -1; }
};

// The distinct streams of the view's GPU rows, ascending: the ids QueueRow::stream numbers.
std::vector<std::int64_t> gpu_streams(const RankTrace& rank, const hta::View& v) {
  std::vector<std::int64_t> streams;
  std::int64_t last = -1;  // GPU rows come in runs of one stream: most need no search
  for (const hta::Row& row : v.rows) {
    if (!row.gpu()) continue;
    const std::int64_t stream = row.stream(rank.events);
    if (stream == last) continue;
    last = stream;
    if (std::find(streams.begin(), streams.end(), stream) == streams.end()) streams.push_back(stream);
  }
  std::sort(streams.begin(), streams.end());
  return streams;
}

std::uint32_t stream_place(const std::vector<std::int64_t>& streams, std::int64_t stream) {
  return static_cast<std::uint32_t>(std::lower_bound(streams.begin(), streams.end(), stream) - streams.begin());
}

// Example: a launch at 10 µs and its kernel at 14 µs on stream 7, then a launch at 12 µs whose
// kernel starts at 20 µs give stream 7 the rows 10:1, 12:2, 14:1, 20:0.
std::vector<QueueRow> queue_rows(const RankTrace& rank, const hta::View& v, const std::vector<std::int64_t>& streams) {
  // The launch calls with a GPU partner; the others are not launch rows for HTA.
  auto for_each_launch = [&](auto&& f) {
    for (const hta::Row& row : v.rows) {
      if (row.gpu() || !row.correlated() || !is_queue_launch(rank.str(row.name(rank.events)))) continue;
      const std::int64_t corr = row.correlation(rank.events);
      if (const auto partners = v.gpu_by_correlation.find(corr); !partners.empty()) f(row, corr, partners);
    }
  };
  CorrelationTable<char> launched(rank.correlations, 0);
  std::size_t count = 0;  // counted first, so that the rows are allocated once
  for_each_launch([&](const hta::Row&, std::int64_t corr, std::span<const std::uint32_t> partners) {
    launched[corr] = 1;
    count += partners.size();
  });
  auto is_launched_record = [&](const hta::Row& row) {
    return row.gpu() && row.correlated() && launched.contains(row.correlation(rank.events));
  };
  count += static_cast<std::size_t>(std::count_if(v.rows.begin(), v.rows.end(), is_launched_record));
  std::vector<QueueRow> out;
  out.reserve(count);
  // The launch takes the stream of its GPU record (a join: one row per partner).
  for_each_launch([&](const hta::Row& row, std::int64_t, std::span<const std::uint32_t> partners) {
    for (std::uint32_t g : partners)
      out.emplace_back(v.clock.ts(row), stream_place(streams, v.rows[g].stream(rank.events)), true, out.size());
  });
  for (const hta::Row& row : v.rows)
    if (is_launched_record(row))
      out.emplace_back(v.clock.ts(row), stream_place(streams, row.stream(rank.events)), false, out.size());
  return out;
}

StreamQueue stream_queue(std::int64_t stream, std::span<const QueueRow> rows, std::size_t max_points) {
  StreamQueue q;
  q.stream = stream;
  std::vector<QueuePoint> series;
  series.reserve(rows.size());
  std::int64_t value = 0;
  for (const QueueRow& r : rows) series.push_back({r.ts, value += r.delta()});
  std::vector<double> values;
  values.reserve(series.size());
  for (std::size_t k = 0; k < series.size(); ++k) {
    values.push_back(static_cast<double>(series[k].value));
    // get_time_spent_blocked_on_full_queue: the time to the next row, at or past the limit.
    if (series[k].value >= kMaxLaunchQueue && k + 1 < series.size()) q.time_at_max += series[k + 1].ts - series[k].ts;
  }
  q.summary = hta::describe(std::move(values));
  q.series = thinned(std::move(series), max_points, [](const QueuePoint& x) { return x.value; });
  return q;
}

// get_memory_kernel_type: "Memset", the first 11 characters of a "Memcpy..." name ("Memcpy HtoD"),
// else "Memcpy Unknown" (MTIA's dma rows).
std::string copy_type(std::string_view name) {
  if (name.starts_with("Memset")) return "Memset";
  if (name.starts_with("Memcpy")) return std::string(name.substr(0, 11));
  return "Memcpy Unknown";
}

// As QueueRow: ties of ts keep the rows' order of insertion.
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
  std::vector<QueueRow> rows = queue_rows(rank, v, streams);
  if (rows.empty()) {
    out.note = "no launch with a GPU record on a stream";
    return out;
  }
  // pandas sorts the concatenation by ts, then groups by stream (ascending) and sums in order.
  // Its sort is numpy's quicksort: stable below 17 rows (insertion sort), arbitrary on equal
  // times above; we keep HTA's concatenation order on ties (launches before GPU records).
  auto before = [](const QueueRow& a, const QueueRow& b) {
    if (a.stream_place() != b.stream_place()) return a.stream_place() < b.stream_place();
    return a.ts != b.ts ? a.ts < b.ts : a.order < b.order;
  };
  // `order` numbers rows below 2^32; past that (never seen) the stable sort keeps the order.
  if (rows.size() <= UINT32_MAX)
    std::sort(rows.begin(), rows.end(), before);
  else
    std::stable_sort(rows.begin(), rows.end(), [](const QueueRow& a, const QueueRow& b) {
      return a.stream_place() != b.stream_place() ? a.stream_place() < b.stream_place() : a.ts < b.ts;
    });
  for (std::size_t k = 0; k < rows.size();) {
    std::size_t end = k;
    while (end < rows.size() && rows[end].stream_place() == rows[k].stream_place()) ++end;
    out.streams.push_back(stream_queue(streams[rows[k].stream_place()], std::span<const QueueRow>(rows).subspan(k, end - k), max_points));
    k = end;
  }
  out.available = true;
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
