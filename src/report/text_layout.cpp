// Fitting terminal text to a width: names shortened so that they still tell rows apart, and
// lines wrapped under their own indent.
#include "report/text_layout.hpp"

#include <algorithm>
#include <map>

namespace stepscope {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

// The first `columns` code points of `s` (whole UTF-8 sequences), as bytes.
std::size_t bytes_of_columns(std::string_view s, std::size_t columns) {
  std::size_t i = 0;
  for (std::size_t seen = 0; i < s.size(); ++i)
    if (!continuation_byte(s[i]) && seen++ == columns) break;
  return i;
}

std::string_view head_columns(std::string_view s, std::size_t columns) { return s.substr(0, bytes_of_columns(s, columns)); }

std::string_view tail_columns(std::string_view s, std::size_t columns) {
  const std::size_t total = display_width(s);
  return columns >= total ? s : s.substr(bytes_of_columns(s, total - columns));
}

// Code points the two names share from the start.
std::size_t common_prefix_columns(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  while (i > 0 && i < a.size() && continuation_byte(a[i])) --i;
  return display_width(a.substr(0, i));
}

// `name` in `width` columns around column `at`, where it first differs from a name that shortened
// to the same text: a quarter for the head, a quarter for the tail, the rest a window that starts
// a little before the difference.
std::string shorten_around(std::string_view name, std::size_t width, std::size_t at) {
  const std::size_t total = display_width(name);
  if (total <= width || width < 9) return std::string(name);
  const std::size_t budget = width - 2;  // two ellipses
  const std::size_t head = budget / 4, tail = budget / 4, window = budget - head - tail;
  const std::size_t from = std::min(at > window / 3 ? at - window / 3 : 0, total - tail - window);
  if (from <= head) return std::string(head_columns(name, head + window)) + std::string(kEllipsis) + std::string(tail_columns(name, tail + 1));
  const std::string_view middle = head_columns(name.substr(bytes_of_columns(name, from)), window);
  return std::string(head_columns(name, head)) + std::string(kEllipsis) + std::string(middle) + std::string(kEllipsis) +
         std::string(tail_columns(name, tail));
}

}  // namespace

std::size_t display_width(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return !continuation_byte(c); }));
}

std::string shorten_to_columns(std::string_view name, std::size_t width) {
  if (width == 0 || display_width(name) <= width) return std::string(name);
  if (width < 5) return std::string(head_columns(name, width));
  // Two thirds for the head (the namespace, the kernel and its first template arguments), the
  // rest for the tail (the last template arguments and the parameter list).
  const std::size_t budget = width - 1;
  const std::size_t head = budget * 2 / 3;
  return std::string(head_columns(name, head)) + std::string(kEllipsis) + std::string(tail_columns(name, budget - head));
}

std::vector<std::string> shorten_distinct(const std::vector<std::string>& names, std::size_t width) {
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(shorten_to_columns(n, width));
  std::map<std::string, std::vector<std::size_t>> by_short;
  for (std::size_t i = 0; i < out.size(); ++i) by_short[out[i]].push_back(i);
  for (const auto& [text, rows] : by_short) {
    if (rows.size() < 2) continue;
    for (std::size_t i : rows) {
      std::size_t at = 0;  // the furthest point where this name still matches another of the group
      for (std::size_t j : rows)
        if (j != i && names[j] != names[i]) at = std::max(at, common_prefix_columns(names[i], names[j]));
      out[i] = shorten_around(names[i], width, at);
    }
  }
  // Names that differ in several places may still meet: those keep their whole text.
  std::map<std::string, std::vector<std::size_t>> again;
  for (std::size_t i = 0; i < out.size(); ++i) again[out[i]].push_back(i);
  for (const auto& [text, rows] : again)
    if (rows.size() > 1)
      for (std::size_t i : rows) out[i] = names[i];
  return out;
}

std::string fit_to_width(std::string_view text, std::size_t width) {
  if (width == 0) return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (display_width(line) <= width) {
      out.append(line);
    } else {
      // Continuation lines hang four columns under the line's own indent, at most half the width.
      const std::size_t indent = std::min(line.find_first_not_of(' ') + 4, width / 2);
      const std::string pad(indent, ' ');
      std::size_t used = 0;
      bool first = true;
      std::size_t pos = 0;
      while (pos < line.size()) {
        const std::size_t start = first ? 0 : line.find_first_not_of(' ', pos);
        if (start == std::string_view::npos) break;
        std::size_t end = line.find(' ', line.find_first_not_of(' ', start));
        if (end == std::string_view::npos) end = line.size();
        std::string word(line.substr(pos, end - pos));
        if (!first && used + display_width(word) > width) {
          out += '\n';
          out += pad;
          used = indent;
          word.erase(0, word.find_first_not_of(' '));
        }
        const std::size_t room = width - used;
        if (display_width(word) > room) word = shorten_to_columns(word, room);
        out += word;
        used += display_width(word);
        first = false;
        pos = end;
      }
    }
    if (nl != std::string_view::npos) out += '\n';
  }
  return out;
}

}  // namespace stepscope
