// Pageable host-to-device copies on the critical path (DataLoader without pin_memory).
#include <fmt/core.h>

#include <algorithm>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

struct PageableCopy : EvidenceOf<PageableCopy> {
  std::int64_t pageable_h2d = 0;
  ns_t pageable_h2d_time = 0;
  std::int64_t pageable_h2d_bytes = 0;

  void gpu(const GpuEvent& e) override {
    const EventTable& ev = e.scan.t.events;
    if (e.kind != Kind::Memcpy || ev.copy_kind[e.g] != CopyKind::HtoD || ev.host_mem[e.g] != HostMem::Pageable) return;
    ++pageable_h2d;
    pageable_h2d_time += e.dur;
    if (auto b = e.scan.t.bytes_of(e.g); b > 0) pageable_h2d_bytes += b;
  }
  void fields(EvidenceFields& v) override {
    v.field("pageable_h2d", pageable_h2d);
    v.field("pageable_h2d_time", pageable_h2d_time);
    v.field("pageable_h2d_bytes", pageable_h2d_bytes);
  }
};

std::optional<FootgunJudgement> judge_pageable_copy(const Judge& j) {
  const double n = j.sum<PageableCopy>([](const PageableCopy& r) { return r.pageable_h2d; });
  if (n <= 0) return std::nullopt;
  const double time = j.per_step(j.sum<PageableCopy>([](const PageableCopy& r) { return r.pageable_h2d_time; }));
  const double gain = std::min(time, j.job.cat(Category::H2DCopy));
  if (!j.worth(gain)) return std::nullopt;
  const double bytes = j.per_step(j.sum<PageableCopy>([](const PageableCopy& r) { return r.pageable_h2d_bytes; }));
  return FootgunJudgement{
      FootgunId::PageableCopy,
      "host-to-device copies from pageable memory (DataLoader without pin_memory, or unpinned tensors)",
      {fmt::format("{:.1f} 'Memcpy HtoD (Pageable -> Device)' copies per step, {:.1f} MB, {} per step", j.per_step(n),
                   bytes / 1e6, ms(time)),
       fmt::format("H2D copy on the step's critical path: {} per step", ms(j.job.cat(Category::H2DCopy))),
       "gain: the pageable copy time the GPU waits on (pinned + non_blocking copies overlap compute)"},
      gain, j.step()};
}

}  // namespace

extern const Detector kPageableCopy{"pageable_copy", true, {.copies = true}, PageableCopy::make, judge_pageable_copy};

}  // namespace stepscope::footgun
