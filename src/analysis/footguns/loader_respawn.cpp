// Loader workers respawned at every epoch (persistent_workers=False): the stability analysis's
// epoch-boundary period. It reads no events of its own.
#include <fmt/core.h>

#include <algorithm>

#include "stepscope/analysis.hpp"
#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

struct LoaderRespawn : EvidenceOf<LoaderRespawn> {
  void fields(EvidenceFields&) override {}
};

// What the respawn costs a step: every steady step's excess over the quiet step (the lower
// quartile). The epoch's first fetch waits for the new workers, and the steps after it run slower
// while those workers start up on the loop's cores; with an epoch-boundary period every step is
// in some epoch's wake, so the steps above the quiet one are the cause's whole cost, not only the
// spikes. Example: steps 15, 160, 21, 39, 126, 35, 17 ms, quiet 17 ms -> (143 + 4 + 22 + 109 + 18)
// / 7 = 42 ms a step, where the spikes alone give 36 ms.
double respawn_cost(const RankAnalysis& ra) {
  double excess = 0;
  for (const auto& s : ra.partition.steps)
    if (!s.warmup) excess += std::max(0.0, static_cast<double>(s.duration()) - ra.stability.quiet_ns);
  return excess / static_cast<double>(ra.stability.steps);
}

std::optional<FootgunJudgement> judge(const Judge& j) {
  double excess = 0;
  std::vector<std::string> ev;
  for (const RankAnalysis& ra : j.result.ranks) {
    const auto& s = ra.stability;
    if (s.period.kind != PeriodKind::EpochBoundary || !s.steps) continue;
    excess += respawn_cost(ra);
    ev.push_back(fmt::format("rank {}: batch wait jumps by {} every {} steps ({} times): the first fetch of each epoch "
                             "waits for new workers",
                             ra.rank(), ms(static_cast<double>(s.period.mean_excess)), s.period.every, s.period.occurrences));
  }
  if (ev.empty()) return std::nullopt;
  const double gain = excess / static_cast<double>(ev.size());
  if (!j.worth(gain)) return std::nullopt;
  ev.push_back("gain: the epoch-start stall and the slower steps in its wake (each step's excess over the quiet "
               "step), spread over every step");
  return FootgunJudgement{FootgunId::LoaderRespawn, "DataLoader workers restart at every epoch (persistent_workers=False)",
                          std::move(ev), gain, j.step()};
}

}  // namespace

extern const Detector kLoaderRespawn{"loader_respawn", false, {}, LoaderRespawn::make, judge};

}  // namespace stepscope::footgun
