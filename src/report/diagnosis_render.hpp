// Rendering of the step partition, stability, ranks and diagnosis (text and JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stepscope/analysis.hpp"
#include "stepscope/report.hpp"

namespace stepscope::report_detail {

std::string render_diagnosis_text(const DiagnosedResult& r, const TextOptions& opts);
void add_diagnosis_json(const DiagnosedResult& r, nlohmann::json& j);
nlohmann::json partition_json(const RankPartition& p);
// A rank's what-if replay: ranks[i].whatif (null when the rank had no steps to replay).
nlohmann::json whatif_json(const whatif::RankWhatIf& w);
// The job's joined replay: job_whatif (null for one rank or ranks that share no collective), and
// in words: "job replay: 4 ranks joined at 28 collectives, 381.20 ms replayed against 381.20 ms
// recorded (replay error 0.0%)" ("" when not present).
nlohmann::json job_whatif_json(const whatif::JobWhatIf& j);
std::string job_whatif_sentence(const whatif::JobWhatIf& j);
// The diagnosis' plan: its levers, and the run's GPU-hours and cost when priced.
nlohmann::json plan_json(const LeverPlan& p);
nlohmann::json stability_json(const Stability& s);
nlohmann::json clock_alignment_json(const ClockAlignment& c);
// The clock alignment and arrival skew in one sentence, "" when there is nothing to say. Example:
// "clocks aligned on 412 collectives (sequence number): residual 2.1 us (p99 9.8 us); arrival
// skew mean 1.20 ms, p90 3.40 ms; rank 317 reaches 91.0% of them last"
std::string clock_alignment_sentence(const ClockAlignment& c);
// Ranks as runs of consecutive numbers: "rank 3", "ranks 0-7", "ranks 0,2,5-7".
std::string rank_list(std::vector<int> ranks);
// The reading warnings, the job's and then each rank's, the same words on several ranks one entry
// naming them: "ranks 0-7: 3 events past 2^62 ns skipped". Unescaped: each sink escapes.
std::vector<std::string> reading_warnings(const AnalysisResult& r);
// The trust warnings that limit the analysis (info ones only when `verbose`), one per wording:
// the same code, text and advice on ranks 0-7 is one group naming the eight ranks.
struct TrustGroup {
  const TrustWarning* first;
  std::vector<int> ranks;
};
std::vector<TrustGroup> trust_groups(const Trust& t, bool verbose);

}  // namespace stepscope::report_detail
