// Copies: every memcpy with its bytes, achieved bandwidth, host memory kind (pageable copies
// are staged through a driver buffer and block the host), direction, and whether it sits on the
// critical path: a copy that no kernel overlaps (on its device) is time the GPU spends only
// moving data, so shortening it shortens the step.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "gpu_timeline_internal.hpp"

namespace stepscope::detail {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Kernel unions per device; copies with an unknown device are checked against all kernels.
struct KernelUnions {
  std::map<std::int64_t, std::vector<Span>> by_device;
  std::vector<Span> all;

  const std::vector<Span>& of(std::int64_t device) const {
    auto it = by_device.find(device);
    return device < 0 || it == by_device.end() ? all : it->second;
  }
};

KernelUnions kernel_unions(const EventTable& ev) {
  std::map<std::int64_t, std::vector<Span>> spans;
  std::vector<Span> all;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (!is_kernel(ev, i)) continue;
    spans[ev.device[i]].push_back({ev.ts[i], ev.end(i)});
    all.push_back({ev.ts[i], ev.end(i)});
  }
  KernelUnions u;
  for (auto& [d, s] : spans) u.by_device[d] = union_of(std::move(s));
  u.all = union_of(std::move(all));
  return u;
}

double gbps(std::int64_t bytes, ns_t dur) {
  if (bytes < 0 || dur <= 0) return kNaN;
  return static_cast<double>(bytes) / static_cast<double>(dur);  // bytes per ns = GB/s
}

void add_to_group(CopyGroup& g, const CopyEvent& c, std::int64_t& timed_bytes, ns_t& timed_ns) {
  ++g.count;
  g.time += c.dur;
  if (c.bytes >= 0) {
    g.bytes += c.bytes;
    timed_bytes += c.bytes;
    timed_ns += c.dur;
  }
  if (c.critical) {
    ++g.critical_count;
    g.critical_time += c.dur;
  }
}

}  // namespace

Copies copies(const RankTrace& rank, const GpuTimelineOptions& opts) {
  const EventTable& ev = rank.events;
  KernelUnions kernels = kernel_unions(ev);
  Copies out;
  std::map<std::pair<int, int>, CopyGroup> groups;
  std::map<std::pair<int, int>, std::pair<std::int64_t, ns_t>> timed;  // bytes, ns with bytes
  std::vector<CopyEvent> all;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev.phase[i] != Phase::Complete || ev.kind[i] != Kind::Memcpy) continue;
    CopyEvent c;
    c.event = static_cast<std::uint32_t>(i);
    c.direction = ev.copy_kind[i];
    c.host = ev.host_mem[i];
    c.bytes = rank.bytes_of(i);
    c.ts = ev.ts[i];
    c.dur = ev.dur[i];
    c.gbps = gbps(c.bytes, c.dur);
    c.critical = !overlaps(kernels.of(ev.device[i]), c.ts, ev.end(i));
    auto key = std::make_pair(static_cast<int>(c.direction), static_cast<int>(c.host));
    CopyGroup& g = groups[key];
    g.direction = c.direction;
    g.host = c.host;
    add_to_group(g, c, timed[key].first, timed[key].second);
    ++out.count;
    out.time += c.dur;
    if (c.host == HostMem::Pageable) {
      ++out.pageable_count;
      out.pageable_time += c.dur;
    }
    if (c.critical) out.critical_time += c.dur;
    all.push_back(c);
  }
  for (auto& [key, g] : groups) {
    g.gbps = gbps(timed[key].second > 0 ? timed[key].first : -1, timed[key].second);
    out.groups.push_back(g);
  }
  std::stable_sort(out.groups.begin(), out.groups.end(),
                   [](const CopyGroup& a, const CopyGroup& b) { return a.time > b.time; });
  std::stable_sort(all.begin(), all.end(), [](const CopyEvent& a, const CopyEvent& b) { return a.dur > b.dur; });
  if (all.size() > static_cast<std::size_t>(std::max(0, opts.top_events)))
    all.resize(static_cast<std::size_t>(std::max(0, opts.top_events)));
  out.longest = std::move(all);
  return out;
}

}  // namespace stepscope::detail
