// Every real GPU trace: a verdict with evidence, a partition that is never negative, never over
// the window and sums to it exactly; and the current verdict pinned so that changes are deliberate.
#include <gtest/gtest.h>

#include "partition/support.hpp"

namespace stepscope {
namespace {

struct Pinned {
  const char* file;
  const char* verdict;
};

// Verdicts as first produced on these traces; a change here must be explained in its commit.
constexpr Pinned kPinned[] = {
    {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", "host/launch-bound"},
    {"hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "host/launch-bound"},
    // PARAM harness (a benchmark run by its warmup/measure ranges): ~40 s of one-time calls with
    // the GPU idle are left out; the measured window's host work dwarfs its tiny kernels.
    {"hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", "host/launch-bound"},
    {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", "host/launch-bound"},
    {"hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", "host/launch-bound"},
    // PARAM harness (a benchmark run by its warmup/measure ranges): ~40 s of one-time calls with
    // the GPU idle are left out; the measured window's host work dwarfs its tiny kernels.
    {"hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", "host/launch-bound"},
    // A CUPTI range-profiler run: launches on the host, no kernel records; the GPU side is unknown.
    {"hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz", "inconclusive"},
    {"hta/df_index_resolver/df_index_resolver.json.gz", "host/launch-bound"},
    {"hta/edited/distributed_info_not_found.json.gz", "gpu-bound"},
    {"hta/edited/rank_non_gpu.json.gz", "gpu-bound"},
    {"hta/edited/rank_not_found.json.gz", "gpu-bound"},
    {"hta/execution_trace/benchmark_simple_add_trace.json.gz", "host/launch-bound"},
    {"hta/mtia_inference_trace/mtia_inference_rank_0.json.gz", "gpu-bound"},
    {"hta/mtia_trace_single_rank/mtia_rank_0.json.gz", "host/launch-bound"},
    {"hta/nccl_parser_config/nccl_data.json.gz", "host/launch-bound"},
    {"hta/negative_queue_length_values_check/rank0.json.gz", "host/launch-bound"},
    {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "gpu-bound"},
    {"hta/sampled_world128/sampled_rank-0.json.gz", "host/launch-bound"},
    {"hta/sampled_world128/sampled_rank-1.json.gz", "host/launch-bound"},
    {"hta/trace_diff/control/control.json.gz", "gpu-bound"},
    {"hta/trace_diff/test/test.json.gz", "gpu-bound"},
    {"hta/trace_file_list/inference_rank_1.json.gz", "host/launch-bound"},
    {"hta/triton_example/triton_example.json.gz", "host/launch-bound"},
    {"hta/with_gpu_user_annotation/step_based_trace_2543932.json.gz", "host/launch-bound"},
    {"param/dlrm_8rank/kineto/worker0_step_12.1694128201545.pt.trace.json.gz", "host/launch-bound"},
    {"param/dlrm_8rank/kineto/worker1_step_12.1694128201556.pt.trace.json.gz", "comms-bound"},
    {"param/dlrm_8rank/kineto/worker2_step_12.1694128201554.pt.trace.json.gz", "host/launch-bound"},
    {"param/dlrm_8rank/kineto/worker3_step_12.1694128201557.pt.trace.json.gz", "comms-bound"},
    {"param/dlrm_8rank/kineto/worker4_step_12.1694128201547.pt.trace.json.gz", "host/launch-bound"},
    {"param/dlrm_8rank/kineto/worker5_step_12.1694128201549.pt.trace.json.gz", "host/launch-bound"},
    {"param/dlrm_8rank/kineto/worker6_step_12.1694128201553.pt.trace.json.gz", "host/launch-bound"},
    {"param/dlrm_8rank/kineto/worker7_step_12.1694128201553.pt.trace.json.gz", "host/launch-bound"},
    {"param/linear_kineto.json.gz", "host/launch-bound"},
    {"param/resnet_kineto.json.gz", "input-bound"},
    {"tracelens/b200/eager_trace.json.gz", "host/launch-bound"},
    {"tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz", "host/launch-bound"},
    {"tracelens/mi210/gpu_only_trace.json.gz", "gpu-bound"},
    {"tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz", "host/launch-bound"},
    {"tracelens/mi300/resnet_act_checkpoint.json.gz", "comms-bound"},
    // SGLang decode: the host waits 463 ms in a blocking copy while the traced GPU is idle; the
    // replayed graph's work is not in the trace, so neither the stall nor the GPU can be judged.
    {"tracelens/mi300/sglang_Qwen3-8B_decode.json.gz", "inconclusive"},
    {"tracelens/mi300/torch_compile_triton_trace.json.gz", "gpu-bound"},
    {"tracelens/mi300/train_resnet18.json.gz", "host/launch-bound"},
    // One cold forward pass: its 1.34 s first-conv launch is start-up; no steady state is recorded.
    {"wild/particle_transformer_cold_forward.pt.trace.json.gz", "inconclusive"},
    // The tutorial's author measured the GPU idle most of each iteration: host/launch-bound.
    {"wild/tutorial_transformer_launch_bound.pt.trace.json.gz", "host/launch-bound"},
    // 268 launches and async copies, no GPU record: the GPU side was lost, no verdict.
    {"wild/zoology_missing_gpu_records.pt.trace.json.gz", "inconclusive"},
};

class RealTrace : public ::testing::TestWithParam<Pinned> {};

TEST_P(RealTrace, VerdictWithEvidenceAndASoundPartition) {
  const Pinned p = GetParam();
  const AnalysisResult r = test::analyze_files({std::string(STEPSCOPE_FIXTURES_DIR) + "/" + p.file});
  ASSERT_TRUE(r.diagnosis.present);
  EXPECT_EQ(bound_id(r.diagnosis.verdict.bound), std::string(p.verdict));
  EXPECT_FALSE(r.diagnosis.verdict.evidence.empty());
  EXPECT_FALSE(r.diagnosis.verdict.headline.empty());
  EXPECT_GE(r.diagnosis.verdict.share, 0.0);
  EXPECT_LE(r.diagnosis.verdict.share, 1.0);
  for (const auto& part : r.partitions)
    for (const auto& s : part.steps) {
      EXPECT_GT(s.duration(), 0) << s.name;
      EXPECT_EQ(total_ns(s.ns), s.duration()) << s.name;
      for (ns_t v : s.ns) {
        EXPECT_GE(v, 0) << s.name;
        EXPECT_LE(v, s.duration()) << s.name;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RealTrace, ::testing::ValuesIn(kPinned), [](const auto& param_info) {
  std::string n = param_info.param.file;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n + "_" + std::to_string(param_info.index);
});

TEST(RealTraces, EightDlrmRanksSideBySide) {
  std::vector<std::string> files;
  for (const char* f : {"worker0_step_12.1694128201545", "worker1_step_12.1694128201556", "worker2_step_12.1694128201554",
                        "worker3_step_12.1694128201557", "worker4_step_12.1694128201547", "worker5_step_12.1694128201549",
                        "worker6_step_12.1694128201553", "worker7_step_12.1694128201553"})
    files.push_back(std::string(STEPSCOPE_FIXTURES_DIR) + "/param/dlrm_8rank/kineto/" + f + ".pt.trace.json.gz");
  const AnalysisResult r = test::analyze_files(files);
  ASSERT_EQ(r.rank_comparison.rows.size(), 8u);
  // Catalog: rank 1 is the longest step (19.9 ms) and rank 7 the shortest (12.5 ms); the slow
  // ranks spend the most time in NCCL, i.e. they wait rather than straggle.
  auto longest = std::max_element(r.rank_comparison.rows.begin(), r.rank_comparison.rows.end(),
                                  [](const RankRow& a, const RankRow& b) { return a.step_ns < b.step_ns; });
  EXPECT_EQ(longest->rank, 1);
  EXPECT_TRUE(r.rank_comparison.local);
  EXPECT_EQ(r.rank_comparison.skew.size(), 1u);
  EXPECT_GT(r.rank_comparison.mean_skew_ns, 0);
}

}  // namespace
}  // namespace stepscope
