// The sections of one run's HTML report; the analyze page shows them in full, the diff page
// shows a compact set for each side.
#pragma once

#include <string>

#include "stepscope/diagnose.hpp"

namespace stepscope::html {

struct SectionOptions {
  std::string id_prefix;   // keeps element ids unique when two runs share a page
  double step_ymax_ns = 0; // shared vertical scale of the step charts (0: this run's own)
  bool compact = false;    // the diff page's side: no inputs, GPU detail tables or full levers
  int heading = 2;         // level of the section headings
};

std::string analysis_sections(const DiagnosedResult& r, const SectionOptions& o);

// Each rank's replay error, the job's joined replay and the plan's predicted step beside the
// recorded one (html_whatif.cpp); nothing on a compact side.
void whatif_section(const DiagnosedResult& r, const SectionOptions& o, std::string& out);
// The drill-down tables and curves (html_drilldown.cpp); nothing on a compact side.
void drilldown_section(const AnalysisResult& r, const SectionOptions& o, std::string& out);
// The page's one script (table sorting and search) and its CSP hash source ('sha256-...').
const std::string& html_script();
std::string html_script_hash();

}  // namespace stepscope::html
