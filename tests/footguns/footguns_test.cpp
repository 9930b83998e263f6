// The footgun detectors on generated scenarios (each preset plants one) and on every real trace:
// each fires where its signature was planted, with evidence and a gain that matches what was
// planted, and stays silent everywhere else.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "partition/support.hpp"
#include "stepscope/footguns.hpp"
#include "stepscope/pipeline.hpp"

namespace stepscope {
namespace {

using ScenarioRun = test::GeneratedRun;

// Generated once per (scenario, options) for the whole test binary.
// Epoch stalls need two epoch starts after the warm-up step to recur.
std::string default_options(const std::string& scenario) { return scenario == "epoch-stall" ? "--steps 12" : ""; }

const ScenarioRun& run(const std::string& scenario, std::string extra = "") {
  static std::map<std::string, ScenarioRun> cache;
  extra = default_options(scenario) + " " + extra;
  const std::string key = scenario + " " + extra;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  return cache.emplace(key, test::analyze_generated(scenario, extra)).first->second;
}

std::set<std::string> fired(const DiagnosedResult& r) {
  std::set<std::string> ids;
  for (const auto& f : r.diagnosis.findings)
    if (f.footgun) ids.insert(std::string(finding_id(f)));
  return ids;
}

const Finding* finding(const DiagnosedResult& r, const std::string& id) {
  for (const auto& f : r.diagnosis.findings)
    if (f.footgun && finding_id(f) == id) return &f;
  return nullptr;
}

double per_step_params(const nlohmann::json& truth, const char* key) { return truth["parameters"][key].get<double>(); }

// Which detector each generated scenario plants ("" for none).
const std::map<std::string, std::string> kPlanted = {
    {"healthy", ""},
    {"input-bound", ""},
    {"loader-stall", ""},
    {"epoch-stall", "loader_respawn"},
    {"pageable-copy", "pageable_copy"},
    {"sync-stall", "host_sync_logging"},
    {"launch-bound", ""},
    {"comms-bound", "ddp_no_overlap"},
    {"straggler", ""},
    {"checkpoint", ""},
    {"memory-bound", ""},  // 8 bucket memsets: below the 1% floor
    {"zero-grad-memsets", "zero_grad_memset"},
    {"no-tensor-cores", "fp32_no_tf32"},
    {"cpu-input-bound", ""},
    {"cpu-compute-bound", ""},
    {"rocm-healthy", ""},
    {"rocm-input-bound", ""},
    {"conv-nchw-amp", "nchw_layout"},
    {"cudnn-autotune", "cudnn_autotune"},
    {"unfused-attention", "unfused_attention"},
    {"unfused-optimizer", "unfused_optimizer"},
    {"anomaly-detection", "anomaly_mode"},
    {"recompile", "compile_recompile"},
    {"compile-fallback", "compile_fallback"},
    {"v100-fp32", "fp32_no_amp"},  // fp16 tensor cores, no bf16 or TF32
    {"t4-fp32", "fp32_no_amp"},
    {"fp8-moe-ep", ""},
    {"moe-nccl-a2a", ""},
    {"nested-item", ""},  // three syncs a step behind plenty of queued work: under the 3% floor
    {"two-step", "pageable_copy"},
};

// Presets of real-world trace classes whose verdicts tests/verdict/realclass_verdict_test.cpp checks.
const std::set<std::string> kCheckedElsewhere = {
    "cold-start",     "missing-gpu-records", "autograd-thread-old-cats", "host-runs-ahead", "inference-decode",
    "serving-frontend", "timing-harness",    "one-shot-nvtx",            "readback-loop",   "blocking-streams",
    "profiler-heavy"};

std::vector<std::string> scenario_names() {
  std::vector<std::string> v;
  for (const auto& [name, id] : kPlanted) v.push_back(name);
  return v;
}

class Scenario : public ::testing::TestWithParam<std::string> {};

// The planted detector fires, nothing else does, and the verdict is still the preset's.
TEST_P(Scenario, OnlyThePlantedFootgunFires) {
  const ScenarioRun& r = run(GetParam());
  ASSERT_TRUE(r.result.diagnosis.present);
  EXPECT_EQ(bound_id(r.result.diagnosis.verdict.bound), r.truth["expected_verdict"].get<std::string>());
  const std::string planted = kPlanted.at(GetParam());
  std::set<std::string> want;
  if (!planted.empty()) want.insert(planted);
  EXPECT_EQ(fired(r.result), want);
  for (const auto& f : r.result.diagnosis.findings) {
    if (!f.footgun) continue;
    EXPECT_GE(f.evidence.size(), 2u) << finding_id(f);
    EXPECT_GT(f.gain_ns, 0) << finding_id(f);
    EXPECT_GT(f.speedup, 1.0) << finding_id(f);
    EXPECT_NEAR(f.speedup, f.step_ns / (f.step_ns - f.gain_ns), 1e-9) << finding_id(f);
    // Its lever is ranked with the measured gain.
    bool lever = false;
    for (const auto& l : r.result.diagnosis.levers)
      if (l.id == f.lever && l.applies && l.removable_ns >= f.gain_ns * 0.999) lever = true;
    EXPECT_TRUE(lever) << finding_id(f) << " -> " << (f.lever ? lever_name(*f.lever) : "none");
  }
}

// The footgun presets add events the other presets lack (convolutions, syncs inside backward and
// convolution ops, compile regions): the partition must still match their ground truth.
TEST_P(Scenario, PartitionMatchesGroundTruth) {
  const ScenarioRun& r = run(GetParam());
  ASSERT_FALSE(r.truth.is_null());
  double worst = 0;
  for (const auto& st : r.truth["steps"]) {
    const StepPartition* step = nullptr;
    for (const RankAnalysis& a : r.result.ranks)
      if (a.rank() == st["rank"].get<int>())
        for (const auto& s : a.partition.steps)
          if (s.name == st["name"].get<std::string>()) step = &s;
    ASSERT_NE(step, nullptr) << st["name"];
    const double window = st["duration_ns"].get<double>();
    for (int c = 0; c < kCategoryCount; ++c) {
      const double truth = st["categories_ns"][category_name(static_cast<Category>(c))].get<double>();
      worst = std::max(worst, std::abs(static_cast<double>(step->ns[static_cast<std::size_t>(c)]) - truth) / window);
    }
  }
  EXPECT_LE(worst, 0.01);
}

INSTANTIATE_TEST_SUITE_P(Tracegen, Scenario, ::testing::ValuesIn(scenario_names()), [](const auto& param_info) {
  std::string n = param_info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
});

TEST(Footguns, EveryGeneratorScenarioIsCovered) {
  std::string out;
  const std::string cmd = "'" + test::tracegen_binary() + "' --list";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256];
  while (fgets(buf, sizeof buf, p)) {
    std::string name(buf);
    name = name.substr(0, name.find(' '));
    EXPECT_TRUE(kPlanted.count(name) || kCheckedElsewhere.count(name)) << name << " has no entry in kPlanted";
  }
  pclose(p);
}

// Gains against what the presets planted (durations in the ground truth's params, in us).
double steps_per_layer_ms(const nlohmann::json& t, double per_layer_us) {
  return per_layer_us * per_step_params(t, "layers") / 1e3;
}

TEST(Footguns, LayoutConversionsCostWhatWasPlanted) {
  const ScenarioRun& r = run("conv-nchw-amp");
  const Finding* f = finding(r.result, "nchw_layout");
  ASSERT_NE(f, nullptr);
  // Two conversions around every forward and every backward convolution.
  const double planted = steps_per_layer_ms(r.truth, 4 * per_step_params(r.truth, "convs") *
                                                         per_step_params(r.truth, "transpose_us"));
  EXPECT_NEAR(f->gain_ns / 1e6, planted, 0.1 * planted);
}

TEST(Footguns, AutotuningTrialsCostWhatWasPlanted) {
  const ScenarioRun& r = run("cudnn-autotune");
  const Finding* f = finding(r.result, "cudnn_autotune");
  ASSERT_NE(f, nullptr);
  const double planted = steps_per_layer_ms(r.truth, per_step_params(r.truth, "convs") *
                                                         per_step_params(r.truth, "autotune_trials") * 1.5 *
                                                         per_step_params(r.truth, "conv_us"));
  EXPECT_NEAR(f->gain_ns / 1e6, planted, 0.1 * planted);
  // The same convolutions without re-tuning: silent.
  EXPECT_EQ(finding(run("cudnn-autotune", "--autotune-trials 0").result, "cudnn_autotune"), nullptr);
  // Channels-last conv net (no conversions): silent.
  EXPECT_EQ(finding(run("conv-nchw-amp", "--nchw-transposes 0").result, "nchw_layout"), nullptr);
}

TEST(Footguns, UnfusedAttentionSoftmaxTime) {
  const ScenarioRun& r = run("unfused-attention");
  const Finding* f = finding(r.result, "unfused_attention");
  ASSERT_NE(f, nullptr);
  const double planted = steps_per_layer_ms(r.truth, 2 * per_step_params(r.truth, "softmax_us"));
  EXPECT_NEAR(f->gain_ns / 1e6, planted, 0.1 * planted);
}

TEST(Footguns, Fp32GemmsOnAmpere) {
  const ScenarioRun& r = run("no-tensor-cores");
  const Finding* f = finding(r.result, "fp32_no_tf32");
  ASSERT_NE(f, nullptr);
  // Forward: 2 GEMMs; backward: 2 x (dgrad + wgrad) at bwd_factor/2 each. Half of it is the gain.
  const double gemm = per_step_params(r.truth, "gemm_us");
  const double planted = 0.5 * steps_per_layer_ms(r.truth, 2 * gemm + 2 * gemm * per_step_params(r.truth, "bwd_factor"));
  EXPECT_NEAR(f->gain_ns / 1e6, planted, 0.1 * planted);
  // The same fp32 job on a V100 (compute capability 7.0, no TF32): silent.
  EXPECT_EQ(finding(run("no-tensor-cores", "--gpu-name 'Tesla V100-SXM2-16GB'").result, "fp32_no_tf32"),
            nullptr);
}

TEST(Footguns, ZeroGradMemsets) {
  const ScenarioRun& r = run("zero-grad-memsets");
  const Finding* f = finding(r.result, "zero_grad_memset");
  ASSERT_NE(f, nullptr);
  const auto memsets = static_cast<int>(per_step_params(r.truth, "zero_grad_memsets"));
  EXPECT_NE(f->evidence.front().find(fmt::format("Memset (Device)' ({}.0 per step", memsets)), std::string::npos)
      << f->evidence.front();
  // The memory-bound preset memsets 8 buckets: real, but below the floor of 1% of the step.
  EXPECT_EQ(finding(run("memory-bound").result, "zero_grad_memset"), nullptr);
}

TEST(Footguns, RecompilationSpreadOverTheSteps) {
  const ScenarioRun& r = run("recompile");
  const Finding* f = finding(r.result, "compile_recompile");
  ASSERT_NE(f, nullptr);
  // Step 10 compiles first; steps 12, 15 and 18 recompile.
  std::size_t compiling = 0, steady = 0;
  for (const auto& s : r.result.ranks[0].partition.steps) {
    compiling += s.warmup_reason == "compilation";
    steady += !s.warmup;
  }
  EXPECT_EQ(compiling, 4u);
  const double planted = 3 * per_step_params(r.truth, "compile_us") * 1e3 / static_cast<double>(compiling - 1 + steady);
  EXPECT_NEAR(f->gain_ns, planted, 0.05 * planted);
}

TEST(Footguns, FallbackToEagerCostsTheEagerStepsExcess) {
  const ScenarioRun& r = run("compile-fallback");
  const Finding* f = finding(r.result, "compile_fallback");
  ASSERT_NE(f, nullptr);
  // Recompute the excess from the partition: steady steps from eager_after on against the others.
  const auto& steps = r.result.ranks[0].partition.steps;
  const auto after = static_cast<std::size_t>(per_step_params(r.truth, "eager_after"));
  double compiled = 0, eager = 0, nc = 0, ne = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (steps[k].warmup) continue;
    (k >= after ? eager : compiled) += static_cast<double>(steps[k].duration());
    (k >= after ? ne : nc) += 1;
  }
  ASSERT_GT(ne, 1);
  ASSERT_GT(nc, 1);
  const double planted = ne * (eager / ne - compiled / nc) / (ne + nc);
  EXPECT_NEAR(f->gain_ns, planted, 1e-6 * planted);
  // The recompiling preset keeps its compiled region in every step: no fallback there.
  EXPECT_EQ(finding(run("recompile").result, "compile_fallback"), nullptr);
}

TEST(Footguns, HostSyncsPageableCopiesAndRespawns) {
  const ScenarioRun& s = run("sync-stall");
  const Finding* sync = finding(s.result, "host_sync_logging");
  ASSERT_NE(sync, nullptr);
  // The read after forward waits for forward to drain (the GPU busy: not counted); the GPU then
  // idles through the planted logging gap until the host launches again: the gain is that idle,
  // the gap and the next launch's dispatch.
  const double gap = per_step_params(s.truth, "sync_gap_us") * 1e3;
  EXPECT_NEAR(sync->gain_ns, gap, 0.05 * gap);

  const ScenarioRun& p = run("pageable-copy");
  const Finding* copy = finding(p.result, "pageable_copy");
  ASSERT_NE(copy, nullptr);
  const double planted = per_step_params(p.truth, "batch_mb") * 1e6 / per_step_params(p.truth, "h2d_gbps");
  EXPECT_NEAR(copy->gain_ns, planted, 0.15 * planted);

  const ScenarioRun& e = run("epoch-stall");
  const Finding* respawn = finding(e.result, "loader_respawn");
  ASSERT_NE(respawn, nullptr);
  EXPECT_LT(respawn->gain_ns, per_step_params(e.truth, "epoch_stall_us") * 1e3);
}

TEST(Footguns, DdpOverlapOnlyWhenAllReduceWaitsForBackward) {
  const ScenarioRun& r = run("comms-bound");
  ASSERT_NE(finding(r.result, "ddp_no_overlap"), nullptr);
  // The same exposed all-reduce launched from backward hooks: silent.
  EXPECT_EQ(finding(run("comms-bound", "--overlap 1").result, "ddp_no_overlap"), nullptr);
}

TEST(Footguns, OptimizerAndAnomaly) {
  const ScenarioRun& o = run("unfused-optimizer");
  const Finding* opt = finding(o.result, "unfused_optimizer");
  ASSERT_NE(opt, nullptr);
  // 96 parameters x 5 ops.
  EXPECT_NE(opt->evidence.front().find("480 kernels per step"), std::string::npos) << opt->evidence.front();
  const ScenarioRun& a = run("anomaly-detection");
  const Finding* an = finding(a.result, "anomaly_mode");
  ASSERT_NE(an, nullptr);
  EXPECT_GT(an->gain_ns, 0);
}

// Real traces: the detectors that fire on each, all others silent.
struct Expected {
  const char* file;
  std::set<std::string> ids;
};

const Expected kReal[] = {
    {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", {}},
    {"hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", {}},
    {"hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", {}},
    {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", {}},
    {"hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", {}},
    {"hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", {}},
    {"hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz", {}},
    // A DDP trainer on an older PyTorch: SGD updates each of 404 parameters with its own aten::add_,
    // and zero_grad fills the 404 gradients with FillFunctor kernels.
    {"hta/df_index_resolver/df_index_resolver.json.gz", {"fp32_no_amp", "unfused_optimizer", "zero_grad_memset"}},
    {"hta/edited/distributed_info_not_found.json.gz", {}},
    {"hta/edited/rank_non_gpu.json.gz", {}},
    {"hta/edited/rank_not_found.json.gz", {}},
    {"hta/execution_trace/benchmark_simple_add_trace.json.gz", {}},
    {"hta/mtia_inference_trace/mtia_inference_rank_0.json.gz", {}},
    {"hta/mtia_trace_single_rank/mtia_rank_0.json.gz", {}},
    {"hta/nccl_parser_config/nccl_data.json.gz", {}},
    {"hta/negative_queue_length_values_check/rank0.json.gz", {}},
    {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", {"fp32_no_amp"}},
    {"hta/sampled_world128/sampled_rank-0.json.gz", {}},
    {"hta/sampled_world128/sampled_rank-1.json.gz", {}},
    {"hta/trace_diff/control/control.json.gz", {}},
    {"hta/trace_diff/test/test.json.gz", {"fp32_no_amp"}},
    {"hta/trace_file_list/inference_rank_1.json.gz", {}},
    {"hta/triton_example/triton_example.json.gz", {}},
    // zero_grad launches 4 FillFunctor kernels per iteration of a tiny loop.
    {"hta/with_gpu_user_annotation/step_based_trace_2543932.json.gz", {"zero_grad_memset"}},
    // Adam without foreach: aten::add_/addcmul_/sqrt/addcdiv_ per parameter, 64 kernels per step.
    {"param/dlrm_8rank/kineto/worker0_step_12.1694128201545.pt.trace.json.gz", {"unfused_optimizer"}},
    {"param/dlrm_8rank/kineto/worker1_step_12.1694128201556.pt.trace.json.gz", {"unfused_optimizer"}},
    // zero_grad fills 42 gradients per iteration.
    {"param/linear_kineto.json.gz", {"fp32_no_amp", "zero_grad_memset"}},
    // 77 MB per iteration copied from pageable memory, all of it on the critical path.
    {"param/resnet_kineto.json.gz", {"fp32_no_amp", "pageable_copy"}},
    {"tracelens/b200/eager_trace.json.gz", {}},
    {"tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz", {}},
    {"tracelens/mi210/gpu_only_trace.json.gz", {}},
    {"tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz", {}},
    {"tracelens/mi300/resnet_act_checkpoint.json.gz", {"activation_recompute"}},
    {"tracelens/mi300/sglang_Qwen3-8B_decode.json.gz", {}},
    {"tracelens/mi300/torch_compile_triton_trace.json.gz", {}},
    // 272 hipFree and 292 hipMalloc calls in every step: the caching allocator keeps nothing.
    {"tracelens/mi300/train_resnet18.json.gz", {"allocator_churn"}},
    {"cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz", {}},
    {"cpu/b_dataloader_w2_persistent.pt.trace.json.gz", {}},
    {"cpu/c_item_print_every_step.pt.trace.json.gz", {}},
};

class RealTrace : public ::testing::TestWithParam<Expected> {};

TEST_P(RealTrace, FiresOnlyWhereTheSignatureIs) {
  const Expected e = GetParam();
  PipelineOptions o;
  o.ingest.jobs = 1;
  const DiagnosedResult r = analyze_paths({std::string(STEPSCOPE_FIXTURES_DIR) + "/" + e.file}, o).result;
  EXPECT_EQ(fired(r), e.ids);
  for (const auto& f : r.diagnosis.findings)
    if (f.footgun) {
      EXPECT_GE(f.evidence.size(), 2u) << finding_id(f);
      EXPECT_GT(f.gain_ns, 0) << finding_id(f);
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RealTrace, ::testing::ValuesIn(kReal), [](const auto& param_info) {
  std::string n = param_info.param.file;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

}  // namespace
}  // namespace stepscope
