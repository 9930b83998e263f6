#include "exercise.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "stepscope/annotate.hpp"
#include "stepscope/error.hpp"
#include "stepscope/html.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope::fuzzing {

namespace {

namespace fs = std::filesystem;

// One private directory per process, made once: a fuzzer runs millions of inputs, and parallel
// test processes must not share scratch files.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "stepscope-fuzz-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

const ScratchDir& scratch() {
  static const ScratchDir dir;
  return dir;
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size() || std::fflush(f.get()) != 0)
    throw std::runtime_error("cannot write the scratch file " + path.string());
}

// Removes what one input left behind, even when it escaped with an exception, so the next one
// starts from an empty directory: the annotated output is a file for one rank but a directory
// for several.
struct ClearScratchOnExit {
  ~ClearScratchOnExit() {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(scratch().path(), ec)) fs::remove_all(entry.path(), ec);
  }
};

PipelineOptions two_threads() {
  PipelineOptions opts;
  opts.ingest.jobs = 2;  // the parallel chunk parser, not only the serial one
  opts.analyze.jobs = 2;
  return opts;
}

// Every report the CLI can write. The JSON is dumped as the CLI dumps it: a trace's strings need
// not be UTF-8, and they are replaced rather than refused.
void render_reports(const Analysis& a, const fs::path& annotated) {
  (void)render_text(a.result);
  (void)render_text(a.result, TextOptions{.color = true, .verbose = true});
  (void)to_json(a.result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)render_html(a.result);
  if (a.result.ranks.empty() && !a.result.job.memory_snapshots.empty()) return;  // a memory snapshot has no trace to annotate
  write_annotated_traces(a, annotated.string(), AnnotateOptions{two_threads().analyze.partition});
}

bool run_pipeline(const fs::path& input, const fs::path& annotated) {
  try {
    Analysis a = analyze_paths({input.string()}, two_threads());
    render_reports(a, annotated);
    return true;
  } catch (const InputError&) {
    return false;  // bad input may be refused, with a message naming it
  }
}

}  // namespace

bool exercise_bytes(std::string_view bytes, InputKind kind) {
  const fs::path& dir = scratch().path();
  fs::path input = dir / (kind == InputKind::nsys ? "rank-0.sqlite" : "rank-0.pt.trace.json");
  fs::path annotated = dir / "annotated";
  ClearScratchOnExit clear;
  write_file(input, bytes);
  return run_pipeline(input, annotated);
}

}  // namespace stepscope::fuzzing
