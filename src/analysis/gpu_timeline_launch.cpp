// Launch overhead: how many kernels a step launches, how short they are, and the gaps between
// consecutive kernels on a stream. Many short kernels separated by gaps mean the GPU waits on
// the host's launch rate (fix: CUDA graphs, fusion, torch.compile).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "gpu_timeline_internal.hpp"

namespace stepscope::detail {

namespace {

// Start of the host call that launched each correlation id.
std::unordered_map<std::int64_t, ns_t> launch_call_ts(const EventTable& ev) {
  std::unordered_map<std::int64_t, ns_t> out;
  for (std::size_t i = 0; i < ev.size(); ++i)
    if ((ev.kind[i] == Kind::Runtime || ev.kind[i] == Kind::Driver) && ev.correlation[i] >= 0)
      out.emplace(ev.correlation[i], ev.ts[i]);
  return out;
}

bool is_launch_call(const RankTrace& rank, std::size_t i) {
  const EventTable& ev = rank.events;
  if (ev.phase[i] != Phase::Complete) return false;
  if (ev.kind[i] != Kind::Runtime && ev.kind[i] != Kind::Driver) return false;
  return rank.name_of(i).find("Launch") != std::string_view::npos;
}

// Positive gaps between a kernel's start and the previous kernel's end on the same stream.
std::vector<double> stream_gaps(const EventTable& ev, const std::vector<std::uint32_t>& kernels) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::uint32_t>> by_stream;
  for (auto i : kernels) by_stream[{ev.device[i], ev.stream[i]}].push_back(i);
  std::vector<double> gaps;
  for (auto& [key, ks] : by_stream) {
    std::stable_sort(ks.begin(), ks.end(), [&](auto a, auto b) { return ev.ts[a] < ev.ts[b]; });
    for (std::size_t k = 1; k < ks.size(); ++k) {
      ns_t gap = ev.ts[ks[k]] - ev.end(ks[k - 1]);
      if (gap > 0) gaps.push_back(static_cast<double>(gap));
    }
  }
  return gaps;
}

}  // namespace

LaunchOverhead launch_overhead(const RankTrace& rank, const std::vector<StepWindow>& steps,
                               const GpuTimelineOptions& opts) {
  const EventTable& ev = rank.events;
  auto launched_at = launch_call_ts(ev);
  LaunchOverhead out;
  out.short_kernel = opts.short_kernel;
  out.kernels_per_step.assign(steps.size(), 0);
  std::vector<std::uint32_t> kernels;
  std::vector<double> durs, launch_durs;
  std::int64_t short_count = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (is_launch_call(rank, i)) launch_durs.push_back(static_cast<double>(ev.dur[i]));
    if (!is_kernel(ev, i)) continue;
    kernels.push_back(static_cast<std::uint32_t>(i));
    durs.push_back(static_cast<double>(ev.dur[i]));
    if (ev.dur[i] < opts.short_kernel) ++short_count;
    // A kernel belongs to the step whose host range launched it (it may run after the step).
    auto it = launched_at.find(ev.correlation[i]);
    ns_t when = ev.correlation[i] >= 0 && it != launched_at.end() ? it->second : ev.ts[i];
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
  out.gaps = summarize(stream_gaps(ev, kernels));
  out.launch_call = summarize(std::move(launch_durs));
  return out;
}

}  // namespace stepscope::detail
