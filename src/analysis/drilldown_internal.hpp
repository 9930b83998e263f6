// The drill-down's parts that share the rank's call tree, built once per rank.
#pragma once

#include <string>

#include "analysis/call_tree.hpp"
#include "stepscope/drilldown.hpp"

namespace stepscope {

KernelSequences hta_kernel_sequences_with(const RankTrace& rank, const CallTree& tree, const std::string& op, int min_len);
std::vector<OperatorRow> operator_rows_with(const RankTrace& rank, const RankFacts& facts, const CallTree& tree,
                                            OperatorGrouping grouping);

}  // namespace stepscope
