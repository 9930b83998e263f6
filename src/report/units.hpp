// The reports' time and share formats, one copy for the text, diff and HTML reports.
#pragma once

#include <string>

namespace stepscope::report_units {

std::string ms(double ns);         // "12.34 ms", "850.0 us", "1.20 s", "-0.40 ms"; "n/a" when not finite
std::string pct(double share);     // 0.123 -> "12.3%"; "n/a" when not finite
std::string signed_ms(double ns);  // "+1.20 ms" / "-0.40 ms"

}  // namespace stepscope::report_units
