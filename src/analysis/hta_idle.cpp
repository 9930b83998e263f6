// HTA-compatible idle time breakdown (BreakdownAnalysis.get_idle_time_breakdown and
// _analyze_idle_time_for_stream at f4d0062).
//
// Per stream, over kernels, copies and memsets only (cuda_sync rows are left out), in ts order:
//   gap(k)  = ts(k) - end(k-1)          the previous row's end, not a running max, so rows that
//                                       overlap on one stream give negative gaps, and HTA sums
//                                       them as they are
//   host_wait    if the launch call of row k started after end(k-1): the host was late
//   kernel_wait  else if gap(k) < consecutive_kernel_delay (30 µs; HTA's docs say ns but HTA
//                never rescales Kineto's µs)
//   other        otherwise; the first row of a stream is "other" with no gap
// ratio = category sum / sum over the stream's categories. Streams are not merged, so these do
// not add up to the temporal breakdown's idle time.
#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "hta_breakdown.hpp"
#include "stepscope/correlation_table.hpp"

namespace stepscope::hta {

namespace {

// No launch: no row starts at the lowest time there is.
constexpr ns_t kNoLaunch = std::numeric_limits<ns_t>::min();

// The host row that launched each correlation (the runtime call), first in file order; -1 for
// none.
CorrelationTable<std::int32_t> launch_rows(const RankTrace& rank, const View& v) {
  CorrelationTable<std::int32_t> calls(rank.correlations, -1);
  for (std::size_t k = 0; k < v.rows.size(); ++k) {
    const Row& r = v.rows[k];
    if (r.gpu() || !r.correlated()) continue;
    std::int32_t& row = calls[r.correlation(rank.events)];
    if (row < 0) row = static_cast<std::int32_t>(k);
  }
  return calls;
}

// A row as the breakdown sorts it: its start kept beside it (sorting bare row numbers would chase
// cache misses); its end and launch read when the sorted rows are walked.
struct Slot {
  ns_t ts;
  std::uint32_t row;  // in View::rows
};

struct StreamRows {
  std::int64_t stream;
  std::vector<Slot> rows;
};

// Each stream's kernels, copies and memsets, in row order; counted first, so that each list is
// allocated once.
std::vector<StreamRows> rows_per_stream(const RankTrace& rank, const View& v) {
  std::vector<StreamRows> out;
  std::unordered_map<std::int64_t, std::size_t> slot;
  std::vector<std::size_t> count;
  auto for_each_row = [&](auto&& f) {
    for (std::size_t k = 0; k < v.rows.size(); ++k) {
      const Row& r = v.rows[k];
      if (!r.gpu() || !(r.flags & kIdleCategory)) continue;  // kernels, copies, memsets
      auto [it, fresh] = slot.emplace(r.stream(rank.events), out.size());
      if (fresh) out.push_back({r.stream(rank.events), {}}), count.push_back(0);
      f(it->second, k);
    }
  };
  for_each_row([&](std::size_t s, std::size_t) { ++count[s]; });
  for (std::size_t s = 0; s < out.size(); ++s) out[s].rows.reserve(count[s]);
  for_each_row([&](std::size_t s, std::size_t k) {
    out[s].rows.push_back({v.clock.ts(v.rows[k]), static_cast<std::uint32_t>(k)});
  });
  return out;
}

// `launch_ts(row)`: the start of the call that launched the row, kNoLaunch without one.
template <class LaunchTs>
HtaStreamIdle analyze_stream(const View& v, StreamRows& s, ns_t kernel_delay, const LaunchTs& launch_ts) {
  const auto earlier = [](const Slot& a, const Slot& b) { return a.ts < b.ts; };
  if (!std::is_sorted(s.rows.begin(), s.rows.end(), earlier)) std::stable_sort(s.rows.begin(), s.rows.end(), earlier);
  HtaStreamIdle out;
  out.stream = s.stream;
  out.kernels = static_cast<std::int64_t>(s.rows.size());
  std::array<std::vector<double>, kIdleCategoryCount> gaps;
  out.category[static_cast<int>(IdleCategory::Other)].present = true;  // the first row
  for (std::size_t k = 1; k < s.rows.size(); ++k) {
    const ns_t prev_end = v.clock.end(v.rows[s.rows[k - 1].row]);
    const ns_t gap = s.rows[k].ts - prev_end;
    IdleCategory c = IdleCategory::Other;
    const ns_t launched = launch_ts(v.rows[s.rows[k].row]);
    if (launched != kNoLaunch && launched > prev_end)
      c = IdleCategory::HostWait;
    else if (gap < kernel_delay)
      c = IdleCategory::KernelWait;
    HtaIdleCategory& cat = out.category[static_cast<int>(c)];
    cat.present = true;
    cat.idle += gap;
    gaps[static_cast<int>(c)].push_back(static_cast<double>(gap));
  }
  ns_t total = 0;
  for (const auto& c : out.category) total += c.idle;
  for (int c = 0; c < kIdleCategoryCount; ++c) {
    out.category[c].ratio = static_cast<double>(out.category[c].idle) / static_cast<double>(total);
    out.category[c].intervals = describe(std::move(gaps[c]));
  }
  return out;
}

}  // namespace

HtaIdleBreakdown idle_breakdown(const RankTrace& rank, const View& v, const GpuTimelineOptions& opts) {
  HtaIdleBreakdown out;
  const CorrelationTable<std::int32_t> calls = launch_rows(rank, v);
  auto launch_ts = [&](const Row& r) {
    const std::int32_t* call = r.correlated() ? calls.find(r.correlation(rank.events)) : nullptr;
    return call ? v.clock.ts(v.rows[static_cast<std::size_t>(*call)]) : kNoLaunch;
  };
  for (StreamRows& s : rows_per_stream(rank, v)) {
    out.streams.push_back(analyze_stream(v, s, opts.consecutive_kernel_delay, launch_ts));
    for (int c = 0; c < kIdleCategoryCount; ++c) out.total[c] += out.streams.back().category[c].idle;
  }
  out.available = !out.streams.empty();
  if (!out.available) out.note = "no GPU kernels, copies or memsets in the trace";
  return out;
}

}  // namespace stepscope::hta
