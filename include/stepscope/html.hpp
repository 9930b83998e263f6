// The self-contained HTML report: one file, no network fetch of any kind, charts drawn here as
// inline SVG. Every string that comes from a trace (kernel and op names, paths, thread names) is
// escaped for HTML text and attributes, and the page forbids scripts and fetches outright through
// its Content-Security-Policy, so a hostile name can neither run nor load anything.
#pragma once

#include <string>
#include <string_view>

#include "stepscope/analysis.hpp"
#include "stepscope/diff.hpp"

namespace stepscope {

// Text for HTML text and quoted attributes: markup characters as entities, control characters
// and invalid UTF-8 as U+FFFD, so that a hostile name shows as visible text. Every HTML page of
// the project (the reports, the pages of `serve`) escapes through this one function.
//   "<b>&'\x01" -> "&lt;b&gt;&amp;&#39;\uFFFD"
std::string html_escape(std::string_view s);

// `stepscope analyze --html FILE`: the verdict, the step partition, stability, ranks, the GPU
// timeline, evidence and levers.
std::string render_html(const DiagnosedResult& r);

// `stepscope diff --html FILE`: the changes, then both runs side by side on shared scales.
std::string render_diff_html(const DiffResult& d);

}  // namespace stepscope
