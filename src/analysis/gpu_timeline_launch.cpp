// Launch overhead: how many kernels a step launches, how short they are, and the gaps between
// consecutive kernels on a stream. Many short kernels separated by gaps mean the GPU waits on
// the host's launch rate (fix: CUDA graphs, fusion, torch.compile).
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <numeric>

#include "gpu_timeline_internal.hpp"
#include "hta_view.hpp"

namespace stepscope::detail {

namespace {

// Kernels grouped by (device, stream), the groups ascending, each in time order with ties in
// event order: the order of one stable sort of every kernel by (device, stream, ts), kept as event
// numbers (4 bytes a kernel, not a sorted copy of their times and a sort buffer).
//   kernels e1 (dev 0, stream 7, ts 5), e2 (0, 3, 9), e3 (0, 7, 2)  ->  [e2], [e3, e1]
class KernelsByStream {
 public:
  explicit KernelsByStream(const EventTable& ev) : ev_(ev) {}

  void add(std::uint32_t i) {
    const std::pair<std::int64_t, std::int64_t> key{ev_.device[i], ev_.stream[i]};
    if (last_ >= keys_.size() || keys_[last_] != key) {
      // A map, not a scan of the keys: a scan per kernel grows with kernels x streams.
      const auto [it, added] = index_.try_emplace(key, keys_.size());
      last_ = it->second;
      if (added) {
        keys_.push_back(key);
        groups_.emplace_back();
      }
    }
    groups_[last_].push_back(i);
  }

  // Positive gaps between a kernel's start and the previous kernel's end on the same stream.
  std::vector<double> gaps() {
    std::vector<std::size_t> order(keys_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys_[a] < keys_[b]; });
    const auto earlier = [&](std::uint32_t a, std::uint32_t b) { return ev_.ts[a] < ev_.ts[b]; };
    std::vector<double> out;
    for (std::size_t k : order) {
      std::vector<std::uint32_t>& g = groups_[k];
      if (!std::is_sorted(g.begin(), g.end(), earlier)) std::stable_sort(g.begin(), g.end(), earlier);
      for (std::size_t n = 1; n < g.size(); ++n) {
        const ns_t gap = ev_.ts[g[n]] - ev_.end(g[n - 1]);
        if (gap > 0) out.push_back(static_cast<double>(gap));
      }
      std::vector<std::uint32_t>().swap(g);
    }
    return out;
  }

 private:
  const EventTable& ev_;
  std::vector<std::pair<std::int64_t, std::int64_t>> keys_;  // (device, stream) of each group
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> index_;  // key -> its group
  std::deque<std::vector<std::uint32_t>> groups_;
  std::size_t last_ = 0;  // the group of the last kernel added: kernels come in runs of one stream
};

}  // namespace

LaunchOverhead launch_overhead(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                               const GpuTimelineOptions& opts) {
  const EventTable& ev = rank.events;
  LaunchOverhead out;
  out.short_kernel = opts.short_kernel;
  out.kernels_per_step.assign(steps.size(), 0);
  // Launch calls: "cudaLaunchKernel", "cuLaunchKernel", "hipLaunchKernel", "cudaGraphLaunch", ...
  auto is_launch_call = [&](std::size_t i) {
    const Kind k = ev.kind[i];
    return (k == Kind::Runtime || k == Kind::Driver) && facts.of(ev.name[i]).has(kNameLaunchApi);
  };
  // Counted first, so that the samples (millions in a long trace) are allocated once, not grown.
  std::size_t kernel_count = 0, launch_count = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev.phase[i] != Phase::Complete) continue;
    launch_count += is_launch_call(i);
    kernel_count += ev.kind[i] == Kind::Kernel;
  }
  KernelsByStream kernels(ev);
  std::vector<double> durs, launch_durs;
  durs.reserve(kernel_count);
  launch_durs.reserve(launch_count);
  std::int64_t short_count = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev.phase[i] != Phase::Complete) continue;
    if (is_launch_call(i)) launch_durs.push_back(static_cast<double>(ev.dur[i]));
    if (ev.kind[i] != Kind::Kernel) continue;
    kernels.add(static_cast<std::uint32_t>(i));
    durs.push_back(static_cast<double>(ev.dur[i]));
    if (ev.dur[i] < opts.short_kernel) ++short_count;
    // A kernel belongs to the step whose host range launched it (it may run after the step).
    const std::uint32_t call = ev.correlation[i] >= 0 ? rank.correlations.launch(ev.correlation[i]) : CorrelationIndex::kNoEvent;
    const ns_t when = call != CorrelationIndex::kNoEvent ? ev.ts[call] : ev.ts[i];
    if (int s = step_index(steps, when); s >= 0) ++out.kernels_per_step[static_cast<std::size_t>(s)];
  }
  out.kernels = static_cast<std::int64_t>(durs.size());
  out.short_kernel_share = durs.empty() ? std::numeric_limits<double>::quiet_NaN()
                                        : static_cast<double>(short_count) / static_cast<double>(durs.size());
  if (steps.empty()) {
    out.mean_kernels_per_step = std::numeric_limits<double>::quiet_NaN();
  } else {
    std::int64_t in_steps = 0;
    for (auto c : out.kernels_per_step) in_steps += c;
    out.mean_kernels_per_step = static_cast<double>(in_steps) / static_cast<double>(steps.size());
  }
  out.kernel_duration = summarize(std::move(durs));
  out.launch_call = summarize(std::move(launch_durs));
  out.gaps = summarize(kernels.gaps());
  return out;
}

}  // namespace stepscope::detail
