// A live watch: sample a running process tree (and the GPUs) for a while, then classify.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "stepscope/watch.hpp"
#include "stepscope/watch/gpu.hpp"

namespace stepscope::watch {

inline constexpr int kMinIntervalMs = 50;  // below this /proc reading costs more than it tells
inline constexpr int kMaxIntervalMs = 60'000;
inline constexpr double kMaxSeconds = 86'400;  // one day

struct WatchOptions {
  int pid = 0;                       // watch this running process ...
  std::vector<std::string> command;  // ... or start this command and watch it
  double seconds = 10;
  int interval_ms = 1000;
};

// Throws InputError with a one-line reason when the options cannot work.
void validate(const WatchOptions& options);

struct WatchResult {
  Series series;
  Classification classification;
  pid_t launched = 0;          // the started command, still to be waited for (0 = none)
  bool target_exited = false;  // the target ended before the window did
  bool interrupted = false;    // `stop` was raised
};

// Called after every sample with the series so far (for a live display).
using SampleCallback = std::function<void(const Series&)>;

// Samples until `seconds` elapse, the target exits, or `stop` becomes true. Starts the command
// when one is given (InputError if it cannot be started).
WatchResult run_watch(const WatchOptions& options, GpuSource& gpu, const std::atomic<bool>& stop,
                      const SampleCallback& on_sample = {});

// Waits for a started command; returns its exit status (128 + signal when killed).
int wait_for_command(pid_t pid);

}  // namespace stepscope::watch
