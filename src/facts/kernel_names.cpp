// Facts of a GPU activity from its name: class, engine, data type, communication kind.
//
// Library name grammars this reads (lower-cased first):
//   cuBLAS/cuDNN legacy   volta_sgemm_128x64_nn (fp32 SIMT), ampere_bf16_s16816gemm_bf16_... (bf16 TC),
//                         volta_h884gemm_... (fp16 TC), turing_fp16_s1688cudnn_fp16_... (fp16 TC conv)
//   cuBLASLt / xmma       sm80_xmma_gemm_<A><B>_<math><acc>_...: "f32f32_tf32f32" is TF32 on tensor
//                         cores, "f32f32_f32f32 ... ffma" is fp32 on FFMA units; "tensor16x8x8" marks TC
//   CUTLASS               cutlass_80_tensorop_s1688gemm_..., OpClassTensorOp / OpClassSimt, template
//                         arguments cutlass::half_t, bfloat16_t, float_e4m3_t, tfloat32_t
//   DeepGEMM              deep_gemm::fp8_gemm_kernel<...>
//   Hopper cuBLAS         nvjet_... (tensor cores; the type is not in the name)
//   rocBLAS/hipBLASLt     Tensile Cijk_Ailk_Bljk_<T>_..._MI32x32x8 (T: S fp32, H fp16, B bf16, D fp64,
//                         I8 int8, F8 fp8; MI = MFMA matrix cores)
//   composable_kernel     ck::..._gemm_... with ck::half_t / bhalf_t / f8_t in template arguments
//   Triton                triton_mm / triton_tem_fused_... (type not in the name)
#include <cctype>

#include "facts/name_match.hpp"
#include "stepscope/facts.hpp"

namespace stepscope {
namespace {

using namespace facts_detail;

bool is_sync_row(std::string_view n) {
  return n == "Stream Sync" || n == "Event Sync" || n == "Context Sync" || n == "Stream Wait Event";
}

KernelClass memcpy_class(std::string_view n) {
  if (starts(n, "Memset") || starts(n, "hipMemset")) return KernelClass::Memset;
  if (has(n, "HtoD")) return KernelClass::MemcpyHtoD;
  if (has(n, "DtoH")) return KernelClass::MemcpyDtoH;
  if (has(n, "DtoD")) return KernelClass::MemcpyDtoD;
  return KernelClass::MemcpyOther;
}

bool is_nccl_family(std::string_view l) {
  return (starts(l, "nccl") || starts(l, "rccl") || starts(l, "hccl") || starts(l, "msccl") || has(l, "nccl")) &&
         !has(l, "mscclpp");
}

// MoE expert-parallel all-to-all kernels: DeepEP (deep_ep::intranode::dispatch,
// internode_ll::combine, notify_dispatch), pplx-kernels, and other ep:: namespaces.
bool is_expert_parallel(std::string_view l) {
  if (has_any(l, {"deep_ep", "pplx::", "notify_dispatch", "notify_combine"})) return true;
  const bool ep_namespace = starts(l, "ep::") || has_any(l, {"::ep::", " ep::", "intranode", "internode"});
  return ep_namespace && has_any(l, {"dispatch", "combine"});
}

// Hand-written collectives outside NCCL: vLLM's custom all-reduce, TensorRT-LLM / FlashInfer
// all-reduce fusions, MSCCL++, Userbuffers, and kernels named after a collective. PyTorch's and
// Triton's own kernels use these words for block-level reductions, so they are left out.
bool is_custom_collective(std::string_view l) {
  if (has_any(l, {"mscclpp", "cross_device_reduce", "custom_all_reduce", "customallreduce", "allreduce_fusion",
                  "trtllm_allreduce", "lamport", "userbuffers", "oneshot_all", "twoshot_all", "one_shot_all",
                  "two_shot_all", "symm_mem"}))
    return true;
  if (has_any(l, {"triton_", "at::native", "cub::", "block_all_reduce", "warp_all_reduce", "blockallreduce",
                  "warpallreduce"}))
    return false;
  return has_any(l, {"allreduce", "all_reduce", "allgather", "all_gather", "reducescatter", "reduce_scatter",
                     "alltoall", "all_to_all"});
}

CommKind comm_kind(std::string_view l) {
  if (is_nccl_family(l)) return CommKind::Collective;
  if (is_expert_parallel(l)) return CommKind::ExpertParallel;
  if (has(l, "nvshmem")) return CommKind::Nvshmem;
  if (is_custom_collective(l)) return CommKind::CustomAllReduce;
  return CommKind::None;
}

bool is_attention(std::string_view l) {
  return has_any(l, {"flash", "fmha", "attention", "attn", "sdpa", "xformers"});
}

// "convert" and "convolve" share a prefix: an fp8 cast kernel is not a convolution.
bool is_convolution(std::string_view l) {
  const std::string c = without(std::string(l), "convert");
  return has_any(c, {"conv", "fprop", "dgrad", "wgrad", "winograd", "fft", "scudnn", "hcudnn", "884cudnn",
                     "1688cudnn", "16816cudnn"});
}

bool is_gemm(std::string_view l) {
  return has_any(l, {"gemm", "gemv", "matmul", "cublas", "nvjet", "triton_mm", "triton_tem", "bmm_", "scaled_mm",
                     "grouped_mm", "wgmma"}) ||
         starts(l, "cijk_") || starts(l, "fc-") || starts(l, "fc_");
}

// Helpers that GEMM libraries launch around a GEMM (layout transposes, split-K reductions,
// type conversions) carry the library's namespace but do no matrix math.
KernelClass gemm_helper_class(std::string_view l) {
  if (has_any(l, {"splitkreduce", "splitk_reduce", "split_k_reduce"})) return KernelClass::ReductionNorm;
  if (has(l, "transpose")) return KernelClass::Elementwise;
  if (!has_any(l, {"gemm", "gemv", "matmul", "_mm"}) && has_any(l, {"convert", "cast_", "quantize"}))
    return KernelClass::Elementwise;
  return KernelClass::OtherCompute;  // not a helper
}

bool is_norm_name(std::string_view l) {
  for (auto p = l.find("norm"); p != std::string_view::npos; p = l.find("norm", p + 1))
    if (l.substr(p, 6) != "normal") return true;
  return false;
}

bool is_reduction(std::string_view l) {
  return is_norm_name(l) || has_any(l, {"reduce", "softmax", "welford", "triton_red", "triton_per", "argmax",
                                        "argmin", "bn_fw", "bn_bw"});
}

bool is_elementwise(std::string_view l) {
  return has_any(l, {"elementwise", "vectorized", "pointwise", "triton_poi", "fill", "copy", "index", "gather", "embedding",
                     "scatter", "nchwtonhwc", "nhwctonchw", "transpose", "permute", "dropout", "relu", "gelu",
                     "silu", "activation", "convert", "cast_", "quant"});
}

// A kernel's own name: its namespace and function, without template arguments or parameters,
// which name other libraries' types ("fbgemm_gpu::FixedDivisor" is no GEMM).
//   "void fbgemm_gpu::permute_kernel<long, fbgemm_gpu::fixeddivisor>(long*)" -> "void fbgemm_gpu::permute_kernel"
//   "ampere_sgemm_128x64_nn" -> itself
std::string own_name(std::string_view l) {
  std::string out;
  int depth = 0;
  for (char c : l) {
    if (c == '<' || c == '(') ++depth;
    else if ((c == '>' || c == ')') && depth > 0) --depth;
    else if (depth == 0) out += c;
  }
  return out;
}

KernelClass class_of_name(std::string_view l) {
  if (is_attention(l)) return KernelClass::Attention;
  if (KernelClass h = gemm_helper_class(l); h != KernelClass::OtherCompute && is_gemm(l)) return h;
  // Before GEMM: implicit-GEMM convolutions carry "gemm" in their names too.
  if (is_convolution(l)) return KernelClass::Convolution;
  if (is_gemm(l)) return KernelClass::Gemm;
  if (is_reduction(l)) return KernelClass::ReductionNorm;
  if (is_elementwise(l)) return KernelClass::Elementwise;
  return KernelClass::OtherCompute;
}

// The own name decides; a wrapper that names no class itself (cutlass::Kernel<..._s1688gemm_...>)
// is classed by its arguments. FBGEMM-GPU's kernels are embedding lookups and permutes, whatever
// the library's name says.
KernelClass compute_class(std::string_view l) {
  const KernelClass own = class_of_name(without(own_name(l), "fbgemm_gpu"));
  if (own != KernelClass::OtherCompute) return own;
  return class_of_name(without(std::string(l), "fbgemm_gpu"));
}

// Tensile's type field: Cijk_Ailk_Bljk_<T>_... ("SB", "HHS", "BBS", "DB", "I8II", "4xi8", "F8...").
DataType tensile_type(std::string_view l) {
  if (!starts(l, "cijk_")) return DataType::Unknown;
  std::size_t field = 0, at = 0;
  while (field < 3 && at != std::string_view::npos) {
    at = l.find('_', at + 1);
    ++field;
  }
  if (at == std::string_view::npos) return DataType::Unknown;
  std::string_view t = l.substr(at + 1, l.find('_', at + 1) - at - 1);
  if (has(t, "xf32")) return DataType::Tf32;
  if (has_any(t, {"f8", "b8"})) return DataType::Fp8;
  if (has(t, "i8")) return DataType::Int8;
  if (t.empty()) return DataType::Unknown;
  switch (t.front()) {
    case 's': case 'c': return DataType::Fp32;
    case 'd': case 'z': return DataType::Fp64;
    case 'h': return DataType::Fp16;
    case 'b': return DataType::Bf16;
    default: return DataType::Unknown;
  }
}

// The narrowest math type the name carries: accumulators and outputs are wider than the inputs
// (an fp8 GEMM accumulates in fp32 and may write bf16).
DataType data_type_of(std::string_view l) {
  if (DataType t = tensile_type(l); t != DataType::Unknown) return t;
  if (has_any(l, {"e4m3", "e5m2", "fp8", "float8", "_f8_", "f8f8", "qmma", "::f8_t"})) return DataType::Fp8;
  if (has_any(l, {"int8", "i8816", "i16832", "imma", "i8i8", "s8s8", "_i8_"})) return DataType::Int8;
  if (has_any(l, {"bf16", "bfloat16", "bhalf"})) return DataType::Bf16;
  const std::string no_bf16 = without(std::string(l), "bf16");
  if (has_any(no_bf16, {"f16", "fp16", "half", "h884", "h1688", "h16816", "hgemm", "hcudnn"})) return DataType::Fp16;
  if (has_any(l, {"tf32", "xf32", "tfloat32"})) return DataType::Tf32;
  if (has_any(l, {"f64", "fp64", "dgemm", "double", "dmma"})) return DataType::Fp64;
  if (has_any(l, {"f32", "fp32", "sgemm", "scudnn", "float", "ffma", "single"})) return DataType::Fp32;
  if (starts(l, "fc-dtype_float")) return DataType::Fp32;
  return DataType::Unknown;
}

// "tensor16x8x8" (xmma's MMA shape), "_mi32x32x8" (Tensile MFMA).
bool has_token_then_digit(std::string_view l, std::string_view token) {
  for (auto p = l.find(token); p != std::string_view::npos; p = l.find(token, p + 1)) {
    const auto next = p + token.size();
    if (next < l.size() && std::isdigit(static_cast<unsigned char>(l[next]))) return true;
  }
  return false;
}

Engine engine_of(std::string_view l, DataType t) {
  if (has_any(l, {"ffma", "opclasssimt", "simt", "gemv", "sgemm", "dgemm", "scudnn", "convolve_sgemm"}) &&
      !has_any(l, {"s884", "s1688", "s16816", "tf32"}))
    return Engine::Simt;
  if (has_any(l, {"hmma", "imma", "dmma", "qmma", "gmma", "wgmma", "tensorop", "s884", "h884", "s1688", "h1688",
                  "s16816", "h16816", "i8816", "i16832", "c1688", "wmma", "mfma", "nvjet", "tcgen05", "umma",
                  "deep_gemm"}) ||
      has_token_then_digit(l, "tensor") || has_token_then_digit(l, "_mi"))
    return Engine::TensorCore;
  if (starts(l, "cijk_")) return Engine::Simt;  // Tensile without an MI (MFMA) tile
  switch (t) {
    case DataType::Fp8: case DataType::Int8: case DataType::Bf16: case DataType::Tf32: case DataType::Fp16:
      return Engine::TensorCore;
    case DataType::Fp32: case DataType::Fp64: return Engine::Simt;
    case DataType::Unknown: return Engine::Unknown;
  }
  return Engine::Unknown;
}

bool carries_math_type(KernelClass c) {
  return c == KernelClass::Gemm || c == KernelClass::GemmTensorCore || c == KernelClass::Convolution ||
         c == KernelClass::Attention;
}

void set_kernel_flags(NameFact& f, std::string_view l) {
  auto set = [&](bool on, NameFlag bit) {
    if (on) f.flags |= bit;
  };
  set(has(l, "softmax") && !has_any(l, {"logsoftmax", "log_softmax"}), kNameSoftmax);
  set(has_any(l, {"nchwtonhwc", "nhwctonchw"}), kNameLayout);
  set(has(l, "fill"), kNameFill);
  set(has(l, "fused"), kNameFusedKernel);
  set(has_any(l, {"isnan", "or_kernel"}), kNameNanCheck);
  set(has(l, "gemv"), kNameGemv);
  // Gradient kernels name themselves: ATen's *Backward* functors and *_grad_input kernels, cuDNN's
  // data- and weight-gradient convolutions. Forward and inference kernels never carry these.
  set(has_any(l, {"backward", "_grad_input", "dgrad", "wgrad"}), kNameBackwardKernel);
  set(has_any(l, {"multi_tensor_apply", "_foreach_", "_fused_", "fusedadam", "fused_adam", "fusedsgd"}),
      kNameFusedOptimizer);
}

}  // namespace

namespace facts_detail {

Collective collective_in(std::string_view l) {
  if (has_any(l, {"allreduce", "all_reduce", "cross_device_reduce", "lamport"})) return Collective::AllReduce;
  if (has_any(l, {"reducescatter", "reduce_scatter"})) return Collective::ReduceScatter;
  if (has_any(l, {"allgather", "all_gather"})) return Collective::AllGather;
  if (has_any(l, {"alltoall", "all_to_all", "dispatch", "combine"})) return Collective::AllToAll;
  if (has(l, "broadcast")) return Collective::Broadcast;
  if (has_any(l, {"sendrecv", "send", "recv"})) return Collective::SendRecv;
  if (has(l, "reduce")) return Collective::Reduce;
  return Collective::None;
}

}  // namespace facts_detail

NameFact kernel_name_fact(std::string_view name) {
  NameFact f;
  if (is_sync_row(name)) {
    f.cls = KernelClass::Sync;
    return f;
  }
  if (starts(name, "Memcpy") || starts(name, "Memset") || starts(name, "hipMemcpy") || starts(name, "hipMemset")) {
    f.cls = memcpy_class(name);
    return f;
  }
  if (starts(name, "dma")) {  // MTIA dma_request
    f.cls = KernelClass::MemcpyOther;
    return f;
  }
  const std::string l = lower(name);
  set_kernel_flags(f, l);
  f.comm = comm_kind(l);
  if (f.comm != CommKind::None) {
    f.cls = KernelClass::Communication;
    f.collective = collective_in(l);
    return f;
  }
  f.cls = compute_class(l);
  f.dtype = data_type_of(l);
  if (!carries_math_type(f.cls)) return f;
  f.engine = engine_of(l, f.dtype);
  if (f.cls == KernelClass::Gemm && f.engine == Engine::TensorCore) f.cls = KernelClass::GemmTensorCore;
  return f;
}

KernelClass classify_kernel(std::string_view name) { return kernel_name_fact(name).cls; }

Collective collective_of(std::string_view name) { return kernel_name_fact(name).collective; }

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::TensorCore: return "tensor_core";
    case Engine::Simt: return "simt";
    case Engine::Unknown: break;
  }
  return "unknown";
}

const char* data_type_name(DataType d) {
  static constexpr const char* kNames[kDataTypeCount] = {"unknown", "fp64", "fp32", "tf32",
                                                         "fp16",    "bf16", "fp8",  "int8"};
  return kNames[static_cast<int>(d)];
}

const char* stage_hint_name(StageHint s) {
  switch (s) {
    case StageHint::Forward: return "forward";
    case StageHint::Backward: return "backward";
    case StageHint::Optimizer: return "optimizer";
    case StageHint::None: break;
  }
  return "";
}

const char* comm_role_name(CommRole r) {
  switch (r) {
    case CommRole::GradientSync: return "gradient_sync";
    case CommRole::ParamGather: return "param_gather";
    case CommRole::Exchange: return "exchange";
    case CommRole::PointToPoint: return "point_to_point";
    case CommRole::Activation: return "activation";
    case CommRole::Other: return "other";
  }
  return "other";
}

const char* comm_role_label(CommRole r) {
  switch (r) {
    case CommRole::GradientSync: return "gradient sync";
    case CommRole::ParamGather: return "all-gather (sharded parameters or tables)";
    case CommRole::Exchange: return "all-to-all exchange";
    case CommRole::PointToPoint: return "pipeline send/recv";
    case CommRole::Activation: return "tensor/model-parallel collectives";
    case CommRole::Other: return "other collectives";
  }
  return "other collectives";
}

const char* comm_kind_name(CommKind c) {
  switch (c) {
    case CommKind::None: return "none";
    case CommKind::Collective: return "collective";
    case CommKind::ExpertParallel: return "expert_parallel";
    case CommKind::Nvshmem: return "nvshmem";
    case CommKind::CustomAllReduce: return "custom_collective";
  }
  return "none";
}

}  // namespace stepscope
