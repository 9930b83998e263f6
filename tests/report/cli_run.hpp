// Runs the built CLI as a user's shell would, for tests of its behaviour end to end.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace stepscope {

struct CliRun {
  int rc;
  std::string output;  // stdout and stderr together
};

// `fed_from`, when given, is piped into the CLI's standard input (`cat FILE | stepscope ...`).
inline CliRun cli_shell(const std::string& command);

inline CliRun cli(const std::string& args, const std::string& fed_from = "") {
  const std::string feed = fed_from.empty() ? "" : "cat " + fed_from + " | ";
  return cli_shell(feed + std::string(STEPSCOPE_BINARY_DIR) + "/stepscope " + args);
}

// A whole shell command line, for what `cli` cannot say (a terminal, the environment).
inline CliRun cli_shell(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 512> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace stepscope
