// What each communication kernel is for: the host call above its launch decides, since NCCL runs
// all-to-all, point-to-point and (in older releases) all-reduce as the same SendRecv kernels.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gpu_timeline/trace_builder.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

using test::TraceBuilder;
using test::us;

constexpr std::string_view kSendRecv = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)";
constexpr std::string_view kAllReduce = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)";

// A communication call at `ts` (100 µs long) launching `kernel` on the NCCL stream.
std::uint32_t comm_call(TraceBuilder& b, std::string_view call, std::string_view kernel, double ts,
                        std::int64_t corr) {
  if (!call.empty()) b.add_ns(Kind::UserAnnotation, "user_annotation", call, us(ts), us(100));
  return b.launch(kernel, ts + 10, 5, ts + 20, 50, 20, corr);
}

TEST(CommRoles, TheHostCallDecidesAndAMarkedForwardHoldsActivations) {
  TraceBuilder b;
  b.add_ns(Kind::UserAnnotation, "user_annotation", "## forward ##", us(0), us(1000));
  const auto tp = comm_call(b, "nccl:all_reduce", kAllReduce, 100, 1);
  const auto a2a = comm_call(b, "nccl:all_to_all", kSendRecv, 300, 2);
  const auto send = comm_call(b, "nccl:send", kSendRecv, 1100, 3);
  const auto grads = comm_call(b, "nccl:all_reduce", kSendRecv, 1300, 4);
  const auto bare = comm_call(b, "", kSendRecv, 1500, 5);
  const auto gather = comm_call(b, "nccl:_all_gather_base", kSendRecv, 1700, 6);
  const auto bcast = comm_call(b, "nccl:broadcast", kSendRecv, 1900, 7);
  const auto batch_p2p = comm_call(b, "nccl:coalesced", kSendRecv, 2100, 8);
  const auto coalesced_ar = comm_call(b, "nccl:coalesced", kAllReduce, 2300, 9);
  b.trace().build_indexes();
  const RankFacts f = compute_facts(b.trace());
  EXPECT_EQ(f.comm_role(tp), CommRole::Activation);
  EXPECT_EQ(f.comm_role(a2a), CommRole::Exchange);
  EXPECT_EQ(f.comm_role(send), CommRole::PointToPoint);
  EXPECT_EQ(f.comm_role(grads), CommRole::GradientSync);
  EXPECT_EQ(f.comm_role(bare), CommRole::Other);
  EXPECT_EQ(f.comm_role(gather), CommRole::ParamGather);
  EXPECT_EQ(f.comm_role(bcast), CommRole::Other);
  EXPECT_EQ(f.comm_role(batch_p2p), CommRole::PointToPoint);
  EXPECT_EQ(f.comm_role(coalesced_ar), CommRole::GradientSync);
  EXPECT_EQ(f.comm_roles.size(), 9u);
}

// Megatron's tensor-parallel mappings: the backward of _CopyToModelParallelRegion all-reduces the
// input's gradient, and sequence parallelism all-gathers activations. Neither is gradient sync or
// a parameter gather, in backward or in an unmarked forward.
TEST(CommRoles, TensorParallelRegionsHoldActivations) {
  TraceBuilder b;
  b.add_ns(Kind::CpuOp, "cpu_op", "autograd::engine::evaluate_function: _CopyToModelParallelRegionBackward", us(0),
           us(300));
  b.add_ns(Kind::CpuOp, "cpu_op", "_CopyToModelParallelRegionBackward", us(5), us(290));
  const auto grad_in = comm_call(b, "nccl:all_reduce", kAllReduce, 100, 1);
  b.add_ns(Kind::PythonFunction, "python_function",
           "megatron/core/tensor_parallel/mappings.py(300): gather_from_sequence_parallel_region", us(400), us(300));
  const auto seq = comm_call(b, "nccl:_all_gather_base", kSendRecv, 500, 2);
  // The data-parallel reduction beside them is still gradient sync.
  b.add_ns(Kind::CpuOp, "cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", us(800),
           us(300));
  const auto dp = comm_call(b, "nccl:all_reduce", kAllReduce, 900, 3);
  b.trace().build_indexes();
  const RankFacts f = compute_facts(b.trace());
  EXPECT_EQ(f.comm_role(grad_in), CommRole::Activation);
  EXPECT_EQ(f.comm_role(seq), CommRole::Activation);
  EXPECT_EQ(f.comm_role(dp), CommRole::GradientSync);
}

// Without a marked forward, an all-reduce on the main thread is gradient sync wherever it runs:
// the forward inferred for unmarked ops would also cover a reduction launched after backward.
TEST(CommRoles, AnInferredForwardHoldsNoActivations) {
  TraceBuilder b;
  b.add_ns(Kind::CpuOp, "cpu_op", "aten::linear", us(0), us(50));
  b.add_ns(Kind::CpuOp, "cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", us(60), us(30));
  // A top-level op on the main thread: the forward is inferred for it and for what it holds.
  b.add_ns(Kind::CpuOp, "cpu_op", "c10d::allreduce_", us(95), us(110));
  const auto k = comm_call(b, "nccl:all_reduce", kAllReduce, 100, 1);
  b.trace().build_indexes();
  const RankFacts f = compute_facts(b.trace());
  EXPECT_EQ(f.event_stage[k], StageHint::Forward);
  EXPECT_EQ(f.comm_role(k), CommRole::GradientSync);
}

TEST(CommRoles, NamesOfHostCollectives) {
  EXPECT_EQ(host_name_fact("nccl:all_to_all").collective, Collective::AllToAll);
  EXPECT_EQ(host_name_fact("c10d::alltoall_base_").collective, Collective::AllToAll);
  EXPECT_EQ(host_name_fact("c10d::_reduce_scatter_base_").collective, Collective::ReduceScatter);
  EXPECT_EQ(host_name_fact("nccl:recv").collective, Collective::SendRecv);
  EXPECT_EQ(host_name_fact("_c10d_functional::all_gather_into_tensor").collective, Collective::AllGather);
  // A user's range and an op merely named after a collective are no calls of a library.
  EXPECT_EQ(host_name_fact("## alltoall_fwd_single ##").collective, Collective::None);
  EXPECT_EQ(host_name_fact("record_param_comms").collective, Collective::None);
  EXPECT_EQ(host_name_fact("aten::all").collective, Collective::None);
}

// A TorchRec trainer on NCCL 2.x: every collective ran as ncclKernel_SendRecv, so the kernel
// names alone say SendRecv for all of it. The host's calls split it: embedding all-to-all,
// dense gradients' all-reduce, the all-gather of row-wise sharded tables, and their pooled
// embeddings' reduce-scatter inside "## forward:sparse_arch ##" (model parallel, not gradients).
TEST(CommRoles, RecsysTraceSplitsBySendRecvKernelsHostCalls) {
  const RankTrace t =
      read_kineto_file(std::string(STEPSCOPE_FIXTURES_DIR) + "/hta/negative_queue_length_values_check/rank0.json.gz");
  const RankFacts f = compute_facts(t);
  std::map<CommRole, ns_t> by_role;
  for (const auto& [event, role] : f.comm_roles) {
    EXPECT_EQ(f.of_event(t, event).collective, Collective::SendRecv);
    by_role[role] += t.events.dur[event];
  }
  // Kernel times summed by the innermost nccl: call above each launch (fixture read by hand):
  // all_reduce 126.6 ms, all_to_all 30.3 ms, _all_gather_base 4.8 ms, _reduce_scatter_base 3.8 ms.
  EXPECT_NEAR(static_cast<double>(by_role[CommRole::GradientSync]), 126.555e6, 0.01e6);
  EXPECT_NEAR(static_cast<double>(by_role[CommRole::Activation]), 3.796e6, 0.01e6);
  EXPECT_NEAR(static_cast<double>(by_role[CommRole::Exchange]), 26.423e6 + 3.839e6, 0.01e6);
  EXPECT_NEAR(static_cast<double>(by_role[CommRole::ParamGather]), 4.776e6, 0.01e6);
  EXPECT_EQ(by_role.count(CommRole::PointToPoint), 0u);
}

}  // namespace
}  // namespace stepscope
