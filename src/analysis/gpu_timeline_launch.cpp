// Launch overhead: how many kernels a step launches, how short they are, and the gaps between
// consecutive kernels on a stream. Many short kernels separated by gaps mean the GPU waits on
// the host's launch rate (fix: CUDA graphs, fusion, torch.compile).
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "gpu_timeline_internal.hpp"
#include "hta_view.hpp"

namespace stepscope::detail {

namespace {

// A kernel as the gap computation needs it; sorting these contiguous records by (device,
// stream, start) puts each stream's kernels in time order.
struct KernelSlot {
  std::int64_t device, stream;
  ns_t ts, end;
};

// Positive gaps between a kernel's start and the previous kernel's end on the same stream.
std::vector<double> stream_gaps(std::vector<KernelSlot> ks) {
  std::stable_sort(ks.begin(), ks.end(), [](const KernelSlot& a, const KernelSlot& b) {
    return std::tie(a.device, a.stream, a.ts) < std::tie(b.device, b.stream, b.ts);
  });
  std::vector<double> gaps;
  for (std::size_t k = 1; k < ks.size(); ++k) {
    if (ks[k].device != ks[k - 1].device || ks[k].stream != ks[k - 1].stream) continue;
    ns_t gap = ks[k].ts - ks[k - 1].end;
    if (gap > 0) gaps.push_back(static_cast<double>(gap));
  }
  return gaps;
}

}  // namespace

LaunchOverhead launch_overhead(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                               const GpuTimelineOptions& opts) {
  const EventTable& ev = rank.events;
  LaunchOverhead out;
  out.short_kernel = opts.short_kernel;
  out.kernels_per_step.assign(steps.size(), 0);
  std::vector<KernelSlot> kernels;
  std::vector<double> durs, launch_durs;
  std::int64_t short_count = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev.phase[i] != Phase::Complete) continue;
    Kind k = ev.kind[i];
    // Launch calls: "cudaLaunchKernel", "cuLaunchKernel", "hipLaunchKernel", "cudaGraphLaunch", ...
    if ((k == Kind::Runtime || k == Kind::Driver) && facts.of(ev.name[i]).has(kNameLaunchApi))
      launch_durs.push_back(static_cast<double>(ev.dur[i]));
    if (k != Kind::Kernel) continue;
    kernels.push_back({ev.device[i], ev.stream[i], ev.ts[i], ev.end(i)});
    durs.push_back(static_cast<double>(ev.dur[i]));
    if (ev.dur[i] < opts.short_kernel) ++short_count;
    // A kernel belongs to the step whose host range launched it (it may run after the step).
    const std::uint32_t call = ev.correlation[i] >= 0 ? rank.correlations.launch(ev.correlation[i]) : CorrelationIndex::kNoEvent;
    const ns_t when = call != CorrelationIndex::kNoEvent ? ev.ts[call] : ev.ts[i];
    if (int s = step_index(steps, when); s >= 0) ++out.kernels_per_step[static_cast<std::size_t>(s)];
  }
  out.kernels = static_cast<std::int64_t>(kernels.size());
  out.short_kernel_share = kernels.empty() ? std::numeric_limits<double>::quiet_NaN()
                                           : static_cast<double>(short_count) / static_cast<double>(kernels.size());
  if (steps.empty()) {
    out.mean_kernels_per_step = std::numeric_limits<double>::quiet_NaN();
  } else {
    std::int64_t in_steps = 0;
    for (auto c : out.kernels_per_step) in_steps += c;
    out.mean_kernels_per_step = static_cast<double>(in_steps) / static_cast<double>(steps.size());
  }
  out.kernel_duration = summarize(std::move(durs));
  out.gaps = summarize(stream_gaps(std::move(kernels)));
  out.launch_call = summarize(std::move(launch_durs));
  return out;
}

}  // namespace stepscope::detail
