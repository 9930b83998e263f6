// The caching allocator emptied every step: cudaMalloc and cudaFree in every steady step, which
// a warm pool never calls (a pool still growing calls them in the first steps only). cudaFree
// waits for the device, and both hold the host.
// Example: 13 calls a step taking 2.3 ms of a 6.5 ms step whose host-side time is 3.3 ms -> 2.3 ms.
#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

constexpr double kMinChurnSteps = 2;

struct AllocatorChurn : EvidenceOf<AllocatorChurn> {
  ByName device_allocs;                 // the device allocator's own calls in steady steps
  std::int64_t device_alloc_steps = 0;  // steady steps holding at least one of them

  void host(const HostEvent& e) override {
    const std::int64_t step = e.steady_step();
    if (step < 0) return;
    add(device_allocs, e.name(), e.dur);
    if (steps_.insert(step).second) ++device_alloc_steps;
  }
  void fields(EvidenceFields& v) override {
    v.field("device_allocs", device_allocs);
    v.field("device_alloc_steps", device_alloc_steps);
  }

 private:
  std::set<std::int64_t> steps_;
};

std::optional<FootgunJudgement> judge_allocator_churn(const Judge& j) {
  const double steps = j.sum<AllocatorChurn>([](const AllocatorChurn& r) { return r.device_alloc_steps; });
  if (j.steady < kMinChurnSteps || steps < j.steady) return std::nullopt;
  const ByName m = j.merged(&AllocatorChurn::device_allocs);
  const NameTime t = total(m);
  const double calls = j.per_step(static_cast<double>(t.time));
  const double host_side = j.job.cat(Category::HostCompute) + j.job.cat(Category::LaunchOverhead) +
                           j.job.cat(Category::SyncStall) + j.job.cat(Category::Idle);
  const double gain = std::min(calls, host_side);
  if (!j.worth(gain)) return std::nullopt;
  return FootgunJudgement{
      FootgunId::AllocatorChurn,
      "the caching allocator returns its memory every step and allocates it again (torch.cuda.empty_cache() in the "
      "loop, caching turned off with PYTORCH_NO_CUDA_MEMORY_CACHING=1, or a pool that cannot keep what the step "
      "needs)",
      {fmt::format("{:.1f} device allocator calls per steady step, in every one of the {:.0f} steady steps, {} per "
                   "step: {}",
                   j.per_step(static_cast<double>(t.count)), j.steady, ms(calls), j.top_names(m, 4)),
       fmt::format("once its pool has grown, PyTorch's caching allocator calls neither; the step's host-side time is {} "
                   "per step",
                   ms(host_side)),
       "gain: the calls' time, at most the step's host-side time (host compute, launch overhead, sync stall, idle)"},
      gain, j.step()};
}

}  // namespace

extern const Detector kAllocatorChurn{"allocator_churn", true, {.host_flags = kDeviceAlloc}, AllocatorChurn::make, judge_allocator_churn};

}  // namespace stepscope::footgun
