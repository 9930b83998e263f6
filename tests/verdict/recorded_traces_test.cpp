// GPU traces recorded from jobs built to have one known bottleneck (tests/data/recorded/, with
// the script that recorded them): the verdict, the first lever and the figures behind them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "partition/support.hpp"
#include "stepscope/drilldown.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

std::string recorded_path(const std::string& name) {
  return std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/" + name + ".pt.trace.json.gz";
}

DiagnosedResult analyze_recorded(const std::string& name) { return test::analyze_files({recorded_path(name)}); }

std::string verdict_id(const DiagnosedResult& r) { return bound_id(r.diagnosis.verdict.bound, r.diagnosis.verdict.gpu); }

const Lever* first_lever(const DiagnosedResult& r) {
  for (const auto& l : r.diagnosis.levers)
    if (l.applies) return &l;
  return nullptr;
}

bool has_finding(const DiagnosedResult& r, const std::string& id) {
  return std::any_of(r.diagnosis.findings.begin(), r.diagnosis.findings.end(),
                     [&](const Finding& f) { return finding_id(f) == id; });
}

void expect_verdict_and_first_lever(const DiagnosedResult& r, const std::string& verdict, const std::string& lever) {
  EXPECT_EQ(verdict_id(r), verdict) << r.diagnosis.verdict.headline;
  const Lever* first = first_lever(r);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(lever_name(first->id), lever);
}

double step_share(const DiagnosedResult& r, Category c) {
  const RankPartition& p = r.ranks.at(0).partition;
  return p.steady_mean_category[static_cast<std::size_t>(c)] / p.steady_mean_ns;
}

double syncs_per_step(const DiagnosedResult& r) {
  const RankPartition& p = r.ranks.at(0).partition;
  return static_cast<double>(p.sync_calls) / static_cast<double>(p.steady_steps);
}

TEST(RecordedTraces, SlowDataLoaderTransformIsInputBound) {
  const DiagnosedResult r = analyze_recorded("input_bound");
  expect_verdict_and_first_lever(r, "input-bound", "num_workers");
  // 32 samples x 1.5 ms of sleep per step, beside well under a millisecond of GPU work.
  EXPECT_GT(step_share(r, Category::BatchWait), 0.8);
  // The loader's sleep is no edge of HTA's path, which then sums to a few ms of the 58 ms step:
  // no lever is given a share of a path that misses most of its step.
  for (const auto& l : r.diagnosis.levers) EXPECT_EQ(l.critical_path_share, -1) << lever_name(l.id);
  EXPECT_EQ(run_kind_name(r.ranks.at(0).facts.run_kind), std::string("training"));
}

TEST(RecordedTraces, PageableCopyIsCopyBoundAndOnThePath) {
  const DiagnosedResult r = analyze_recorded("pageable_copy");
  expect_verdict_and_first_lever(r, "copy-bound", "pin_memory");
  EXPECT_EQ(r.diagnosis.verdict.headline.rfind("host/device copies: ", 0), 0u) << r.diagnosis.verdict.headline;
  EXPECT_TRUE(has_finding(r, "pageable_copy"));
  const Lever* l = first_lever(r);
  ASSERT_NE(l, nullptr);
  // The blocking cudaMemcpyAsync holds the host for the copy: HTA calls that edge cpu_bound,
  // but the time is the copy's, so the lever acts on most of the path.
  EXPECT_GT(l->critical_path_share, 0.8);
  EXPECT_GT(step_share(r, Category::H2DCopy), 0.8);
}

TEST(RecordedTraces, TinyLayersAreLaunchBound) {
  const DiagnosedResult r = analyze_recorded("launch_bound");
  expect_verdict_and_first_lever(r, "host/launch-bound", "cuda_graphs");
  EXPECT_TRUE(has_finding(r, "unfused_optimizer"));  // AdamW(foreach=False): per-parameter kernels
}

TEST(RecordedTraces, Fp32GemmsWithoutTf32AreGpuBoundWithMixedPrecisionFirst) {
  const DiagnosedResult r = analyze_recorded("fp32_no_amp");
  expect_verdict_and_first_lever(r, "gpu-bound", "amp_bf16");  // an H200 runs bf16 tensor cores
  EXPECT_TRUE(has_finding(r, "fp32_no_tf32"));
  const ComputeMix& m = r.ranks.at(0).partition.mix;
  EXPECT_GT(m.fp32_simt_gemm_ns, 0.9 * static_cast<double>(m.gemm_ns_by_dtype[static_cast<std::size_t>(DataType::Fp32)]));
}

TEST(RecordedTraces, Bf16GemmsAreGpuBoundWithNoPrecisionLever) {
  const DiagnosedResult r = analyze_recorded("bf16_gpu_bound");
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  for (const auto& l : r.diagnosis.levers) {
    if (l.id == LeverId::AmpBf16 || l.id == LeverId::AmpFp16 || l.id == LeverId::Tf32) {
      EXPECT_FALSE(l.applies) << lever_name(l.id);
    }
  }
  EXPECT_FALSE(has_finding(r, "fp32_no_tf32"));
  // cuBLAS's nvjet kernels name no element type: it comes from the launching aten::addmm/mm,
  // whose inputs autocast made BFloat16.
  const auto& by_type = r.ranks.at(0).partition.mix.gemm_ns_by_dtype;
  const double bf16 = static_cast<double>(by_type[static_cast<std::size_t>(DataType::Bf16)]);
  double all = 0;
  for (auto v : by_type) all += static_cast<double>(v);
  EXPECT_GT(all, 0);
  EXPECT_GT(bf16, 0.9 * all);
}

TEST(RecordedTraces, SyncAfterEveryLayerOfATinyModelIsHostBoundWithTheSyncsNamed) {
  // 24 NaN checks and a loss.item() a step. The model is so small that the host's dispatch, not
  // the syncs, sets the step: removing them gains little, and the evidence says so.
  const DiagnosedResult r = analyze_recorded("sync_each_layer");
  EXPECT_EQ(verdict_id(r), "host/launch-bound") << r.diagnosis.verdict.headline;
  EXPECT_DOUBLE_EQ(syncs_per_step(r), 25.0);
  EXPECT_TRUE(has_finding(r, "host_sync_logging"));
}

TEST(RecordedTraces, SyncAfterEveryWideLayerCountsItsSyncs) {
  // 16 checked 4096-wide layers and a loss.item(): 17 syncs a step. The profiled host takes
  // longer to dispatch a step than the GPU to run it, so the host still bounds the step.
  const DiagnosedResult r = analyze_recorded("sync_serialised");
  EXPECT_EQ(verdict_id(r), "host/launch-bound") << r.diagnosis.verdict.headline;
  EXPECT_DOUBLE_EQ(syncs_per_step(r), 17.0);
  EXPECT_TRUE(has_finding(r, "host_sync_logging"));
  EXPECT_EQ(r.diagnosis.verdict.runner_up, Bound::GpuCompute);
}

// loss.item() each step, then 4 ms of host work that records no op (logging the value): the
// GPU, drained by the read, idles through it. That tail is the sync stall (docs/partition.md,
// rule 6), the bound here. The sync footgun measures the narrower fix, the value kept on the
// device while the host work stays: only the host's wait in the read, a few percent.
TEST(RecordedTraces, ReadThenOpFreeHostWorkIsSyncBound) {
  const DiagnosedResult r = analyze_recorded("sync_then_host_work");
  expect_verdict_and_first_lever(r, "sync-bound", "remove_item");
  EXPECT_DOUBLE_EQ(syncs_per_step(r), 1.0);
  EXPECT_GT(step_share(r, Category::SyncStall), 0.4);
  const auto f = std::find_if(r.diagnosis.findings.begin(), r.diagnosis.findings.end(),
                              [](const Finding& x) { return finding_id(x) == "host_sync_logging"; });
  ASSERT_NE(f, r.diagnosis.findings.end());
  EXPECT_GT(f->gain_ns, 0);
  EXPECT_LT(f->gain_ns, 0.15 * f->step_ns);
}

TEST(RecordedTraces, CheckpointEverySecondStepIsSideWorkWithItsCopies) {
  const DiagnosedResult r = analyze_recorded("checkpoint_every_2nd");
  expect_verdict_and_first_lever(r, "side-work", "async_checkpoint");
  // torch.save's device-to-host copies are launched inside the save: side work, not a copy stage.
  EXPECT_GT(step_share(r, Category::SideWork), 0.95);
  EXPECT_LT(step_share(r, Category::D2HCopy), 0.01);
  const Stability& s = r.ranks.at(0).stability;
  EXPECT_EQ(s.period.kind, PeriodKind::Checkpoint);
  EXPECT_EQ(s.period.every, 2);
}

const Lever& lever_of(const DiagnosedResult& r, const std::string& id) {
  const auto it = std::find_if(r.diagnosis.levers.begin(), r.diagnosis.levers.end(),
                               [&](const Lever& l) { return lever_name(l.id) == id; });
  EXPECT_NE(it, r.diagnosis.levers.end()) << id;
  return *it;
}

// cuDNN's convolutions (FFT and implicit-GEMM kernels) in fp32 with TF32 off: mixed precision
// first, and the TF32 lever names cuDNN's own switch beside the matmul one.
TEST(RecordedTraces, Fp32ConvolutionsAreGpuBoundWithMixedPrecisionFirst) {
  const DiagnosedResult r = analyze_recorded("conv_fp32_no_amp");
  expect_verdict_and_first_lever(r, "gpu-bound", "amp_bf16");
  EXPECT_GT(step_share(r, Category::ComputeForward) + step_share(r, Category::ComputeBackward), 0.95);
  EXPECT_NE(lever_of(r, "tf32").knob.find("cudnn.allow_tf32"), std::string::npos);
}

// Transformer layers in bf16 with fused attention: compute-bound with no precision or attention
// lever left to give.
TEST(RecordedTraces, Bf16TransformerIsGpuBoundWithAttentionFused) {
  const DiagnosedResult r = analyze_recorded("sdpa_bf16");
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  for (const char* id : {"amp_bf16", "amp_fp16", "tf32", "sdpa"}) EXPECT_FALSE(lever_of(r, id).applies) << id;
  const ComputeMix& m = r.ranks.at(0).partition.mix;
  EXPECT_GT(m.class_ns[static_cast<std::size_t>(KernelClass::Attention)], 0.1 * static_cast<double>(m.kernel_ns()));
  EXPECT_EQ(m.compiled_ns, 0);
}

// A torch.compile'd model: its Triton kernels and GEMMs run from the compiled regions, so the
// compile lever may only count what they leave out (the loss, the optimizer), and says so.
TEST(RecordedTraces, CompiledModelIsNotToldToCompileItsModel) {
  const DiagnosedResult r = analyze_recorded("compiled_bf16");
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  const ComputeMix& m = r.ranks.at(0).partition.mix;
  EXPECT_GT(m.compiled_ns, 0.7 * static_cast<double>(m.kernel_ns()));
  EXPECT_GT(m.compiled_eltwise_norm_ns, 0);
  const std::string& kind = r.diagnosis.verdict.compute_kind;
  EXPECT_NE(kind.find("torch.compile'd regions launch "), std::string::npos) << kind;
  const Lever& compile = lever_of(r, "torch_compile");
  EXPECT_EQ(compile.title, "compile what runs outside the compiled regions");
  EXPECT_NE(compile.basis.find("already compiles"), std::string::npos) << compile.basis;
  const double eltwise = static_cast<double>(m.class_ns[static_cast<std::size_t>(KernelClass::Elementwise)] +
                                             m.class_ns[static_cast<std::size_t>(KernelClass::ReductionNorm)]);
  EXPECT_LT(compile.target_ns, eltwise - static_cast<double>(m.compiled_eltwise_norm_ns) + 1);
}

// The whole output read back to pageable memory every step: a copy bound of device-to-host
// copies, whose lever is reading back less, not pinning the loader's batches.
TEST(RecordedTraces, ReadingTheOutputBackEveryStepIsCopyBoundByD2H) {
  const DiagnosedResult r = analyze_recorded("d2h_each_step");
  expect_verdict_and_first_lever(r, "copy-bound", "d2h_readback");
  EXPECT_GT(step_share(r, Category::D2HCopy), 0.7);
  EXPECT_FALSE(lever_of(r, "pin_memory").applies);
}

// Forward GEMMs in float8 through torch._scaled_mm, backward in bf16: GPU-bound, every GEMM
// already on 8- or 16-bit tensor cores, so no precision lever and no fp32 finding.
TEST(RecordedTraces, Fp8GemmsAreCountedAsFp8AndGetNoPrecisionLever) {
  const DiagnosedResult r = analyze_recorded("fp8_gemm");
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  const auto& by_type = r.ranks.at(0).partition.mix.gemm_ns_by_dtype;
  double all = 0;
  for (auto v : by_type) all += static_cast<double>(v);
  const double fp8 = static_cast<double>(by_type[static_cast<std::size_t>(DataType::Fp8)]);
  const double bf16 = static_cast<double>(by_type[static_cast<std::size_t>(DataType::Bf16)]);
  // One fp8 forward GEMM and two bf16 backward GEMMs per layer.
  EXPECT_GT(fp8, 0.15 * all);
  EXPECT_GT(fp8 + bf16, 0.99 * all);
  for (const char* id : {"amp_bf16", "amp_fp16", "tf32"}) EXPECT_FALSE(lever_of(r, id).applies) << id;
  EXPECT_FALSE(has_finding(r, "fp32_no_tf32"));
}

// The whole training step captured once and replayed: the host holds no backward op, but the
// GPU runs the gradient kernels, so the run is training, bound by its GPU, and CUDA graphs are
// not offered to a run that already replays them.
TEST(RecordedTraces, ReplayedTrainingStepIsTrainingAndNotToldToUseGraphs) {
  const DiagnosedResult r = analyze_recorded("cuda_graph_step");
  EXPECT_EQ(run_kind_name(r.ranks.at(0).facts.run_kind), std::string("training")) << r.ranks.at(0).facts.run_kind_evidence;
  EXPECT_NE(r.ranks.at(0).facts.run_kind_evidence.find("CUDA graph"), std::string::npos);
  EXPECT_TRUE(r.ranks.at(0).facts.cuda_graphs);
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  EXPECT_FALSE(lever_of(r, "cuda_graphs").applies) << lever_of(r, "cuda_graphs").basis;
  // The replay's host side is two small copies and one launch a step.
  EXPECT_LT(step_share(r, Category::HostCompute) + step_share(r, Category::LaunchOverhead), 0.15);
}

// Twenty scale-shift-GELU layers: all memory traffic, no GEMM. Fusion is the lever; mixed
// precision has no fp32 GEMM to act on.
TEST(RecordedTraces, ElementwiseChainIsGpuBoundWithFusionFirst) {
  const DiagnosedResult r = analyze_recorded("elementwise_fp32");
  expect_verdict_and_first_lever(r, "gpu-bound", "torch_compile");
  const ComputeMix& m = r.ranks.at(0).partition.mix;
  const double eltwise = static_cast<double>(m.class_ns[static_cast<std::size_t>(KernelClass::Elementwise)] +
                                             m.class_ns[static_cast<std::size_t>(KernelClass::ReductionNorm)]);
  EXPECT_GT(eltwise, 0.95 * static_cast<double>(m.kernel_ns()));
  EXPECT_FALSE(lever_of(r, "amp_bf16").applies);
}

// torch.cuda.empty_cache() after every step: each step pays cudaFree and cudaMalloc again. The
// finding names the calls; its one-line fix comes before CUDA graphs, which keep only the host
// time that is left.
TEST(RecordedTraces, EmptyingTheCacheEveryStepIsAllocatorChurn) {
  const DiagnosedResult r = analyze_recorded("empty_cache_each_step");
  expect_verdict_and_first_lever(r, "host/launch-bound", "keep_allocator_cache");
  const auto f = std::find_if(r.diagnosis.findings.begin(), r.diagnosis.findings.end(),
                              [](const Finding& x) { return finding_id(x) == "allocator_churn"; });
  ASSERT_NE(f, r.diagnosis.findings.end());
  EXPECT_GT(f->gain_ns, 0.25 * f->step_ns);  // ~2.3 ms of a ~6.5 ms step
  const Lever& graphs = lever_of(r, "cuda_graphs");
  const Lever& keep = lever_of(r, "keep_allocator_cache");
  EXPECT_LT(graphs.removable_ns, keep.removable_ns);
  EXPECT_NE(graphs.basis.find("allocator_churn"), std::string::npos) << graphs.basis;
}

// The slow transform behind two worker processes: still input-bound, and more workers is still
// the lever.
TEST(RecordedTraces, SlowTransformBehindTwoWorkersIsInputBound) {
  const DiagnosedResult r = analyze_recorded("loader_workers");
  expect_verdict_and_first_lever(r, "input-bound", "num_workers");
  EXPECT_GT(step_share(r, Category::BatchWait), 0.6);
}

// A GPU job profiled with the CPU activity alone: launches on the host and no GPU record. The
// verdict is withheld rather than read as a CPU job, and the advice is to record CUDA activity.
TEST(RecordedTraces, CpuActivityAloneLeavesTheVerdictInconclusive) {
  const DiagnosedResult r = analyze_recorded("gpu_job_cpu_activity_only");
  EXPECT_EQ(verdict_id(r), "inconclusive") << r.diagnosis.verdict.headline;
  const TrustWarning* w = r.ranks.at(0).facts.trust.find("incomplete_gpu_records");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->text.find("ProfilerActivity.CUDA"), std::string::npos) << w->text;
  EXPECT_EQ(run_kind_name(r.ranks.at(0).facts.run_kind), std::string("training"));
}

// Transformer layers under inference_mode: an inference run, GPU-bound, with no training lever.
TEST(RecordedTraces, InferenceLoopGetsNoTrainingLever) {
  const DiagnosedResult r = analyze_recorded("inference_bf16");
  EXPECT_EQ(run_kind_name(r.ranks.at(0).facts.run_kind), std::string("inference"));
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  for (const char* id : {"micro_batch", "fused_optimizer", "ddp_buckets", "amp_bf16"})
    EXPECT_FALSE(lever_of(r, id).applies) << id;
}

// Pinned batches copied one step ahead on a side stream while the host runs ahead: the copy
// stream runs each prefetch as soon as it is launched, so steps are timed on the stream that
// does the work. Every step then holds one step of GEMMs, and the copy is no bound.
TEST(RecordedTraces, PrefetchOnASideStreamLeavesStepsEvenAndGpuBound) {
  const DiagnosedResult r = analyze_recorded("pinned_prefetch");
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  EXPECT_TRUE(r.ranks.at(0).partition.host_runs_ahead);
  EXPECT_LT(r.ranks.at(0).stability.cv, 0.05);
  for (const auto& s : r.ranks.at(0).partition.steps) {
    if (!s.warmup) {
      EXPECT_GT(s.ns[static_cast<std::size_t>(Category::ComputeBackward)], 0) << s.name;
    }
  }
  EXPECT_LT(step_share(r, Category::H2DCopy), 0.05);
  EXPECT_FALSE(lever_of(r, "pin_memory").applies);
}

// Profiled from the process's first CUDA work: the first step (cuBLAS and cuDNN handles,
// autotuning, allocator growth) takes seconds and is left out as warm-up; the steady steps of
// this small job are milliseconds, set by the host's dispatch.
TEST(RecordedTraces, ColdFirstStepIsLeftOutOfTheSteadyState) {
  const DiagnosedResult r = analyze_recorded("cold_start");
  const RankPartition& p = r.ranks.at(0).partition;
  ASSERT_FALSE(p.steps.empty());
  EXPECT_TRUE(p.steps.front().warmup);
  EXPECT_GT(p.steps.front().end - p.steps.front().start, 500'000'000);
  EXPECT_LT(p.steady_mean_ns, 10e6);
  EXPECT_EQ(verdict_id(r), "host/launch-bound") << r.diagnosis.verdict.headline;
}

const Finding* finding_of(const DiagnosedResult& r, const std::string& id) {
  for (const auto& f : r.diagnosis.findings)
    if (finding_id(f) == id) return &f;
  return nullptr;
}

// cudnn.benchmark with the image size changing at two profiled steps: each change re-times the
// algorithms, the host waiting between candidates while the GPU idles. That idle time, not the
// trial kernels alone, is what the finding counts.
TEST(RecordedTraces, ChangingImageSizesRetuneCudnnEveryTime) {
  const DiagnosedResult r = analyze_recorded("cudnn_retune");
  const Finding* f = finding_of(r, "cudnn_autotune");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->gain_ns, 0.5 * f->step_ns);  // two ~450 ms tuning steps beside a ~5 ms one
  EXPECT_EQ(first_lever(r)->id, LeverId::FixedShapes);
}

TEST(RecordedTraces, LargerBatchRecompilesTheCompiledModel) {
  const DiagnosedResult r = analyze_recorded("compile_recompile");
  EXPECT_NE(finding_of(r, "compile_recompile"), nullptr);
  EXPECT_EQ(first_lever(r)->id, LeverId::FixedShapes);
}

// zero_grad(set_to_none=False) through PyTorch 2.x's foreach path is one kernel for all
// gradients: the memset footgun stays silent. On the per-parameter path it fires, with the
// per-parameter optimizer beside it.
TEST(RecordedTraces, ZeroGradMemsetsOnlyOnThePerParameterPath) {
  EXPECT_EQ(finding_of(analyze_recorded("zero_grad_foreach"), "zero_grad_memset"), nullptr);
  const DiagnosedResult r = analyze_recorded("zero_grad_per_param");
  EXPECT_NE(finding_of(r, "zero_grad_memset"), nullptr);
  EXPECT_NE(finding_of(r, "unfused_optimizer"), nullptr);
  EXPECT_TRUE(lever_of(r, "zero_grad_set_to_none").applies);
}

TEST(RecordedTraces, AnomalyDetectionLeftOnIsNamed) {
  const DiagnosedResult r = analyze_recorded("anomaly_mode");
  EXPECT_NE(finding_of(r, "anomaly_mode"), nullptr);
  EXPECT_TRUE(lever_of(r, "no_debug_apis").applies);
  EXPECT_EQ(finding_of(r, "host_sync_logging"), nullptr);  // the anomaly finding explains the reads
}

// Attention written out by hand, with the host running far ahead of the GPU (no sync in the
// loop): the ops that mark the scores are found in their steps' host spans.
TEST(RecordedTraces, HandWrittenAttentionIsUnfusedEvenWithTheHostFarAhead) {
  const DiagnosedResult r = analyze_recorded("unfused_attention");
  EXPECT_TRUE(r.ranks.at(0).partition.host_runs_ahead);
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  EXPECT_NE(finding_of(r, "unfused_attention"), nullptr);
  EXPECT_TRUE(lever_of(r, "sdpa").applies);
}

// Non-reentrant checkpointing leaves no marker: the recomputed forward shows as aten::linear and
// aten::gelu inside backward nodes.
TEST(RecordedTraces, NonReentrantCheckpointingIsFoundByItsRecomputedOps) {
  const DiagnosedResult r = analyze_recorded("activation_checkpoint");
  const Finding* f = finding_of(r, "activation_recompute");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->gain_ns, 0.05 * f->step_ns);
  EXPECT_EQ(first_lever(r)->id, LeverId::NoActivationCheckpointing);
}

TEST(RecordedTraces, Fp16WithAGradScalerIsGpuBoundWithNoPrecisionLever) {
  const DiagnosedResult r = analyze_recorded("fp16_grad_scaler");
  EXPECT_EQ(verdict_id(r), "gpu-bound") << r.diagnosis.verdict.headline;
  for (const char* id : {"amp_bf16", "amp_fp16", "tf32"}) EXPECT_FALSE(lever_of(r, id).applies) << id;
}

// Four batches an epoch from workers that are not persistent: fresh workers stall every fourth
// step (the second worker's first batch echoes a step later). Keeping the workers is the lever;
// more of them would only respawn more.
TEST(RecordedTraces, WorkersRespawnedEachEpochStallEveryFourthStep) {
  const DiagnosedResult r = analyze_recorded("epoch_respawn");
  expect_verdict_and_first_lever(r, "input-bound", "persistent_workers");
  EXPECT_EQ(r.ranks.at(0).stability.period.kind, PeriodKind::EpochBoundary);
  EXPECT_EQ(r.ranks.at(0).stability.period.every, 4);
  EXPECT_NE(finding_of(r, "loader_respawn"), nullptr);
  EXPECT_LT(lever_of(r, "num_workers").removable_ns, lever_of(r, "persistent_workers").removable_ns);
}

// Two DDP ranks over gloo; rank 1 spends 20 ms of unprofiled host time before each forward. The
// GPU compute of both ranks is alike, so the straggler shows in the time outside collectives,
// and rank 0's extra wait is that 20 ms.
TEST(RecordedTraces, DdpRankWithSlowHostWorkIsTheStraggler) {
  const DiagnosedResult r = test::analyze_files({std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/ddp_straggler"});
  ASSERT_EQ(r.ranks.size(), 2u);
  const RankComparison& rc = r.job.rank_comparison;
  ASSERT_TRUE(rc.straggler.has_value());
  EXPECT_EQ(*rc.straggler, 1);
  EXPECT_EQ(rc.straggler_cause, StragglerCause::HostSide);
  EXPECT_NEAR(rc.balanced_saving_ns, 20e6, 3e6);
  expect_verdict_and_first_lever(r, "straggler", "fix_straggler");
  // Backward compute is well under a millisecond: overlapping the all-reduce with it hides little.
  EXPECT_LT(lever_of(r, "ddp_buckets").removable_ns, 1e6);
  EXPECT_FALSE(lever_of(r, "fsdp_prefetch").applies);  // nothing is sharded
}

// The reports say what the straggler's excess measures: time outside collectives, not compute.
TEST(RecordedTraces, ReportsNameAHostSideStragglersExcess) {
  const DiagnosedResult r = test::analyze_files({std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/ddp_straggler"});
  const std::string text = render_text(r);
  EXPECT_NE(text.find("straggler rank 1 (+"), std::string::npos);
  EXPECT_NE(text.find(" time outside collectives); balanced ranks would save"), std::string::npos) << text;
  EXPECT_EQ(text.find(" compute); balanced ranks"), std::string::npos);
}

// torch.compile(mode="reduce-overhead"): Inductor's kernels replayed from CUDA graphs in a
// training run; graphs are not offered again.
TEST(RecordedTraces, ReduceOverheadCompileIsNotToldToUseGraphs) {
  const DiagnosedResult r = analyze_recorded("compiled_cuda_graphs");
  EXPECT_TRUE(r.ranks.at(0).facts.cuda_graphs);
  EXPECT_EQ(run_kind_name(r.ranks.at(0).facts.run_kind), std::string("training"));
  EXPECT_FALSE(lever_of(r, "cuda_graphs").applies);
}

TEST(RecordedTraces, OperatorsByShapeKeepWholeInputDims) {
  IngestOptions io;
  io.jobs = 1;
  const Trace t = read_traces({recorded_path("pageable_copy")}, io);
  const RankTrace& rank = t.ranks.at(0);
  const auto rows = operator_rows(rank, compute_facts(rank), OperatorGrouping::NameAndShape);
  const auto copy = std::find_if(rows.begin(), rows.end(), [](const OperatorRow& o) { return o.name == "aten::copy_"; });
  ASSERT_NE(copy, rows.end());
  EXPECT_EQ(copy->input_dims, "[[65536, 1024], [65536, 1024], []]");  // the 256 MB host batch
}

}  // namespace
}  // namespace stepscope
