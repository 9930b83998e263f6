// DDP all-reduce launched only after backward ends (no overlap). Only the gradients' share of the
// exposed communication (FootgunJob::grad_share) is the all-reduce's: all-to-all exchange beside
// it is not.
#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

constexpr double kExposedShare = 0.05;  // exposed all-reduce share for the overlap check
constexpr double kOverlapHides = 0.8;   // as the ddp_buckets lever (seed 001 T23)

struct DdpNoOverlap : EvidenceOf<DdpNoOverlap> {
  // Steady steps with all-reduces, and those whose all-reduces all start after backward ended.
  std::int64_t allreduce_steps = 0, allreduce_after_backward_steps = 0;
  std::int64_t allreduces = 0;
  ns_t allreduce_time = 0;

  // Backward's end per step: the last backward node on any host thread.
  void host(const HostEvent& e) override {
    const std::int64_t step = e.steady_step();
    if (step < 0) return;
    ns_t& end = backward_end_[step];
    end = std::max(end, e.ts + e.dur);
  }
  void gpu(const GpuEvent& e) override {
    if (e.kind != Kind::Kernel || e.scan.facts.of_event(e.scan.t, e.g).collective != Collective::AllReduce) return;
    ++allreduces;
    allreduce_time += e.dur;
    ns_t& first = first_launch_[e.step];
    const ns_t ts = e.scan.launch_ts(e.g);
    first = first == 0 ? ts : std::min(first, ts);
  }
  void finish(const Scan&) override {
    for (const auto& [step, first] : first_launch_) {
      ++allreduce_steps;
      auto it = backward_end_.find(step);
      if (it != backward_end_.end() && first >= it->second) ++allreduce_after_backward_steps;
    }
  }
  void fields(EvidenceFields& v) override {
    v.field("allreduce_steps", allreduce_steps);
    v.field("allreduce_after_backward_steps", allreduce_after_backward_steps);
    v.field("allreduces", allreduces);
    v.field("allreduce_time", allreduce_time);
  }

 private:
  std::map<std::int64_t, ns_t> first_launch_, backward_end_;  // by steady step
};

std::optional<FootgunJudgement> judge_ddp_no_overlap(const Judge& j) {
  const double steps = j.sum<DdpNoOverlap>([](const DdpNoOverlap& r) { return r.allreduce_steps; });
  const double after = j.sum<DdpNoOverlap>([](const DdpNoOverlap& r) { return r.allreduce_after_backward_steps; });
  const double exposed = j.job.grad_share * j.job.cat(Category::GradSyncExposed);
  if (steps <= 0 || after < steps || exposed < kExposedShare * j.step()) return std::nullopt;
  const double backward = j.job.cat(Category::ComputeBackward);
  const double gain = kOverlapHides * std::min(exposed, backward);
  if (!j.worth(gain)) return std::nullopt;
  return FootgunJudgement{
      FootgunId::DdpNoOverlap,
      "gradient all-reduce starts only after backward has ended: nothing overlaps it",
      {fmt::format("in all {:.0f} steady steps with an all-reduce, the first all-reduce launch comes after the last "
                   "backward op ended ({:.1f} all-reduce kernels per step, {} per step)",
                   steps, j.per_step(j.sum<DdpNoOverlap>([](const DdpNoOverlap& r) { return r.allreduces; })),
                   ms(j.per_step(j.sum<DdpNoOverlap>([](const DdpNoOverlap& r) { return r.allreduce_time; })))),
       fmt::format("exposed gradient sync {} per step ({} of the step); backward compute {} per step", ms(exposed),
                   pct(exposed / j.step()), ms(backward)),
       "gain: 80% of the exposed all-reduce, at most the backward compute it can hide under"},
      gain, j.step()};
}

}  // namespace

extern const Detector kDdpNoOverlap{"ddp_no_overlap",
                                    false,
                                    {.host_flags = kBackwardStage, .gpu_classes = class_bit(KernelClass::Communication)},
                                    DdpNoOverlap::make,
                                    judge_ddp_no_overlap};

}  // namespace stepscope::footgun
