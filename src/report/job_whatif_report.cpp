// The job replay (stepscope/whatif_job.hpp) in the reports: JSON's job_whatif and the text line.
#include <nlohmann/json.hpp>
#include <fmt/core.h>

#include "report/diagnosis_render.hpp"

namespace stepscope::report_detail {

nlohmann::json job_whatif_json(const whatif::JobWhatIf& j) {
  if (!j.present) return nullptr;
  nlohmann::json levers = nlohmann::json::array();
  for (const auto& l : j.levers)
    levers.push_back({{"id", lever_name(l.id)}, {"speedup", l.speedup}, {"uncertainty", l.uncertainty}, {"basis", l.basis}});
  return {{"ranks", j.ranks},
          {"collectives", j.collectives},
          {"recorded_span_ns", j.recorded_span_ns},
          {"replayed_span_ns", j.replayed_span_ns},
          {"replay_error", j.replay_error},
          {"levers", levers}};
}

std::string job_whatif_sentence(const whatif::JobWhatIf& j) {
  if (!j.present) return "";
  return fmt::format("job replay: {} ranks joined at {} collectives, {:.2f} ms replayed against {:.2f} ms recorded "
                     "(replay error {:.1f}%)",
                     j.ranks, j.collectives, static_cast<double>(j.replayed_span_ns) / 1e6,
                     static_cast<double>(j.recorded_span_ns) / 1e6, 100 * j.replay_error);
}

}  // namespace stepscope::report_detail
