// The drill-down's parts that share the rank's call tree, built once per rank.
#pragma once

#include <string>

#include "analysis/call_tree.hpp"
#include "analysis/hta_view.hpp"
#include "stepscope/drilldown.hpp"

namespace stepscope {

// On HTA's view of the rank, built once for the three of them.
KernelSequences hta_kernel_sequences_with(const RankTrace& rank, const CallTree& tree, const hta::View& view,
                                          const std::string& op, int min_len);
QueueLength hta_queue_length_with(const RankTrace& rank, const hta::View& view, std::size_t max_points);
MemoryBandwidth hta_memory_bandwidth_with(const RankTrace& rank, const hta::View& view, std::size_t max_points);
std::vector<OperatorRow> operator_rows_with(const RankTrace& rank, const RankFacts& facts, const CallTree& tree,
                                            OperatorGrouping grouping);

}  // namespace stepscope
