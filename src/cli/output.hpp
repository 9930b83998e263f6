// Writing reports to a file or stdout, shared by the commands that produce them.
#pragma once

#include <fmt/core.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <string>

#include "stepscope/distributed.hpp"
#include "stepscope/error.hpp"
#include "stepscope/output_file.hpp"

namespace stepscope::cli {

// `where` is a path, or "-" for stdout; written whole or not at all (stepscope/output_file.hpp).
// Under mpirun or srun, process 0's standard output is the launcher's pipe or pseudo-terminal,
// which says nothing of where the launcher's own output goes (often a redirected file): no
// colour and no terminal width there.
inline bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) && !launched_by_mpi(); }

// Colour on a terminal unless NO_COLOR is set to anything non-empty (no-color.org).
inline bool color_wanted() {
  const char* no = std::getenv("NO_COLOR");
  return stdout_is_terminal() && !(no && *no);
}

// Columns of the terminal standard output goes to (0 when it is not one).
inline std::size_t terminal_columns() {
  winsize w{};
  if (!stdout_is_terminal() || ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) != 0) return 0;
  return w.ws_col;
}

// Columns the text reports fit: COLUMNS when set to a number (as a shell exports it, or
// COLUMNS=80 to ask), else the terminal's, else 100 (a pipe, a file, under a launcher).
inline std::size_t report_columns() {
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(c, &end, 10);
    if (*end == '\0' && n >= 20 && n <= 10000) return n;
  }
  const std::size_t terminal = terminal_columns();
  return terminal >= 20 ? terminal : 100;
}

inline void write_text(const std::string& where, const std::string& text, const char* what) {
  write_output(where, text, what);
}

inline void write_json(const std::string& where, const nlohmann::json& j) {
  // Names come from the trace and may hold invalid UTF-8: replace it rather than fail the report.
  write_text(where, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "JSON report");
}

}  // namespace stepscope::cli
