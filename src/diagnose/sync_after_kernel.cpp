#include "diagnose/sync_after_kernel.hpp"

#include <fmt/core.h>

namespace stepscope {
namespace {

constexpr std::uint64_t kMinLaunches = 10;  // fewer launches say nothing about a loop
constexpr double kEveryKernel = 0.9;        // share of launches followed by a sync

std::string ms(double ns) { return fmt::format("{:.2f} ms", ns / 1e6); }

}  // namespace

void note_sync_after_every_kernel(AnalysisResult& r) {
  Diagnosis& d = r.diagnosis;
  if (!d.present) return;
  for (std::size_t i = 0; i < r.cuda_summaries.size() && i < r.ranks.size(); ++i) {
    const CudaSummary& s = r.cuda_summaries[i];
    if (s.kernel_launches < kMinLaunches ||
        static_cast<double>(s.launches_then_sync) < kEveryKernel * static_cast<double>(s.kernel_launches))
      continue;
    ns_t idle = 0, span = 0;
    for (const auto& dev : s.devices) idle += dev.idle, span += dev.span;
    std::string text = fmt::format(
        "rank {}: {} after every kernel: {} of {} launches are followed by a synchronising call before the "
        "next launch, so the host waits for each kernel and the GPU idles while the next one is launched "
        "(GPU idle {}, {:.1f}% of its span); launch work ahead and synchronise once per step",
        r.ranks[i].rank, s.sync_after_launch, s.launches_then_sync, s.kernel_launches, ms(static_cast<double>(idle)),
        span > 0 ? 100.0 * static_cast<double>(idle) / static_cast<double>(span) : 0.0);
    d.findings.emplace_back("sync_after_every_kernel", text);
    d.verdict.evidence.insert(d.verdict.evidence.begin(), text);
    d.verdict.headline += fmt::format("; {} after every kernel ({} of {} launches)", s.sync_after_launch,
                                      s.launches_then_sync, s.kernel_launches);
    return;
  }
}

}  // namespace stepscope
