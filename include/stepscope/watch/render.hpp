// Text and JSON views of a watch or triage. Pure: they return strings; the CLI prints them.
#pragma once

#include <string>
#include <vector>

#include "stepscope/watch.hpp"
#include "stepscope/watch/triage.hpp"

namespace stepscope::watch {

inline constexpr const char* kWatchJsonSchema = "stepscope.watch/3";

// The latest sample as a short block of lines for a refreshing terminal view. With `width` > 0
// every line fits in that many columns (a wrapped line would break the redraw, which moves the
// cursor up one row per line): whole " · " fields are dropped from the end, then the line is cut.
std::string render_live(const Series& series, double window_s, std::size_t width = 0);

// One line (no newline) in at most `width` columns, by the rule above. Example, width 24:
// "gpu0 util 97% · sm 1410 MHz · 300 W" -> "gpu0 util 97% · …".
std::string fit_line(const std::string& line, std::size_t width);

// The verdict, its evidence and next step, further findings and notes.
std::string render_summary(const Series& series, const Classification& c,
                           const std::string& source_line);

// Everything: target, notes, statistics, verdict, findings and the samples themselves.
// `source` is "watch" or "triage"; `logs` (triage) says what each log file yielded.
std::string render_json(const Series& series, const Classification& c, const std::string& source,
                        const std::vector<LogReport>* logs = nullptr);

// Terminal-safe text: control characters in untrusted names (thread names, commands) become '?'.
std::string sanitize(const std::string& s);

}  // namespace stepscope::watch
