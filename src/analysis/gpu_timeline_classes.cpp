// Finer kernel classes and communication per collective: where GPU time goes, in summed
// durations of kernels, copies and memsets (overlapping streams both count, so shares are of
// GPU work, not of wall time).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "gpu_timeline_internal.hpp"

namespace stepscope::detail {

// Classes and collectives are the facts layer's, read per event from the rank's name facts.
KernelClasses kernel_classes(const RankTrace& rank, const RankFacts& facts) {
  const EventTable& ev = rank.events;
  std::array<KernelClassShare, kKernelClassCount> cls{};
  std::array<CollectiveShare, kCollectiveCount> coll{};
  KernelClasses out;
  ns_t comm_time = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (!is_gpu_work(ev, i)) continue;
    const NameFact& f = facts.of(ev.name[i]);
    KernelClass c = f.cls;
    KernelClassShare& s = cls[static_cast<std::size_t>(c)];
    s.cls = c;
    ++s.count;
    s.time += ev.dur[i];
    out.total_time += ev.dur[i];
    if (c != KernelClass::Communication) continue;
    Collective k = f.collective;
    CollectiveShare& cs = coll[static_cast<std::size_t>(k)];
    cs.collective = k;
    ++cs.count;
    cs.time += ev.dur[i];
    comm_time += ev.dur[i];
  }
  for (KernelClassShare& s : cls) {
    if (s.count == 0) continue;
    s.share = out.total_time > 0 ? static_cast<double>(s.time) / static_cast<double>(out.total_time) : 0;
    out.classes.push_back(s);
  }
  for (CollectiveShare& s : coll) {
    if (s.count == 0) continue;
    s.share = comm_time > 0 ? static_cast<double>(s.time) / static_cast<double>(comm_time) : 0;
    out.collectives.push_back(s);
  }
  auto by_time = [](const auto& a, const auto& b) { return a.time > b.time; };
  std::stable_sort(out.classes.begin(), out.classes.end(), by_time);
  std::stable_sort(out.collectives.begin(), out.collectives.end(), by_time);
  ns_t tc = cls[static_cast<std::size_t>(KernelClass::GemmTensorCore)].time;
  ns_t gemm = tc + cls[static_cast<std::size_t>(KernelClass::Gemm)].time;
  out.tensor_core_share_of_gemm =
      gemm > 0 ? static_cast<double>(tc) / static_cast<double>(gemm) : std::numeric_limits<double>::quiet_NaN();
  return out;
}

}  // namespace stepscope::detail
