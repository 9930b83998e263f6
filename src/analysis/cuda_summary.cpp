// nsys stats / nsys analyze figures from the trace model. Definitions (Nsight Systems
// documentation): cuda_gpu_kern_sum, cuda_gpu_mem_time_sum / _size_sum, cuda_api_sum (median of
// an even count is the mean of the middle two; stddev is the sample deviation), the cuda_api_sync
// and cuda_memcpy_async rules, and gpu_gaps / gpu_time_util (busy time is the union of a
// device's kernels, copies and memsets).
#include "stepscope/cuda_summary.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>

namespace stepscope {
namespace {

bool is_api_call(Kind k) { return k == Kind::Runtime || k == Kind::Driver; }

// nsys counts every row of its runtime table, including the backtrace copies that the reader
// keeps out of the timeline.
bool is_api_row(const RankTrace& t, std::size_t i) {
  Kind k = t.events.kind[i];
  return is_api_call(k) || (k == Kind::Other && t.str(t.events.category[i]) == "cuda_api_backtrace");
}

bool counts_as_gpu_work(Kind k) { return k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset; }

StrId recorded_name_id(const RankTrace& t, std::size_t i) {
  const std::optional<EventExtra> x = t.extra_of(i);
  return x && x->alt_name != kNoStr ? x->alt_name : t.events.name[i];
}

// The figures of one name's durations, sorted ascending.
DurationStats sorted_duration_stats(std::string name, std::span<ns_t> d) {
  DurationStats s;
  s.name = std::move(name);
  s.instances = d.size();
  if (d.empty()) return s;
  for (ns_t x : d) s.total += x;
  std::size_t n = d.size();
  s.min = d.front();
  s.max = d.back();
  s.avg = static_cast<double>(s.total) / static_cast<double>(n);
  s.median = n % 2 ? static_cast<double>(d[n / 2])
                   : (static_cast<double>(d[n / 2 - 1]) + static_cast<double>(d[n / 2])) / 2.0;
  if (n > 1) {
    // Deviations from the exact mean in long double: durations reach 1e10 ns and their squares
    // would lose the last digits in double.
    long double mean = static_cast<long double>(s.total) / static_cast<long double>(n), ss = 0;
    for (ns_t x : d) ss += (static_cast<long double>(x) - mean) * (static_cast<long double>(x) - mean);
    s.stddev = static_cast<double>(std::sqrt(ss / static_cast<long double>(n - 1)));
  }
  return s;
}


// The durations of the events `name_of(i)` groups (a StrId, or kNoStr to leave the event out),
// per name: counted first, then gathered into one list, a slice a name, so that a trace's
// million kernels take 8 bytes each and no list grows. Largest total first; ties by name so the
// order is stable (names are interned: one StrId a text).
template <class NameOf>
std::vector<DurationStats> table(const RankTrace& t, const NameOf& name_of) {
  const EventTable& ev = t.events;
  std::vector<std::size_t> start(t.strings.size() + 1, 0);
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (const StrId n = name_of(i); n != kNoStr) ++start[n + 1];
  for (std::size_t n = 1; n < start.size(); ++n) start[n] += start[n - 1];
  std::vector<ns_t> durs(start.back());
  std::vector<std::size_t> next(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (const StrId n = name_of(i); n != kNoStr) durs[next[n]++] = ev.dur[i];
  std::vector<DurationStats> out;
  ns_t all = 0;
  for (StrId n = 0; n < t.strings.size(); ++n) {
    if (start[n + 1] == start[n]) continue;
    std::span<ns_t> d(durs.data() + start[n], start[n + 1] - start[n]);
    std::sort(d.begin(), d.end());
    out.push_back(sorted_duration_stats(std::string(t.str(n)), d));
    all += out.back().total;
  }
  for (auto& s : out) s.time_pct = all > 0 ? 100.0 * static_cast<double>(s.total) / static_cast<double>(all) : 0;
  std::sort(out.begin(), out.end(), [](const DurationStats& a, const DurationStats& b) {
    return a.total != b.total ? a.total > b.total : a.name < b.name;
  });
  return out;
}

// nsys analyze's cuda_api_sync rule (a call named *Synchronize), kept literal, not the facts layer's.
bool is_sync_api(std::string_view n) { return n.find("Synchronize") != std::string_view::npos; }

// Calls that block the host on the device: those CUPTI paired with a synchronisation record,
// and the *Synchronize calls of traces that record none.
std::uint64_t count_sync_calls(const RankTrace& t) {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (!is_api_call(t.events.kind[i])) continue;
    bool synced = false;
    for (auto g : t.correlations.gpu(t.events.correlation[i])) synced = synced || t.events.kind[g] == Kind::GpuSync;
    if (synced || is_sync_api(t.name_of(i))) ++n;
  }
  return n;
}

bool launches_kernel(const RankTrace& t, std::size_t i) {
  for (auto g : t.correlations.gpu(t.events.correlation[i]))
    if (t.events.kind[g] == Kind::Kernel) return true;
  return false;
}

bool syncs(const RankTrace& t, std::size_t i) {
  if (is_sync_api(t.name_of(i))) return true;
  for (auto g : t.correlations.gpu(t.events.correlation[i]))
    if (t.events.kind[g] == Kind::GpuSync) return true;
  return false;
}

// Per thread, in time order: each launch is "then synced" when a synchronising call comes before
// the thread's next launch (synchronising by the cuda_api_sync rule above, as sync_calls counts).
void launch_sync_pattern(const RankTrace& t, CudaSummary& out) {
  std::map<std::string_view, std::uint64_t> names;
  for (const auto& track : t.host_tracks) {
    bool pending = false;
    for (auto i : track.events) {
      if (!is_api_call(t.events.kind[i])) continue;
      if (launches_kernel(t, i)) {
        ++out.kernel_launches;
        pending = true;
      } else if (pending && syncs(t, i)) {
        ++out.launches_then_sync;
        ++names[t.name_of(i)];
        pending = false;
      }
    }
  }
  std::uint64_t best = 0;
  for (auto [n, c] : names)
    if (c > best) best = c, out.sync_after_launch = std::string(n);
}

// nsys analyze's cuda_memcpy_async rule (a pageable copy launched by an *Async call), kept literal.
std::uint64_t count_pageable_async(const RankTrace& t) {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.kind[i] != Kind::Memcpy || t.events.host_mem[i] != HostMem::Pageable) continue;
    auto call = t.correlations.launch(t.events.correlation[i]);
    if (call != CorrelationIndex::kNoEvent && t.name_of(call).find("Async") != std::string_view::npos) ++n;
  }
  return n;
}

DeviceBusy device_busy(std::int64_t device, std::vector<std::pair<ns_t, ns_t>> spans, ns_t threshold) {
  std::sort(spans.begin(), spans.end());
  DeviceBusy d;
  d.device = device;
  ns_t cur_start = spans.front().first, cur_end = spans.front().second, last = cur_end;
  for (std::size_t k = 1; k < spans.size(); ++k) {
    auto [s, e] = spans[k];
    last = std::max(last, e);
    if (s > cur_end) {
      d.busy += cur_end - cur_start;
      ns_t gap = s - cur_end;
      d.largest_gap = std::max(d.largest_gap, gap);
      if (gap > threshold) ++d.gaps_over_threshold;
      cur_start = s;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  d.busy += cur_end - cur_start;
  d.span = last - spans.front().first;
  d.idle = d.span - d.busy;
  d.idle_pct = d.span > 0 ? 100.0 * static_cast<double>(d.idle) / static_cast<double>(d.span) : 0;
  return d;
}

}  // namespace

DurationStats duration_stats(std::string name, std::vector<ns_t> d) {
  std::sort(d.begin(), d.end());
  return sorted_duration_stats(std::move(name), d);
}

CudaSummary summarize_cuda(const RankTrace& t, ns_t gap_threshold) {
  CudaSummary out;
  out.gap_threshold = gap_threshold;
  const EventTable& ev = t.events;
  std::map<CopyKind, std::vector<ns_t>> copies;
  std::map<CopyKind, std::int64_t> copy_bytes;
  std::map<std::int64_t, std::size_t> device_spans;  // device -> its GPU work, counted
  auto device_of = [&](std::size_t i) -> std::int64_t { return ev.device[i] >= 0 ? ev.device[i] : ev.pid(i); };
  auto complete = [&](std::size_t i, Kind k) { return ev.phase[i] == Phase::Complete && ev.kind[i] == k; };
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev.phase[i] != Phase::Complete) continue;
    Kind k = ev.kind[i];
    if (counts_as_gpu_work(k)) ++device_spans[device_of(i)];
    if (k == Kind::Kernel) {
      ++out.kernel_count;
      out.kernel_total += ev.dur[i];
    } else if (k == Kind::Memcpy) {
      copies[ev.copy_kind[i]].push_back(ev.dur[i]);
      copy_bytes[ev.copy_kind[i]] += std::max<std::int64_t>(0, t.bytes_of(i));
    }
  }
  // One table at a time, each gathering only its own durations.
  out.kernels = table(t, [&](std::size_t i) { return complete(i, Kind::Kernel) ? ev.name[i] : kNoStr; });
  out.kernels_short_name = table(t, [&](std::size_t i) {
    if (!complete(i, Kind::Kernel)) return kNoStr;
    const std::optional<EventExtra> x = t.extra_of(i);
    return x ? x->alt_name : kNoStr;
  });
  out.runtime_api = table(t, [&](std::size_t i) {
    if (ev.phase[i] != Phase::Complete || ev.kind[i] == Kind::Kernel || ev.kind[i] == Kind::Memcpy || !is_api_row(t, i)) return kNoStr;
    return recorded_name_id(t, i);
  });
  for (auto& [kind, durs] : copies)
    out.memcpy_by_kind.push_back({copy_kind_name(kind), copy_bytes[kind], duration_stats(copy_kind_name(kind), std::move(durs))});
  std::sort(out.memcpy_by_kind.begin(), out.memcpy_by_kind.end(),
            [](const CopyKindStats& a, const CopyKindStats& b) { return a.time.total > b.time.total; });
  out.sync_calls = count_sync_calls(t);
  out.pageable_async_copies = count_pageable_async(t);
  launch_sync_pattern(t, out);
  // Every device's spans in one pass over the events (a pass per device grows with devices x
  // events: 40k device ids in a 5 MB trace took minutes).
  std::map<std::int64_t, std::vector<std::pair<ns_t, ns_t>>> spans_of;
  for (const auto& [dev, count] : device_spans) spans_of[dev].reserve(count);
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (ev.phase[i] == Phase::Complete && counts_as_gpu_work(ev.kind[i])) spans_of[device_of(i)].emplace_back(ev.ts[i], ev.end(i));
  for (auto& [dev, spans] : spans_of) out.devices.push_back(device_busy(dev, std::move(spans), gap_threshold));
  out.present = !device_spans.empty() || !out.runtime_api.empty();
  return out;
}

}  // namespace stepscope
