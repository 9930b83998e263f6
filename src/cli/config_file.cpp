#include "cli/config_file.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "stepscope/error.hpp"
#include "stepscope/report.hpp"

namespace stepscope::cli {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string read_bounded(int fd, std::size_t limit) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > limit) break;
  }
  return text;
}

// The deepest nesting of [ ] and { } in values, outside strings and comments.
int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  char quote = 0;
  bool comment = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (comment) {
      comment = c != '\n';
    } else if (quote) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote || c == '\n') quote = 0;
    } else if (c == '#') {
      comment = true;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

std::string config_path(int argc, char** argv) {
  std::string path = "stepscope.toml";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--config" && i + 1 < argc) path = argv[++i];
    else if (a.starts_with("--config=")) path = std::string(a.substr(9));
  }
  return path;
}

void vet_config_file(const std::string& path, bool named) {
  const std::string shown = terminal_safe(path);
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) {
    if (errno == ENOENT && !named) return;
    throw InputError(fmt::format("{}: cannot open the options file ({})", shown, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw InputError(fmt::format("{}: the options file is not a regular file (a FIFO or a device would be read forever)", shown));
  if (static_cast<std::uint64_t>(st.st_size) > kMaxConfigBytes)
    throw InputError(fmt::format("{}: the options file holds {} bytes, over the limit of {}", shown, st.st_size, kMaxConfigBytes));
  const std::string text = read_bounded(f.fd, kMaxConfigBytes);
  if (text.size() > kMaxConfigBytes)
    throw InputError(fmt::format("{}: the options file grew past the limit of {} bytes", shown, kMaxConfigBytes));
  if (const int depth = nesting_depth(text); depth > kMaxConfigNesting)
    throw InputError(fmt::format("{}: arrays nested {} deep, over the limit of {}", shown, depth, kMaxConfigNesting));
}

}  // namespace stepscope::cli
