#include "ingest/json_chunker.hpp"
#include "ingest/input_kind.hpp"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "stepscope/error.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stepscope::ingest {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Index of the next '"' or '\\' at or after i, or n. Strings are most of a trace's bytes, so this
// runs 16 bytes at a time where SSE2 is there.
std::size_t find_quote_or_backslash(const char* b, std::size_t i, std::size_t n) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i slash = _mm_set1_epi8('\\');
  while (i + 16 <= n) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)));
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    i += 16;
  }
#endif
  while (i < n && b[i] != '"' && b[i] != '\\') ++i;
  return i;
}

// Index of the next byte that can change string or nesting state ('"', '\\', '{', '}', '[', ']')
// at or after i, or n. Inside an event nothing else matters, so the scan jumps between these.
std::size_t find_event_structural(const char* b, std::size_t i, std::size_t n) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i slash = _mm_set1_epi8('\\');
  // '{' 0x7b and '[' 0x5b differ only in bit 0x20, as do '}' 0x7d and ']' 0x5d.
  const __m128i fold = _mm_set1_epi8(0x20);
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  while (i + 16 <= n) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    __m128i f = _mm_or_si128(v, fold);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)),
                               _mm_or_si128(_mm_cmpeq_epi8(f, open), _mm_cmpeq_epi8(f, close)));
    int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    i += 16;
  }
#endif
  while (i < n) {
    char c = b[i];
    if (c == '"' || c == '\\' || c == '{' || c == '}' || c == '[' || c == ']') return i;
    ++i;
  }
  return n;
}

#if defined(__SSE2__)
// The classes of 64 bytes as bit masks, bit k for byte k.
struct BlockMasks {
  std::uint64_t quote, backslash, open, close;
};

BlockMasks classify_block(const char* p) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i slash = _mm_set1_epi8('\\');
  const __m128i fold = _mm_set1_epi8(0x20);  // '{'/'[' and '}'/']' differ only in this bit
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  BlockMasks m{0, 0, 0, 0};
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i f = _mm_or_si128(v, fold);
    const auto bits = [&](__m128i hit) {
      return static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(hit))) << (16 * k);
    };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote));
    m.backslash |= bits(_mm_cmpeq_epi8(v, slash));
    m.open |= bits(_mm_cmpeq_epi8(f, open));
    m.close |= bits(_mm_cmpeq_epi8(f, close));
  }
  return m;
}

// Bytes escaped by a backslash run of odd length (simdjson's method): `carry` says the block
// starts escaped and receives whether the next one does.
std::uint64_t escaped_bytes(std::uint64_t backslash, bool& carry) {
  constexpr std::uint64_t kEven = 0x5555555555555555ULL;
  backslash &= ~static_cast<std::uint64_t>(carry);
  const std::uint64_t follows = (backslash << 1) | static_cast<std::uint64_t>(carry);
  const std::uint64_t odd_starts = backslash & ~kEven & ~follows;
  std::uint64_t even_starts = 0;
  carry = __builtin_add_overflow(odd_starts, backslash, &even_starts);
  return (kEven ^ (even_starts << 1)) & follows;
}

// Bit k set when byte k is inside a string (its opening quote included, the closing one not).
std::uint64_t inside_strings(std::uint64_t quotes, bool in_string) {
  std::uint64_t x = quotes;
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return in_string ? ~x : x;
}
#endif

}  // namespace

// Small inputs get a block of their own size: many small rank files (or fuzz inputs) should not
// each pay for a full block.
JsonChunker::JsonChunker(ByteSource& src, std::string name, std::size_t block_size)
    : src_(src),
      name_(std::move(name)),
      block_size_(std::clamp<std::size_t>(std::max(src.expected_output(), src.total()) + 1,
                                          std::min<std::size_t>(4096, block_size), block_size)) {}

void JsonChunker::fail(std::size_t at, const std::string& what) const {
  throw InputError(fmt::format("{}: byte {}: {}", name_, base_offset_ + at, what));
}

bool JsonChunker::fill() {
  if (eof_) return false;
  std::size_t old = buf_.size();
  buf_.resize(old + block_size_);
  std::size_t got = 0;
  while (got < block_size_) {
    std::size_t n = src_.read(buf_.data() + old + got, block_size_ - got);
    if (n == 0) {
      eof_ = true;
      break;
    }
    got += n;
  }
  buf_.resize(old + got);
  return got > 0;
}

// Where the bytes some pending state still refers to begin: an unfinished event, top-level value
// or key, else the scan position.
std::size_t JsonChunker::pending_from() const {
  std::size_t keep = pos_;
  if (in_event_) keep = std::min(keep, event_start_);
  if (in_top_value_) keep = std::min(keep, top_value_start_);
  if (in_string_ && in_key_) keep = std::min(keep, key_start_);
  return keep;
}

// Moves the buffer's origin `by` bytes on: every position held drops by it.
void JsonChunker::shift_positions(std::size_t by) {
  base_offset_ += by;
  pos_ -= by;
  event_start_ -= in_event_ ? by : 0;
  top_value_start_ -= in_top_value_ ? by : 0;
  key_start_ -= (in_string_ && in_key_) ? by : 0;
}

// Drops bytes no pending state refers to, so the buffer holds one block plus a partial event,
// and one byte before it: the room emit() needs to open the next batch with '['.
void JsonChunker::compact() {
  const std::size_t keep = pending_from();
  if (keep <= 1) return;
  buf_.erase_front(keep - 1);
  shift_positions(keep - 1);
}

// What compact() keeps is one unfinished event, top-level value or key. Profilers write events
// of a few kilobytes; past this bound the text is corrupt or hostile (a small gzip can inflate to
// gigabytes of one string), and holding it would take memory for nothing.
constexpr std::size_t kMaxPendingBytes = std::size_t{64} << 20;

void JsonChunker::check_pending_size() const {
  const bool pending = in_event_ || in_top_value_ || (in_string_ && in_key_);
  if (!pending || buf_.size() <= kMaxPendingBytes) return;
  const char* what = in_event_ ? "one event" : in_top_value_ ? "one top-level value" : "one key";
  const std::size_t start = in_event_ ? event_start_ : in_top_value_ ? top_value_start_ : key_start_;
  fail(start, fmt::format("{} runs past {} MiB: no profiler writes that; the file is corrupt or not a trace", what,
                          kMaxPendingBytes >> 20));
}

ChunkState JsonChunker::next(EventBatch& out) {
  for (;;) {
    scan();
    if (!batch_starts_.empty()) {
      emit(out);
      return ChunkState::Found;
    }
    compact();
    check_pending_size();
    if (!fill()) {
      finish_at_eof();
      return ChunkState::End;
    }
  }
}

void ByteBuffer::reserve(std::size_t n) {
  if (n <= cap_ && data_) return;
  auto grown = std::make_unique_for_overwrite<char[]>(n + 1 + kSlack);
  if (size_) std::memcpy(grown.get(), data_.get(), size_);
  data_ = std::move(grown);
  cap_ = n;
  data_[size_] = '\0';
}

void ByteBuffer::resize(std::size_t n) {
  if (n > cap_ || !data_) reserve(std::max(n, 2 * cap_));
  size_ = n;
  data_[size_] = '\0';
}

void ByteBuffer::erase_front(std::size_t n) {
  n = std::min(n, size_);
  if (n == 0) return;
  std::memmove(data_.get(), data_.get() + n, size_ - n);
  size_ -= n;
  data_[size_] = '\0';
}

// Hands the read block over as the batch (see EventBatch) and carries what is still pending into
// a fresh buffer, one spare byte in front; the block the batch held before is reused for it.
// Stream byte 0 opens the document, and compact() and this keep a byte before anything pending,
// so the first event always has a byte before it to become '['.
void JsonChunker::emit(EventBatch& out) {
  if (batch_begin_ == 0) throw std::logic_error("json chunker: no byte before the batch for '['");
  const std::size_t tail = pending_from();
  ByteBuffer next = std::move(out.text);
  next.resize(0);  // the old batch's bytes are not kept
  next.reserve(1 + (buf_.size() - tail) + block_size_);
  next.resize(1 + (buf_.size() - tail));
  std::memcpy(next.data() + 1, buf_.data() + tail, buf_.size() - tail);
  buf_[batch_begin_ - 1] = '[';
  buf_[batch_end_] = ']';  // at most size(): the '\0' slot
  out.text = std::move(buf_);
  out.text_begin = batch_begin_ - 1;
  out.text_size = batch_end_ - batch_begin_ + 2;
  out.starts.clear();
  for (auto s : batch_starts_) out.starts.push_back(s + 1);
  out.stream_offset = base_offset_ + batch_begin_;
  out.first_index = emitted_;
  emitted_ += batch_starts_.size();
  batch_starts_.clear();
  buf_ = std::move(next);
  shift_positions(tail - 1);
}

void JsonChunker::finish_at_eof() {
  if (!started_) throw InputError(fmt::format("{}: empty file: no JSON in it", name_));
  if (doc_done_) {
    if (!saw_events_array_) {
      std::vector<std::string> keys;
      for (const auto& kv : top_) keys.push_back(kv.first);
      throw NotATraceError(fmt::format("{}: not a trace: no \"traceEvents\" array; it is {}", name_, what_object_is(keys)));
    }
    return;
  }
  // The text stopped early: a job killed while writing, or a cut-off gzip stream.
  if (!saw_events_array_ && events_seen_ == 0)
    throw InputError(fmt::format("{}: byte {}: file ends before any trace event", name_,
                                 base_offset_ + buf_.size()));
  truncated_ = true;
  std::uint64_t complete_end = last_event_end_abs_;
  std::uint64_t total = base_offset_ + buf_.size();
  bytes_lost_ = events_done_ ? 0 : (total > complete_end ? total - complete_end : 0);
}

void JsonChunker::scan() {
  const char* b = buf_.data();
  const std::size_t n = buf_.size();
  std::size_t i = pos_;
  while (i < n) {
    if (in_string_ && !in_event_) {
      if (escaped_) {
        escaped_ = false;
        ++i;
        continue;
      }
      std::size_t j = find_quote_or_backslash(b, i, n);
      if (j == n) {
        i = n;
        break;
      }
      if (b[j] == '\\') {
        escaped_ = true;
        i = j + 1;
        continue;
      }
      in_string_ = false;
      if (in_key_) {
        key_.assign(b + key_start_ + 1, j - key_start_ - 1);
        in_key_ = false;
        expect_key_ = false;
      }
      i = j + 1;
      continue;
    }
    if (in_event_) {
      i = scan_event(b, i, n);
      continue;
    }
    structural(b[i], i);
    ++i;
  }
  pos_ = i;
}

// Scans inside an event, where only strings and nesting matter (simdjson checks the rest), with
// the state in locals so the loop runs from registers. Returns where the scan stopped.
std::size_t JsonChunker::scan_event(const char* b, std::size_t i, std::size_t n) {
  int depth = event_depth_;
  bool in_str = in_string_;
#if defined(__SSE2__)
  // 64 bytes at a time: strings found for the whole block at once, then only its brackets
  // outside strings are walked, a handful per event.
  bool carry = escaped_;
  escaped_ = false;
  for (; i + 64 <= n; i += 64) {
    const BlockMasks m = classify_block(b + i);
    const std::uint64_t quotes = m.quote & ~escaped_bytes(m.backslash, carry);
    const std::uint64_t strings = inside_strings(quotes, in_str);
    for (std::uint64_t brackets = (m.open | m.close) & ~strings; brackets; brackets &= brackets - 1) {
      const int k = __builtin_ctzll(brackets);
      if ((m.open >> k) & 1) {
        ++depth;
      } else if (--depth == 0) {
        in_string_ = false;
        event_depth_ = 0;
        end_event(i + static_cast<std::size_t>(k));
        return i + static_cast<std::size_t>(k) + 1;
      }
    }
    in_str = (strings >> 63) & 1;
  }
  escaped_ = carry;
#endif
  if (escaped_ && i < n) {
    escaped_ = false;
    ++i;
  }
  while (i < n) {
    std::size_t j = in_str ? find_quote_or_backslash(b, i, n) : find_event_structural(b, i, n);
    if (j == n) {
      i = n;
      break;
    }
    char c = b[j];
    i = j + 1;
    if (in_str) {
      if (c == '\\') {
        if (i < n) ++i;
        else escaped_ = true;
      } else {
        in_str = false;
      }
      continue;
    }
    if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        in_string_ = false;
        event_depth_ = 0;
        end_event(j);
        return i;
      }
    }
  }
  event_depth_ = depth;
  in_string_ = in_str;
  return i;
}

void JsonChunker::end_event(std::size_t at) {
  if (buf_[at] != '}') fail(at, fmt::format("event {} is not a JSON object", events_seen_));
  in_event_ = false;
  if (batch_starts_.empty()) batch_begin_ = event_start_;
  batch_starts_.push_back(static_cast<std::uint32_t>(event_start_ - batch_begin_));
  batch_end_ = at + 1;
  last_event_end_abs_ = base_offset_ + at + 1;
  ++events_seen_;
  expect_element_ = false;
}

// Handles one byte outside any event and outside strings: the document's own structure.
void JsonChunker::structural(char c, std::size_t at) {
  if (is_space(c)) return;
  if (!started_) {
    start_document(c, at);
    return;
  }
  if (doc_done_) fail(at, "unexpected text after the end of the trace");
  const std::size_t depth = stack_.size();
  if (saw_events_array_ && !events_done_ && depth == events_depth_) {
    in_event_array(c, at);
    return;
  }
  if (depth == 1 && layout_ == TraceLayout::Kineto) {
    top_level_byte(c, at);
    return;
  }
  nested_byte(c, at);
}

// Bytes inside a captured top-level value: only strings and nesting matter.
void JsonChunker::nested_byte(char c, std::size_t at) {
  if (c == '"') in_string_ = true;
  else if (c == '{' || c == '[') push(c, at);
  else if (c == '}' || c == ']') pop(c, at);
}

void JsonChunker::start_document(char c, std::size_t at) {
  if (at == 0 && base_offset_ == 0 && buf_.size() >= 3 && buf_.view(0, 3) == "\xEF\xBB\xBF")
    fail(at, "byte-order mark before JSON is not supported");
  started_ = true;
  if (c == '{') {
    layout_ = TraceLayout::Kineto;
    stack_.push_back('{');
    expect_key_ = true;
  } else if (c == '[') {
    layout_ = TraceLayout::LegacyArray;
    stack_.push_back('[');
    saw_events_array_ = true;
    events_depth_ = 1;
    expect_element_ = true;
  } else {
    const std::string what = what_bytes_are(buf_.view(at, std::min<std::size_t>(buf_.size() - at, 4096)));
    fail(at, what.empty() ? std::string("not JSON: a trace starts with '{' or '['") : "not JSON: this is " + what);
  }
}

void JsonChunker::in_event_array(char c, std::size_t at) {
  if (c == '{') {
    if (!expect_element_) fail(at, fmt::format("missing ',' before event {}", events_seen_));
    in_event_ = true;
    event_depth_ = 1;
    event_start_ = at;
  } else if (c == ',') {
    if (expect_element_) fail(at, fmt::format("stray ',' before event {}", events_seen_));
    expect_element_ = true;
  } else if (c == ']') {
    if (expect_element_ && events_seen_ > 0)
      fail(at, "trailing ',' at the end of the event array");
    stack_.pop_back();
    events_done_ = true;
    if (stack_.empty()) doc_done_ = true;
  } else {
    const std::string what = events_seen_ == 0 && layout_ == TraceLayout::LegacyArray ? what_array_is(c) : "";
    fail(at, fmt::format("event {} is not a JSON object{}", events_seen_, what.empty() ? "" : "; the file is " + what));
  }
}

// Bytes directly inside the Kineto top-level object: keys, ':' and ',' and value starts.
void JsonChunker::top_level_byte(char c, std::size_t at) {
  if (c == '"' && expect_key_) {
    in_string_ = true;
    in_key_ = true;
    key_start_ = at;
    return;
  }
  if (c == ':' && !in_top_value_ && !value_pending_) {
    value_pending_ = true;
    return;
  }
  if (value_pending_) {
    value_pending_ = false;
    if (key_ == "traceEvents") {
      if (c != '[') fail(at, "\"traceEvents\" is not an array");
      if (saw_events_array_) fail(at, "a second \"traceEvents\" array");
      stack_.push_back('[');
      saw_events_array_ = true;
      events_depth_ = 2;
      expect_element_ = true;
      return;
    }
    in_top_value_ = true;
    top_value_start_ = at;
  }
  switch (c) {
    case ',':
      if (in_top_value_) finish_top_value(at);
      expect_key_ = true;
      break;
    case '}':
      if (in_top_value_) finish_top_value(at);
      stack_.pop_back();
      doc_done_ = true;
      break;
    case ']':
      fail(at, "unbalanced ']'");
    default:
      if (!in_top_value_) fail(at, fmt::format("unexpected '{}' in the trace object", c));
      nested_byte(c, at);
      break;
  }
}

void JsonChunker::push(char c, std::size_t at) {
  if (stack_.size() > 256) fail(at, "JSON nested too deeply");
  stack_.push_back(c);
}

void JsonChunker::pop(char c, std::size_t at) {
  char open = c == '}' ? '{' : '[';
  if (stack_.empty() || stack_.back() != open) fail(at, fmt::format("unbalanced '{}'", c));
  stack_.pop_back();
}

void JsonChunker::finish_top_value(std::size_t end) {
  std::size_t s = top_value_start_;
  while (end > s && is_space(buf_[end - 1])) --end;
  top_.emplace_back(key_, std::string(buf_.view(s, end - s)));
  in_top_value_ = false;
}

}  // namespace stepscope::ingest
