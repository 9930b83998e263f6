// The CUDA summary is computed from the trace model, so a Kineto trace gets it too, by the same
// definitions: checked against counts taken straight from the model's events.
#include <gtest/gtest.h>

#include <map>

#include "stepscope/cuda_summary.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

TEST(KinetoCudaSummary, SameFiguresFromAKinetoTrace) {
  Trace tr = read_traces({std::string(STEPSCOPE_FIXTURES_DIR) +
                          "/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"});
  const RankTrace& t = tr.ranks[0];
  CudaSummary s = summarize_cuda(t);
  std::uint64_t kernels = 0, launches = 0;
  ns_t kernel_ns = 0;
  std::map<std::string, std::uint64_t> calls;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.phase[i] != Phase::Complete) continue;
    if (t.events.kind[i] == Kind::Kernel) ++kernels, kernel_ns += t.events.dur[i];
    if (t.events.kind[i] == Kind::Runtime || t.events.kind[i] == Kind::Driver) ++calls[std::string(t.name_of(i))];
    if (t.events.kind[i] == Kind::Runtime && t.name_of(i) == "cudaLaunchKernel") ++launches;
  }
  ASSERT_GT(kernels, 0u);
  EXPECT_EQ(s.kernel_count, kernels);
  EXPECT_EQ(s.kernel_total, kernel_ns);
  std::uint64_t listed = 0;
  double pct = 0;
  for (const auto& k : s.kernels) listed += k.instances, pct += k.time_pct;
  EXPECT_EQ(listed, kernels);
  EXPECT_NEAR(pct, 100.0, 1e-9);
  ASSERT_FALSE(s.runtime_api.empty());
  for (const auto& a : s.runtime_api) EXPECT_EQ(a.instances, calls[a.name]) << a.name;
  EXPECT_GE(s.kernel_launches, launches);
  EXPECT_TRUE(s.kernels_short_name.empty());  // Kineto has no short names
  ASSERT_FALSE(s.devices.empty());
  for (const auto& d : s.devices) {
    EXPECT_LE(d.busy, d.span);
    EXPECT_EQ(d.idle, d.span - d.busy);
  }
}

}  // namespace
}  // namespace stepscope
