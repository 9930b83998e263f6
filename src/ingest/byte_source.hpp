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

}  // namespace stepscope::ingest
