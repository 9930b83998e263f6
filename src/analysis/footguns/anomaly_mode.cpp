// Anomaly detection left on: NaN checks and a scalar read inside every backward node.
#include <fmt/core.h>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

struct AnomalyMode : EvidenceOf<AnomalyMode> {
  ByName anomaly_ops;  // NaN checks and scalar reads inside backward nodes
  std::int64_t anomaly_items = 0, anomaly_isnan = 0;
  ns_t anomaly_kernel_time = 0;
  ns_t anomaly_gpu_idle = 0;  // what the reads cost (Scan::read_costs)

  void host(const HostEvent& e) override {
    if (e.kind != Kind::CpuOp && e.kind != Kind::UserAnnotation) return;
    if (!e.ctx.backward || e.ctx.optimizer || e.steady_step() < 0) return;
    add(anomaly_ops, e.name(), e.dur);
    if (e.flags & kItem) {
      ++anomaly_items;
      reads_.emplace_back(e.ts + e.dur, e.dur);
    }
    if (e.flags & kIsnan) ++anomaly_isnan;
  }
  void gpu(const GpuEvent& e) override {
    if (e.kind == Kind::Kernel && is_compute_class(e.cls) && e.ctx && e.ctx->backward && !e.ctx->optimizer)
      anomaly_kernel_time += e.dur;
  }
  void finish(const Scan& s) override { anomaly_gpu_idle += s.read_costs(reads_); }
  void fields(EvidenceFields& v) override {
    v.field("anomaly_ops", anomaly_ops);
    v.field("anomaly_items", anomaly_items);
    v.field("anomaly_isnan", anomaly_isnan);
    v.field("anomaly_kernel_time", anomaly_kernel_time);
    v.field("anomaly_gpu_idle", anomaly_gpu_idle);
  }

 private:
  std::vector<std::pair<ns_t, ns_t>> reads_;  // (end, duration)
};

std::optional<FootgunJudgement> judge_anomaly_mode(const Judge& j) {
  const double isnan = j.sum<AnomalyMode>([](const AnomalyMode& r) { return r.anomaly_isnan; });
  const double items = j.sum<AnomalyMode>([](const AnomalyMode& r) { return r.anomaly_items; });
  if (j.per_step(isnan) < 1 || j.per_step(items) < 2) return std::nullopt;
  const double idle = j.sum<AnomalyMode>([](const AnomalyMode& r) { return r.anomaly_gpu_idle; });
  const double kernels = j.sum<AnomalyMode>([](const AnomalyMode& r) { return r.anomaly_kernel_time; });
  const double gain = j.per_step(idle + kernels);
  if (!j.worth(gain)) return std::nullopt;
  return FootgunJudgement{
      FootgunId::AnomalyMode,
      "autograd anomaly detection is on: every backward node checks its outputs for NaN and reads the answer on "
      "the host (torch.autograd.set_detect_anomaly / detect_anomaly)",
      {"inside backward nodes (autograd::engine::evaluate_function): " +
           j.top_names(j.merged(&AnomalyMode::anomaly_ops), 4),
       fmt::format("{:.1f} host reads per step inside backward, costing {} per step (per read the shorter of the "
                   "host's wait and the GPU idle after it); the NaN-check kernels take {} per step",
                   j.per_step(items), ms(j.per_step(idle)), ms(j.per_step(kernels))),
       "gain: the cost of those reads plus the check kernels"},
      gain, j.step()};
}

}  // namespace

extern const Detector kAnomalyMode{"anomaly_mode", false, {.host_flags = kAnomalyOp, .gpu_flags = kNanCheck},
                                   AnomalyMode::make, judge_anomaly_mode};

}  // namespace stepscope::footgun
