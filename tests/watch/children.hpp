// Child processes with a known behaviour, for testing the sampler on real /proc readings.
// Every child kills itself after a safety timeout, so a failed test never leaves it running.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "stepscope/watch.hpp"
#include "stepscope/watch/proc.hpp"

extern char** environ;

namespace watch_test {

inline constexpr unsigned kChildSafetySeconds = 20;

class Child {
 public:
  explicit Child(const std::function<void()>& body) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::alarm(kChildSafetySeconds);
      body();
      ::_exit(0);
    }
  }
  // Runs a program with the given extra environment variables.
  Child(std::vector<std::string> argv, std::vector<std::string> env) {
    std::vector<char*> args, envp;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    for (char** e = environ; *e; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
    if (::posix_spawnp(&pid_, args[0], nullptr, nullptr, args.data(), envp.data()) != 0) pid_ = -1;
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// A Python-like interpreter loop: one thread, never blocks.
inline void busy_loop() {
  volatile unsigned long long x = 0;
  for (;;) x = x + 1;
}

// The same loop, placed ahead of ordinary processes where the tests may (as root): on a machine
// busy with other tests, the plain loop gets a share of a core, and the reading is then rightly
// not "pegged". Where renicing is refused the loop runs at its inherited priority.
inline void pegged_busy_loop() {
  ::setpriority(PRIO_PROCESS, 0, -10);
  busy_loop();
}

// `threads` busy threads confined to a single core, like intra-op pools sized for the whole
// machine running inside a one-core slice.
inline void many_threads_on_one_core(int threads) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ::sched_getaffinity(0, sizeof mine, &mine);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &mine)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ::sched_setaffinity(0, sizeof one, &one);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(busy_loop);
  for (auto& t : pool) t.join();
}

// Synchronous writes that bypass the page cache: each one waits for the disk and costs almost no
// CPU, as a loader reading cold data waits. Falls back to buffered writes where the file system
// refuses O_DIRECT.
inline void heavy_file_io(const std::string& path) {
  constexpr size_t kBlock = 1 << 20;
  int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT | O_DSYNC, 0600);
  if (fd < 0) fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DSYNC, 0600);
  if (fd < 0) ::_exit(3);
  ::unlink(path.c_str());
  void* block = nullptr;
  if (::posix_memalign(&block, 4096, kBlock) != 0) ::_exit(4);
  std::memset(block, 'x', kBlock);
  const off_t span = off_t(32) << 20;
  for (off_t off = 0;; off = (off + off_t(kBlock)) % span) {
    if (::pwrite(fd, block, kBlock, off) < 0) ::_exit(5);
  }
}

// Samples `pid` every `interval` for `count` readings (plus the baseline).
inline stepscope::watch::Series sample_for(pid_t pid, int count,
                                           std::chrono::milliseconds interval) {
  using namespace stepscope::watch;
  Series s;
  s.target = describe_process(pid);
  s.interval_s = interval.count() / 1000.0;
  ProcSampler sampler(pid);
  sampler.sample();
  for (int i = 0; i < count; ++i) {
    std::this_thread::sleep_for(interval);
    if (auto r = sampler.sample()) {
      Sample x;
      x.t_s = (i + 1) * s.interval_s;
      x.host = std::move(*r);
      s.samples.push_back(std::move(x));
    }
  }
  return s;
}

// Gives a freshly started child time to reach its steady behaviour.
inline void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

}  // namespace watch_test
