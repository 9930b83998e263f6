#include "stepscope/output_file.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "stepscope/error.hpp"
#include "stepscope/report.hpp"
#include "stepscope/temp_files.hpp"

namespace stepscope {
namespace fs = std::filesystem;

namespace {

// ---- Where an output lands ---------------------------------------------------------------
//
// The one rule for symbolic links: an output path is followed through its links to the file
// they name, even when that file does not exist yet (a dangling link's target is created). What
// is found there decides how it is written: nothing or a regular file is replaced whole through a
// temporary beside it; a terminal, pipe, FIFO or character device (/dev/null, /dev/stdout) is
// written directly; anything else (a directory, a socket) is refused.

constexpr int kMaxLinks = 40;  // as the kernel's ELOOP limit

struct Target {
  std::string path;        // the path written: links followed
  bool exists = false;
  bool stream = false;     // written directly, not replaced
  struct stat st {};
};

// The target of a chain of links, followed by readlink so that a dangling one names the file to
// create. /proc/self/fd/N links name no path when they point at a pipe: stat() reads those.
Target follow_links(const std::string& path) {
  Target t;
  if (::stat(path.c_str(), &t.st) == 0) {
    t.exists = true;
    t.stream = S_ISCHR(t.st.st_mode) || S_ISFIFO(t.st.st_mode);
    if (t.stream) {
      t.path = path;  // opened through the link: a pipe has no other name
      return t;
    }
    std::error_code ec;
    const fs::path real = fs::canonical(path, ec);
    t.path = ec ? path : real.string();
    return t;
  }
  fs::path p = path;
  for (int i = 0; i < kMaxLinks; ++i) {
    struct stat lst {};
    if (::lstat(p.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) break;
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
    if (n <= 0) break;
    const fs::path next(std::string(buf, static_cast<std::size_t>(n)));
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  t.path = p.lexically_normal().string();
  return t;
}

// ---- Files an output must not touch ----------------------------------------------------------
//
// The inputs of this run and the outputs it has written, by device and inode, so that a write
// through any name (a link, a hard link, a file inside an output directory) is caught where it
// happens, whatever chose the name.

struct Guarded {
  dev_t dev;
  ino_t ino;
  std::string what;  // "the input t.json", "the JSON report r.json written by this run"
};
std::mutex g_guard_mutex;
std::vector<Guarded> g_guarded;
// Set by check_outputs, which begins a command's run: only then are the outputs guarded too. A
// long-lived process (the web app, a notebook) writes many runs' files and deletes them, and an
// inode freed by one could be taken for another's output.
std::atomic<bool> g_guard_outputs{false};

void guard(const struct stat& st, std::string what) {
  std::lock_guard<std::mutex> lock(g_guard_mutex);
  for (const Guarded& g : g_guarded)
    if (g.dev == st.st_dev && g.ino == st.st_ino) return;
  g_guarded.push_back({st.st_dev, st.st_ino, std::move(what)});
}

std::string guarded_as(const struct stat& st) {
  std::lock_guard<std::mutex> lock(g_guard_mutex);
  for (const Guarded& g : g_guarded)
    if (g.dev == st.st_dev && g.ino == st.st_ino) return g.what;
  return "";
}

// The mode a new file gets from open(2): 0666 less the process's umask (mkstemp makes 0600).
mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

std::string shown(const std::string& path) { return terminal_safe(path); }

// A name beside `target` for the bytes until they are complete: short and fixed, so that a
// target name of up to 255 bytes still leaves room for it.
std::string temporary_pattern(const std::string& target) {
  const fs::path dir = fs::path(target).parent_path();
  return ((dir.empty() ? fs::path(".") : dir) / ".stepscope-XXXXXX").string();
}

// Opens a FIFO, terminal or device for writing without waiting for a reader that may never come.
int open_stream(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno == ENXIO)
    throw InputError(fmt::format("{}: no process reads this FIFO, so the {} cannot go there", shown(path), what));
  if (fd < 0)
    throw InputError(fmt::format("{}: cannot open the {} ({})", shown(path), what, std::strerror(errno)));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

struct OutputFile::Gzip {
  z_stream z{};
};

OutputFile::OutputFile(std::string path, std::string what) : what_(std::move(what)) {
  const Target t = follow_links(path);
  path_ = t.path;
  if (t.exists) {
    if (const std::string hit = guarded_as(t.st); !hit.empty())
      throw InputError(fmt::format("{}: that is {}; refusing to overwrite it with the {}", shown(path), hit, what_));
    if (!t.stream && !S_ISREG(t.st.st_mode))
      throw InputError(fmt::format("{}: not a regular file, FIFO or device; cannot write the {} there", shown(path), what_));
  }
  if (path_.size() > 3 && path_.compare(path_.size() - 3, 3, ".gz") == 0) {
    gzip_ = std::make_unique<Gzip>();
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
    if (deflateInit2(&gzip_->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw InputError(fmt::format("{}: cannot start compressing the {}", shown(path_), what_));
  }
  if (t.stream) {
    fd_ = open_stream(path_, what_);
    direct_ = true;
    return;
  }
  std::string pattern = temporary_pattern(path_);
  fd_ = create_registered_temporary(pattern);
  if (fd_ < 0) fail("create");
  tmp_ = pattern;
  ::fchmod(fd_, t.exists ? (t.st.st_mode & 07777) : new_file_mode());
}

OutputFile::~OutputFile() {
  if (gzip_) deflateEnd(&gzip_->z);
  if (fd_ >= 0) ::close(fd_);
  drop_temporary();
}

void OutputFile::drop_temporary() {
  if (tmp_.empty()) return;
  ::unlink(tmp_.c_str());
  release_temporary(tmp_);
  tmp_.clear();
}

void OutputFile::fail(const char* doing) {
  const int err = errno;
  if (fd_ >= 0) ::close(fd_), fd_ = -1;
  drop_temporary();
  throw InputError(fmt::format("{}: cannot {} the {} ({})", shown(path_), doing, what_, std::strerror(err)));
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
  if (!direct_ && ::fsync(fd_) != 0 && errno != EINVAL) fail("write");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("write");
  }
  fd_ = -1;
  if (direct_) return;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("replace");
  release_temporary(tmp_);
  tmp_.clear();
  struct stat st {};
  if (g_guard_outputs && ::stat(path_.c_str(), &st) == 0)
    guard(st, fmt::format("the {} {} written by this run", what_, shown(path_)));
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
  // "-", /dev/stdout, or the very file standard output was redirected to: written through the
  // open descriptor, so that `--json /dev/stdout > r.json` fills r.json rather than replacing it.
  if (goes_to_stdout(path)) return produce([](std::string_view piece) { write_stdout(piece); });
  OutputFile f(path, what);
  produce([&f](std::string_view piece) { f.write(piece); });
  f.commit();
}

bool goes_to_stdout(const std::string& path) {
  if (path == "-") return true;
  if (path.empty()) return false;
  struct stat out {}, st {};
  return ::fstat(STDOUT_FILENO, &out) == 0 && ::stat(path.c_str(), &st) == 0 && st.st_dev == out.st_dev &&
         st.st_ino == out.st_ino;
}

namespace {

struct FileId {
  struct stat st {};
  std::string path;
};

// Every regular file an input names: the file, or the files anywhere inside a directory.
std::vector<FileId> input_files(const std::vector<std::string>& inputs) {
  std::vector<FileId> out;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (!fs::is_directory(in, ec)) {
      FileId f{{}, in};
      if (::stat(in.c_str(), &f.st) == 0 && S_ISREG(f.st.st_mode)) out.push_back(f);
      continue;
    }
    for (fs::recursive_directory_iterator it(in, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      FileId f{{}, it->path().string()};
      if (::stat(f.path.c_str(), &f.st) == 0 && S_ISREG(f.st.st_mode)) out.push_back(f);
    }
  }
  return out;
}

// Each file one output creates: its path, or each name inside its directory.
std::vector<std::string> created_files(const NamedOutput& o) {
  std::vector<std::string> out{o.path};
  for (const auto& name : o.files_inside) out.push_back((fs::path(o.path) / name).string());
  return out;
}

std::string absolute_normal(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : p.string();
}

struct Planned {
  const NamedOutput* output;
  std::string file;  // as the user will see it
  Target target;
  std::string where;  // the target, absolute, for comparing spellings
};

bool same_target(const Planned& a, const Planned& b) {
  if (a.target.stream || b.target.stream) return false;  // two outputs may both go to /dev/null
  if (a.target.exists && b.target.exists)
    return a.target.st.st_dev == b.target.st.st_dev && a.target.st.st_ino == b.target.st.st_ino;
  return a.where == b.where;
}

void refuse_second_stdout(const std::vector<NamedOutput>& outputs) {
  const NamedOutput* first = nullptr;
  for (const NamedOutput& o : outputs) {
    if (!goes_to_stdout(o.path)) continue;
    if (first)
      throw InputError(fmt::format("{} {} and {} {} both go to standard output: one output at most may use it",
                                   first->option, shown(first->path), o.option, shown(o.path)));
    first = &o;
  }
}

// `--json -j2 trace.json` gives --json the value "-j2": without this the report went to a file
// named -j2 and the run took the default thread count, both silently.
void refuse_option_like_paths(const std::vector<NamedOutput>& outputs) {
  for (const NamedOutput& o : outputs)
    if (o.path.size() > 1 && o.path.front() == '-')
      throw InputError(fmt::format("{} {}: looks like an option, not a file name; write ./{} for a file of that name",
                                   o.option, shown(o.path), shown(o.path)));
}

}  // namespace

void check_outputs(const std::vector<std::string>& inputs, const std::vector<NamedOutput>& outputs) {
  refuse_option_like_paths(outputs);
  refuse_second_stdout(outputs);
  const std::vector<FileId> in = input_files(inputs);
  g_guard_outputs = true;
  for (const FileId& f : in) guard(f.st, "the input " + shown(f.path));
  std::vector<Planned> planned;
  for (const NamedOutput& o : outputs) {
    if (o.path.empty() || o.path == "-") continue;
    for (const std::string& file : created_files(o)) {
      Planned p{&o, file, follow_links(file), ""};
      p.where = absolute_normal(p.target.path);
      if (p.target.exists && !p.target.stream)
        for (const FileId& f : in)
          if (f.st.st_dev == p.target.st.st_dev && f.st.st_ino == p.target.st.st_ino)
            throw InputError(fmt::format("{} {}: {} is the input {}; refusing to overwrite it", o.option, shown(o.path),
                                         shown(file), shown(f.path)));
      for (const Planned& q : planned)
        if (same_target(p, q))
          throw InputError(fmt::format("{} and {} name the same file {}: give each output its own path", q.output->option,
                                       o.option, shown(file)));
      planned.push_back(std::move(p));
    }
  }
}

}  // namespace stepscope
