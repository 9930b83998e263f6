#include "kernels.hpp"

#include <cstdio>

namespace stepscope::tracegen {
namespace {

// CUDA (A100, cuBLAS / ATen / NCCL 2.21 names).
const KernelSpec kGemmBf16{"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
                           {16, 24, 1}, {128, 1, 1}, 232, 73728, 3.555556, 14.222222, 22};
const KernelSpec kGemmBf16Nn{"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn",
                             {16, 24, 1}, {128, 1, 1}, 232, 73728, 3.555556, 14.222222, 22};
const KernelSpec kGemmBf16Nt{"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_nt",
                             {32, 24, 1}, {128, 1, 1}, 230, 81920, 7.111111, 28.444445, 21};
const KernelSpec kSgemm{"ampere_sgemm_128x64_tn", {16, 48, 1}, {128, 1, 1}, 122, 12544,
                        7.111111, 28.444445, 25};
const KernelSpec kSgemmNn{"ampere_sgemm_128x64_nn", {16, 48, 1}, {128, 1, 1}, 122, 12544,
                          7.111111, 28.444445, 25};
const KernelSpec kSgemmNt{"ampere_sgemm_128x128_nt", {16, 24, 1}, {256, 1, 1}, 127, 33280,
                          3.555556, 28.444445, 25};
const KernelSpec kLayerNorm{
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
    "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, "
    "float*, c10::BFloat16*)",
    {4096, 1, 1}, {256, 1, 1}, 40, 0, 37.925926, 303.407410, 92};
const KernelSpec kLayerNormBwdInput{
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::"
    "BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
    "c10::BFloat16 const*, c10::BFloat16*, int)",
    {4096, 1, 1}, {256, 1, 1}, 40, 0, 37.925926, 303.407410, 88};
const KernelSpec kLayerNormBwdGamma{
    "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, "
    "float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
    "c10::BFloat16*, c10::BFloat16*)",
    {32, 1, 1}, {32, 32, 1}, 64, 8448, 0.296296, 9.481482, 14};
const KernelSpec kGelu{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::"
    "TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::"
    "operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::"
    "native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::"
    "detail::Array<char*, 2>)",
    {12288, 1, 1}, {128, 1, 1}, 28, 0, 113.777779, 455.111115, 94};
const KernelSpec kGeluBwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at"
    "::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}"
    "::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>"
    " >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType"
    ")::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16,"
    " c10::BFloat16)#1}, at::detail::Array<char*, 3>)",
    {12288, 1, 1}, {128, 1, 1}, 32, 0, 113.777779, 455.111115, 93};
const KernelSpec kAdd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>"
    ", at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail"
    "::Array<char*, 3>)",
    {12288, 1, 1}, {128, 1, 1}, 26, 0, 113.777779, 455.111115, 95};
const KernelSpec kMul{
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
    "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::"
    "Array<char*, 3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16"
    ", at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)",
    {12288, 1, 1}, {128, 1, 1}, 26, 0, 113.777779, 455.111115, 95};
const KernelSpec kTiny{
    "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
    "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, "
    "at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float"
    "> >, at::detail::Array<char*, 2>)",
    {2, 1, 1}, {128, 1, 1}, 20, 0, 0.018519, 0.074074, 0};
const KernelSpec kSoftmax{
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, float, "
    "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, c10::BFloat16 const*,"
    " int)",
    {4096, 1, 1}, {1024, 1, 1}, 38, 0, 18.962963, 606.814819, 96};
const KernelSpec kNll{
    "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float,"
    " long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)",
    {1, 1, 1}, {32, 1, 1}, 30, 2048, 0.009259, 0.009259, 0};
const KernelSpec kSoftmaxBwd{
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::"
    "native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float "
    "const*, long)",
    {4096, 1, 1}, {1024, 1, 1}, 32, 0, 18.962963, 606.814819, 95};
const KernelSpec kNllBwd{
    "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>"
    "(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)",
    {1, 1, 1}, {32, 1, 1}, 24, 0, 0.009259, 0.009259, 0};
const KernelSpec kAdam{
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::TensorListMetadata<5>, at::native::(anonymous namespace)::FusedAdamMathFunctor<"
    "float, 5, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double,"
    " bool, double*, double*>(at::native::(anonymous namespace)::TensorListMetadata<5>, at::"
    "native::(anonymous namespace)::FusedAdamMathFunctor<float, 5, (at::native::ADAM_MODE)1, "
    "false>, double*, double, double, double, double, double, bool, double*, double*)",
    {320, 1, 1}, {512, 1, 1}, 72, 0, 2.962963, 47.407406, 45};
const KernelSpec kNccl{"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                       {24, 1, 1}, {512, 1, 1}, 96, 103808, 0.222222, 3.555556, 2};

// ROCm (MI300X, hipBLASLt / ATen / RCCL names). Elementwise kernels keep the ATen names.
const KernelSpec kRocmGemm{
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_"
    "AFEM1_ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_ELFLR0_EMLLn1_FDSI0_GRPM1_GRVWA8_GRVWB8_"
    "GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA2048_LBSPPB2048_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_"
    "MIWT8_8_MO40_NTn1_NTA0_NTB0_NTC0_NTD4_NTM0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1"
    "_SPO0_SRVW0_SSO0_SVW8_SK3_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA8_VWB8_WSGRA0"
    "_WSGRB0_WS64_WG32_8_1",
    {256, 1, 1}, {256, 1, 1}, -1, -1, -1, -1, -1};
const KernelSpec kRocmNccl{"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
                           {8, 1, 1}, {256, 1, 1}, -1, -1, -1, -1, -1};

const KernelSet kCudaBf16{&kGemmBf16, &kGemmBf16Nn, &kGemmBf16Nt, &kLayerNorm,
                          &kLayerNormBwdInput, &kLayerNormBwdGamma, &kGelu, &kGeluBwd, &kAdd,
                          &kMul, &kTiny, &kSoftmax, &kNll, &kSoftmaxBwd, &kNllBwd, &kAdam, &kNccl,
                          "Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD (Pageable -> Device)",
                          "Memcpy DtoH (Device -> Pinned)", "Memcpy DtoH (Device -> Pageable)"};
const KernelSet kCudaFp32{&kSgemm, &kSgemmNn, &kSgemmNt, &kLayerNorm, &kLayerNormBwdInput,
                          &kLayerNormBwdGamma, &kGelu, &kGeluBwd, &kAdd, &kMul, &kTiny, &kSoftmax,
                          &kNll, &kSoftmaxBwd, &kNllBwd, &kAdam, &kNccl,
                          "Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD (Pageable -> Device)",
                          "Memcpy DtoH (Device -> Pinned)", "Memcpy DtoH (Device -> Pageable)"};
const KernelSet kRocm{&kRocmGemm, &kRocmGemm, &kRocmGemm, &kLayerNorm, &kLayerNormBwdInput,
                      &kLayerNormBwdGamma, &kGelu, &kGeluBwd, &kAdd, &kMul, &kTiny, &kSoftmax,
                      &kNll, &kSoftmaxBwd, &kNllBwd, &kAdam, &kRocmNccl,
                      "Memcpy HtoD (Host -> Device)", "Memcpy HtoD (Host -> Device)",
                      "Memcpy DtoH (Device -> Host)", "Memcpy DtoH (Device -> Host)"};

// Volta / Turing fp32 (V100, T4): cuBLAS's volta_sgemm kernels and all-float ATen kernels.
const KernelSpec kVoltaSgemm{"volta_sgemm_128x64_tn", {16, 48, 1}, {128, 1, 1}, 122, 12544,
                             3.2, 12.8, 20};
const KernelSpec kVoltaSgemmNn{"volta_sgemm_128x64_nn", {16, 48, 1}, {128, 1, 1}, 122, 12544,
                               3.2, 12.8, 20};
const KernelSpec kVoltaSgemmNt{"volta_sgemm_128x128_nt", {16, 24, 1}, {256, 1, 1}, 127, 33280,
                               1.6, 12.8, 20};
const KernelSpec kLayerNormF32{
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
    "(int, float, float const*, float const*, float const*, float*, "
    "float*, float*)",
    {4096, 1, 1}, {256, 1, 1}, 40, 0, 37.925926, 303.407410, 92};
const KernelSpec kLayerNormBwdInputF32{
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, "
    "float>(float const*, float const*, float const*, float const*, "
    "float const*, float*, int)",
    {4096, 1, 1}, {256, 1, 1}, 40, 0, 37.925926, 303.407410, 88};
const KernelSpec kLayerNormBwdGammaF32{
    "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<float, "
    "float>(long, long, float const*, float const*, float const*, float const*, "
    "float*, float*)",
    {32, 1, 1}, {32, 32, 1}, 64, 8448, 0.296296, 9.481482, 14};
const KernelSpec kGeluF32{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::"
    "TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::"
    "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::"
    "native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}, at::"
    "detail::Array<char*, 2>)",
    {12288, 1, 1}, {128, 1, 1}, 28, 0, 113.777779, 455.111115, 94};
const KernelSpec kGeluBwdF32{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at"
    "::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}"
    "::operator()() const::{lambda(float, float)#1}, at::detail::Array<char*, 3>"
    " >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType"
    ")::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(float,"
    " float)#1}, at::detail::Array<char*, 3>)",
    {12288, 1, 1}, {128, 1, 1}, 32, 0, 113.777779, 455.111115, 93};
const KernelSpec kAddF32{
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>"
    ", at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail"
    "::Array<char*, 3>)",
    {12288, 1, 1}, {128, 1, 1}, 26, 0, 113.777779, 455.111115, 95};
const KernelSpec kMulF32{
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
    "float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::"
    "Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float"
    ", at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)",
    {12288, 1, 1}, {128, 1, 1}, 26, 0, 113.777779, 455.111115, 95};
const KernelSpec kSoftmaxF32{
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*,"
    " int)",
    {4096, 1, 1}, {1024, 1, 1}, 38, 0, 18.962963, 606.814819, 96};
const KernelSet kCudaVoltaFp32{&kVoltaSgemm, &kVoltaSgemmNn, &kVoltaSgemmNt, &kLayerNormF32,
                               &kLayerNormBwdInputF32, &kLayerNormBwdGammaF32, &kGeluF32, &kGeluBwdF32,
                               &kAddF32, &kMulF32, &kTiny, &kSoftmaxF32, &kNll, &kSoftmaxBwd, &kNllBwd,
                               &kAdam, &kNccl, "Memcpy HtoD (Pinned -> Device)",
                               "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)",
                               "Memcpy DtoH (Device -> Pageable)"};
// fp32 throughout on Ampere: SIMT sgemm and every ATen kernel on float.
const KernelSet kCudaAmpereAllFp32{&kSgemm, &kSgemmNn, &kSgemmNt, &kLayerNormF32,
                                   &kLayerNormBwdInputF32, &kLayerNormBwdGammaF32, &kGeluF32, &kGeluBwdF32,
                                   &kAddF32, &kMulF32, &kTiny, &kSoftmaxF32, &kNll, &kSoftmaxBwd, &kNllBwd,
                                   &kAdam, &kNccl, "Memcpy HtoD (Pinned -> Device)",
                                   "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)",
                                   "Memcpy DtoH (Device -> Pageable)"};

const KernelSpec kNcclLegacy{"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
                             {2, 1, 1}, {512, 1, 1}, 96, 42024, 0.025, 0.4, 1};
// All-to-all (and point-to-point) in the same releases: grouped sends and receives.
const KernelSpec kNcclLegacySendRecv{"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)",
                                     {2, 1, 1}, {640, 1, 1}, 96, 42024, 0.025, 0.5, 1};

// Footgun presets: cuDNN convolutions with and without layout conversions, autotuning trials,
// unfused attention, anomaly-mode NaN checks, per-parameter AdamW.
const KernelSpec kConvFwd{
    "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_"
    "warpsize2x2x1_g1_tensor16x8x16_execute_kernel__5x_cudnn",
    {196, 1, 1}, {128, 1, 1}, 168, 65536, 1.814815, 7.259259, 24};
const KernelSpec kConvDgrad{
    "sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_"
    "warpsize2x2x1_g1_tensor16x8x16_execute_kernel__5x_cudnn",
    {196, 1, 1}, {128, 1, 1}, 168, 65536, 1.814815, 7.259259, 24};
const KernelSpec kConvWgrad{
    "sm80_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_"
    "warpsize2x2x1_g1_tensor16x8x16_execute_kernel__5x_cudnn",
    {64, 1, 1}, {128, 1, 1}, 168, 65536, 0.592593, 2.370370, 24};
const KernelSpec kNchwToNhwc{
    "void cudnn::ops::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, "
    "(cudnnKernelDataType_t)0>(cudnn::ops::nchw2nhwc_params_t<float>, __nv_bfloat16 const*, "
    "__nv_bfloat16*)",
    {3136, 1, 1}, {256, 1, 1}, 24, 0, 29.037037, 232.296295, 90};
const KernelSpec kNhwcToNchw{
    "void cudnn::ops::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true, false, "
    "(cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>, __nv_bfloat16 const*, "
    "__nv_bfloat16*)",
    {3136, 1, 1}, {256, 1, 1}, 24, 0, 29.037037, 232.296295, 90};
const KernelSpec kConvTrial1{
    "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage5_"
    "warpsize2x2x1_g1_tensor16x8x16_execute_kernel__5x_cudnn",
    {784, 1, 1}, {128, 1, 1}, 128, 81920, 7.259259, 29.037037, 40};
const KernelSpec kConvTrial2{
    "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize256x128x32_stage3_"
    "warpsize4x2x1_g1_tensor16x8x16_execute_kernel__5x_cudnn",
    {98, 1, 1}, {256, 1, 1}, 232, 98304, 0.907407, 7.259259, 16};
const KernelSpec kConvTrial3{
    "void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, "
    "__nv_bfloat16, __nv_bfloat16, float, float, float, true>(cudnn::cnn::GroupedDirectFpropParams, "
    "__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, float, float, __nv_bfloat16 "
    "const*, float const*, cudnnActivationStruct)",
    {3136, 1, 1}, {256, 1, 1}, 64, 0, 29.037037, 232.296295, 60};
const KernelSpec kConvTrial4{
    "void implicit_convolve_sgemm<__nv_bfloat16, __nv_bfloat16, 128, 5, 5, 3, 3, 3, 1, false, "
    "false, true>(int, int, int, __nv_bfloat16 const*, int, __nv_bfloat16*, __nv_bfloat16 const*, "
    "kernel_conv_params, unsigned long long, int, float, float, int, __nv_bfloat16 const*, "
    "__nv_bfloat16 const*, bool, int, int)",
    {196, 1, 1}, {128, 1, 1}, 96, 20480, 1.814815, 7.259259, 30};
const KernelSpec kBmm{"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_nn",
                      {32, 24, 16}, {128, 1, 1}, 230, 81920, 7.111111, 28.444445, 21};
const KernelSpec kSoftmaxAttn{
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, "
    "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, "
    "c10::BFloat16 const*, int)",
    {32768, 1, 1}, {512, 1, 1}, 38, 0, 37.925926, 606.814819, 96};
const KernelSpec kSoftmaxAttnBwd{
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<8, c10::BFloat16, float, "
    "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>(c10::BFloat16*, "
    "c10::BFloat16 const*, c10::BFloat16 const*, long)",
    {32768, 1, 1}, {512, 1, 1}, 32, 0, 37.925926, 606.814819, 95};
const KernelSpec kIsnan{
    "void at::native::vectorized_elementwise_kernel<4, at::native::isnan_kernel(at::"
    "TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::isnan_kernel(at::"
    "TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
    {12288, 1, 1}, {128, 1, 1}, 24, 0, 113.777779, 455.111115, 94};
const KernelSpec kAny{
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::func_wrapper_t"
    "<bool, at::native::or_kernel_cuda(at::TensorIterator&)::{lambda(bool, bool)#1}>, unsigned "
    "int, bool, 4> >(at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, at::native::"
    "or_kernel_cuda(at::TensorIterator&)::{lambda(bool, bool)#1}>, unsigned int, bool, 4>)",
    {216, 1, 1}, {32, 16, 1}, 32, 16, 2.0, 32.0, 50};
const KernelSpec kLerp{
    "void at::native::vectorized_elementwise_kernel<4, at::native::lerp_kernel_scalar_weight(at::"
    "TensorIteratorBase&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#2}::"
    "operator()() const::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, at::native::"
    "lerp_kernel_scalar_weight(at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#1}::"
    "operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}, at::detail::"
    "Array<char*, 3>)",
    {1024, 1, 1}, {128, 1, 1}, 26, 0, 9.481482, 37.925926, 95};
const KernelSpec kAddcmul{
    "void at::native::vectorized_elementwise_kernel<4, at::native::addcmul_cuda_kernel(at::"
    "TensorIteratorBase&, c10::Scalar const&)::{lambda()#2}::operator()() const::{lambda()#1}::"
    "operator()() const::{lambda(float, float, float)#1}, at::detail::Array<char*, 4> >(int, at::"
    "native::addcmul_cuda_kernel(at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#2}::"
    "operator()() const::{lambda()#1}::operator()() const::{lambda(float, float, float)#1}, at::"
    "detail::Array<char*, 4>)",
    {1024, 1, 1}, {128, 1, 1}, 28, 0, 9.481482, 37.925926, 95};
const KernelSpec kSqrt{
    "void at::native::vectorized_elementwise_kernel<4, at::native::sqrt_kernel_cuda(at::"
    "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::sqrt_kernel_cuda(at::"
    "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(float)#1}, at::detail::Array<char*, 2>)",
    {1024, 1, 1}, {128, 1, 1}, 20, 0, 9.481482, 37.925926, 95};
const KernelSpec kAddcdiv{
    "void at::native::vectorized_elementwise_kernel<4, at::native::addcdiv_cuda_kernel(at::"
    "TensorIteratorBase&, c10::Scalar const&)::{lambda()#2}::operator()() const::{lambda()#1}::"
    "operator()() const::{lambda(float, float, float)#1}, at::detail::Array<char*, 4> >(int, at::"
    "native::addcdiv_cuda_kernel(at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#2}::"
    "operator()() const::{lambda()#1}::operator()() const::{lambda(float, float, float)#1}, at::"
    "detail::Array<char*, 4>)",
    {1024, 1, 1}, {128, 1, 1}, 28, 0, 9.481482, 37.925926, 95};


// fp8 MoE on H100 with DeepEP expert parallelism, and a Triton pointwise kernel.
const KernelSpec kFp8Gemm{
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int>, "
    "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedFP8<4, "
    "cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, "
    "cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8FastAccum>, cute::tuple<cute::C<128>, "
    "cute::C<128>, cute::C<128> >, cutlass::float_e4m3_t, cute::tuple<long, cute::C<1>, long>, "
    "cutlass::float_e4m3_t, cute::tuple<long, cute::C<1>, long>, cute::TiledMMA<cute::MMA_Atom<cute::"
    "SM90_64x128x32_F32E4M3E4M3_SS_TN<(cute::GMMA::ScaleIn)1, (cute::GMMA::ScaleIn)1> >, "
    "cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, "
    "cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, "
    "cute::SM90_TMA_LOAD, cute::ComposedLayout<cute::Swizzle<3, 4, 3>, cute::smem_ptr_flag_bits<8>, "
    "cute::Layout<cute::tuple<cute::C<8>, cute::C<128> >, cute::tuple<cute::C<128>, cute::C<1> > > >, "
    "void, cute::identity, cute::SM90_TMA_LOAD_MULTICAST, cute::ComposedLayout<cute::Swizzle<3, 4, 3>, "
    "cute::smem_ptr_flag_bits<8>, cute::Layout<cute::tuple<cute::C<8>, cute::C<128> >, "
    "cute::tuple<cute::C<128>, cute::C<1> > > >, void, cute::identity>, "
    "cutlass::epilogue::collective::CollectiveEpilogue<cutlass::epilogue::Sm90TmaWarpSpecialized<4, 2, "
    "16, true, false>, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<64>, "
    "cute::C<32> >, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, cutlass::bfloat16_t, "
    "cute::tuple<long, cute::C<1>, long> >, void, void> >(cutlass::gemm::kernel::GemmUniversal<"
    "cute::tuple<int, int, int>, cutlass::float_e4m3_t>::Params)",
    {132, 1, 1}, {384, 1, 1}, 168, 213248, 1.0, 12.0, 19};
const KernelSpec kFp8Transpose{
    "void cutlass::device_kernel<cutlass::transform::kernel::TransposeKernel<cutlass::float_e4m3_t, "
    "cutlass::layout::RowMajor, cute::tuple<cute::C<64>, cute::C<64> >, 128> >(cutlass::transform::"
    "kernel::TransposeKernel<cutlass::float_e4m3_t, cutlass::layout::RowMajor, cute::tuple<cute::C<64>, "
    "cute::C<64> >, 128>::Params)",
    {2048, 1, 1}, {128, 1, 1}, 32, 8192, 15.515152, 62.060608, 88};
const KernelSpec kGroupedGemm{
    "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 160u, 128u, 1u, 8u, 128u, 4u, 3u, 1u, 2u, "
    "(deep_gemm::GemmType)1>(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap, CUtensorMap, "
    "CUtensorMap, CUtensorMap)",
    {132, 1, 1}, {384, 1, 1}, 168, 232448, 1.0, 12.0, 19};
const KernelSpec kRouterGemm{
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    {64, 1, 1}, {128, 1, 1}, 168, 98304, 0.484848, 1.939394, 3};
const KernelSpec kTopk{
    "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::"
    "TensorInfo<float const, unsigned int>, unsigned int, unsigned int, bool, unsigned int, "
    "unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::"
    "detail::TensorInfo<long, unsigned int>, unsigned int, unsigned int*)",
    {4096, 1, 1}, {256, 1, 1}, 40, 1024, 31.030304, 248.242432, 80};
const KernelSpec kSilu{
    "void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel(at::"
    "TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::silu_kernel(at::"
    "TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
    {16384, 1, 1}, {128, 1, 1}, 24, 0, 124.121216, 496.484863, 94};
const KernelSpec kNotifyDispatch{
    "void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*, int, int, "
    "int, bool const*, int*, int*, int, void**, int**, int)",
    {9, 1, 1}, {128, 1, 1}, 56, 0, 0.068182, 0.272727, 1};
const KernelSpec kEpDispatch{
    "void deep_ep::internode::dispatch<false, 2, 1, 8, 24, 8>(int4*, float*, long*, float*, "
    "deep_ep::internode::SourceMeta*, int4 const*, float const*, long const*, float const*, int*, "
    "int*, int*, int*, int const*, int const*, int const*, int const*, bool const*, int, int, int, "
    "int, int, void*, int, int, void**, int, int, int, int, int)",
    {24, 1, 1}, {768, 1, 1}, 96, 0, 0.181818, 4.363636, 7};
const KernelSpec kEpCombine{
    "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(__nv_bfloat16*, float*, int4 const*, "
    "float const*, float const*, int const*, int const*, int const*, int4*, int const*, void**, "
    "int**, int, int, int, int, int, int, int, int)",
    {24, 1, 1}, {768, 1, 1}, 96, 0, 0.181818, 4.363636, 7};
const KernelSpec kTritonGelu{"triton_poi_fused_gelu_0", {12288, 1, 1}, {128, 1, 1}, 24, 0,
                             113.777779, 455.111115, 94};

// A vLLM decode step on A100 (bf16, batch 32): vLLM's custom kernels, cuBLAS small-M GEMMs,
// FlashAttention's split-KV decode kernel, and the sampler's argmax.
const KernelSpec kEmbedding{
    "void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>"
    "(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, "
    "unsigned int>, at::cuda::detail::TensorInfo<long, unsigned int>, int, int, unsigned int, long)",
    {216, 1, 1}, {128, 1, 1}, 32, 0, 2.0, 8.0, 12};
const KernelSpec kRmsNorm{
    "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, long, "
    "c10::BFloat16 const*, float, int, int)",
    {32, 1, 1}, {1024, 1, 1}, 30, 0, 0.296296, 9.481482, 15};
const KernelSpec kFusedAddRmsNorm{
    "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, "
    "c10::BFloat16 const*, float, int, int)",
    {32, 1, 1}, {1024, 1, 1}, 32, 0, 0.296296, 9.481482, 15};
const KernelSpec kDecodeGemm{"ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_tn",
                             {1, 172, 2}, {128, 1, 1}, 168, 81920, 3.185185, 12.740741, 19};
const KernelSpec kRotary{
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
    "c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
    {32, 1, 1}, {512, 1, 1}, 40, 0, 0.296296, 4.740741, 7};
const KernelSpec kFlashDecode{
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, false, false, "
    "false, true, true, false, false>(flash::Flash_fwd_params)",
    {1, 32, 32}, {128, 1, 1}, 255, 49152, 1.0, 4.0, 6};
const KernelSpec kActAndMul{
    "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>"
    "(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
    {32, 1, 1}, {1024, 1, 1}, 28, 0, 0.296296, 9.481482, 15};
const KernelSpec kArgmax{
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, "
    "unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)",
    {32, 1, 1}, {32, 16, 1}, 40, 16, 0.296296, 4.740741, 7};
}  // namespace

const ServingKernels& serving_kernels() {
  static const ServingKernels k{&kEmbedding, &kRmsNorm, &kFusedAddRmsNorm, &kDecodeGemm,
                                &kRotary,    &kFlashDecode, &kActAndMul,    &kArgmax};
  return k;
}

const FootgunKernels& footgun_kernels() {
  static const FootgunKernels k{&kConvFwd, &kConvDgrad, &kConvWgrad, &kNchwToNhwc, &kNhwcToNchw,
                                {&kConvTrial1, &kConvTrial2, &kConvTrial3, &kConvTrial4},
                                &kBmm, &kSoftmaxAttn, &kSoftmaxAttnBwd, &kIsnan, &kAny,
                                {&kLerp, &kAddcmul, &kSqrt, &kAddcdiv}};
  return k;
}

const KernelSpec& legacy_nccl_allreduce() { return kNcclLegacy; }
const KernelSpec& legacy_nccl_sendrecv() { return kNcclLegacySendRecv; }

bool legacy_nccl(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return false;
  return major < 2 || (major == 2 && minor < 19);
}

const MoeKernels& moe_kernels() {
  static const MoeKernels k{&kFp8Gemm,    &kFp8Transpose, &kGroupedGemm, &kRouterGemm, &kTopk,
                            &kSilu,       &kNotifyDispatch, &kEpDispatch, &kEpCombine};
  return k;
}

const KernelSpec& triton_gelu() { return kTritonGelu; }

const KernelSet& kernels_for(Platform p, bool tensor_cores, int compute_major, bool fp32_aten) {
  if (p == Platform::Rocm) return kRocm;
  if (tensor_cores) return kCudaBf16;
  if (compute_major == 7) return kCudaVoltaFp32;
  return fp32_aten ? kCudaAmpereAllFp32 : kCudaFp32;
}

}  // namespace stepscope::tracegen
