// Rendering of the step partition, stability, ranks and diagnosis (text and JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "stepscope/analysis.hpp"
#include "stepscope/report.hpp"

namespace stepscope::report_detail {

std::string render_diagnosis_text(const AnalysisResult& r, const TextOptions& opts);
void add_diagnosis_json(const AnalysisResult& r, nlohmann::json& j);
nlohmann::json partition_json(const RankPartition& p);
nlohmann::json stability_json(const Stability& s);

}  // namespace stepscope::report_detail
