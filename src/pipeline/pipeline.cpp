#include "stepscope/pipeline.hpp"

#include <fmt/core.h>

#include "stepscope/diagnose.hpp"
#include "stepscope/error.hpp"

namespace stepscope {

namespace {

void check_jobs(int jobs) {
  if (jobs < 0 || jobs > kMaxJobs)
    throw InputError(fmt::format("--jobs {}: must be between 0 (one per core) and {}", jobs, kMaxJobs));
}

}  // namespace

Analysis analyze_paths(const std::vector<std::string>& paths, const PipelineOptions& opts) {
  check_jobs(opts.ingest.jobs);
  check_jobs(opts.analyze.jobs);
  Analysis a;
  a.trace = read_traces(paths, opts.ingest);
  a.result = analyze(a.trace, opts.analyze);
  diagnose(a.result);
  return a;
}

}  // namespace stepscope
