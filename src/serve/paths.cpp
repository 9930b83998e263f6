// Which file a request may read (names are shown through html_escape, stepscope/html.hpp).
#include <filesystem>

#include "stepscope/serve.hpp"

namespace stepscope {

namespace fs = std::filesystem;

std::optional<std::string> resolve_under_root(const std::string& root, const std::string& rel) {
  if (rel.empty() || rel.find('\0') != std::string::npos || rel.front() == '/' || rel.find('\\') != std::string::npos)
    return std::nullopt;
  const fs::path p(rel);
  for (const auto& part : p) {
    const std::string s = part.string();
    if (s == ".." || s == "." || (!s.empty() && s.front() == '.')) return std::nullopt;
  }
  std::error_code ec;
  const fs::path real = fs::canonical(fs::path(root) / p, ec);
  if (ec) return std::nullopt;
  const fs::path inner = real.lexically_relative(root);
  if (inner.empty() || *inner.begin() == ".." || inner.is_absolute()) return std::nullopt;
  if (!fs::is_regular_file(real, ec)) return std::nullopt;
  return real.string();
}

}  // namespace stepscope
