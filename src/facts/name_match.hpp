// The few string tests name rules are written in. Private to the facts layer: nothing outside
// it matches names.
#pragma once

#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>

#include "stepscope/kernel_class.hpp"

namespace stepscope::facts_detail {

inline bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

inline bool has_any(std::string_view s, std::initializer_list<std::string_view> ps) {
  for (auto p : ps)
    if (has(s, p)) return true;
  return false;
}

// `s` is one of `names`, whole.
inline bool is_any(std::string_view s, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (s == n) return true;
  return false;
}

// The collective a lower-cased name speaks of ("ncclkernel_allreduce_ring_ll_sum_float",
// "all_to_all"), or None. Kernels and host calls name collectives in the same words.
Collective collective_in(std::string_view lowered);

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `s` with every occurrence of `p` blanked out, so that a shorter token inside it ("f16" in
// "bf16") is not seen again.
inline std::string without(std::string s, std::string_view p) {
  for (auto at = s.find(p); at != std::string::npos; at = s.find(p, at + p.size()))
    s.replace(at, p.size(), p.size(), ' ');
  return s;
}

}  // namespace stepscope::facts_detail
