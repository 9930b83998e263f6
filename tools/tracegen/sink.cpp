#include "sink.hpp"

#include <isa-l/igzip_lib.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace stepscope::tracegen {
namespace {

[[noreturn]] void io_error(const std::string& path, const char* what) {
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

class FileSink : public Sink {
 public:
  explicit FileSink(std::string path) : path_(std::move(path)) {
    f_ = std::fopen(path_.c_str(), "wb");
    if (!f_) io_error(path_, "cannot open for writing");
  }
  ~FileSink() override {
    if (f_) std::fclose(f_);
  }
  void write(std::string_view bytes) override {
    bytes_in_ += bytes.size();
    write_raw(bytes.data(), bytes.size());
  }
  void write_raw(const void* data, std::size_t n) {
    if (n && std::fwrite(data, 1, n, f_) != n) io_error(path_, "write failed");
  }
  void close() override {
    if (!f_) return;
    const bool bad = std::fclose(f_) != 0;
    f_ = nullptr;
    if (bad) io_error(path_, "close failed");
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

// ISA-L level 1 is several times faster than zlib at a similar ratio on JSON text; the project
// already depends on it for reading.
class GzipSink : public Sink {
 public:
  explicit GzipSink(const std::string& path)
      : file_(path), level_buf_(ISAL_DEF_LVL1_DEFAULT), out_(1 << 20) {
    isal_deflate_init(&zs_);
    zs_.gzip_flag = IGZIP_GZIP;
    zs_.level = 1;
    zs_.level_buf = level_buf_.data();
    zs_.level_buf_size = static_cast<std::uint32_t>(level_buf_.size());
    zs_.flush = NO_FLUSH;
  }
  void write(std::string_view bytes) override {
    bytes_in_ += bytes.size();
    // avail_in is 32-bit: feed large writes in slices.
    while (!bytes.empty()) {
      const std::size_t n = std::min<std::size_t>(bytes.size(), 1u << 30);
      deflate(bytes.substr(0, n), false);
      bytes.remove_prefix(n);
    }
  }
  void close() override {
    if (closed_) return;
    closed_ = true;
    deflate({}, true);
    file_.close();
  }

 private:
  void deflate(std::string_view in, bool last) {
    zs_.next_in = reinterpret_cast<std::uint8_t*>(const_cast<char*>(in.data()));
    zs_.avail_in = static_cast<std::uint32_t>(in.size());
    zs_.end_of_stream = last ? 1 : 0;
    do {
      zs_.next_out = out_.data();
      zs_.avail_out = static_cast<std::uint32_t>(out_.size());
      if (isal_deflate(&zs_) != COMP_OK) throw std::runtime_error("gzip: deflate failed");
      file_.write_raw(out_.data(), out_.size() - zs_.avail_out);
    } while (zs_.avail_in > 0 || (last && zs_.internal_state.state != ZSTATE_END) ||
             zs_.avail_out == 0);
  }

  FileSink file_;
  isal_zstream zs_{};
  std::vector<std::uint8_t> level_buf_;
  std::vector<std::uint8_t> out_;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<Sink> open_sink(const std::string& path, bool gzip) {
  if (gzip) return std::make_unique<GzipSink>(path);
  return std::make_unique<FileSink>(path);
}

}  // namespace stepscope::tracegen
