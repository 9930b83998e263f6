// What a process name says of the job: the rank a trace-merging tool wrote into it.
#include <cctype>
#include <string_view>

#include "stepscope/trace.hpp"

namespace stepscope {

namespace {

char lower_char(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// "rank" at `at`, case-insensitive, not inside a longer word ("ranker", "frank").
bool rank_word_at(std::string_view s, std::size_t at) {
  constexpr std::string_view kWord = "rank";
  if (at + kWord.size() > s.size()) return false;
  for (std::size_t k = 0; k < kWord.size(); ++k)
    if (lower_char(s[at + k]) != kWord[k]) return false;
  return at == 0 || !std::isalpha(static_cast<unsigned char>(s[at - 1]));
}

}  // namespace

int rank_in_process_name(std::string_view name) {
  constexpr int kMaxRank = 10'000'000;
  for (std::size_t at = 0; at < name.size(); ++at) {
    if (!rank_word_at(name, at)) continue;
    std::size_t k = at + 4;
    while (k < name.size() && (name[k] == ' ' || name[k] == '_' || name[k] == '-' || name[k] == ':' || name[k] == '#')) ++k;
    if (k >= name.size() || !digit(name[k])) continue;
    int r = 0;
    for (; k < name.size() && digit(name[k]); ++k) {
      r = r * 10 + (name[k] - '0');
      if (r > kMaxRank) return -1;
    }
    return r;
  }
  return -1;
}

}  // namespace stepscope
