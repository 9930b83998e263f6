// Sequential byte sources for the streaming reader: a plain file, a gzip file decoded block by
// block with ISA-L's igzip, or bytes already in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace stepscope::ingest {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `cap` bytes; returns how many. 0 means the end of the data.
  virtual std::size_t read(char* dst, std::size_t cap) = 0;
  // True when the data ended early (a gzip stream cut off mid-member).
  virtual bool truncated() const { return false; }
  // Compressed (on-disk) bytes consumed so far, for progress reporting.
  virtual std::uint64_t consumed() const = 0;
  virtual std::uint64_t total() const = 0;
  // Best guess of the decoded size (gzip's ISIZE footer, or the file size), 0 if unknown; lets
  // the reader size its columns once instead of growing them by doubling.
  virtual std::uint64_t expected_output() const { return total(); }
};

// Opens `path`, sniffing the gzip magic rather than trusting the extension.
// Throws InputError when the file cannot be opened or read.
std::unique_ptr<ByteSource> open_byte_source(const std::string& path);
std::unique_ptr<ByteSource> memory_byte_source(std::string_view bytes);

// A copy of a stream input in a temporary file, removed with this object. Pipes, FIFOs and
// /dev/stdin can be read only once, but a trace is sniffed, then read, possibly by several
// threads: the copy reads like the file would have.
class SpooledInput {
 public:
  explicit SpooledInput(std::string path);  // one create_registered_temporary made
  ~SpooledInput();
  SpooledInput(const SpooledInput&) = delete;
  SpooledInput& operator=(const SpooledInput&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The copy of `path` when it is a stream (FIFO, character device, socket); null for a regular
// file or a directory, which are read in place. Waits at most `wait_s` for the first byte.
// Errors (InputError naming the path): no data within `wait_s` (a pipe nobody writes to), a read
// error, no room for the copy in the temporary directory, or first bytes that start no input
// stepscope reads (JSON, gzip, SQLite), so that an endless stream is not copied.
std::unique_ptr<SpooledInput> spool_if_stream(const std::string& path, int wait_s = 30);

}  // namespace stepscope::ingest
