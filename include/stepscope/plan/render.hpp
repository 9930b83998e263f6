// Text and JSON renderings of the planning results. Rendering builds strings; the CLI prints.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "stepscope/plan/comm.hpp"
#include "stepscope/plan/gpus.hpp"
#include "stepscope/plan/memory.hpp"
#include "stepscope/plan/pipeline.hpp"
#include "stepscope/plan/roofline.hpp"
#include "stepscope/plan/serving.hpp"

namespace stepscope::plan {

// Every JSON document carries {"schema": kPlanSchema, "calculator": "<name>", ...}.
inline constexpr const char* kPlanSchema = "stepscope.plan/1";

nlohmann::json to_json(const MemoryResult& r);
nlohmann::json to_json(const RooflineResult& r);
nlohmann::json to_json(const CommResult& r);
nlohmann::json to_json(const ScalingResult& r);
nlohmann::json to_json(const PipelineResult& r);
nlohmann::json to_json(const KvResult& r);
nlohmann::json to_json(const ServeResult& r);
nlohmann::json to_json(const SpecDecResult& r);
nlohmann::json to_json(const StackResult& r);
nlohmann::json gpus_to_json(const std::vector<GpuSpec>& gpus);
nlohmann::json models_to_json(const std::vector<ModelArch>& models);

std::string render_text(const MemoryResult& r);
std::string render_text(const RooflineResult& r);
std::string render_text(const CommResult& r);
std::string render_text(const ScalingResult& r);
std::string render_text(const PipelineResult& r);
std::string render_text(const KvResult& r);
std::string render_text(const ServeResult& r);
std::string render_text(const SpecDecResult& r);
std::string render_text(const StackResult& r);
std::string render_gpus_text(const std::vector<GpuSpec>& gpus);
std::string render_models_text(const std::vector<ModelArch>& models);

// "14.00 GB", "524.3 KB" (decimal units); "0.490 s", "12.3 ms", "45 us".
std::string format_bytes(double bytes);
std::string format_seconds(double s);

}  // namespace stepscope::plan
