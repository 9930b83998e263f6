// Helpers of the HTML and annotated-trace tests: generated traces in a private temporary
// directory, the pipeline, and whole-file reads.
#pragma once

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "stepscope/ingest.hpp"
#include "stepscope/pipeline.hpp"

namespace stepscope::html_test {

namespace fs = std::filesystem;

// A directory removed when the test ends.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / fmt::format("stepscope-{}-{}-{}", tag, static_cast<long>(::getpid()), counter()++);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

inline std::string tracegen_binary() { return std::string(STEPSCOPE_BINARY_DIR) + "/tools/tracegen/stepscope-tracegen"; }

// Runs the generator into `dir`; returns the trace files it wrote (ground_truth.json left out).
inline std::vector<std::string> generate(const fs::path& dir, const std::string& scenario, const std::string& extra = "") {
  std::string cmd = fmt::format("'{}' -s {} -o '{}' --seed 7 {} >/dev/null 2>&1", tracegen_binary(), scenario, dir.string(), extra);
  if (std::system(cmd.c_str()) != 0) return {};
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".pt.trace.json") != std::string::npos) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline Analysis run_pipeline(const std::vector<std::string>& paths) {
  PipelineOptions po;
  po.ingest.jobs = 1;
  return analyze_paths(paths, po);
}

inline std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

}  // namespace stepscope::html_test
