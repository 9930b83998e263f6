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

// The n largest launches by `key`, ties keeping the earlier in join order, kept as the join is
// read: what a partial sort of the whole join gives, holding n launches instead of all of them.
//   n = 2, delays 5, 9, 5, 9 in join order  ->  the second (9), the fourth (9)
class WorstLaunches {
 public:
  WorstLaunches(std::size_t n, ns_t HtaLaunch::*key) : n_(n), better_{key} {}

  void offer(const HtaLaunch& l) {
    const Entry e{l, seen_++};
    if (heap_.size() < n_) {
      heap_.push_back(e);
      std::push_heap(heap_.begin(), heap_.end(), better_);
    } else if (n_ > 0 && better_(e, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), better_);
      heap_.back() = e;
      std::push_heap(heap_.begin(), heap_.end(), better_);
    }
  }
  // Worst first.
  std::vector<HtaLaunch> take() {
    std::sort(heap_.begin(), heap_.end(), better_);
    std::vector<HtaLaunch> out;
    for (const Entry& e : heap_) out.push_back(e.launch);
    return out;
  }

 private:
  struct Entry {
    HtaLaunch launch;
    std::size_t order;
  };
  // As the heap's "less": its front is the entry every other beats, the one to give up first.
  struct Better {
    ns_t HtaLaunch::*key;
    bool operator()(const Entry& a, const Entry& b) const {
      return a.launch.*key != b.launch.*key ? a.launch.*key > b.launch.*key : a.order < b.order;
    }
  };
  std::size_t n_;
  Better better_;
  std::size_t seen_ = 0;
  std::vector<Entry> heap_;
};

}  // namespace

HtaLaunchStats launch_stats(const RankTrace& rank, const View& v, const GpuTimelineOptions& opts) {
  const auto corrs = launch_correlations(rank, v, opts.include_memory_events);

  // Host rows per counted correlation. HTA's merge pairs each with every GPU row of its id; an
  // id shared by thousands of calls (a malformed trace, id 0) would make that grow with the
  // square of the input, so such calls take one GPU row each.
  CorrelationTable<std::uint32_t> calls_of(rank.correlations, 0);
  for (const Row& c : v.rows)
    if (!c.gpu() && c.correlated() && corrs.find(c.correlation(rank.events))) ++calls_of[c.correlation(rank.events)];
  // Each (launch call, GPU row) pair of a counted correlation: HTA's inner merge.
  auto for_each_pair = [&](auto&& f) {
    for (std::size_t r = 0; r < v.rows.size(); ++r) {
      const Row& c = v.rows[r];
      if (c.gpu() || !c.correlated()) continue;
      const std::int64_t corr = c.correlation(rank.events);
      if (!corrs.find(corr)) continue;
      auto partners = v.gpu_by_correlation.find(corr);
      if (partners.empty()) continue;
      if (calls_of[corr] > 1) partners = partners.subspan(r % partners.size(), 1);
      for (std::uint32_t k : partners) f(c, v.rows[k], corr);
    }
  };
  auto launch_of = [&](const Row& c, const Row& g, std::int64_t corr) {
    const ns_t call_dur = v.clock.dur(c);
    return HtaLaunch{c.event, g.event, corr, call_dur, v.clock.dur(g),
                     std::max<ns_t>(0, v.clock.ts(g) - (v.clock.ts(c) + call_dur))};
  };
  HtaLaunchStats out;
  const auto n = static_cast<std::size_t>(std::max(0, opts.top_events));
  WorstLaunches worst_delays(n, &HtaLaunch::launch_delay), worst_runtimes(n, &HtaLaunch::cpu_duration);
  for_each_pair([&](const Row& c, const Row& g, std::int64_t corr) {
    const HtaLaunch l = launch_of(c, g, corr);
    ++out.events;
    if (l.cpu_duration <= opts.runtime_cutoff && l.gpu_duration < l.cpu_duration) ++out.short_gpu_kernels;
    if (l.cpu_duration > opts.runtime_cutoff) ++out.runtime_outliers;
    if (l.launch_delay > opts.launch_delay_cutoff) ++out.launch_delay_outliers;
    if (l.gpu_duration < l.cpu_duration) ++out.gpu_shorter_than_cpu;
    worst_delays.offer(l);
    worst_runtimes.offer(l);
  });
  // One sample at a time, each allocated once at the count of pairs: a long trace has millions.
  auto sample = [&](ns_t HtaLaunch::*field) {
    std::vector<double> d;
    d.reserve(static_cast<std::size_t>(out.events));
    for_each_pair([&](const Row& c, const Row& g, std::int64_t corr) { d.push_back(static_cast<double>(launch_of(c, g, corr).*field)); });
    return describe(std::move(d));
  };
  out.cpu_duration = sample(&HtaLaunch::cpu_duration);
  out.gpu_duration = sample(&HtaLaunch::gpu_duration);
  out.launch_delay = sample(&HtaLaunch::launch_delay);
  out.worst_delays = worst_delays.take();
  out.worst_runtimes = worst_runtimes.take();
  return out;
}

}  // namespace stepscope::hta
