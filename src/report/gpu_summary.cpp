#include "report/gpu_summary.hpp"

#include <fmt/format.h>

#include <cmath>

namespace stepscope {

namespace {

std::string percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

std::string span_ms(ns_t ns) { return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6); }

}  // namespace

std::vector<GpuSummaryFigure> gpu_summary(const GpuTimeline& t) {
  std::vector<GpuSummaryFigure> out;
  if (!t.has_gpu_activity) return out;
  if (t.hta_temporal.available)
    out.push_back({"utilisation", percent(1 - t.hta_temporal.idle_share),
                   fmt::format("busy share of the {} GPU span (HTA's temporal breakdown)", span_ms(t.hta_temporal.kernel_time))});
  if (t.occupancy.available) {
    const std::string basis = fmt::format("time-weighted over the {} of kernel time whose kernels carry it",
                                          percent(t.occupancy.coverage));
    out.push_back({"SM efficiency", fmt::format("{:.1f}%", t.occupancy.sm_efficiency_pct), basis});
    out.push_back({"achieved occupancy", fmt::format("{:.1f}%", t.occupancy.achieved_occupancy_pct), basis});
  }
  if (std::isfinite(t.classes.tensor_core_share_of_gemm))
    out.push_back({"tensor cores", percent(t.classes.tensor_core_share_of_gemm), "share of GEMM kernel time"});
  return out;
}

std::string sync_calls_text(const SyncPoints& s, const RankPartition* p) {
  std::string out = fmt::format("{} calls in the trace", s.count);
  if (p && p->steady_steps > 0)
    out += fmt::format(", {:.1f} per steady step", static_cast<double>(p->sync_calls) / static_cast<double>(p->steady_steps));
  return out;
}

}  // namespace stepscope
