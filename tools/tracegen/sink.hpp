// Byte sinks for streamed output: a plain file or a gzip stream (ISA-L igzip).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace stepscope::tracegen {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(std::string_view bytes) = 0;
  // Flushes everything and closes; throws on I/O error. Safe to call once.
  virtual void close() = 0;
  std::uint64_t bytes_in() const { return bytes_in_; }

 protected:
  std::uint64_t bytes_in_ = 0;
};

// Opens `path` for writing; gzip-compresses when `gzip` is set.
std::unique_ptr<Sink> open_sink(const std::string& path, bool gzip);

}  // namespace stepscope::tracegen
