// HTA-compatible CUDA kernel launch statistics (CudaKernelAnalysis.cuda_kernel_launch_stats at
// f4d0062, defaults runtime_cutoff=50, launch_delay_cutoff=100, include_memory_events=True).
//
// Launch calls are the rows named cudaLaunchKernel, cudaLaunchKernelExC, MTIA's
// "runFunction - job_prep_and_submit_for_execution", plus cudaMemcpyAsync / cudaMemsetAsync
// with memory events. Not counted, as in HTA: cuLaunchKernel (Triton), hipLaunchKernel and
// every other HIP launch, cudaGraphLaunch. Each host row (no stream) whose correlation is a
// launch's is joined with every GPU row (with a stream) of the same correlation:
//   cpu_duration = host row dur, gpu_duration = GPU row dur,
//   launch_delay = max(0, gpu.ts - (cpu.ts + cpu.dur))   (from the END of the call)
// short kernels: cpu_duration <= runtime_cutoff and gpu_duration < cpu_duration;
// runtime outliers: cpu_duration > runtime_cutoff; delay outliers: launch_delay > cutoff.
#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "hta_breakdown.hpp"
#include "stepscope/correlation_table.hpp"

namespace stepscope::hta {

namespace {

// Correlation ids of the launch calls.
CorrelationTable<char> launch_correlations(const RankTrace& rank, const View& v, bool memory) {
  std::uint8_t want = memory ? (kLaunchKernel | kLaunchMemory) : kLaunchKernel;
  CorrelationTable<char> ids(rank.correlations, 0);
  for (const Row& r : v.rows)
    if (r.correlated() && (r.flags & want)) ids[r.correlation(rank.events)] = 1;
  return ids;
}

// The n largest by `key` (ties keep file order), without sorting the whole join.
std::vector<HtaLaunch> worst(const std::vector<HtaLaunch>& all, std::size_t n, ns_t HtaLaunch::*key) {
  std::vector<std::size_t> idx(all.size());
  for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = k;
  auto before = [&](std::size_t a, std::size_t b) {
    return all[a].*key != all[b].*key ? all[a].*key > all[b].*key : a < b;
  };
  n = std::min(n, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(), before);
  std::vector<HtaLaunch> out;
  for (std::size_t k = 0; k < n; ++k) out.push_back(all[idx[k]]);
  return out;
}

}  // namespace

HtaLaunchStats launch_stats(const RankTrace& rank, const View& v, const GpuTimelineOptions& opts) {
  const auto corrs = launch_correlations(rank, v, opts.include_memory_events);

  HtaLaunchStats out;
  std::vector<double> cpu_d, gpu_d, delay_d;
  std::vector<HtaLaunch> joined;
  for (const Row& c : v.rows) {
    if (c.stream != -1 || !c.correlated()) continue;
    const std::int64_t corr = c.correlation(rank.events);
    if (!corrs.find(corr)) continue;
    for (std::uint32_t k : v.gpu_by_correlation.find(corr)) {
      const Row& g = v.rows[k];
      HtaLaunch l{c.event, g.event, corr, c.dur(), g.dur(),
                  std::max<ns_t>(0, g.ts - (c.ts + c.dur()))};
      ++out.events;
      if (l.cpu_duration <= opts.runtime_cutoff && l.gpu_duration < l.cpu_duration) ++out.short_gpu_kernels;
      if (l.cpu_duration > opts.runtime_cutoff) ++out.runtime_outliers;
      if (l.launch_delay > opts.launch_delay_cutoff) ++out.launch_delay_outliers;
      if (l.gpu_duration < l.cpu_duration) ++out.gpu_shorter_than_cpu;
      cpu_d.push_back(static_cast<double>(l.cpu_duration));
      gpu_d.push_back(static_cast<double>(l.gpu_duration));
      delay_d.push_back(static_cast<double>(l.launch_delay));
      joined.push_back(l);
    }
  }
  out.cpu_duration = describe(std::move(cpu_d));
  out.gpu_duration = describe(std::move(gpu_d));
  out.launch_delay = describe(std::move(delay_d));
  auto n = static_cast<std::size_t>(std::max(0, opts.top_events));
  out.worst_delays = worst(joined, n, &HtaLaunch::launch_delay);
  out.worst_runtimes = worst(joined, n, &HtaLaunch::cpu_duration);
  return out;
}

}  // namespace stepscope::hta
