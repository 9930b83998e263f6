// The kind of run of every real fixture, each pin with what in the trace makes it right.
#include <gtest/gtest.h>

#include "partition/support.hpp"

namespace stepscope {
namespace {

struct KindPin {
  const char* file;
  const char* kind;
  const char* why;
};

constexpr KindPin kKinds[] = {
    {"cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz", "training", "autograd nodes and Optimizer.step each step"},
    {"cpu/e_compute_bound_large_model.pt.trace.json.gz", "training", "autograd nodes and Optimizer.step each step"},
    {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", "training", "a toy training loop on ROCm"},
    {"hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "training",
     "a trimmed trainer step: gloo gradient all-reduces, step #551"},
    {"hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", "benchmark",
     "PARAM's [param|...|warmup/measure] ranges"},
    {"hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", "benchmark",
     "PARAM's [param|...|warmup/measure] ranges"},
    {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", "benchmark",
     "event records and a device sync per launch: a timing micro-test"},
    {"hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz", "benchmark", "PARAM harness ranges"},
    {"hta/df_index_resolver/df_index_resolver.json.gz", "training", "DDP: backward nodes, optimizer steps"},
    {"hta/mtia_trace_single_rank/mtia_rank_0.json.gz", "training", "an MTIA training step with backward"},
    {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "training", "DDP backward and optimizer"},
    {"hta/trace_file_list/inference_rank_1.json.gz", "one-shot", "a 54-event inference excerpt, nothing repeats"},
    {"hta/triton_example/triton_example.json.gz", "one-shot", "one compiled call in ProfilerStep#1"},
    {"param/resnet_kineto.json.gz", "training", "30 optimizer steps with backward"},
    {"tracelens/b200/eager_trace.json.gz", "inference", "vLLM engine iterations, no backward"},
    {"tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz", "inference",
     "ProfilerStep#6 of a forward-only loop"},
    {"tracelens/mi300/sglang_Qwen3-8B_decode.json.gz", "inference", "SGLang step[DECODE bs=32] with a graph replay"},
    {"tracelens/mi300/train_resnet18.json.gz", "training", "5 optimizer steps with backward"},
    {"wild/particle_transformer_cold_forward.pt.trace.json.gz", "one-shot", "one cold forward pass, no steps"},
    {"wild/tutorial_transformer_launch_bound.pt.trace.json.gz", "inference",
     "3 ProfilerSteps of forward passes under no_grad (the fused MHA fast path)"},
};

class KindPinned : public ::testing::TestWithParam<KindPin> {};

TEST_P(KindPinned, RunKindIsPinned) {
  const KindPin& p = GetParam();
  const AnalysisResult r = test::analyze_files({std::string(STEPSCOPE_FIXTURES_DIR) + "/" + p.file});
  ASSERT_FALSE(r.facts.empty());
  EXPECT_EQ(run_kind_name(r.facts[0].run_kind), std::string(p.kind)) << p.why << "; evidence: " << r.facts[0].run_kind_evidence;
  EXPECT_FALSE(r.facts[0].run_kind_evidence.empty());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, KindPinned, ::testing::ValuesIn(kKinds));

}  // namespace
}  // namespace stepscope
