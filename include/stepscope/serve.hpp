// `stepscope serve LOGDIR`: a local web app over a log directory. It lists the runs (analysed in
// the background into the run history, stepscope/store.hpp, as they appear), shows one run as
// `analyze --html` does, two runs as `diff --html` does, and each job's history.
//
// Safe by default: it binds to localhost, answers GET and HEAD only, serves no file outside
// LOGDIR (paths resolved, links followed and refused when they leave it), sends the HTML
// report's Content-Security-Policy with every page, limits request sizes and each client's
// request rate, and shows every file, run and event name as escaped text.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "stepscope/html.hpp"

namespace stepscope {

struct ServeOptions {
  std::string logdir;
  std::string store_path;  // empty: LOGDIR/.stepscope/runs.sqlite
  std::string host = "127.0.0.1";
  int port = 6006;          // 0: any free port
  int jobs = 0;             // threads of the background analysis
  double poll_seconds = 2;  // how often LOGDIR is scanned for new runs
  int rate_per_second = 100;  // each client's sustained request rate
  int rate_burst = 1000;      // requests a client may send at once before being slowed
  // Where the server says where it listens and logs requests; stderr when empty.
  std::function<void(const std::string& line)> log;
};

// Serves until SIGINT or SIGTERM; returns the exit status. Throws InputError for a LOGDIR that is
// no readable directory, a store that cannot be opened, or an address that cannot be bound.
int serve(const ServeOptions& opts);

// The file under `root` (a canonical directory) that the URL path `rel` (already %-decoded) names,
// or nothing when it is no regular file inside the root: a NUL byte, an absolute path, a ".."
// part, a hidden part (.stepscope), or a link that leaves the root.
std::optional<std::string> resolve_under_root(const std::string& root, const std::string& rel);


}  // namespace stepscope
