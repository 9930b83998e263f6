// The optimizer step as many small per-parameter kernels (no foreach or fused implementation).
#include <fmt/core.h>

#include "stepscope/analysis.hpp"
#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

constexpr double kOptKernelsPerStep = 32;   // per-parameter optimizer kernels per step
constexpr double kFusedOptimizerCut = 0.5;  // as the fused_optimizer lever

struct UnfusedOptimizer : EvidenceOf<UnfusedOptimizer> {
  std::int64_t opt_kernels = 0;
  ns_t opt_kernel_time = 0;
  ns_t opt_host_time = 0;  // summed Optimizer.step# spans
  bool opt_fused = false;  // a fused / foreach / multi-tensor kernel or op
  ByName opt_ops;

  void host(const HostEvent& e) override {
    if ((e.kind != Kind::CpuOp && e.kind != Kind::UserAnnotation) || e.steady_step() < 0) return;
    if (e.flags & kOptimizerStep) opt_host_time += e.dur;
    if (!e.ctx.optimizer) return;
    if (e.flags & kFusedName) opt_fused = true;
    if (e.kind == Kind::CpuOp) add(opt_ops, e.name(), e.dur);
  }
  void gpu(const GpuEvent& e) override {
    if (e.kind != Kind::Kernel || !is_compute_class(e.cls) || !e.ctx || !e.ctx->optimizer) return;
    ++opt_kernels;
    opt_kernel_time += e.dur;
    if (e.flags & (kFusedName | kFusedKernel)) opt_fused = true;
  }
  void fields(EvidenceFields& v) override {
    v.field("opt_kernels", opt_kernels);
    v.field("opt_kernel_time", opt_kernel_time);
    v.field("opt_host_time", opt_host_time);
    v.field("opt_fused", opt_fused);
    v.field("opt_ops", opt_ops);
  }
};

std::optional<FootgunJudgement> judge_unfused_optimizer(const Judge& j) {
  for (const auto& p : each_rank(j.result, &RankAnalysis::partition))
    if (p.mix.fused_optimizer_seen) return std::nullopt;
  // MTIA runs no CUDA fused or foreach optimizer.
  for (const RankFootguns* r : j.ranks)
    if (j.of<UnfusedOptimizer>(*r).opt_fused || r->mtia) return std::nullopt;
  const double kernels = j.sum<UnfusedOptimizer>([](const UnfusedOptimizer& s) { return s.opt_kernels; });
  if (j.per_step(kernels) < kOptKernelsPerStep) return std::nullopt;
  const double span = j.per_step(j.sum<UnfusedOptimizer>([](const UnfusedOptimizer& s) { return s.opt_host_time; }));
  const double gain = kFusedOptimizerCut * span;
  if (!j.worth(gain)) return std::nullopt;
  const double kernel_time = j.sum<UnfusedOptimizer>([](const UnfusedOptimizer& s) { return s.opt_kernel_time; });
  return FootgunJudgement{
      FootgunId::UnfusedOptimizer,
      "the optimizer step runs per-parameter kernels (no foreach/fused implementation)",
      {fmt::format("{:.0f} kernels per step inside Optimizer.step, {} of GPU time; the step spans {} on the host",
                   j.per_step(kernels), ms(j.per_step(kernel_time)), ms(span)),
       "ops: " + j.top_names(j.merged(&UnfusedOptimizer::opt_ops), 4),
       "gain: half of the optimizer step's span (one multi-tensor kernel replaces hundreds)"},
      gain, j.step()};
}

}  // namespace

extern const Detector kUnfusedOptimizer{"unfused_optimizer",
                                        true,
                                        {.host_flags = kOptimizerStep, .host_context = kInOptimizer,
                                         .gpu_context = kInOptimizer},
                                        UnfusedOptimizer::make,
                                        judge_unfused_optimizer};

}  // namespace stepscope::footgun
