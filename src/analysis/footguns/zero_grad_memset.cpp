// zero_grad() without set_to_none: the gradients are memset every step.
#include <fmt/core.h>

#include <algorithm>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

struct ZeroGradMemset : EvidenceOf<ZeroGradMemset> {
  ByName zero_grad_gpu;          // memsets and fill kernels launched from zero_grad
  ns_t zero_grad_host_time = 0;  // summed outermost zero_grad spans

  void host(const HostEvent& e) override {
    if ((e.kind == Kind::CpuOp || e.kind == Kind::UserAnnotation) && e.ctx.zero_grad && !e.parent.zero_grad &&
        e.steady_step() >= 0)
      zero_grad_host_time += e.dur;
  }
  void gpu(const GpuEvent& e) override {
    if (!e.ctx || !e.ctx->zero_grad) return;
    if (e.kind == Kind::Memset) add(zero_grad_gpu, "Memset (Device)", e.dur);
    else if (e.kind == Kind::Kernel && (e.flags & kFill)) add(zero_grad_gpu, e.name(), e.dur);
  }
  void fields(EvidenceFields& v) override {
    v.field("zero_grad_gpu", zero_grad_gpu);
    v.field("zero_grad_host_time", zero_grad_host_time);
  }
};

std::optional<FootgunJudgement> judge_zero_grad_memset(const Judge& j) {
  const ByName m = j.merged(&ZeroGradMemset::zero_grad_gpu);
  const NameTime t = total(m);
  if (j.per_step(static_cast<double>(t.count)) < 1) return std::nullopt;
  const double kernels = j.per_step(static_cast<double>(t.time));
  const double span = j.per_step(j.sum<ZeroGradMemset>([](const ZeroGradMemset& r) { return r.zero_grad_host_time; }));
  // One launch per gradient: the host span is the cost when it exceeds the kernels' own time.
  const double gain = std::max(kernels, span);
  if (!j.worth(gain)) return std::nullopt;
  return FootgunJudgement{
      FootgunId::ZeroGradMemset,
      "zero_grad() writes zeros into every gradient (set_to_none=False)",
      {"launched inside zero_grad: " + j.top_names(m, 2),
       fmt::format("zero_grad spans {} per step on the host; its kernels take {}", ms(span), ms(kernels)),
       "gain: the larger of the two; set_to_none=True frees the gradients instead"},
      gain, j.step()};
}

}  // namespace

extern const Detector kZeroGradMemset{"zero_grad_memset", true,
                                      {.host_context = kInZeroGrad, .gpu_context = kInZeroGrad},
                                      ZeroGradMemset::make, judge_zero_grad_memset};

}  // namespace stepscope::footgun
