// `stepscope watch`: sample a live training job for a few seconds and say what bounds it.
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>

#include "cli/command.hpp"
#include "cli/output.hpp"
#include "cli/units.hpp"
#include "stepscope/error.hpp"
#include "stepscope/output_file.hpp"
#include "stepscope/watch/gpu.hpp"
#include "stepscope/watch/live.hpp"
#include "stepscope/watch/proc.hpp"
#include "stepscope/watch/render.hpp"

namespace stepscope::cli {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_interrupt(int) { g_stop.store(true); }

struct WatchArgs {
  watch::WatchOptions options;
  std::string json_path;
  std::string nvml_library;
  bool no_gpu = false;
  bool no_live = false;
  bool stop_command = false;
  double interval_s = 1.0;  // --interval; the sampler counts whole milliseconds
};

// Redraws the live block in place: move the cursor up over the previous block, clear to the end.
class LiveView {
 public:
  explicit LiveView(double window_s) : window_s_(window_s) {}
  void draw(const watch::Series& series) {
    std::string block = watch::render_live(series, window_s_, terminal_columns());
    if (lines_ > 0) fmt::print("\033[{}F\033[J", lines_);
    fmt::print("{}", block);
    std::fflush(stdout);
    lines_ = int(std::count(block.begin(), block.end(), '\n'));
  }
  void clear() {
    if (lines_ > 0) fmt::print("\033[{}F\033[J", lines_);
    lines_ = 0;
  }

 private:
  double window_s_;
  int lines_ = 0;
};

void write_json_text(const std::string& path, const std::string& text) { write_output(path, text, "JSON report"); }

int watch_command(WatchArgs& args) {
  args.options.interval_ms = static_cast<int>(std::lround(args.interval_s * 1000.0));
  check_outputs({}, {{"--json", args.json_path}});
  watch::validate(args.options);
  if (args.options.pid)
    watch::describe_process(args.options.pid);  // fail on a bad pid before loading NVML
  auto gpu = args.no_gpu
                 ? watch::no_gpu_source("GPU sampling turned off (--no-gpu); host side only")
                 : watch::open_nvml(args.nvml_library);
  bool json_to_stdout = args.json_path == "-";
  bool live = !args.no_live && !json_to_stdout && ::isatty(STDOUT_FILENO);

  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  LiveView view(args.options.seconds);
  watch::WatchResult result =
      watch::run_watch(args.options, *gpu, g_stop,
                       live ? watch::SampleCallback([&](const watch::Series& s) { view.draw(s); })
                            : watch::SampleCallback());
  if (live) view.clear();

  const auto& series = result.series;
  std::string source =
      fmt::format("watched pid {} for {:.1f} s: {} samples every {} ms{}", series.target.pid,
                  series.samples.empty() ? 0.0 : series.samples.back().t_s, series.samples.size(),
                  args.options.interval_ms, result.interrupted ? " (interrupted)" : "");
  if (!args.json_path.empty())
    write_json_text(args.json_path, watch::render_json(series, result.classification, "watch"));
  if (!json_to_stdout)
    fmt::print("{}", watch::render_summary(series, result.classification, source));

  std::fflush(stdout);
  if (result.launched) {
    if (args.stop_command && !result.target_exited)
      ::kill(result.launched, SIGTERM);
    else if (!result.target_exited && !result.interrupted)
      fmt::print(stderr,
                 "stepscope: the command keeps running; waiting for it to finish (--stop ends it "
                 "instead)\n");
    int status = watch::wait_for_command(result.launched);
    if (status != 0) fmt::print(stderr, "stepscope: the command exited with status {}\n", status);
  }
  return series.samples.empty() ? kExitNothing : kExitOk;
}

const RegisterCommand kWatchCommand{Command{
    "watch", [](CLI::App& app) -> std::function<int()> {
      auto args = std::make_shared<WatchArgs>();
      auto* sub = app.add_subcommand(
          "watch",
          "Sample a live job (CPU per process and thread, I/O, cgroup quota, and GPUs through "
          "NVML) "
          "and classify it: GPU-bound, input-bound, I/O-bound, oversubscribed, ...");
      sub->add_option("--pid", args->options.pid, "Watch this running process and its children");
      sub->add_option("COMMAND", args->options.command,
                      "Or start this command and watch it (put it after --)")
          ->type_name("COMMAND");
      as_duration(sub->add_option("--seconds", args->options.seconds,
                                  "How long to watch: a duration (90s, 5min; a bare number is seconds)"),
                  1.0)
          ->default_val(10.0);
      as_duration(sub->add_option("--interval", args->interval_s,
                                  "Time between samples: a duration (500ms, 2s; a bare number is seconds)"),
                  1.0)
          ->default_val(1.0);
      sub->add_option(
          "--json", args->json_path,
          "Also write the full result as JSON to FILE ('-' for stdout, instead of text)")
          ->type_name("FILE");
      sub->add_option("--nvml-lib", args->nvml_library,
                      fmt::format("NVML library to load (default ${} or {})",
                                  watch::kNvmlLibraryEnv, watch::kNvmlDefaultLibrary))
          ->type_name("FILE");
      sub->add_flag("--no-gpu", args->no_gpu, "Do not read GPUs; judge the host side only");
      sub->add_flag("--no-live,-q,--quiet", args->no_live, "No refreshing view (the live view is watch's progress), only the final summary");
      sub->add_flag("--stop", args->stop_command,
                    "With a started command: stop it (SIGTERM) when the window ends instead of "
                    "waiting for it to finish");
      sub->footer(
          "\nExit status: 0 judged, 1 no sample taken (the target ended at once), 2 bad usage.\n"
          "\nExamples:\n  stepscope watch --pid 1234 --seconds 20\n"
          "  stepscope watch --seconds 30 -- python train.py --epochs 1\n"
          "  stepscope watch --pid 1234 --json watch.json");
      return [args] { return watch_command(*args); };
    }}};

}  // namespace
}  // namespace stepscope::cli
