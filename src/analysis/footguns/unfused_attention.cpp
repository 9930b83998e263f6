// Attention with materialised scores: softmax kernels beside batched matmuls, no fused kernel.
#include <fmt/core.h>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

struct UnfusedAttention : EvidenceOf<UnfusedAttention> {
  ByName softmax_kernels;              // softmax (not log-softmax) kernels
  std::int64_t attention_kernels = 0;  // fused attention kernels
  ByName score_ops;                    // aten::bmm / aten::baddbmm / aten::matmul host ops

  void host(const HostEvent& e) override {
    if ((e.kind == Kind::CpuOp || e.kind == Kind::UserAnnotation) && e.steady_step() >= 0)
      add(score_ops, e.name(), e.dur);
  }
  void gpu(const GpuEvent& e) override {
    if (e.kind != Kind::Kernel || !is_compute_class(e.cls)) return;
    if (e.cls == KernelClass::Attention) ++attention_kernels;
    if (e.flags & kSoftmax) add(softmax_kernels, e.name(), e.dur);
  }
  void fields(EvidenceFields& v) override {
    v.field("softmax_kernels", softmax_kernels);
    v.field("attention_kernels", attention_kernels);
    v.field("score_ops", score_ops);
  }
};

std::optional<FootgunJudgement> judge_unfused_attention(const Judge& j) {
  if (j.sum<UnfusedAttention>([](const UnfusedAttention& r) { return r.attention_kernels; }) > 0) return std::nullopt;
  const ByName sm = j.merged(&UnfusedAttention::softmax_kernels);
  const NameTime s = total(sm), b = total(j.merged(&UnfusedAttention::score_ops));
  if (j.per_step(static_cast<double>(s.count)) < 1 || b.count < s.count) return std::nullopt;
  const double gain = j.per_step(static_cast<double>(s.time));
  if (!j.worth(gain)) return std::nullopt;
  return FootgunJudgement{
      FootgunId::UnfusedAttention,
      "attention without a fused kernel: softmax over materialised scores between batched matmuls",
      {"softmax kernels: " + j.top_names(sm, 2),
       fmt::format("{:.1f} aten::bmm/baddbmm ops per step; no flash/memory-efficient attention kernel in the trace",
                   j.per_step(static_cast<double>(b.count))),
       "gain: the softmax kernels' time, a lower bound (SDPA also never writes the scores)"},
      gain, j.step()};
}

}  // namespace

extern const Detector kUnfusedAttention{"unfused_attention",
                                        true,
                                        {.host_flags = kBmm, .gpu_flags = kSoftmax,
                                         .gpu_classes = class_bit(KernelClass::Attention)},
                                        UnfusedAttention::make,
                                        judge_unfused_attention};

}  // namespace stepscope::footgun
