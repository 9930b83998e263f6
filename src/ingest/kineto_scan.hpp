// A strict scanner of the JSON subset Kineto writes, for the event parser's fast path.
//
// Every function answers false for anything outside that subset (a string with an escape or a
// control character, invalid UTF-8, a malformed number, nesting deeper than kMaxDepth) and the
// event is then parsed by simdjson, which also reports what is wrong with it. So the fast path
// only ever accepts text simdjson reads the same way, and never has to produce an error itself.
//
// Included by kineto_events.cpp alone, inside its per-kernel namespace: each SIMD build gets its
// own copy, and no symbol of one build can be taken for the other's.
//
// Reads may run up to 15 bytes past the position they stop at: callers hand in text followed by
// readable bytes (the batch's next events, then its padding).
#ifndef STEPSCOPE_KINETO_SCAN_INSIDE_KERNEL
#error "include kineto_scan.hpp only from kineto_events.cpp"
#endif

namespace scan {

constexpr int kMaxDepth = 64;

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline const char* skip_ws(const char* p, const char* end) {
  while (p < end && is_ws(*p)) ++p;
  return p;
}

// The first byte at or after `p` that is '"', '\\', below 0x20 or at least 0x80, 16 bytes at a
// time. Example: `abc", ...` -> the '"' at offset 3.
inline const char* find_string_special(const char* p) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x1f);
  for (;; p += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // x <= 0x1f unsigned: max(x, 0x1f) == 0x1f. Bytes >= 0x80 show in movemask(x) itself.
    const __m128i low = _mm_cmpeq_epi8(_mm_max_epu8(x, space), space);
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)), low);
    const int mask = _mm_movemask_epi8(hit) | _mm_movemask_epi8(x);
    if (mask) return p + __builtin_ctz(static_cast<unsigned>(mask));
  }
#else
  for (;; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return p;
  }
#endif
}

// A string at `p` (its opening quote) with no escapes: its content in `out`, `p` past the
// closing quote. Non-ASCII runs are checked as UTF-8, as simdjson checks a whole document.
// Example: `"cuda_runtime", ...` -> out "cuda_runtime", p at the ','.
inline bool string(const char*& p, const char* end, std::string_view& out) {
  if (p >= end || *p != '"') return false;
  const char* const begin = ++p;
  for (;;) {
    p = find_string_special(p);
    if (p >= end) return false;
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"') break;
    if (c < 0x80) return false;  // an escape or a control character: simdjson's to read
    const char* run = p;
    while (p < end && static_cast<unsigned char>(*p) >= 0x80) ++p;
    // A run of non-ASCII bytes is whole characters when it is valid UTF-8 on its own.
    if (!simdjson::validate_utf8(run, static_cast<std::size_t>(p - run))) return false;
  }
  out = {begin, static_cast<std::size_t>(p - begin)};
  ++p;
  return true;
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A number at `p` by JSON's grammar: its text in `out`, and whether it is an integer (no
// fraction, no exponent). Example: `1.5e3,` -> out "1.5e3", integer false, p at the ','.
inline bool number(const char*& p, const char* end, std::string_view& out, bool& integer) {
  const char* const begin = p;
  if (p < end && *p == '-') ++p;
  if (p >= end || !is_digit(*p)) return false;
  if (*p == '0') ++p;
  else
    while (p < end && is_digit(*p)) ++p;
  integer = true;
  if (p < end && *p == '.') {
    integer = false;
    ++p;
    if (p >= end || !is_digit(*p)) return false;
    while (p < end && is_digit(*p)) ++p;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    integer = false;
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (p >= end || !is_digit(*p)) return false;
    while (p < end && is_digit(*p)) ++p;
  }
  out = {begin, static_cast<std::size_t>(p - begin)};
  return true;
}

// What a number's text gives the readers below: its value, a value the column cannot hold (what
// as_int64 answers false for), or text from_chars reads otherwise than simdjson (an underflow
// to zero, say), which sends the event to simdjson.
enum class Read { Value, NoValue, GiveUp };

// A number's value as simdjson's get_int64-then-get_double gives it to as_int64: the integer
// when it fits, else the double truncated when it is within int64. Example: "7.9" -> 7.
inline Read int64_of(std::string_view text, bool integer, std::int64_t& out) {
  if (integer) {
    const auto r = std::from_chars(text.data(), text.data() + text.size(), out);
    if (r.ec == std::errc{}) return Read::Value;
  }
  double d = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), d);
  if (r.ec != std::errc{}) return Read::GiveUp;
  if (!(std::abs(d) < 9.2e18)) return Read::NoValue;
  out = static_cast<std::int64_t>(d);
  return Read::Value;
}

inline Read double_of(std::string_view text, double& out) {
  const auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc{} ? Read::Value : Read::GiveUp;
}

inline bool literal(const char*& p, const char* end, std::string_view word) {
  if (static_cast<std::size_t>(end - p) < word.size() || std::string_view(p, word.size()) != word) return false;
  p += word.size();
  return true;
}

bool skip_value(const char*& p, const char* end, int depth);

// The members of an array or object at `p` (its opening bracket), checked and passed over.
inline bool skip_container(const char*& p, const char* end, int depth) {
  if (depth >= kMaxDepth) return false;
  const bool object = *p == '{';
  const char close = object ? '}' : ']';
  p = skip_ws(p + 1, end);
  if (p < end && *p == close) return ++p, true;
  for (;;) {
    if (object) {
      std::string_view key;
      if (!string(p, end, key)) return false;
      p = skip_ws(p, end);
      if (p >= end || *p != ':') return false;
      p = skip_ws(p + 1, end);
    }
    if (!skip_value(p, end, depth + 1)) return false;
    p = skip_ws(p, end);
    if (p >= end) return false;
    if (*p == close) return ++p, true;
    if (*p != ',') return false;
    p = skip_ws(p + 1, end);
  }
}

// Any value at `p`, checked and passed over.
inline bool skip_value(const char*& p, const char* end, int depth) {
  if (p >= end) return false;
  std::string_view text;
  bool integer = false;
  switch (*p) {
    case '"': return string(p, end, text);
    case '{':
    case '[': return skip_container(p, end, depth);
    case 't': return literal(p, end, "true");
    case 'f': return literal(p, end, "false");
    case 'n': return literal(p, end, "null");
    default: return number(p, end, text, integer);
  }
}

// The text of the value at `p`, passed over: what simdjson's raw token, or raw_json() for an
// array, would give. Example: `[[8, 16], []] }` -> "[[8, 16], []]".
inline bool value_text(const char*& p, const char* end, std::string_view& out) {
  const char* const begin = p;
  if (p < end && *p == '{') return false;  // an object's raw token is its '{' alone: simdjson's to read
  if (!skip_value(p, end, 0)) return false;
  out = {begin, static_cast<std::size_t>(p - begin)};
  return true;
}

}  // namespace scan
