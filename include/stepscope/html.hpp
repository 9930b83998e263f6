// The self-contained HTML report: one file, no network fetch of any kind, charts drawn here as
// inline SVG. Every string that comes from a trace (kernel and op names, paths, thread names) is
// escaped for HTML text and attributes, and the page forbids scripts and fetches outright through
// its Content-Security-Policy, so a hostile name can neither run nor load anything.
#pragma once

#include <string>

#include "stepscope/analysis.hpp"
#include "stepscope/diff.hpp"

namespace stepscope {

// `stepscope analyze --html FILE`: the verdict, the step partition, stability, ranks, the GPU
// timeline, evidence and levers.
std::string render_html(const AnalysisResult& r);

// `stepscope diff --html FILE`: the changes, then both runs side by side on shared scales.
std::string render_diff_html(const DiffResult& d);

}  // namespace stepscope
