// Man pages (roff, man macros) for the program and each of its commands, git style:
// stepscope(1), stepscope-analyze(1), stepscope-plan-memory(1); `man stepscope analyze` finds
// the second with man-db.
#pragma once

#include <string>
#include <vector>

#include "cli_model.hpp"

namespace clidoc {

struct ManPage {
  std::string file;  // "stepscope-analyze.1"
  std::string text;
};

struct ManInfo {
  std::string version;  // "stepscope 0.1.0"
  std::string date;     // "2025-01-31"
};

std::vector<ManPage> man_pages(const CommandDoc& root, const ManInfo& info);

// `text` as roff text: backslashes and hyphens escaped, non-ASCII as \[uXXXX], no line that a
// formatter would read as a request.
std::string roff_escape(const std::string& text);

}  // namespace clidoc
