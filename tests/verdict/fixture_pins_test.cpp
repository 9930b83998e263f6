// Every real trace fixture: its verdict, kind of run and first lever pinned with the reason they
// are right, and a partition that is never negative, never over the window and sums to it exactly.
#include <gtest/gtest.h>

#include "partition/support.hpp"

namespace stepscope {
namespace {

struct Pinned {
  const char* file;
  const char* verdict;      // the JSON id: "gpu-bound", "cpu-bound", ..., "inconclusive"
  const char* kind;         // the kind of run
  const char* first_lever;  // the first lever that applies; "" when none does
  const char* why;          // what in the trace makes the verdict right
};

// Every real trace fixture, GPU, CPU and Nsight, with its verdict, its kind of run and its first
// lever. A change to a pin must be explained: each reason says what in the trace decides it.
constexpr Pinned kPinned[] = {
    // Generated on a CPU with a known cause (cpu/ground_truth.json).
    {"cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz", "input-bound", "training", "num_workers",
     "DataLoader __next__ holds 36 of each 39 ms step (num_workers=0, 2 ms per sample)"},
    {"cpu/b_dataloader_w2_persistent.pt.trace.json.gz", "input-bound", "training", "num_workers",
     "two workers hide the load every other step only: the batch wait still dominates the mean"},
    {"cpu/c_item_print_every_step.pt.trace.json.gz", "cpu-bound", "training", "",
     ".item() on a CPU tensor waits on no device: the host's forward and backward are the step"},
    {"cpu/d_checkpoint_every_3rd_step.pt.trace.json.gz", "side-work", "training", "async_checkpoint",
     "a 102 MB torch.save every third step makes 128 ms steps beside 5 ms ones"},
    {"cpu/e_compute_bound_large_model.pt.trace.json.gz", "cpu-bound", "training", "",
     "a large MLP without an input pipeline: forward and backward ops fill 99.9% of the step"},
    {"cpu/f_instrumented_stages.pt.trace.json.gz", "cpu-bound", "training", "",
     "record_function stages: forward 150 ms and backward 160 ms of a 330 ms step"},
    {"hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "comms-bound", "training", "accumulate_allreduce",
     "a CPU trainer: gloo all-reduces on gloo's threads cover the step while the main thread records nothing: no "
     "compute to overlap them with, fewer of them is the lever"},
    // GPU side cut out of a GPU job: host op times are dispatch times, no verdict.
    {"hta/edited/distributed_info_not_found.json.gz", "inconclusive", "training", "",
     "device properties list an A100 but the GPU records and launches were removed"},
    {"hta/edited/rank_non_gpu.json.gz", "inconclusive", "training", "",
     "NCCL all-to-all annotations (a GPU-only backend) with the GPU records removed"},
    {"hta/edited/rank_not_found.json.gz", "inconclusive", "training", "",
     "NCCL all-to-all annotations (a GPU-only backend) with the GPU records removed"},
    // CUDA and ROCm training.
    {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", "host/launch-bound", "training", "micro_batch",
     "a toy model on an MI250: the GPU is busy ~2% of the step, the host's dispatch is the step"},
    {"hta/df_index_resolver/df_index_resolver.json.gz", "host/launch-bound", "training", "cuda_graphs",
     "DDP on a V100 with ~400 tiny all-reduces a step: launches and host work leave the GPU idle 42%"},
    {"hta/mtia_trace_single_rank/mtia_rank_0.json.gz", "host/launch-bound", "training", "cuda_graphs",
     "an MTIA training step whose device is idle most of its 13 s while the host dispatches"},
    {"hta/nccl_parser_config/nccl_data.json.gz", "host/launch-bound", "training", "micro_batch",
     "DDP on an A100 with the GPU busy 24% of the step: the host is the bound"},
    {"hta/negative_queue_length_values_check/rank0.json.gz", "host/launch-bound", "training", "micro_batch",
     "a TorchRec trainer, GPU busy 36%: host work and launches between the embedding collectives"},
    {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "gpu-bound", "training",
     "amp_fp16", "the GPU is busy 97% of the window; the host runs ahead. Was torch_compile (bound 1.20x); the replay "
     "predicts fp16 autocast 1.015x against compile's 1.010x (amp 1.14x bound): both small, the fp32 GEMMs a little larger"},
    {"hta/sampled_world128/sampled_rank-0.json.gz", "host/launch-bound", "training", "micro_batch",
     "GPU busy 45% of a 610 ms step: host time between kernels outweighs the 32% of NCCL"},
    {"hta/sampled_world128/sampled_rank-1.json.gz", "host/launch-bound", "training", "micro_batch",
     "the same job's rank 1: GPU busy 47%, NCCL 31%"},
    {"hta/trace_diff/control/control.json.gz", "gpu-bound", "training", "micro_batch",
     "GPU busy 84% of the step; 80% of its communication is the embeddings' all-to-all (SendRecv kernels under "
     "nccl:all_to_all), which no DDP knob shortens. Was ep_overlap (its 1.147x bound, no graph change models it; "
     "weighted half), then torch_compile (1.115x replayed). The replay now prices twice the micro-batch: the "
     "host's dispatch, paid once for twice the samples, fills the GPU's idle 16%: 1.21x, held to the 1.17x of "
     "all host and launch time gone"},

    {"hta/trace_diff/test/test.json.gz", "gpu-bound", "training", "torch_compile",
     "GPU busy 96% on a V100. Was ep_overlap (1.05x bound) while the replay tied each queued kernel to its launch "
     "plus the GPU's 100 ms backlog, so no kernel change moved the step; queued kernels now follow their stream "
     "(fbgemm's permutes keep their recorded wait behind the all-to-all, which the graph does not explain), and "
     "the replay predicts compile 1.04x, fp16 autocast 1.007x. Before that torch_compile (1.00x), and amp_fp16 "
     "while fbgemm_gpu's embedding lookups and permutes counted as GEMMs (the "

     "library's name, and FixedDivisor in their template arguments); classed by their own names they are gathers, "
     "elementwise and norm kernels hold 53% of kernel time, and compiling the uncompiled rest (1.25x) outranks fp16 "
     "autocast on the real GEMMs (1.17x, still offered, not bf16)"},
    {"hta/with_gpu_user_annotation/step_based_trace_2543932.json.gz", "host/launch-bound", "training", "micro_batch",
     "ten 1 ms iterations on a GP100 with the GPU busy ~3%: per-step host cost"},
    {"param/dlrm_8rank/kineto/worker0_step_12.1694128201545.pt.trace.json.gz", "host/launch-bound", "training",
     "micro_batch", "DLRM rank 0: host time outweighs its 40% of NCCL"},
    {"param/dlrm_8rank/kineto/worker1_step_12.1694128201556.pt.trace.json.gz", "comms-bound", "training",
     "remove_item", "DLRM rank 1, the slowest: NCCL kernels hold 57% of its 19.9 ms step, 84% of them the embeddings' "
     "all-to-all, which gradient accumulation does not cut; its 6.6 ms of waiting in syncs is the largest lever"},
    {"param/dlrm_8rank/kineto/worker2_step_12.1694128201554.pt.trace.json.gz", "host/launch-bound", "training",
     "micro_batch", "DLRM rank 2: NCCL 27%, the rest mostly host time"},
    {"param/dlrm_8rank/kineto/worker3_step_12.1694128201557.pt.trace.json.gz", "comms-bound", "training",
     "remove_item", "DLRM rank 3: NCCL kernels hold 51% of its 19.3 ms step, 82% of them the embeddings' all-to-all; "
     "10 syncs a step hold 4.8 ms of waiting"},
    {"param/dlrm_8rank/kineto/worker4_step_12.1694128201547.pt.trace.json.gz", "host/launch-bound", "training",
     "micro_batch", "DLRM rank 4: NCCL 37%, host time larger. Was micro_batch (its 1.34x bound, not replayed), "
     "then remove_item (1.275x replayed, held to its 1.27x bound). The replay now prices the micro-batch: twice "
     "the samples for the same host dispatch, 1.50x per sample"},
    {"param/dlrm_8rank/kineto/worker5_step_12.1694128201549.pt.trace.json.gz", "host/launch-bound", "training",
     "micro_batch", "DLRM rank 5: NCCL 35%, host time larger"},
    {"param/dlrm_8rank/kineto/worker6_step_12.1694128201553.pt.trace.json.gz", "host/launch-bound", "training",
     "micro_batch", "DLRM rank 6: NCCL 27%, host time larger"},
    {"param/dlrm_8rank/kineto/worker7_step_12.1694128201553.pt.trace.json.gz", "host/launch-bound", "training",
     "micro_batch", "DLRM rank 7, the fastest: NCCL 14%"},
    {"param/linear_kineto.json.gz", "host/launch-bound", "training", "cuda_graphs",
     "40 iterations of a small Linear model, GPU busy 18.5%: launch-bound"},
    {"param/resnet_kineto.json.gz", "input-bound", "training", "num_workers",
     "enumerate(DataLoader) holds 8.2 s of the 16.2 s window; GPU busy 29%. Was pin_memory (1.07x) while the replay "
     "took the first 8 steady steps, before the loader's first stall (step 8), and predicted 1.00x for every loader "
     "lever; it now takes the 8 nearest the steady mean (steps 6 to 13, two stalls): twice the workers 1.76x "
     "(bound 1.95x)"},

    {"tracelens/mi300/resnet_act_checkpoint.json.gz", "comms-bound", "training", "accumulate_allreduce",
     "DDP on MI300X: the RCCL kernel is active 82% of the window; 11.7 ms exposed beside 4.5 ms of backward, so "
     "overlap hides at most 4.5 ms. The replay predicts 1.24x for a quarter of the all-reduces, now that a kernel "
     "that waited for another stream follows that work instead of its launch plus the recorded wait; the "
     "recompute keeps its 1.08x bound, ddp_buckets 1.04x (was 0.83x). Was no_activation_checkpointing while the "
     "replay predicted 1.00x for accumulating"},
    {"tracelens/mi300/train_resnet18.json.gz", "host/launch-bound", "training", "keep_allocator_cache",
     "ResNet-18 with GPU busy 11%: 272 hipFree calls a step hold the host for 809 ms of its 819 ms"},
    // Benchmarks and harnesses: their syncs and launches are what they measure.
    {"hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", "host/launch-bound",
     "benchmark", "",
     "PARAM warmup/measure ranges; ~40 s of one-time calls left out, host work dwarfs the tiny kernels; only a "
     "precision lever suits a harness, and the replay predicts it under 1% of the step: no lever"},
    {"hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", "host/launch-bound",
     "benchmark", "", "the same PARAM harness timing torch.add: nothing but its own syncs and launches to remove"},
    {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", "host/launch-bound", "benchmark", "",
     "event-timed micro-benchmark: cudaEventSynchronize around tiny kernels"},
    {"hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", "host/launch-bound", "benchmark",
     "",
     "event-timed micro-benchmark across three streams; its fp32 GEMMs are 1.9% of the step: the precision levers "
     "(bounded by their whole time) are listed, not offered, the replay predicting 1.00x"},
    {"hta/execution_trace/benchmark_simple_add_trace.json.gz", "host/launch-bound", "benchmark", "",
     "PARAM torch.add benchmark: 4 kernels and 5 device syncs, the host's timing loop is the step"},
    {"hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz", "inconclusive", "benchmark", "",
     "a CUPTI range-profiler run: launches on the host, no kernel records"},
    // Inference and serving.
    {"tracelens/b200/eager_trace.json.gz", "host/launch-bound", "inference", "cuda_graphs",
     "vLLM eager decode on a B200, GPU busy 13%: graphs are the fix eager mode leaves out"},
    {"tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz", "host/launch-bound", "inference",
     "torch_compile", "bert-small on an H100, GPU busy 7%; the profiler's own cost keeps host levers back"},
    {"tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz", "host/launch-bound", "inference",
     "torch_compile", "the same model on MI300X, GPU busy 10%"},
    {"tracelens/mi300/sglang_Qwen3-8B_decode.json.gz", "inconclusive", "inference", "",
     "the host waits 463 ms on graph replays whose kernels the trace does not hold"},
    {"wild/tutorial_transformer_launch_bound.pt.trace.json.gz", "host/launch-bound", "inference", "cuda_graphs",
     "forward passes under no_grad; the tutorial's author measured the GPU idle most of each iteration. Was "
     "torch_compile (then 1.00x) with CUDA graphs held back for the profiler's cost: 16 kernels, 130 us of GPU work "
     "in a 775 us step, each launched after 30-60 us of dispatch; the replay captures the forward as one graph and "
     "predicts 3.55x (the profiler's 0.21 ms a step is under half the 0.65 ms graphs act on), compile 1.14x"},

    // One-shot passes and captures without steps.
    {"hta/mtia_inference_trace/mtia_inference_rank_0.json.gz", "gpu-bound", "one-shot", "",
     "one MTIA inference pass, the device busy through it; nothing to repeat"},
    {"hta/trace_file_list/inference_rank_1.json.gz", "host/launch-bound", "one-shot", "",
     "a 54-event inference excerpt: host calls around a few kernels; no lever for one pass"},
    {"hta/triton_example/triton_example.json.gz", "host/launch-bound", "one-shot", "",
     "one torch.compile'd call: a single Triton kernel behind its host dispatch"},
    {"tracelens/mi210/gpu_only_trace.json.gz", "gpu-bound", "training", "",
     "a GPU-only capture of one ResNet training pass (batch-norm backward, igemm bwd/wrw kernels), GPU busy 87% "
     "of 6 ms; its one sync waits for the result"},
    {"tracelens/mi300/torch_compile_triton_trace.json.gz", "gpu-bound", "one-shot", "",
     "compiled graph calls, GPU busy 96%; both syncs come after the last launch, so removing them queues "
     "nothing earlier"},
    {"wild/particle_transformer_cold_forward.pt.trace.json.gz", "inconclusive", "one-shot", "",
     "one cold forward pass: its 1.34 s first launch is start-up, no steady state is recorded"},
    {"wild/zoology_missing_gpu_records.pt.trace.json.gz", "inconclusive", "one-shot", "",
     "268 launches and async copies, no GPU record: the GPU side was lost"},
    // Nsight captures of CUDA programs without PyTorch: CUDA knobs only.
    {"nsys/perlmutter-cloverleaf-cuda.sqlite", "gpu-bound", "one-shot", "sync_once_per_step",
     "CloverLeaf's kernels keep the GPU busy; a sync after every kernel is its one removable stall"},
    {"nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite", "sync-bound", "unknown", "remove_item",
     "five saxpy iterations behind blocking pageable cudaMemcpy calls and MPI: the GPU idles 66%; the replay predicts "
     "1.20x for removing the syncs, 1.14x for pinned copies"},
};

class RealTrace : public ::testing::TestWithParam<Pinned> {};

std::string first_lever(const DiagnosedResult& r) {
  for (const auto& l : r.diagnosis.levers)
    if (l.applies) return std::string(lever_name(l.id));
  return "";
}

// As the CLI does it: read, analyse (each rank's footgun scan included), diagnose.
DiagnosedResult analyze_as_the_cli(const std::string& path) {
  IngestOptions io;
  io.jobs = 1;
  const Trace t = read_traces({path}, io);
  return diagnosed(analyze(t, {}));
}

TEST_P(RealTrace, VerdictKindAndFirstLeverWithASoundPartition) {
  const Pinned p = GetParam();
  const DiagnosedResult r = analyze_as_the_cli(std::string(STEPSCOPE_FIXTURES_DIR) + "/" + p.file);
  ASSERT_TRUE(r.diagnosis.present);
  ASSERT_FALSE(r.ranks.empty());
  const Verdict& v = r.diagnosis.verdict;
  EXPECT_EQ(bound_id(v.bound, v.gpu), std::string(p.verdict)) << p.why << "; " << v.headline;
  EXPECT_EQ(run_kind_name(r.ranks[0].facts.run_kind), std::string(p.kind)) << p.why << "; " << r.ranks[0].facts.run_kind_evidence;
  EXPECT_EQ(first_lever(r), std::string(p.first_lever)) << p.why << "; " << v.headline;
  EXPECT_FALSE(r.ranks[0].facts.run_kind_evidence.empty());
  // The figures' own invariants hold on every real trace (check_invariants found nothing).
  const TrustWarning* broken = r.job.trust.find("invariant_violated");
  EXPECT_EQ(broken, nullptr) << (broken ? broken->text : "");
  EXPECT_FALSE(v.evidence.empty());
  EXPECT_FALSE(v.headline.empty());
  EXPECT_GE(v.share, 0.0);
  EXPECT_LE(v.share, 1.0);
  // An inconclusive verdict offers no lever.
  if (v.bound == Bound::Inconclusive) {
    EXPECT_EQ(first_lever(r), "");
  }
  for (const auto& part : each_rank(r, &RankAnalysis::partition))
    for (const auto& s : part.steps) {
      EXPECT_GT(s.duration(), 0) << s.name;
      EXPECT_EQ(total_ns(s.ns), s.duration()) << s.name;
      for (ns_t ns : s.ns) {
        EXPECT_GE(ns, 0) << s.name;
        EXPECT_LE(ns, s.duration()) << s.name;
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
  const DiagnosedResult r = test::analyze_files(files);
  ASSERT_EQ(r.job.rank_comparison.rows.size(), 8u);
  // Catalog: rank 1 is the longest step (19.9 ms) and rank 7 the shortest (12.5 ms); the slow
  // ranks spend the most time in NCCL, i.e. they wait rather than straggle.
  auto longest = std::max_element(r.job.rank_comparison.rows.begin(), r.job.rank_comparison.rows.end(),
                                  [](const RankRow& a, const RankRow& b) { return a.step_ns < b.step_ns; });
  EXPECT_EQ(longest->rank, 1);
  EXPECT_TRUE(r.job.rank_comparison.local);
  EXPECT_EQ(r.job.rank_comparison.skew.size(), 1u);
  EXPECT_GT(r.job.rank_comparison.mean_skew_ns, 0);
}

}  // namespace
}  // namespace stepscope
