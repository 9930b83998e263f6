// Cuts a trace's JSON text, as it streams in, into runs of complete event objects.
//
// The scan is light: it follows strings, escapes and bracket nesting only, never parses values.
// Each call to `next` hands out one run ("batch") of whole events, wrapped as a JSON array ready
// for simdjson, or says the input has ended (the shape of Perfetto's JSON tokenizer: found /
// end). Top-level keys other than the event array are captured as raw JSON text for a separate
// small parse. Memory held is one read block plus the partial event at its end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ingest/byte_source.hpp"
#include "stepscope/trace.hpp"

namespace stepscope::ingest {

// A growable byte buffer whose growth leaves the new bytes uninitialised: the chunker writes
// every byte it keeps, and zero-filling each read block and each batch before overwriting it
// cost as much as the copy itself. As with std::string, data()[size()] is a readable '\0', and
// 64 bytes past it stay readable for vector loads.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  // A moved-from buffer is empty, so it can be grown again (the chunker reuses batches' blocks).
  ByteBuffer(ByteBuffer&& o) noexcept
      : data_(std::move(o.data_)), size_(std::exchange(o.size_, 0)), cap_(std::exchange(o.cap_, 0)) {}
  ByteBuffer& operator=(ByteBuffer&& o) noexcept {
    data_ = std::move(o.data_);
    size_ = std::exchange(o.size_, 0);
    cap_ = std::exchange(o.cap_, 0);
    return *this;
  }
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  char& operator[](std::size_t i) { return data_[i]; }
  char operator[](std::size_t i) const { return data_[i]; }
  std::string_view view(std::size_t pos, std::size_t n) const { return {data_.get() + pos, n}; }
  std::size_t capacity() const { return cap_; }
  void reserve(std::size_t n);         // room for n bytes without reallocating
  void resize(std::size_t n);          // bytes past the old size are left as they are
  void erase_front(std::size_t n);     // drops the first n bytes, moving the rest down
  // Bytes readable from data(): past capacity() come the '\0' and the 64 bytes of slack.
  std::size_t readable() const { return data_ ? cap_ + 1 + kSlack : 0; }

 private:
  static constexpr std::size_t kSlack = 64;
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0, cap_ = 0;
};

// The JSON of a batch sits in `text` from `text_begin`: the chunker hands over the read block
// itself, with its byte before the first event turned into '[' and its byte after the last into
// ']', so that the megabytes of events are never copied; the block's later bytes and its slack
// are the padding simdjson reads past the end.
struct EventBatch {
  ByteBuffer text;
  std::size_t text_begin = 0;        // where "[" + events + "]" starts in `text`
  std::size_t text_size = 0;         // bytes of that JSON
  std::vector<std::uint32_t> starts; // offset from text_begin of each event's opening brace
  std::uint64_t stream_offset = 0;   // uncompressed byte offset of text[1] in the input
  std::uint64_t first_index = 0;     // index of the first event within the whole trace
  std::size_t count() const { return starts.size(); }
  const char* json() const { return text.data() + text_begin; }
  std::size_t json_capacity() const { return text.readable() - text_begin; }  // text_size + padding at least
  std::string_view json_view(std::size_t pos, std::size_t n) const { return {json() + pos, n}; }
};

enum class ChunkState { Found, End };

class JsonChunker {
 public:
  JsonChunker(ByteSource& src, std::string name, std::size_t block_size = 1 << 18);

  // Fills `out` with the next run of complete events (Found) or reports the end of the input.
  // Throws InputError for text that cannot be a trace, naming the byte offset, and for one event,
  // top-level value or key longer than 64 MiB (so memory stays bounded whatever the input).
  ChunkState next(EventBatch& out);

  TraceLayout layout() const { return layout_; }
  // Raw JSON text of every top-level key other than the event array, in file order.
  const std::vector<std::pair<std::string, std::string>>& top_level() const { return top_; }
  bool truncated() const { return truncated_; }
  std::uint64_t bytes_lost() const { return bytes_lost_; }
  std::uint64_t bytes_read() const { return base_offset_ + buf_.size(); }
  std::uint64_t events_seen() const { return events_seen_; }

 private:
  bool fill();
  void compact();
  void shift_positions(std::size_t by);
  void check_pending_size() const;  // InputError once an unfinished item outgrows the bound
  void scan();
  void structural(char c, std::size_t at);
  void start_document(char c, std::size_t at);
  void in_event_array(char c, std::size_t at);
  void top_level_byte(char c, std::size_t at);
  void nested_byte(char c, std::size_t at);
  void end_event(std::size_t at);
  std::size_t scan_event(const char* b, std::size_t i, std::size_t n);
  void push(char c, std::size_t at);
  void pop(char c, std::size_t at);
  void finish_top_value(std::size_t end);
  void emit(EventBatch& out);
  std::size_t pending_from() const;
  void finish_at_eof();
  [[noreturn]] void fail(std::size_t at, const std::string& what) const;

  ByteSource& src_;
  std::string name_;
  std::size_t block_size_;
  ByteBuffer buf_;
  std::uint64_t base_offset_ = 0;  // stream offset of buf_[0]
  std::size_t pos_ = 0;            // next byte to scan
  bool eof_ = false;
  bool started_ = false;
  bool doc_done_ = false;
  bool truncated_ = false;
  std::uint64_t bytes_lost_ = 0;
  TraceLayout layout_ = TraceLayout::Kineto;

  // Nesting: the open brackets, innermost last.
  std::string stack_;
  bool in_string_ = false;
  bool escaped_ = false;

  // Top-level object bookkeeping (depth 1 of the Kineto layout).
  bool expect_key_ = false;
  bool in_key_ = false;
  bool value_pending_ = false;
  std::size_t key_start_ = 0;
  std::string key_;
  bool in_top_value_ = false;
  std::size_t top_value_start_ = 0;
  bool saw_events_array_ = false;
  bool events_done_ = false;
  std::size_t events_depth_ = 0;  // stack depth of the event array once inside it

  // The current run of events.
  bool in_event_ = false;
  int event_depth_ = 0;
  std::size_t event_start_ = 0;
  std::uint64_t last_event_end_abs_ = 0;
  std::size_t batch_begin_ = 0;
  std::size_t batch_end_ = 0;  // end of the last complete event
  std::vector<std::uint32_t> batch_starts_;  // relative to batch_begin_
  bool expect_element_ = false;
  std::uint64_t events_seen_ = 0;
  std::uint64_t emitted_ = 0;
  std::vector<std::pair<std::string, std::string>> top_;
};

}  // namespace stepscope::ingest
