// Terminal text fitted to a width (COLUMNS, the terminal's, or 100 columns in a pipe).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stepscope/report.hpp"  // fit_to_width

namespace stepscope {

// Columns `s` takes on a terminal: one per UTF-8 code point ("…" is one).
std::size_t display_width(std::string_view s);

// `name` in at most `width` columns, cut in the middle with "…" (0: whole). Example, width 20:
// "void at::native::vectorized_elementwise_kernel<4>" -> "void at::native…kernel<4>".
std::string shorten_to_columns(std::string_view name, std::size_t width);

// Each name shortened to `width` columns so that two different names never read the same: names
// that the middle cut makes equal keep the place where they differ instead ("void gemm<float, …>"
// twice becomes "void…<float, float, 64>…(int)" and "void…<float, float, 128>…(int)"); a name is
// whole only where no cut tells it apart.
std::vector<std::string> shorten_distinct(const std::vector<std::string>& names, std::size_t width);

}  // namespace stepscope
