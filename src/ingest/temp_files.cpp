#include "stepscope/temp_files.hpp"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace stepscope {
namespace {

// A fixed table the signal handler can walk without allocating or locking: a slot's path is
// written before its flag is set, and the flag cleared before the slot is reused.
struct Slot {
  std::atomic<bool> used{false};
  char path[PATH_MAX];
};
constexpr int kSlots = 64;
Slot g_slots[kSlots];
std::mutex g_mutex;  // writers only; the handler reads the flags
std::once_flag g_installed;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_temporaries_and_reraise(int sig) {
  remove_temporaries();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_handlers() {
  for (int sig : kSignals) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // nohup: the user asked to ignore it
    struct sigaction sa {};
    sa.sa_handler = remove_temporaries_and_reraise;
    ::sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
}

// Holds back the signals whose handler removes the temporaries, for as long as it lives.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t held;
    ::sigemptyset(&held);
    for (int sig : kSignals) ::sigaddset(&held, sig);
    ::pthread_sigmask(SIG_BLOCK, &held, &old_);
  }
  ~SignalsHeld() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t old_;
};

}  // namespace

// Files first, so that a registered directory is empty by the time its turn comes (rmdir of a
// file, or of a directory something else still holds, fails harmlessly).
void remove_temporaries() noexcept {
  for (Slot& s : g_slots)
    if (s.used.load(std::memory_order_acquire)) ::unlink(s.path);
  for (Slot& s : g_slots)
    if (s.used.load(std::memory_order_acquire)) ::rmdir(s.path);
}

int create_registered_temporary(std::string& pattern) {
  std::call_once(g_installed, install_handlers);
  SignalsHeld held;
  const int fd = ::mkstemp(pattern.data());
  if (fd >= 0) register_temporary(pattern);
  return fd;
}

bool create_registered_temporary_dir(std::string& pattern) {
  std::call_once(g_installed, install_handlers);
  SignalsHeld held;
  if (!::mkdtemp(pattern.data())) return false;
  register_temporary(pattern);
  return true;
}

void register_temporary(const std::string& path) {
  std::call_once(g_installed, install_handlers);
  if (path.size() >= PATH_MAX) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& s : g_slots) {
    if (s.used.load(std::memory_order_relaxed)) continue;
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    s.used.store(true, std::memory_order_release);
    return;
  }
}

void release_temporary(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& s : g_slots)
    if (s.used.load(std::memory_order_relaxed) && path == s.path) {
      s.used.store(false, std::memory_order_release);
      return;
    }
}

}  // namespace stepscope
