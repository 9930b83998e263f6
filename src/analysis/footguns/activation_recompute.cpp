// Activation checkpointing where device memory would allow keeping activations: forward ops
// recomputed inside backward.
#include <fmt/core.h>

#include "stepscope/analysis.hpp"
#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

constexpr double kRecomputeMinHeadroom = 0.2;  // free device memory needed to suggest dropping it

struct ActivationRecompute : EvidenceOf<ActivationRecompute> {
  std::int64_t recompute_kernels = 0;  // launched under a checkpoint marker inside backward
  ns_t recompute_time = 0;

  void gpu(const GpuEvent& e) override {
    if (e.kind != Kind::Kernel || !is_compute_class(e.cls) || !e.ctx || !e.ctx->backward || !e.ctx->checkpoint) return;
    ++recompute_kernels;
    recompute_time += e.dur;
  }
  void fields(EvidenceFields& v) override {
    v.field("recompute_kernels", recompute_kernels);
    v.field("recompute_time", recompute_time);
  }
};

std::optional<FootgunJudgement> judge_activation_recompute(const Judge& j) {
  const double kernels = j.sum<ActivationRecompute>([](const ActivationRecompute& s) { return s.recompute_kernels; });
  if (kernels <= 0) return std::nullopt;
  const double gain = j.per_step(j.sum<ActivationRecompute>([](const ActivationRecompute& s) { return s.recompute_time; }));
  if (!j.worth(gain)) return std::nullopt;
  std::string memory = "no [memory] events in the trace: the memory headroom is unknown (profile_memory=True "
                       "shows it); drop checkpointing only if activations fit";
  const AnalysisResult& r = j.result;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const auto& m = r.ranks[i].gpu_timeline.memory;
    if (!m.available) continue;
    for (const auto& d : m.devices)
      for (const auto& p : r.ranks[i].ingest.devices) {
        if (p.id != d.device_id || p.total_global_mem <= 0 || d.peak_allocated <= 0) continue;
        const double free = 1.0 - static_cast<double>(d.peak_allocated) / static_cast<double>(p.total_global_mem);
        if (free < kRecomputeMinHeadroom) return std::nullopt;  // memory is tight: checkpointing is the right trade
        memory = fmt::format("peak allocated {:.2f} GB of {:.2f} GB on device {} ({} free)", d.peak_allocated / 1e9,
                             static_cast<double>(p.total_global_mem) / 1e9, p.id, pct(free));
      }
  }
  return FootgunJudgement{
      FootgunId::ActivationRecompute,
      "activation checkpointing recomputes forward ops inside backward",
      {fmt::format("{:.1f} GPU kernels per step launched inside backward by recomputed forward ops (under a "
                   "checkpoint marker, or forward-only ops such as aten::linear inside a backward node), {} per step",
                   j.per_step(kernels), ms(gain)),
       memory, "gain: the recomputed kernels' time, if the activations fit without checkpointing"},
      gain, j.step()};
}

}  // namespace

extern const Detector kActivationRecompute{"activation_recompute", false, {.gpu_context = kInBackward},
                                           ActivationRecompute::make, judge_activation_recompute};

}  // namespace stepscope::footgun
