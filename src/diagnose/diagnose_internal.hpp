// Shared between the verdict and the lever catalogue.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "stepscope/diagnose.hpp"

namespace stepscope::diagnose_detail {

using Groups = std::array<double, kBoundCount>;
// Time of each bound's categories in a step (Straggler stays 0: it is not a category).
Groups group_times(const std::array<double, kCategoryCount>& category);

std::string ms(double ns);
std::string pct(double share);

std::vector<Lever> build_levers(const AnalysisResult& r, const JobStep& job, const Verdict& v);

}  // namespace stepscope::diagnose_detail
