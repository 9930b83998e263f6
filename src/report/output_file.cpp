#include "stepscope/output_file.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <zlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "stepscope/error.hpp"

namespace stepscope {
namespace fs = std::filesystem;

namespace {

// The file a path names once its symlinks are followed: writing through a link replaces what it
// points to, as a shell redirection would, not the link itself.
std::string resolved(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(path, ec)) {
    const fs::path target = fs::canonical(path, ec);
    if (!ec) return target.string();
  }
  return path;
}

// The mode a new file gets from open(2): 0666 less the process's umask (mkstemp makes 0600).
mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

struct OutputFile::Gzip {
  z_stream z{};
};

OutputFile::OutputFile(std::string path, std::string what) : path_(resolved(path)), what_(std::move(what)) {
  if (path_.size() > 3 && path_.compare(path_.size() - 3, 3, ".gz") == 0) {
    gzip_ = std::make_unique<Gzip>();
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
    if (deflateInit2(&gzip_->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw InputError(fmt::format("{}: cannot start compressing the {}", path_, what_));
  }
  const fs::path dir = fs::path(path_).parent_path();
  std::string pattern = ((dir.empty() ? fs::path(".") : dir) / ("." + fs::path(path_).filename().string() + ".XXXXXX")).string();
  fd_ = ::mkstemp(pattern.data());
  if (fd_ < 0) fail("create");
  tmp_ = pattern;
  struct stat st {};
  const mode_t mode = ::stat(path_.c_str(), &st) == 0 ? (st.st_mode & 07777) : new_file_mode();
  ::fchmod(fd_, mode);
}

OutputFile::~OutputFile() {
  if (gzip_) deflateEnd(&gzip_->z);
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void OutputFile::fail(const char* doing) {
  const int err = errno;
  if (fd_ >= 0) ::close(fd_), fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str()), tmp_.clear();
  throw InputError(fmt::format("{}: cannot {} the {} ({})", path_, doing, what_, std::strerror(err)));
}

void OutputFile::write(std::string_view bytes) {
  if (gzip_) deflate_into_file(bytes, false);
  else write_raw(bytes);
}

void OutputFile::deflate_into_file(std::string_view bytes, bool finish) {
  z_stream& z = gzip_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());  // callers hand at most a report at a time
  char out[1 << 16];
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(out);
    z.avail_out = sizeof out;
    rc = deflate(&z, finish ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR) {
      errno = EIO;
      fail("compress");
    }
    write_raw(std::string_view(out, sizeof out - z.avail_out));
  } while (z.avail_out == 0 || (finish && rc != Z_STREAM_END));
}

void OutputFile::write_raw(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void OutputFile::commit() {
  if (gzip_) deflate_into_file({}, true);
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("write");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("write");
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("replace");
  tmp_.clear();
}

void write_stdout(std::string_view bytes) {
  if ((!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size()) ||
      std::fflush(stdout) != 0)
    throw InputError(fmt::format("standard output: cannot write the report ({})", std::strerror(errno)));
}

void write_output(const std::string& path, std::string_view bytes, const std::string& what) {
  write_output_pieces(path, what, [&](const std::function<void(std::string_view)>& out) { out(bytes); });
}

void write_output_pieces(const std::string& path, const std::string& what,
                         const std::function<void(const std::function<void(std::string_view)>&)>& produce) {
  if (path == "-") return produce([](std::string_view piece) { write_stdout(piece); });
  OutputFile f(path, what);
  produce([&f](std::string_view piece) { f.write(piece); });
  f.commit();
}

namespace {

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

// The input file an existing output would overwrite, or "" when none.
std::string overwritten_input(const std::string& input, const fs::path& out) {
  std::error_code ec;
  if (!fs::is_directory(input, ec)) return same_file(input, out) ? input : "";
  for (fs::recursive_directory_iterator it(input, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && same_file(it->path(), out)) return it->path().string();
  return "";
}

// Two spellings of one path, whether or not the file exists yet ("a/../r.json", "./r.json").
bool same_path(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ea), ea), cb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  return (!ea && !eb && ca == cb) || same_file(a, b);
}

}  // namespace

void check_outputs(const std::vector<std::string>& inputs, const std::vector<NamedOutput>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedOutput& o = outputs[i];
    if (o.path.empty() || o.path == "-") continue;
    for (const auto& in : inputs)
      if (const std::string hit = overwritten_input(in, o.path); !hit.empty())
        throw InputError(fmt::format("{} {}: that is the input {}; refusing to overwrite it", o.option, o.path, hit));
    for (std::size_t k = 0; k < i; ++k)
      if (!outputs[k].path.empty() && outputs[k].path != "-" && same_path(outputs[k].path, o.path))
        throw InputError(fmt::format("{} and {} name the same file {}: give each output its own path",
                                     outputs[k].option, o.option, o.path));
  }
}

}  // namespace stepscope
