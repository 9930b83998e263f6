// JSON and terminal forms of the nsys-style CUDA summary (stepscope/cuda_summary.hpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "stepscope/cuda_summary.hpp"
#include "stepscope/report.hpp"

namespace stepscope {

// Every field, times in integer ns as nsys reports them.
nlohmann::json to_json(const CudaSummary& s);
// The largest rows of each table: --top of them, names fitted to the width unless --wide.
std::string cuda_summary_text(const CudaSummary& s, const TextOptions& o = {});

}  // namespace stepscope
