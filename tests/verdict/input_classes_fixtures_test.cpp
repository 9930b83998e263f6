// Claims that fit the input, on the real fixtures that show each class: separate runs in one
// folder, two ranks of a 128-rank job, and files that are not profiler traces.
#include <gtest/gtest.h>

#include <string>

#include "stepscope/error.hpp"
#include "stepscope/pipeline.hpp"

namespace stepscope {
namespace {

std::string fixture(const std::string& rel) { return std::string(STEPSCOPE_FIXTURES_DIR) + "/" + rel; }

DiagnosedResult analyze_fixture(const std::string& rel) {
  PipelineOptions o;
  o.keep_trace = false;
  return analyze_paths({fixture(rel)}, o).result;
}

std::string refusal(const std::string& rel) {
  try {
    analyze_fixture(rel);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Six recordings of different CPU programs in one folder are no job of six ranks.
TEST(InputClassFixtures, SeparateCpuRunsAreNotRanks) {
  const DiagnosedResult r = analyze_fixture("cpu");
  EXPECT_GE(r.ranks.size(), 2u);
  EXPECT_TRUE(r.job.trust.has("separate_runs"));
  EXPECT_EQ(r.diagnosis.verdict.bound, Bound::Inconclusive);
}

// Two ranks sampled from a 128-rank job: no straggler, and the comparison says why.
TEST(InputClassFixtures, TwoOfAHundredTwentyEightRanksNameNoStraggler) {
  const DiagnosedResult r = analyze_fixture("hta/sampled_world128");
  EXPECT_EQ(r.job.rank_comparison.world_size, 128);
  EXPECT_FALSE(r.job.rank_comparison.straggler.has_value());
  EXPECT_TRUE(r.job.trust.has("partial_job"));
  EXPECT_NE(r.diagnosis.verdict.bound, Bound::Straggler);
}

// A rank of the HTA suite with every GPU record cut out but NCCL's names left: a GPU job whose
// GPU side is missing, not a CPU job.
TEST(InputClassFixtures, GpuNamesWithoutGpuRecordsAreIncomplete) {
  const DiagnosedResult r = analyze_fixture("hta/edited/rank_non_gpu.json.gz");
  EXPECT_TRUE(r.job.trust.has("incomplete_gpu_records"));
  EXPECT_EQ(device_line(r.ranks.at(0).facts), "GPU of unknown model");
}

// The CPU-only fixture's device line says so.
TEST(InputClassFixtures, ACpuTraceIsCpuOnly) {
  const DiagnosedResult r = analyze_fixture("cpu/c_item_print_every_step.pt.trace.json.gz");
  EXPECT_EQ(device_line(r.ranks.at(0).facts), "CPU only");
  EXPECT_EQ(r.ranks.at(0).facts.inventory.recorder, Recorder::AutogradProfiler);
}

TEST(InputClassFixtures, FilesThatAreNoProfilerTracesAreNamed) {
  EXPECT_NE(refusal("param/linear_et.json.gz").find("execution trace"), std::string::npos);
  EXPECT_NE(refusal("tracelens/rocprof/908_results.json.gz").find("rocprofv3"), std::string::npos);
  EXPECT_NE(refusal("hta/memory_analysis/memory_timeline.raw.gz").find("export_memory_timeline"), std::string::npos);
  EXPECT_NE(refusal("nsys/nbody-nvtx_nvtxpptrace.csv").find("nsys stats"), std::string::npos);
  EXPECT_NE(refusal("nccl/mpi-nccl-test-log-16.log").find("NCCL debug log"), std::string::npos);
}

}  // namespace
}  // namespace stepscope
