// stepscope's own tracks for the annotated trace of one rank, built from the analysis result.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stepscope/pipeline.hpp"

namespace stepscope::annotate_detail {

struct Slice {
  ns_t start = 0, end = 0;
  std::string name;
  nlohmann::json args;
  long group = -1;  // slices of one group (>= 0) share a lane, so a step's partition stays together
};

struct Track {
  std::string name;
  std::vector<Slice> slices;
  std::size_t max_lanes = 0;  // 0: as many as the slices need; else slices that fit no lane are left out
};

// Tracks in display order: steps, step partition, then the findings.
std::vector<Track> build_tracks(const Analysis& a, std::size_t rank_index, const PartitionOptions& opts);

}  // namespace stepscope::annotate_detail
