// The sampling loop of a live watch.
#include "stepscope/watch/live.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "stepscope/error.hpp"
#include "stepscope/watch/proc.hpp"

extern char** environ;

namespace stepscope::watch {

namespace {

using Clock = std::chrono::steady_clock;

// Sleeps until `deadline` in short slices, so a stop request or the target's exit ends the
// wait promptly even with long intervals.
void sleep_until(Clock::time_point deadline, const std::atomic<bool>& stop) {
  constexpr auto kSlice = std::chrono::milliseconds(50);
  while (!stop.load()) {
    auto now = Clock::now();
    if (now >= deadline) return;
    std::this_thread::sleep_for(std::min<Clock::duration>(kSlice, deadline - now));
  }
}

pid_t launch(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  std::vector<std::string> copy = command;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (rc != 0)
    throw InputError(fmt::format("cannot start '{}': {}", command[0], std::strerror(rc)));
  return pid;
}

}  // namespace

void validate(const WatchOptions& o) {
  if (o.pid != 0 && !o.command.empty())
    throw InputError("give either --pid PID or -- COMMAND, not both");
  if (o.pid == 0 && o.command.empty())
    throw InputError("nothing to watch: give --pid PID or -- COMMAND ARGS...");
  if (o.pid < 0) throw InputError(fmt::format("--pid {}: a process id must be positive", o.pid));
  if (o.interval_ms < kMinIntervalMs || o.interval_ms > kMaxIntervalMs)
    throw InputError(fmt::format("--interval {}s: must be between {}s and {}s", o.interval_ms / 1000.0,
                                 kMinIntervalMs / 1000.0, kMaxIntervalMs / 1000.0));
  if (!(o.seconds > 0) || o.seconds > kMaxSeconds || !std::isfinite(o.seconds))
    throw InputError(
        fmt::format("--seconds {}s: must be above 0 and at most {:.0f}s", o.seconds, kMaxSeconds));
  if (o.seconds * 1000.0 < o.interval_ms)
    throw InputError(
        fmt::format("--seconds {}s is shorter than one --interval of {}s: no sample "
                    "would be taken",
                    o.seconds, o.interval_ms / 1000.0));
}

WatchResult run_watch(const WatchOptions& options, GpuSource& gpu, const std::atomic<bool>& stop,
                      const SampleCallback& on_sample) {
  validate(options);
  WatchResult result;
  int pid = options.pid;
  if (!options.command.empty()) {
    result.launched = launch(options.command);
    pid = result.launched;
  }
  Series& series = result.series;
  series.target = describe_process(pid);
  if (result.launched) {
    // The command line is known exactly; /proc may still show the pre-exec image.
    std::string cmd;
    for (const auto& a : options.command) cmd += (cmd.empty() ? "" : " ") + a;
    series.target.command = cmd;
  }
  series.interval_s = options.interval_ms / 1000.0;
  series.gpu_observed = gpu.available();
  // NVML lists the processes holding a context on each device, so a GPU no watched process
  // holds is known to be someone else's.
  series.gpu_pids_matchable = gpu.available();
  series.gpu_status = gpu.status();
  if (!gpu.available()) series.notes.push_back({WarningId::NoGpuObserved, gpu.status()});

  ProcSampler sampler(pid);
  auto start = Clock::now();
  sampler.sample(start);
  auto interval = std::chrono::milliseconds(options.interval_ms);
  auto end = start + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options.seconds));
  for (auto next = start + interval; next <= end + std::chrono::milliseconds(1); next += interval) {
    sleep_until(next, stop);
    if (stop.load()) {
      result.interrupted = true;
      break;
    }
    if (!sampler.root_alive()) {
      result.target_exited = true;
      break;
    }
    auto now = Clock::now();
    auto host = sampler.sample(now);
    if (!host) continue;
    Sample s;
    s.t_s = std::chrono::duration<double>(now - start).count();
    s.host = std::move(*host);
    if (gpu.available()) s.gpus = gpu.sample(sampler.tree());
    series.samples.push_back(std::move(s));
    if (on_sample) on_sample(series);
    // A slow sample (a tree with thousands of threads) must not be followed by a burst of
    // catch-up samples a few milliseconds apart: resume the rhythm from now.
    auto after = Clock::now();
    if (after > next + interval) next = after - interval;
  }
  if (result.target_exited)
    series.notes.push_back({WarningId::TargetExited,
                            fmt::format("the target exited after {:.1f} s",
                                        std::chrono::duration<double>(Clock::now() - start).count())});
  if (gpu.available()) {
    bool matched = false;
    for (const auto& s : series.samples)
      for (const auto& g : s.gpus) matched |= !g.target_pids.empty();
    if (!matched && !series.samples.empty())
      series.notes.push_back({WarningId::NoGpuContext,
                              "no watched process holds a GPU context (or its pids are not visible from this PID "
                              "namespace); the GPUs seen are not judged as this job's, host side only"});
  }
  result.classification = classify(series);
  return result;
}

int wait_for_command(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 0;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 0;
}

}  // namespace stepscope::watch
