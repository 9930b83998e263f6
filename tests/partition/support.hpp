// Helpers shared by the partition and verdict tests: run the whole pipeline on files or on a
// trace written inline, and run the trace generator.
#pragma once

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stepscope/analysis.hpp"
#include "stepscope/diagnose.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/pipeline.hpp"

namespace stepscope::test {

inline DiagnosedResult analyze_files(const std::vector<std::string>& paths, const AnalyzeOptions& o = {}) {
  IngestOptions io;
  io.jobs = 1;
  Trace t = read_traces(paths, io);
  return diagnosed(analyze(t, o));
}

inline DiagnosedResult analyze_json(const nlohmann::json& trace, const AnalyzeOptions& o = {}) {
  Trace t;
  t.ranks.push_back(read_kineto_buffer(trace.dump(), "inline"));
  return diagnosed(analyze(t, o));
}

// A Kineto trace built event by event; times in microseconds.
struct KinetoBuilder {
  nlohmann::json events = nlohmann::json::array();
  int next_corr = 1;

  void host(const std::string& name, double ts, double dur, const std::string& cat = "cpu_op", int tid = 1) {
    events.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur}});
  }
  // A launch call at `ts` on the host and its GPU activity at `gts` on stream 7.
  void launch(const std::string& kernel, double ts, double gts, double gdur, const std::string& gcat = "kernel",
              int tid = 1, const std::string& call = "cudaLaunchKernel") {
    int c = next_corr++;
    events.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", call}, {"pid", 1}, {"tid", tid},
                      {"ts", ts}, {"dur", 2}, {"args", {{"correlation", c}}}});
    events.push_back({{"ph", "X"}, {"cat", gcat}, {"name", kernel}, {"pid", 0}, {"tid", 7}, {"ts", gts},
                      {"dur", gdur}, {"args", {{"correlation", c}, {"stream", 7}, {"device", 0}}}});
  }
  nlohmann::json trace() const { return {{"schemaVersion", 1}, {"traceEvents", events}}; }
};

inline std::string tracegen_binary() {
  return std::string(STEPSCOPE_BINARY_DIR) + "/tools/tracegen/stepscope-tracegen";
}

// Generates a scenario into a fresh temporary directory; returns the directory.
inline std::filesystem::path generate(const std::string& scenario, const std::string& extra = "") {
  auto dir = std::filesystem::temp_directory_path() /
             fmt::format("stepscope-verdict-{}-{}", scenario, static_cast<long>(::getpid()));
  std::filesystem::remove_all(dir);
  std::string cmd = fmt::format("'{}' -s {} -o '{}' {} >/dev/null 2>&1", tracegen_binary(), scenario, dir.string(), extra);
  if (std::system(cmd.c_str()) != 0) return {};
  return dir;
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

// A generated scenario analysed as the CLI would: its ground truth and the whole result.
struct GeneratedRun {
  nlohmann::json truth;
  DiagnosedResult result;
};

inline GeneratedRun analyze_generated(const std::string& scenario, const std::string& extra = "") {
  GeneratedRun r;
  const auto dir = generate(scenario, extra);
  EXPECT_FALSE(dir.empty()) << "tracegen failed for " << scenario << " " << extra;
  if (dir.empty()) return r;
  r.truth = read_json(dir / "ground_truth.json");
  std::vector<std::string> files;
  for (const auto& f : r.truth["files"]) files.push_back((dir / f.get<std::string>()).string());
  PipelineOptions o;
  o.ingest.jobs = 1;
  r.result = analyze_paths(files, o).result;
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace stepscope::test
