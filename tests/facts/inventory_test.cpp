// The input inventory on hand-built traces: what the file holds, what that says of the device,
// and the trust codes its preconditions raise.
#include <gtest/gtest.h>

#include "gpu_timeline/trace_builder.hpp"
#include "stepscope/facts.hpp"

namespace stepscope {
namespace {

using test::TraceBuilder;
using test::us;

RankFacts facts_of(TraceBuilder& b) {
  b.trace().build_indexes();
  return compute_facts(b.trace());
}

// A CPU-only loop: host ops only, nothing that names a device.
TEST(Inventory, HostOpsAloneAreCpuOnly) {
  TraceBuilder b;
  for (int s = 0; s < 3; ++s) {
    b.step(s, s * 1000.0, 900);
    b.add_ns(Kind::CpuOp, "cpu_op", "aten::mm", us(s * 1000.0 + 10), us(500));
  }
  const RankFacts f = facts_of(b);
  EXPECT_EQ(f.inventory.count(Activity::HostOps), 3u);
  EXPECT_EQ(f.inventory.count(Activity::Annotations), 3u);
  EXPECT_FALSE(f.inventory.gpu_job());
  EXPECT_EQ(device_line(f), "CPU only");
  EXPECT_FALSE(f.trust.blocks());
  EXPECT_EQ(describe_inventory(f.inventory), "torch.profiler (Kineto): 1 process, 1 thread; host ops 3, annotations 3; 2.9 ms");
}

// A legacy-profiler trace of a GPU job: cuDNN op names, no GPU record, no launch.
TEST(Inventory, GpuLibraryNamesMakeAMissingGpuSideIncomplete) {
  TraceBuilder b;
  b.trace().layout = TraceLayout::LegacyArray;
  for (int s = 0; s < 3; ++s) b.add_ns(Kind::CpuOp, "", "cudnn_convolution", us(s * 1000.0), us(800));
  const RankFacts f = facts_of(b);
  EXPECT_EQ(f.inventory.recorder, Recorder::AutogradProfiler);
  EXPECT_TRUE(f.inventory.gpu_job());
  EXPECT_EQ(device_line(f), "GPU of unknown model");
  const TrustWarning* w = f.trust.find("incomplete_gpu_records");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->severity, TrustSeverity::Blocks);
  EXPECT_NE(w->advice.find("legacy autograd profiler"), std::string::npos) << w->advice;
}

// An Nsight capture of a program's first second: context creation and a long cudaFree, one
// memset, no kernel and no step.
TEST(Inventory, AStartUpCaptureHoldsNoStep) {
  TraceBuilder b;
  b.trace().layout = TraceLayout::NsysSqlite;
  b.runtime("cuInit", 0, 30'000);
  b.runtime("cudaFree", 30'000, 118'000);
  b.add_ns(Kind::Memset, "gpu_memset", "Memset (Device)", us(150'000), us(5), 7);
  b.runtime("cudaGetDeviceCount", 150'100, 10);
  const RankFacts f = facts_of(b);
  EXPECT_TRUE(f.inventory.startup_only);
  EXPECT_NE(f.inventory.startup_evidence.find("cudaFree"), std::string::npos) << f.inventory.startup_evidence;
  const TrustWarning* w = f.trust.find("startup_only");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->severity, TrustSeverity::Blocks);
  EXPECT_NE(w->advice.find("capture-range"), std::string::npos) << w->advice;  // nsys's words, not torch.profiler's
}

// The same start-up followed by steps of kernels is a normal trace.
TEST(Inventory, StartUpBeforeStepsIsNotStartUpOnly) {
  TraceBuilder b;
  b.runtime("cudaFree", 0, 118'000);
  for (int s = 0; s < 3; ++s) {
    b.step(s, 120'000 + s * 1000.0, 900);
    b.launch("ampere_sgemm_128x64_nn", 120'010 + s * 1000.0, 5, 120'020 + s * 1000.0, 800, 7, s + 1);
  }
  EXPECT_FALSE(facts_of(b).inventory.startup_only);
}

// Kernels with no host side at all (a GPU-only export), and communication kernels alone.
TEST(Inventory, AFilteredExportIsNamed) {
  TraceBuilder b;
  for (int s = 0; s < 4; ++s) b.kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", s * 100.0, 60, 20);
  const RankFacts f = facts_of(b);
  EXPECT_EQ(f.inventory.count(Activity::CommKernels), 4u);
  EXPECT_FALSE(f.inventory.host_side());
  EXPECT_TRUE(f.trust.has("filtered_export"));
  EXPECT_TRUE(f.trust.has("no_host_activity"));
  EXPECT_TRUE(f.trust.blocks());
}

// with_stack and profile_memory are read from what the trace holds, record_shapes from its header.
TEST(Inventory, RecordingOptionsFromEventsAndHeader) {
  TraceBuilder b;
  b.add_ns(Kind::PythonFunction, "python_function", "train.py(12): step", us(0), us(100));
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::add", us(10), us(5));
  b.memory_sample(12, 1024, 2048);
  b.trace().metadata.emplace_back("record_shapes", "1");
  const RankFacts f = facts_of(b);
  EXPECT_EQ(f.inventory.options, (std::vector<std::string>{"with_stack", "record_shapes", "profile_memory"}));
  EXPECT_EQ(f.inventory.count(Activity::PythonFrames), 1u);
  EXPECT_EQ(f.inventory.count(Activity::MemoryEvents), 1u);
}

// A file of several ranks that could not be split: the ranks are counted and the bound blocked.
TEST(Inventory, ProcessesNamedAfterRanks) {
  TraceBuilder b;
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::mm", us(0), us(5));
  b.trace().process_names[100] = "RANK 0 - python";
  b.trace().process_names[200] = "RANK 1 - python";
  b.trace().process_names[300] = "RANK 1 - GPU 0";
  const RankFacts f = facts_of(b);
  EXPECT_EQ(f.inventory.ranks_in_file, 2);
  EXPECT_TRUE(f.trust.has("several_ranks_in_file"));
}

// A replay tool's loop: one backward op called ten times, nothing else at the top level.
TEST(RunKindFacts, AReplayedOpIsABenchmarkNotTraining) {
  TraceBuilder b;
  for (int k = 0; k < 10; ++k) {
    b.add_ns(Kind::CpuOp, "cpu_op", "aten::convolution_backward", us(k * 1000.0), us(600));
    b.launch("sm80_xmma_dgrad_implicit_gemm_bf16", k * 1000.0 + 10, 5, k * 1000.0 + 20, 500, 7, k + 1);
  }
  const RankFacts f = facts_of(b);
  EXPECT_EQ(f.run_kind, RunKind::Benchmark) << f.run_kind_evidence;
  EXPECT_NE(f.run_kind_evidence.find("aten::convolution_backward"), std::string::npos);
}

// Two different ops at the top level are no replay.
TEST(RunKindFacts, TwoOpsAreNoReplay) {
  TraceBuilder b;
  for (int k = 0; k < 10; ++k)
    b.add_ns(Kind::CpuOp, "cpu_op", k % 2 ? "aten::mm" : "aten::add", us(k * 1000.0), us(600));
  EXPECT_NE(facts_of(b).run_kind, RunKind::Benchmark);
}

TEST(Inventory, RankInProcessName) {
  EXPECT_EQ(rank_in_process_name("RANK 2 - GPU 0"), 2);
  EXPECT_EQ(rank_in_process_name("rank3"), 3);
  EXPECT_EQ(rank_in_process_name("Rank_1 python"), 1);
  EXPECT_EQ(rank_in_process_name("python3"), -1);
  EXPECT_EQ(rank_in_process_name("ranker 4"), -1);
  EXPECT_EQ(rank_in_process_name("frank 4"), -1);
  EXPECT_EQ(rank_in_process_name("rank 99999999999"), -1);
}

TEST(Inventory, AdviceSpeaksTheRecordersLanguage) {
  EXPECT_NE(recording_advice(Recorder::NsightSystems, "gpu").find("nsys profile --trace=cuda"), std::string::npos);
  EXPECT_EQ(recording_advice(Recorder::NsightSystems, "gpu").find("ProfilerActivity"), std::string::npos);
  EXPECT_NE(recording_advice(Recorder::TorchProfiler, "gpu").find("ProfilerActivity.CUDA"), std::string::npos);
  EXPECT_NE(recording_advice(Recorder::AutogradProfiler, "steps").find("torch.profiler"), std::string::npos);
}

}  // namespace
}  // namespace stepscope
