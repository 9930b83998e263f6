// The parts of the GPU timeline analysis that go beyond HTA, each a function of the raw trace
// (full ns resolution, every event, no step dropped).
#pragma once

#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/gpu_timeline.hpp"

namespace stepscope::detail {

// Kernels, copies and memsets (complete events): the GPU's work.
inline bool is_gpu_work(const EventTable& ev, std::size_t i) {
  Kind k = ev.kind[i];
  return ev.phase[i] == Phase::Complete && (k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset);
}
inline bool is_kernel(const EventTable& ev, std::size_t i) {
  return ev.phase[i] == Phase::Complete && ev.kind[i] == Kind::Kernel;
}

// Host ProfilerStep#N windows, by start; one per N.
std::vector<StepWindow> profiler_steps(const RankTrace& rank, const RankFacts& facts);
// Index into `steps` of the window holding ts, or -1.
int step_index(const std::vector<StepWindow>& steps, ns_t ts);

// Union of time intervals, sorted, disjoint (touching intervals merged).
struct Span {
  ns_t start, end;
};
std::vector<Span> union_of(std::vector<Span> spans);
// Whether [start, end) overlaps any span of a union (a zero-length copy overlaps a span that
// strictly contains its instant).
bool overlaps(const std::vector<Span>& u, ns_t start, ns_t end);

KernelClasses kernel_classes(const RankTrace& rank, const RankFacts& facts);
SyncPoints sync_points(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                       const GpuTimelineOptions& opts);
Copies copies(const RankTrace& rank, const GpuTimelineOptions& opts);
LaunchOverhead launch_overhead(const RankTrace& rank, const RankFacts& facts, const std::vector<StepWindow>& steps,
                               const GpuTimelineOptions& opts);
Occupancy occupancy(const RankTrace& rank);
MemoryPeaks memory_peaks(const RankTrace& rank, const std::vector<StepWindow>& steps);

// Summary statistics in pandas' conventions (shared with the HTA figures).
SampleStats summarize(std::vector<double> values);

}  // namespace stepscope::detail
