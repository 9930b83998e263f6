// Conv nets under AMP in NCHW: cuDNN converts layouts around every convolution.
#include <fmt/core.h>

#include <unordered_set>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

constexpr double kLayoutPerConv = 0.5;  // layout conversions per convolution call

struct NchwLayout : EvidenceOf<NchwLayout> {
  ByName layout_kernels;  // nchwToNhwc / nhwcToNchw kernels launched by convolution ops
  std::int64_t conv_calls = 0;  // convolution ops that launched convolution kernels
  // Convolutions or layout conversions in a 16-bit type: mixed precision is on (NHWC pays off).
  std::int64_t half_conv_or_layout = 0;
  ByName conv_names;

  void gpu(const GpuEvent& e) override {
    if (e.kind != Kind::Kernel || !is_compute_class(e.cls)) return;
    const bool conv = e.cls == KernelClass::Convolution, layout = (e.flags & kLayout) != 0;
    const bool in_conv = e.ctx && e.ctx->conv_op >= 0;
    if (conv) {
      add(conv_names, e.name(), e.dur);
      if (in_conv && ops_.insert(e.ctx->conv_op).second) ++conv_calls;
    }
    // Layout kernels carry their element type in template arguments (__half, BFloat16).
    if (conv || layout) {
      const DataType d = e.scan.facts.of_event(e.scan.t, e.g).dtype;
      if (d == DataType::Fp16 || d == DataType::Bf16) ++half_conv_or_layout;
    }
    if (layout && in_conv) add(layout_kernels, e.name(), e.dur);
  }
  void fields(EvidenceFields& v) override {
    v.field("layout_kernels", layout_kernels);
    v.field("conv_calls", conv_calls);
    v.field("half_conv_or_layout", half_conv_or_layout);
    v.field("conv_names", conv_names);
  }

 private:
  std::unordered_set<std::int64_t> ops_;
};

std::optional<FootgunJudgement> judge_nchw_layout(const Judge& j) {
  const ByName layout = j.merged(&NchwLayout::layout_kernels);
  const NameTime lt = total(layout);
  const double calls = j.sum<NchwLayout>([](const NchwLayout& r) { return r.conv_calls; });
  if (lt.count == 0 || calls <= 0 || static_cast<double>(lt.count) < kLayoutPerConv * calls) return std::nullopt;
  if (j.sum<NchwLayout>([](const NchwLayout& s) { return s.half_conv_or_layout; }) <= 0) return std::nullopt;
  const double gain = j.per_step(static_cast<double>(lt.time));
  if (!j.worth(gain)) return std::nullopt;
  return FootgunJudgement{
      FootgunId::NchwLayout,
      "conv net under mixed precision in NCHW: cuDNN converts between NCHW and NHWC around the convolutions",
      {fmt::format("{:.1f} layout-conversion kernels per step inside {:.1f} convolution calls per step, {} per step",
                   j.per_step(static_cast<double>(lt.count)), j.per_step(calls), ms(gain)),
       "conversions: " + j.top_names(layout, 2), "convolutions: " + j.top_names(j.merged(&NchwLayout::conv_names), 2),
       "gain: the conversion kernels' time (model and inputs in channels_last need none)"},
      gain, j.step()};
}

}  // namespace

extern const Detector kNchwLayout{"nchw_layout",
                                  true,
                                  {.gpu_flags = kLayout, .gpu_classes = class_bit(KernelClass::Convolution)},
                                  NchwLayout::make,
                                  judge_nchw_layout};

}  // namespace stepscope::footgun
