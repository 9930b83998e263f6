// The annotated trace: the input's events, byte for byte, plus stepscope's own tracks, so the
// verdict can be read on the timeline in Perfetto or chrome://tracing. An Nsight Systems export
// has no JSON to copy: its events are written from the model as Chrome trace events instead.
//
// stepscope's events go into a process of their own ("stepscope", a pid the trace does not use):
//  - "steps": one slice per step window, named by the step and the bound that step shows;
//  - "step partition": one slice per run of a single category inside each step window, named by
//    the category; the slices of a step tile its window exactly;
//  - one track per kind of finding: the idle gap after each worst synchronising call, spikes,
//    the straggler's steps, the longest copies, the worst launch delays, and the diagnosis'
//    findings across the steady-state steps.
// Slices that would overlap on one track (step windows overlap when the host runs ahead of the
// GPU) are spread over extra lanes of the same name, since a track must nest.
//
// Ranks: Perfetto opens one trace at a time and the ranks' pids may collide, so each rank is its
// own file (pids cannot be renumbered without changing the original events).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/pipeline.hpp"

namespace stepscope {

struct AnnotateOptions {
  PartitionOptions partition;  // the options the analysis ran with (the partition is redrawn)
};

// What was written for one rank.
struct AnnotatedFile {
  int rank = 0;
  std::string path;
  std::uint64_t original_bytes = 0;   // uncompressed input
  std::uint64_t inserted_at = 0;      // byte offset of the insertion in both files
  std::uint64_t inserted_bytes = 0;   // the added text, a contiguous run
  std::uint64_t added_slices = 0;     // complete events ("X") added
  std::uint64_t added_metadata = 0;   // process/thread name events added
};

// One rank: `path` is the output file. Several ranks: `path` is a directory (created when
// missing) holding one file per rank, named after its input without ".gz" (".sqlite" becomes
// ".json"; prefixed with "rank-N." when two inputs share a name). Output is plain JSON. Throws
// InputError when an input is truncated or an output cannot be written.
std::vector<AnnotatedFile> write_annotated_traces(const Analysis& a, const std::string& path,
                                                  const AnnotateOptions& opts = {});

}  // namespace stepscope
