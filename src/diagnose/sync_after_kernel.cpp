#include "diagnose/sync_after_kernel.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace stepscope {
namespace {

constexpr std::uint64_t kMinLaunches = 10;  // fewer launches say nothing about a loop
constexpr double kEveryKernel = 0.9;        // share of launches followed by a sync

// Always in ms, where the shared ms() would switch to s or us: "0.05 ms".
std::string fixed_ms(double ns) { return fmt::format("{:.2f} ms", ns / 1e6); }

bool syncs_after_every_kernel(const CudaSummary& s) {
  return s.kernel_launches >= kMinLaunches &&
         static_cast<double>(s.launches_then_sync) >= kEveryKernel * static_cast<double>(s.kernel_launches);
}

}  // namespace

std::optional<SyncAfterKernel> sync_after_every_kernel(const AnalysisResult& r, const JobStep& job) {
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const CudaSummary& s = r.ranks[i].cuda_summary;
    if (!syncs_after_every_kernel(s)) continue;
    ns_t idle = 0, span = 0;
    for (const auto& dev : s.devices) idle += dev.idle, span += dev.span;
    const double waits = job.category[static_cast<std::size_t>(Category::SyncStall)] +
                         job.category[static_cast<std::size_t>(Category::LaunchOverhead)];
    const double gain = std::min(waits, 0.999 * job.step_ns);
    const double speedup = job.step_ns > gain ? job.step_ns / (job.step_ns - gain) : 1;
    Finding f = footgun_finding(FootgunId::SyncAfterEveryKernel,
                                fmt::format("{} after every kernel: the host waits for each kernel to finish before "
                                            "it launches the next, so the GPU idles through every launch; queue the "
                                            "work and synchronise once per step; fixing it gains up to {} per step "
                                            "({:.2f}x)",
                                            s.sync_after_launch, fixed_ms(gain), speedup),
                                r.ranks[i].rank());
    f.evidence = {
        fmt::format("{} of {} kernel launches are followed by {} before the next launch", s.launches_then_sync,
                    s.kernel_launches, s.sync_after_launch),
        fmt::format("GPU idle {} ({:.1f}% of the GPU span) over the capture", fixed_ms(static_cast<double>(idle)),
                    span > 0 ? 100.0 * static_cast<double>(idle) / static_cast<double>(span) : 0.0),
        fmt::format("sync stall + launch overhead: {} of the {} mean step", fixed_ms(waits), fixed_ms(job.step_ns)),
        "gain: the time the GPU waits for the host to return from the sync and launch again"};
    f.step_ns = job.step_ns;
    f.gain_ns = gain;
    f.speedup = speedup;
    std::string headline = fmt::format("; {} after every kernel ({} of {} launches)", s.sync_after_launch,
                                       s.launches_then_sync, s.kernel_launches);
    return SyncAfterKernel{std::move(f), std::move(headline)};
  }
  return std::nullopt;
}

}  // namespace stepscope
