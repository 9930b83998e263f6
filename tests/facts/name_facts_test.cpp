// The facts layer on names written by real libraries: engine and math type of GEMMs and
// convolutions, communication outside NCCL, host roles and stages, and the device model.
#include <gtest/gtest.h>

#include "stepscope/facts.hpp"

namespace stepscope {
namespace {

struct Expect {
  const char* name;
  KernelClass cls;
  Engine engine;
  DataType dtype;
};

// Each line is a kernel name as a profiler wrote it, with what the library's naming says.
TEST(NameFacts, GemmEngineAndTypeFromLibraryNames) {
  const Expect cases[] = {
      // cuBLASLt xmma: the second type pair is the math type; FFMA means no tensor cores.
      {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_"
       "kernel__5x_cublas",
       KernelClass::Gemm, Engine::Simt, DataType::Fp32},
      {"sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel",
       KernelClass::GemmTensorCore, Engine::TensorCore, DataType::Tf32},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1_execute_segment_k_off_"
       "kernel__5x_cublas",
       KernelClass::GemmTensorCore, Engine::TensorCore, DataType::Bf16},
      // Legacy cuBLAS names.
      {"volta_sgemm_128x64_nn", KernelClass::Gemm, Engine::Simt, DataType::Fp32},
      {"volta_h884gemm_64x64_ldg8_nn", KernelClass::GemmTensorCore, Engine::TensorCore, DataType::Fp16},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", KernelClass::GemmTensorCore,
       Engine::TensorCore, DataType::Bf16},
      {"void gemv2T_kernel_val<int, int, __half, __half, float, 128, 16, 4, 4, false, false>", KernelClass::Gemm,
       Engine::Simt, DataType::Fp16},
      // fp8 CUTLASS / DeepGEMM: the narrowest template type wins over the bf16 output.
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
       "cutlass::float_e4m3_t, cutlass::float_e4m3_t, cutlass::bfloat16_t>>",
       KernelClass::GemmTensorCore, Engine::TensorCore, DataType::Fp8},
      {"void deep_gemm::fp8_gemm_kernel<128u, 128u, 128u, 1u, 8u>(__nv_bfloat16*, float*, int*, unsigned int)",
       KernelClass::GemmTensorCore, Engine::TensorCore, DataType::Fp8},
      // rocBLAS / hipBLASLt Tensile: the type field and the MFMA tile.
      {"Cijk_Ailk_Bljk_SB_MT64x64x8_SN", KernelClass::Gemm, Engine::Simt, DataType::Fp32},
      {"Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN", KernelClass::GemmTensorCore, Engine::TensorCore,
       DataType::Fp16},
      {"Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI32x32x8x1_SN", KernelClass::GemmTensorCore, Engine::TensorCore,
       DataType::Bf16},
      // cuDNN convolutions.
      {"volta_scudnn_128x64_relu_interior_nn_v1", KernelClass::Convolution, Engine::Simt, DataType::Fp32},
      {"sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4",
       KernelClass::Convolution, Engine::TensorCore, DataType::Bf16},
      {"turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", KernelClass::Convolution,
       Engine::TensorCore, DataType::Fp16},
      // Triton GEMMs say nothing of their type.
      {"triton_tem_fused_mm_0", KernelClass::Gemm, Engine::Unknown, DataType::Unknown},
  };
  for (const auto& c : cases) {
    const NameFact f = kernel_name_fact(c.name);
    EXPECT_EQ(f.cls, c.cls) << c.name;
    EXPECT_EQ(f.engine, c.engine) << c.name;
    EXPECT_EQ(f.dtype, c.dtype) << c.name;
  }
}

TEST(NameFacts, GemmLibraryHelpersAreNotGemms) {
  EXPECT_EQ(kernel_name_fact("void cutlass::transpose_kernel<cutlass::gemm::GemmShape<32, 32, 8>, float>").cls,
            KernelClass::Elementwise);
  EXPECT_EQ(kernel_name_fact("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float>").cls,
            KernelClass::ReductionNorm);
  // An fp8 cast is not a convolution although "convert" starts like "conv".
  EXPECT_EQ(kernel_name_fact("void per_token_group_quant_convert_fp8<__nv_bfloat16>").cls,
            KernelClass::Elementwise);
}

// A kernel is classed by its own name and namespace: a type named in its template arguments or
// parameters, or a library called FBGEMM, does not make it a GEMM.
TEST(NameFacts, ClassFromTheKernelsOwnName) {
  EXPECT_EQ(kernel_name_fact("void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int*)").cls,
            KernelClass::Elementwise);
  EXPECT_EQ(kernel_name_fact("void fbgemm_gpu::split_embedding_codegen_forward_unweighted_kernel<float, float, "
                             "fbgemm_gpu::FixedDivisor>(at::PackedTensorAccessor64<float, 1>)")
                .cls,
            KernelClass::Elementwise);
  EXPECT_EQ(kernel_name_fact("void at::native::vectorized_elementwise_kernel<4, at::native::gemm_like_functor>(int)").cls,
            KernelClass::Elementwise);
  // A wrapper that names nothing itself is classed by what it wraps.
  EXPECT_EQ(kernel_name_fact("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>"
                             "(Params)")
                .cls,
            KernelClass::GemmTensorCore);
  EXPECT_EQ(kernel_name_fact("ampere_sgemm_128x64_nn").cls, KernelClass::Gemm);
}

TEST(NameFacts, CommunicationOutsideNccl) {
  struct C {
    const char* name;
    CommKind kind;
    Collective collective;
  };
  const C cases[] = {
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", CommKind::Collective,
       Collective::AllReduce},
      {"void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*)", CommKind::ExpertParallel,
       Collective::AllToAll},
      {"void deep_ep::internode::combine<true, 8, 4, 256, 8>(int4*, float*)", CommKind::ExpertParallel,
       Collective::AllToAll},
      {"void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*)", CommKind::ExpertParallel,
       Collective::AllToAll},
      {"void ep::kernels::dispatch_kernel<128>(void*)", CommKind::ExpertParallel, Collective::AllToAll},
      {"nvshmemi_transfer_rma_nbi_kernel", CommKind::Nvshmem, Collective::None},
      {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals)",
       CommKind::CustomAllReduce, Collective::AllReduce},
      {"void mscclpp::allreduce_kernel<__half>(void*)", CommKind::CustomAllReduce, Collective::AllReduce},
  };
  for (const auto& c : cases) {
    const NameFact f = kernel_name_fact(c.name);
    EXPECT_EQ(f.cls, KernelClass::Communication) << c.name;
    EXPECT_EQ(f.comm, c.kind) << c.name;
    EXPECT_EQ(f.collective, c.collective) << c.name;
  }
  // Block-level reductions inside PyTorch's own kernels are not collectives; MoE token sorting is
  // not expert-parallel communication.
  EXPECT_EQ(kernel_name_fact("void at::native::block_all_reduce<float>(float*)").comm, CommKind::None);
  EXPECT_EQ(kernel_name_fact("void moe_align_block_size_kernel<int>(int*)").comm, CommKind::None);
}

TEST(NameFacts, HostRolesStagesAndSyncs) {
  EXPECT_EQ(host_name_fact("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__").role, HostRole::Loader);
  EXPECT_EQ(host_name_fact("aten::item").sync, SyncKind::ScalarRead);
  EXPECT_EQ(host_name_fact("cudaStreamSynchronize").sync, SyncKind::DeviceWait);
  EXPECT_EQ(host_name_fact("cudaMemcpy").sync, SyncKind::BlockingCopy);
  EXPECT_EQ(host_name_fact("cudaMemcpyAsync").sync, SyncKind::None);
  EXPECT_EQ(host_name_fact("autograd::engine::evaluate_function: AddmmBackward0").stage, StageHint::Backward);
  EXPECT_EQ(host_name_fact("CudnnConvolutionBackward").stage, StageHint::Backward);
  EXPECT_EQ(host_name_fact("AddmmBackward0").stage, StageHint::Backward);
  EXPECT_EQ(host_name_fact("Optimizer.step#AdamW.step").stage, StageHint::Optimizer);
  EXPECT_EQ(host_name_fact("aten::addmm").stage, StageHint::None);
  EXPECT_EQ(host_name_fact("ProfilerStep#12").role, HostRole::Marker);
  EXPECT_TRUE(host_name_fact("cudaLaunchKernel").has(kNameLaunchCall));
  EXPECT_TRUE(host_name_fact("cuLaunchKernel").has(kNameLaunchCall));
}

DeviceModel device_of(const std::string& name, int major, int minor, int warp = 32) {
  RankTrace t;
  DeviceProperties d;
  d.name = name;
  d.compute_major = major;
  d.compute_minor = minor;
  d.warp_size = warp;
  t.devices.push_back(d);
  return device_model(t);
}

TEST(DeviceModel, CapabilitiesFollowTheArchitecture) {
  const DeviceModel v100 = device_of("Tesla V100-SXM2-16GB", 7, 0);
  EXPECT_EQ(v100.arch, "sm_70");
  EXPECT_EQ(v100.tensor_cores(), Capability::Yes);
  EXPECT_EQ(v100.bf16(), Capability::No);
  EXPECT_EQ(v100.tf32(), Capability::No);
  const DeviceModel t4 = device_of("Tesla T4", 7, 5);
  EXPECT_EQ(t4.bf16(), Capability::No);
  EXPECT_EQ(t4.flash_attention2(), Capability::No);
  const DeviceModel a100 = device_of("NVIDIA A100-SXM4-80GB", 8, 0);
  EXPECT_EQ(a100.bf16(), Capability::Yes);
  EXPECT_EQ(a100.tf32(), Capability::Yes);
  EXPECT_EQ(a100.fp8(), Capability::No);
  EXPECT_EQ(device_of("NVIDIA H100 80GB HBM3", 9, 0).fp8(), Capability::Yes);
  // HIP's 9.4 is gfx942 (MI300); warp size 64 tells AMD apart when the name does not.
  const DeviceModel mi300 = device_of("AMD Instinct MI300X", 9, 4, 64);
  EXPECT_EQ(mi300.arch, "gfx942");
  EXPECT_EQ(mi300.fp8(), Capability::Yes);
  EXPECT_EQ(device_of("AMD Radeon Graphics", 9, 0, 64).arch, "gfx90a");
  // A name alone still gives the architecture.
  EXPECT_EQ(device_of("Tesla V100-PCIE-32GB", -1, -1, -1).bf16(), Capability::No);
  // Nothing known: every capability is unknown, never assumed.
  RankTrace empty;
  EXPECT_EQ(device_model(empty).bf16(), Capability::Unknown);
}

}  // namespace
}  // namespace stepscope
