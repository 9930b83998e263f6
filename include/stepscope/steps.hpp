// Step detection: where each training step starts and ends on the host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/partition.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {

struct HostWindow {
  std::int64_t number = 0;
  std::string name;
  ns_t start = 0, end = 0;
};

struct StepDetection {
  StepSource source = StepSource::WholeTrace;
  std::string detail;     // annotation name for Annotation; for WholeTrace, what the window spans when not all of it
  int main_track = -1;    // index into RankTrace::host_tracks of the training loop's thread
  std::vector<HostWindow> windows;  // in time order
};

// In order of preference: ProfilerStep#N annotations; a top-level annotation repeated on the
// main thread (the first of an instrumented step's stages); Optimizer.step boundaries; the
// whole trace as one window. A non-empty `step_range` (--step-range NAME) overrides them: each
// range of that name on the thread holding most of them is one step; InputError if none exists.
// `main_track` is the training loop's thread as the facts layer found it (RankFacts::main_track);
// -1 to pick the thread holding the most ops and annotations.
// With `facts`, a benchmark harness's top-level ranges (warmup / measure) are its steps when the
// trace has no ProfilerStep markers.
StepDetection detect_steps(const RankTrace& t, std::string_view step_range = {}, int main_track = -1,
                           const RankFacts* facts = nullptr);

}  // namespace stepscope
