// Which file a request may read, and how names are shown.
#include <filesystem>

#include "stepscope/serve.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

// Length of the valid UTF-8 sequence at s[i], 0 when it is not one.
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return 0;
  if (n == 2 && c < 0xC2) return 0;  // overlong
  return n;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_length(s, i);
    if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7f) && c != '\t')) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

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
