// Kernel classification by name: HTA's regex rules (including their quirks) and our classes.
#include <gtest/gtest.h>

#include "stepscope/kernel_class.hpp"

namespace stepscope {
namespace {

TEST(HtaKernelType, FollowsHtaPatternsInOrder) {
  EXPECT_EQ(hta_kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), HtaKernelType::Communication);
  EXPECT_EQ(hta_kernel_type("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            HtaKernelType::Communication);
  EXPECT_EQ(hta_kernel_type("void foo<ncclKernel_bar>()"), HtaKernelType::Communication);  // .*ncclKernel.*
  EXPECT_EQ(hta_kernel_type("Memcpy HtoD (Pageable -> Device)"), HtaKernelType::Memory);
  EXPECT_EQ(hta_kernel_type("Memset (Device)"), HtaKernelType::Memory);
  EXPECT_EQ(hta_kernel_type("dma_request"), HtaKernelType::Memory);
  EXPECT_EQ(hta_kernel_type("ampere_sgemm_128x64_nn"), HtaKernelType::Computation);
  EXPECT_EQ(hta_kernel_type("event_record"), HtaKernelType::Computation);
}

TEST(HtaKernelType, Quirks) {
  // Any name starting with "hip" is communication, before the memory rule is reached.
  EXPECT_EQ(hta_kernel_type("hipMemcpyDtoH"), HtaKernelType::Communication);
  // "dma" anywhere but the start, sync rows and launch-like names are OTHER.
  EXPECT_EQ(hta_kernel_type("kernel_dmaXfer"), HtaKernelType::Other);
  EXPECT_EQ(hta_kernel_type("Stream Sync"), HtaKernelType::Other);
  EXPECT_EQ(hta_kernel_type("Event Sync"), HtaKernelType::Other);
  EXPECT_EQ(hta_kernel_type("Stream Wait Event"), HtaKernelType::Other);
  EXPECT_EQ(hta_kernel_type("cudaLaunchKernel"), HtaKernelType::Other);
  // "Memcpy" later in a name: not MEMORY (anchored), not COMPUTATION either.
  EXPECT_EQ(hta_kernel_type("fooMemcpy"), HtaKernelType::Other);
  EXPECT_STREQ(hta_kernel_type_name(HtaKernelType::Computation), "COMPUTATION");
}

TEST(KernelClass, FinerClasses) {
  EXPECT_EQ(classify_kernel("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1>"),
            KernelClass::GemmTensorCore);
  EXPECT_EQ(classify_kernel("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"),
            KernelClass::GemmTensorCore);
  EXPECT_EQ(classify_kernel("volta_sgemm_128x64_nn"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("Cijk_Ailk_Bljk_SB_MT64x64x8_SN"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN"), KernelClass::GemmTensorCore);
  EXPECT_EQ(classify_kernel("fc-dtype_Float"), KernelClass::Gemm);
  EXPECT_EQ(classify_kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>"), KernelClass::Attention);
  EXPECT_EQ(classify_kernel("fmha_cutlassF_f16_aligned_64x64_rf_sm80"), KernelClass::Attention);
  EXPECT_EQ(classify_kernel("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32"), KernelClass::Convolution);
  EXPECT_EQ(classify_kernel("cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1"), KernelClass::Convolution);
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"),
            KernelClass::Elementwise);
  EXPECT_EQ(classify_kernel("triton_poi_fused_add_cos_sin_0"), KernelClass::Elementwise);
  EXPECT_EQ(classify_kernel("void at::native::reduce_kernel<512, 1>"), KernelClass::ReductionNorm);
  EXPECT_EQ(classify_kernel("void cudnn::bn_bw_1C11_kernel_new<float>"), KernelClass::ReductionNorm);
  EXPECT_EQ(classify_kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>"),
            KernelClass::ReductionNorm);
  EXPECT_EQ(classify_kernel("void at::native::normal_kernel<float>"), KernelClass::OtherCompute);
  EXPECT_EQ(classify_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), KernelClass::Communication);
  EXPECT_EQ(classify_kernel("Memcpy HtoD (Pinned -> Device)"), KernelClass::MemcpyHtoD);
  EXPECT_EQ(classify_kernel("Memcpy DtoH (Device -> Pageable)"), KernelClass::MemcpyDtoH);
  EXPECT_EQ(classify_kernel("Memcpy DtoD (Device -> Device)"), KernelClass::MemcpyDtoD);
  EXPECT_EQ(classify_kernel("Memset (Device)"), KernelClass::Memset);
  EXPECT_EQ(classify_kernel("Stream Sync"), KernelClass::Sync);
  EXPECT_TRUE(is_compute_class(KernelClass::Attention));
  EXPECT_FALSE(is_compute_class(KernelClass::Communication));
  EXPECT_TRUE(is_memory_class(KernelClass::Memset));
  EXPECT_STREQ(kernel_class_name(KernelClass::GemmTensorCore), "gemm_tensor_core");
}

TEST(KernelClass, Collectives) {
  EXPECT_EQ(collective_of("ncclKernel_AllReduce_RING_LL_Sum_float"), Collective::AllReduce);
  EXPECT_EQ(collective_of("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), Collective::ReduceScatter);
  EXPECT_EQ(collective_of("ncclDevKernel_AllGather_RING_LL"), Collective::AllGather);
  EXPECT_EQ(collective_of("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"), Collective::SendRecv);
  EXPECT_EQ(collective_of("ncclDevKernel_Broadcast_RING_LL"), Collective::Broadcast);
  EXPECT_EQ(collective_of("ncclDevKernel_Reduce_Sum_f32_RING_LL"), Collective::Reduce);
  EXPECT_EQ(collective_of("ampere_sgemm_128x64_nn"), Collective::None);
}

}  // namespace
}  // namespace stepscope
