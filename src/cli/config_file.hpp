// The project file (./stepscope.toml, or the file --config names) is input like any trace: it
// sits in whatever directory the command runs in. It is vetted before CLI11 reads it.
#pragma once

#include <string>

namespace stepscope::cli {

// Limits on the project file: a team's options take a few hundred bytes and nest two deep.
inline constexpr std::size_t kMaxConfigBytes = 1 << 20;
inline constexpr int kMaxConfigNesting = 8;

// The project file's path as the command line gives it ("stepscope.toml" when none is given).
std::string config_path(int argc, char** argv);

// Checks the project file without blocking and without reading more than the limit: it must be
// a regular file (a FIFO by that name would hang every command) of at most kMaxConfigBytes, its
// arrays nested at most kMaxConfigNesting deep (CLI11's reader takes memory that grows with the
// square of the depth). A missing default file is no error.
// Error: InputError naming the file (escaped) and what is wrong.
void vet_config_file(const std::string& path, bool named_on_command_line);

}  // namespace stepscope::cli
