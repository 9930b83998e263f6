#include "partition.hpp"

#include <algorithm>
#include <vector>

namespace stepscope::tracegen {
namespace {

// Sweep channels: each counts the intervals of one kind active at an instant.
enum Channel : int {
  kGpuStage0 = 0,     // + Stage: compute kernels by stage
  kGpuComm = 4,
  kGpuHtoD,
  kGpuDtoH,
  kGpuMemset,
  kGpuSide,           // GPU work launched inside side work
  kMainRole0 = 9,     // + HostRole (Marker unused)
  kMainStage0 = 15,   // + Stage (Forward..Optimizer): host ops inside a stage
  kAutoRole0 = 18,
  kAutoStage0 = 24,
  kSyncTail = 27,
  kChannels
};

struct Edge {
  ns_t t;
  int channel;
  int delta;
};

void add_interval(std::vector<Edge>& edges, ns_t a, ns_t b, int channel) {
  if (b <= a) return;
  edges.push_back({a, channel, +1});
  edges.push_back({b, channel, -1});
}

int gpu_channel(const Event& e) {
  if (e.side_work && e.gclass != GpuClass::Comm && e.gclass != GpuClass::None) return kGpuSide;
  switch (e.gclass) {
    case GpuClass::Compute: return kGpuStage0 + static_cast<int>(e.stage);
    case GpuClass::Comm: return kGpuComm;
    case GpuClass::HtoD: return kGpuHtoD;
    case GpuClass::DtoH: return kGpuDtoH;
    case GpuClass::Memset: return kGpuMemset;
    case GpuClass::None: break;
  }
  return -1;
}

// Host intervals of the two threads the partition reads (a server's other threads are not the loop).
bool is_host(const Event& e) {
  return (e.type == EvType::CpuOp || e.type == EvType::UserAnnotation || e.type == EvType::Runtime ||
          e.type == EvType::PythonFunction) &&
         e.thread <= kAutogradThread;
}

std::vector<ns_t> sorted_gpu_starts(std::span<const Event> events) {
  std::vector<ns_t> starts;
  for (const Event& e : events)
    if (e.gclass != GpuClass::None) starts.push_back(e.ts);
  std::sort(starts.begin(), starts.end());
  return starts;
}

// The idle tail of a synchronising call: from its end until the GPU next starts any activity.
void add_sync_tails(std::vector<Edge>& edges, std::span<const Event> events, ns_t w1,
                    ns_t carried_tail) {
  const std::vector<ns_t> gpu_starts = sorted_gpu_starts(events);
  const auto tail_end = [&](ns_t from) {
    auto it = std::lower_bound(gpu_starts.begin(), gpu_starts.end(), from);
    return it == gpu_starts.end() ? w1 : *it;
  };
  if (carried_tail >= 0) add_interval(edges, carried_tail, tail_end(carried_tail), kSyncTail);
  for (const Event& e : events)
    if (is_host(e) && e.role == HostRole::Sync)
      add_interval(edges, e.end(), tail_end(e.end()), kSyncTail);
}

std::vector<Edge> collect_edges(std::span<const Event> events, ns_t w1, bool gpu,
                                ns_t carried_tail) {
  std::vector<Edge> edges;
  edges.reserve(events.size() * 4);
  for (const Event& e : events) {
    if (e.gclass != GpuClass::None) {
      add_interval(edges, e.ts, e.end(), gpu_channel(e));
      continue;
    }
    if (!is_host(e) || e.role == HostRole::Marker) continue;
    const bool main = e.thread == kMainThread;
    add_interval(edges, e.ts, e.end(), (main ? kMainRole0 : kAutoRole0) + static_cast<int>(e.role));
    if (e.stage != Stage::Other)
      add_interval(edges, e.ts, e.end(), (main ? kMainStage0 : kAutoStage0) + static_cast<int>(e.stage));
  }
  if (gpu) add_sync_tails(edges, events, w1, carried_tail);
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  return edges;
}

using Counts = std::array<int, kChannels>;

bool any(const Counts& c, int ch) { return c[static_cast<std::size_t>(ch)] > 0; }

// What one host thread is doing, by priority; Count when it records nothing.
Category host_blame(const Counts& c, int roles, int stages, bool gpu) {
  auto role = [&](HostRole r) { return any(c, roles + static_cast<int>(r)); };
  if (role(HostRole::Loader)) return Category::BatchWait;
  if (role(HostRole::Sync)) return Category::SyncStall;
  if (role(HostRole::Side)) return Category::SideWork;
  if (gpu && role(HostRole::Launch)) return Category::LaunchOverhead;
  if (!gpu) {
    // Without GPU events the model's own ops are the compute.
    for (int s = 0; s < 3; ++s)
      if (any(c, stages + s)) return static_cast<Category>(static_cast<int>(Category::ComputeForward) + s);
  }
  if (role(HostRole::Op) || role(HostRole::Launch)) return Category::HostCompute;
  return Category::Count;
}

Category classify(const Counts& c, bool gpu) {
  if (gpu) {
    for (int s = 0; s < 4; ++s)
      if (any(c, kGpuStage0 + s)) return static_cast<Category>(static_cast<int>(Category::ComputeForward) + s);
    if (any(c, kGpuComm)) return Category::GradSyncExposed;
    if (any(c, kGpuSide)) return Category::SideWork;
    if (any(c, kGpuHtoD)) return Category::H2DCopy;
    if (any(c, kGpuDtoH)) return Category::D2HCopy;
    if (any(c, kGpuMemset)) return Category::Memset;
  }
  Category h = host_blame(c, kMainRole0, kMainStage0, gpu);
  if (h == Category::Count) h = host_blame(c, kAutoRole0, kAutoStage0, gpu);
  if (h != Category::Count) return h;
  return gpu && any(c, kSyncTail) ? Category::SyncStall : Category::Idle;
}

}  // namespace

ns_t open_sync_tail(std::span<const Event> events) {
  const std::vector<ns_t> gpu_starts = sorted_gpu_starts(events);
  ns_t open = -1;
  for (const Event& e : events) {
    if (!is_host(e) || e.role != HostRole::Sync) continue;
    if (!gpu_starts.empty() && gpu_starts.back() >= e.end()) continue;
    open = open < 0 ? e.end() : std::min(open, e.end());
  }
  return open;
}

Breakdown partition_window(std::span<const Event> events, ns_t w0, ns_t w1, bool gpu,
                           ns_t carried_tail) {
  Breakdown out{};
  const std::vector<Edge> edges = collect_edges(events, w1, gpu, carried_tail);
  Counts counts{};
  ns_t t = w0;
  std::size_t i = 0;
  // Edges before the window only set the counts.
  for (; i < edges.size() && edges[i].t <= w0; ++i) counts[static_cast<std::size_t>(edges[i].channel)] += edges[i].delta;
  while (t < w1) {
    const ns_t next = i < edges.size() ? std::min(edges[i].t, w1) : w1;
    if (next > t) out[static_cast<std::size_t>(classify(counts, gpu))] += next - t;
    t = next;
    for (; i < edges.size() && edges[i].t == t; ++i) counts[static_cast<std::size_t>(edges[i].channel)] += edges[i].delta;
  }
  return out;
}

}  // namespace stepscope::tracegen
