// Runs the built `stepscope` as a user would, under the limits the promises name: a memory cap
// (ulimit -v), a generous time bound, a working directory and standard input of the test's
// choosing. Hostile inputs are made by the tests themselves, in a scratch directory.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace reliability {

namespace fs = std::filesystem;

inline std::string binary() { return std::string(STEPSCOPE_BINARY_DIR) + "/stepscope"; }
inline std::string example_trace() {
  return std::string(STEPSCOPE_SOURCE_DIR) + "/examples/cpu_training_step.pt.trace.json.gz";
}

struct Limits {
  std::string cwd;
  std::string stdin_path = "/dev/null";
  std::uint64_t memory_bytes = 2ull << 30;  // ulimit -v
  double timeout_s = 60;
};

struct Result {
  int rc = -1;      // exit code, or 128 + signal
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;
  std::size_t err_lines() const {
    std::size_t n = 0;
    for (char c : err) n += c == '\n';
    return n;
  }
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void spit(const std::string& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string gzip(std::string_view bytes) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Runs `stepscope args...`; stdout and stderr are captured through files in `l.cwd`.
inline Result run(const std::vector<std::string>& args, const Limits& l) {
  const std::string out_path = l.cwd + "/.harness-out", err_path = l.cwd + "/.harness-err";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(l.cwd.c_str()) != 0) ::_exit(126);
    rlimit r{l.memory_bytes, l.memory_bytes};
    ::setrlimit(RLIMIT_AS, &r);
    const int in = ::open(l.stdin_path.c_str(), O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
    std::vector<char*> argv;
    std::string bin = binary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::setenv("NO_COLOR", "1", 1);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  Result res;
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (res.seconds > l.timeout_s) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      res.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  res.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  res.out = slurp(out_path);
  res.err = slurp(err_path);
  fs::remove(out_path), fs::remove(err_path);
  return res;
}

// A scratch directory per test, removed after it.
struct Scratch {
  std::string dir;
  Scratch() {
    std::string t = (fs::temp_directory_path() / "stepscope-reliability-XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string operator/(const std::string& name) const { return dir + "/" + name; }
  Limits limits() const { return Limits{dir}; }
};

// The promise for refused input: exit 2, one line on stderr, no signal, no timeout.
#define EXPECT_REFUSED(r)                                           \
  do {                                                              \
    EXPECT_FALSE((r).timed_out);                                    \
    EXPECT_EQ((r).rc, 2) << (r).err;                                \
    EXPECT_EQ((r).err_lines(), 1u) << (r).err;                      \
    EXPECT_EQ((r).err.rfind("stepscope", 0), 0u) << (r).err;        \
  } while (0)

// A minimal Kineto trace: one profiler step around the given events (JSON objects, comma-joined).
inline std::string kineto(const std::string& events) {
  return R"({"traceEvents": [{"ph":"X","name":"ProfilerStep#1","cat":"user_annotation","pid":1,"tid":1,"ts":0,"dur":1000000})" +
         std::string(events.empty() ? "" : ",") + events + "]}";
}

}  // namespace reliability
