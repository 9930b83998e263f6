// Steps must be iterations: an Nsight export of one DDP iteration marked only by NVTX ranges
// ("forward pass", "backward pass", one range per gradient all-reduce) is not partitioned over
// the trailing all-reduce ranges, which repeat but cover a sliver of the work.
#include <gtest/gtest.h>

#include "gpu_timeline/trace_builder.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/partition.hpp"

namespace stepscope {
namespace {

using test::TraceBuilder;
using test::us;

TEST(IterationRanges, TrailingRepeatedRangesAreNoSteps) {
  TraceBuilder b;
  b.trace().layout = TraceLayout::NsysSqlite;
  std::int64_t corr = 1;
  b.add_ns(Kind::UserAnnotation, "nvtx", "forward pass", us(0), us(200'000));
  for (int k = 0; k < 20; ++k, ++corr) b.launch("ampere_sgemm_128x64_nn", k * 10'000.0 + 10, 5, k * 10'000.0 + 20, 9'000, 7, corr);
  b.add_ns(Kind::UserAnnotation, "nvtx", "backward pass", us(200'000), us(250'000));
  for (int k = 0; k < 25; ++k, ++corr)
    b.launch("ampere_sgemm_128x64_nt", 200'000 + k * 10'000.0 + 10, 5, 200'000 + k * 10'000.0 + 20, 9'000, 7, corr);
  for (int k = 0; k < 8; ++k, ++corr) {
    const double at = 450'000 + k * 250.0;
    b.add_ns(Kind::UserAnnotation, "nvtx", "allreduce", us(at), us(200));
    b.launch("ncclKernel_AllReduce_RING_LL_Sum_float", at + 10, 5, at + 20, 150, 20, corr);
  }
  b.trace().build_indexes();
  const RankFacts f = compute_facts(b.trace());
  const RankPartition p = partition_rank(b.trace(), f);
  ASSERT_FALSE(p.steps.empty());
  ns_t covered = 0;
  for (const auto& s : p.steps) covered += s.duration();
  EXPECT_GE(covered, us(400'000)) << "steps cover " << covered << " ns of a 452 ms iteration";
  EXPECT_NE(p.source_detail, "allreduce");
}

}  // namespace
}  // namespace stepscope
