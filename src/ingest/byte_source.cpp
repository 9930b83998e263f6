#include "ingest/byte_source.hpp"

#include <fmt/core.h>
#include <isa-l.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/temp_files.hpp"

namespace stepscope::ingest {
namespace {

constexpr std::size_t kReadBlock = 1 << 20;
constexpr std::uint64_t kMaxDeflateRatio = 1032;

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

std::uint64_t file_size(std::FILE* f) {
  if (std::fseek(f, 0, SEEK_END) != 0) return 0;
  long n = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  return n < 0 ? 0 : static_cast<std::uint64_t>(n);
}

class PlainFileSource final : public ByteSource {
 public:
  PlainFileSource(FilePtr f, std::string path, std::uint64_t size)
      : f_(std::move(f)), path_(std::move(path)), size_(size) {}
  std::size_t read(char* dst, std::size_t cap) override {
    std::size_t n = std::fread(dst, 1, cap, f_.get());
    if (n == 0 && std::ferror(f_.get()))
      throw InputError(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
    consumed_ += n;
    return n;
  }
  std::uint64_t consumed() const override { return consumed_; }
  std::uint64_t total() const override { return size_; }

 private:
  FilePtr f_;
  std::string path_;
  std::uint64_t size_;
  std::uint64_t consumed_ = 0;
};

// Streaming gzip decoding with igzip; handles concatenated members (as `cat a.gz b.gz` makes).
class GzipFileSource final : public ByteSource {
 public:
  GzipFileSource(FilePtr f, std::string path, std::uint64_t size)
      : f_(std::move(f)), path_(std::move(path)), size_(size), in_(kReadBlock) {
    read_isize();
    start_member();
  }

  std::size_t read(char* dst, std::size_t cap) override {
    std::size_t produced = 0;
    while (produced == 0 && !done_) {
      if (state_.avail_in == 0 && !refill()) {
        // The input ended; a member still in progress means the file was cut off.
        truncated_ = member_started_;
        done_ = true;
        break;
      }
      state_.next_out = reinterpret_cast<std::uint8_t*>(dst);
      state_.avail_out = static_cast<std::uint32_t>(std::min<std::size_t>(cap, UINT32_MAX));
      int rc = isal_inflate(&state_);
      if (rc != ISAL_DECOMP_OK) {
        // Corrupt data: keep what decoded cleanly and report the rest as lost.
        truncated_ = true;
        done_ = true;
        corrupt_ = true;
      }
      produced = cap - state_.avail_out;
      if (produced > 0) member_started_ = true;
      if (state_.block_state == ISAL_BLOCK_FINISH) next_member();
    }
    return produced;
  }
  bool truncated() const override { return truncated_; }
  std::uint64_t consumed() const override { return consumed_; }
  std::uint64_t total() const override { return size_; }
  std::uint64_t expected_output() const override { return isize_; }

 private:
  // The last 4 bytes of a gzip member hold its decoded size mod 2^32: exact for one member
  // under 4 GiB, which is what profilers write; a smaller value than the file means it wrapped.
  void read_isize() {
    unsigned char tail[4];
    if (size_ < 18 || std::fseek(f_.get(), -4, SEEK_END) != 0) return;
    if (std::fread(tail, 1, 4, f_.get()) == 4) {
      std::uint64_t v = tail[0] | (tail[1] << 8) | (tail[2] << 16) | (std::uint64_t{tail[3]} << 24);
      // The trailer is the input's word, not a measure: deflate expands at most 1032-fold, so a
      // forged size cannot make the reader reserve more than the file could hold.
      isize_ = v >= size_ ? std::min(v, size_ * kMaxDeflateRatio) : 0;
    }
    std::rewind(f_.get());
  }

  void start_member() {
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
    member_started_ = false;
  }

  // After a member ends, more input may hold another member.
  void next_member() {
    std::uint8_t* rest = state_.next_in;
    std::uint32_t rest_n = state_.avail_in;
    start_member();
    state_.next_in = rest;
    state_.avail_in = rest_n;
    if (rest_n == 0 && !refill()) done_ = true;
  }

  bool refill() {
    std::size_t n = std::fread(in_.data(), 1, in_.size(), f_.get());
    if (n == 0) {
      if (std::ferror(f_.get()))
        throw InputError(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
      return false;
    }
    consumed_ += n;
    state_.next_in = in_.data();
    state_.avail_in = static_cast<std::uint32_t>(n);
    return true;
  }

  FilePtr f_;
  std::string path_;
  std::uint64_t size_;
  std::vector<std::uint8_t> in_;
  inflate_state state_{};
  std::uint64_t consumed_ = 0;
  std::uint64_t isize_ = 0;
  bool member_started_ = false;
  bool truncated_ = false;
  bool corrupt_ = false;
  bool done_ = false;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view b) : b_(b) {}
  std::size_t read(char* dst, std::size_t cap) override {
    std::size_t n = std::min(cap, b_.size() - pos_);
    if (n) std::memcpy(dst, b_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  std::uint64_t consumed() const override { return pos_; }
  std::uint64_t total() const override { return b_.size(); }

 private:
  std::string_view b_;
  std::size_t pos_ = 0;
};

}  // namespace

namespace {

// fopen on a FIFO waits for a writer that may never come: open without blocking, and give a
// stream a bounded time for its first byte (as spool_if_stream does).
constexpr int kFirstByteWaitS = 30;

FilePtr open_without_hanging(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    pollfd p{fd, POLLIN, 0};
    int ready;
    do ready = ::poll(&p, 1, kFirstByteWaitS * 1000);
    while (ready < 0 && errno == EINTR);
    if (ready <= 0) {
      ::close(fd);
      throw InputError(fmt::format("{}: no data arrived in {} s (a pipe nobody writes to?)", path, kFirstByteWaitS));
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  FilePtr f(::fdopen(fd, "rb"));
  if (!f) {
    ::close(fd);
    throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  return f;
}

}  // namespace

std::unique_ptr<ByteSource> open_byte_source(const std::string& path) {
  FilePtr f = open_without_hanging(path);
  std::uint64_t size = file_size(f.get());
  unsigned char magic[2] = {0, 0};
  std::size_t n = std::fread(magic, 1, 2, f.get());
  if (n == 0 && std::ferror(f.get()))
    throw InputError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::rewind(f.get());
  if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b)
    return std::make_unique<GzipFileSource>(std::move(f), path, size);
  return std::make_unique<PlainFileSource>(std::move(f), path, size);
}

std::unique_ptr<ByteSource> memory_byte_source(std::string_view bytes) {
  return std::make_unique<MemorySource>(bytes);
}

SpooledInput::SpooledInput(std::string path) : path_(std::move(path)) {}

SpooledInput::~SpooledInput() {
  ::unlink(path_.c_str());
  release_temporary(path_);
}

namespace {

bool is_stream(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

// Opening a FIFO for reading blocks until a writer opens it: open without blocking, then wait
// for the first byte (or the writer's end) for a bounded time.
int open_stream(const std::string& path, int wait_s) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  pollfd p{fd, POLLIN, 0};
  int ready;
  do ready = ::poll(&p, 1, wait_s * 1000);
  while (ready < 0 && errno == EINTR);
  if (ready <= 0) {
    ::close(fd);
    throw InputError(fmt::format("{}: no data arrived in {} s (a pipe nobody writes to?)", path, wait_s));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// What a trace, a profile or a snapshot starts with: JSON (after blanks or a BOM), gzip, an
// Nsight SQLite export, a pickle. Anything else is not copied further: /dev/zero would otherwise
// fill the temporary directory.
bool could_be_input(std::string_view head) {
  if (head.starts_with("\xef\xbb\xbf")) head.remove_prefix(3);
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (head[first] == '{' || head[first] == '[')) return true;
  if (first == std::string_view::npos && head.size() < 4096) return true;  // blanks so far: the reader words it
  return head.starts_with("\x1f\x8b") || head.starts_with("SQLite format 3") || head.starts_with("\x80");
}

void refuse_unless_input(std::string_view head, const std::string& path) {
  if (head.empty() || could_be_input(head)) return;
  std::string shown;
  for (std::size_t i = 0; i < std::min<std::size_t>(head.size(), 8); ++i)
    shown += fmt::format("{}{:02x}", i ? " " : "", static_cast<unsigned char>(head[i]));
  throw InputError(fmt::format("{}: a stream that is no trace (it starts with bytes {}): expected JSON, gzip or an "
                               "Nsight Systems SQLite export",
                               path, shown));
}

void copy_all(int from, int to, const std::string& path) {
  std::vector<char> buf(kReadBlock);
  bool first = true;
  for (;;) {
    const ssize_t n = ::read(from, buf.data(), buf.size());
    if (n == 0) return;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("{}: read error: {}", path, std::strerror(errno)));
    if (first) refuse_unless_input(std::string_view(buf.data(), static_cast<std::size_t>(n)), path);
    first = false;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(to, buf.data() + done, static_cast<std::size_t>(n - done));
      if (w <= 0 && errno != EINTR)
        throw InputError(fmt::format("{}: cannot copy the stream to a temporary file: {}", path, std::strerror(errno)));
      done += std::max<ssize_t>(w, 0);
    }
  }
}

}  // namespace

std::unique_ptr<SpooledInput> spool_if_stream(const std::string& path, int wait_s) {
  if (!is_stream(path)) return nullptr;
  std::string tmp = (std::filesystem::temp_directory_path() / "stepscope-input-XXXXXX").string();
  const int out = create_registered_temporary(tmp);
  if (out < 0) throw InputError(fmt::format("{}: cannot create a temporary copy: {}", path, std::strerror(errno)));
  auto spooled = std::make_unique<SpooledInput>(tmp);
  const int in = [&] {
    try {
      return open_stream(path, wait_s);
    } catch (...) {
      ::close(out);
      throw;
    }
  }();
  try {
    copy_all(in, out, path);
  } catch (...) {
    ::close(in), ::close(out);
    throw;
  }
  ::close(in);
  if (::close(out) != 0) throw InputError(fmt::format("{}: cannot copy the stream to a temporary file", path));
  return spooled;
}

}  // namespace stepscope::ingest

namespace stepscope {

bool read_trace_bytes(const std::string& path, const std::function<void(std::string_view)>& sink,
                      std::size_t chunk) {
  auto src = ingest::open_byte_source(path);
  std::vector<char> buf(std::max<std::size_t>(chunk, 1));
  while (std::size_t n = src->read(buf.data(), buf.size())) sink(std::string_view(buf.data(), n));
  return !src->truncated();
}

}  // namespace stepscope
