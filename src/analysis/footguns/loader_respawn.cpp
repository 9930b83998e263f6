// Loader workers respawned at every epoch (persistent_workers=False): the stability analysis's
// epoch-boundary period. It reads no events of its own.
#include <fmt/core.h>

#include "stepscope/analysis.hpp"
#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

struct LoaderRespawn : EvidenceOf<LoaderRespawn> {
  void fields(EvidenceFields&) override {}
};

std::optional<FootgunJudgement> judge_loader_respawn(const Judge& j) {
  double excess = 0;
  std::vector<std::string> ev;
  for (const RankAnalysis& ra : j.result.ranks) {
    const auto& s = ra.stability;
    if (s.period.kind != PeriodKind::EpochBoundary || !s.steps) continue;
    excess += excess_over_quiet(ra.partition, s);  // the stall and the slower steps in its wake
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

extern const Detector kLoaderRespawn{"loader_respawn", false, {}, LoaderRespawn::make, judge_loader_respawn};

}  // namespace stepscope::footgun
