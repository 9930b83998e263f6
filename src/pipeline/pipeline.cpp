#include "stepscope/pipeline.hpp"

#include "stepscope/diagnose.hpp"

namespace stepscope {

Analysis analyze_paths(const std::vector<std::string>& paths, const PipelineOptions& opts) {
  Analysis a;
  a.trace = read_traces(paths, opts.ingest);
  a.result = analyze(a.trace, opts.analyze);
  diagnose(a.result, a.trace);
  return a;
}

}  // namespace stepscope
