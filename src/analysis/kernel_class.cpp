// Kernel classification by name. Plain substring tests instead of std::regex: classification
// runs once per distinct kernel name but std::regex is slow to build and to match, and every
// HTA pattern is a prefix or substring test.
#include "stepscope/kernel_class.hpp"

#include <array>
#include <cctype>
#include <string>

namespace stepscope {

namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// `re.match` with a leading `.*` never crosses a newline: only the first line of the name can
// match a `.*X` pattern. Kernel names do not contain newlines in practice, but this keeps the
// emulation exact.
std::string_view first_line(std::string_view s) {
  auto nl = s.find('\n');
  return nl == std::string_view::npos ? s : s.substr(0, nl);
}

bool hta_is_communication(std::string_view n) {
  return starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") ||
         has(first_line(n), "ncclKernel");
}

bool hta_is_memory(std::string_view n) {
  return starts(n, "Memcpy") || starts(n, "hipMemcpy") || starts(n, "Memset") ||
         starts(n, "hipMemset") || starts(n, "dma");
}

// The negated pattern of HTA's COMPUTATION rule.
bool hta_is_not_computation(std::string_view n) {
  std::string_view l = first_line(n);
  if (starts(n, "nccl") || has(l, "Memcpy") || has(l, "Memset") || has(l, "dma") ||
      has(l, "Sync") || starts(n, "Stream Wait Event"))
    return true;
  if (starts(n, "cuda") && l.find("LaunchKernel", 4) != std::string_view::npos) return true;
  for (std::string_view p : {"runFunction", "hip", "job_exe", "packet", "pe_exe",
                             "cpum_exe_subgraph", "hccl", "collective_subgraph_execution"})
    if (starts(n, p)) return true;
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has_any(std::string_view s, std::initializer_list<std::string_view> ps) {
  for (auto p : ps)
    if (has(s, p)) return true;
  return false;
}

bool is_sync_row(std::string_view n) {
  return n == "Stream Sync" || n == "Event Sync" || n == "Context Sync" ||
         n == "Stream Wait Event";
}

KernelClass memcpy_class(std::string_view n) {
  if (starts(n, "Memset") || starts(n, "hipMemset")) return KernelClass::Memset;
  if (has(n, "HtoD")) return KernelClass::MemcpyHtoD;
  if (has(n, "DtoH")) return KernelClass::MemcpyDtoH;
  if (has(n, "DtoD")) return KernelClass::MemcpyDtoD;
  return KernelClass::MemcpyOther;
}

bool is_communication_name(std::string_view l) {
  return starts(l, "nccl") || starts(l, "rccl") || starts(l, "hccl") || starts(l, "msccl") ||
         has(l, "nccl");
}

// Tensor-core GEMM markers: tb_plugin's allowlist (from NVIDIA PyProf) plus the spellings of
// CUTLASS (tensorop), WMMA/WGMMA, Hopper cuBLAS (nvjet) and AMD MFMA (Tensile "_MI32x32").
bool is_tensor_core_gemm(std::string_view l) {
  if (has_any(l, {"h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "c1688",
                  "xmma_gemm", "xmma_sparse_gemm", "tensorop", "wmma", "gmma", "nvjet", "mfma"}))
    return true;
  auto mi = l.find("_mi");
  return mi != std::string_view::npos && mi + 3 < l.size() &&
         std::isdigit(static_cast<unsigned char>(l[mi + 3]));
}

bool is_norm_name(std::string_view l) {
  auto p = l.find("norm");
  while (p != std::string_view::npos) {
    if (l.substr(p, 6) != "normal") return true;
    p = l.find("norm", p + 1);
  }
  return false;
}

}  // namespace

HtaKernelType hta_kernel_type(std::string_view name) {
  if (hta_is_communication(name)) return HtaKernelType::Communication;
  if (hta_is_memory(name)) return HtaKernelType::Memory;
  if (!hta_is_not_computation(name)) return HtaKernelType::Computation;
  return HtaKernelType::Other;
}

const char* hta_kernel_type_name(HtaKernelType t) {
  switch (t) {
    case HtaKernelType::Computation: return "COMPUTATION";
    case HtaKernelType::Communication: return "COMMUNICATION";
    case HtaKernelType::Memory: return "MEMORY";
    case HtaKernelType::Other: return "OTHER";
  }
  return "OTHER";
}

KernelClass classify_kernel(std::string_view name) {
  if (is_sync_row(name)) return KernelClass::Sync;
  if (starts(name, "Memcpy") || starts(name, "Memset") || starts(name, "hipMemcpy") ||
      starts(name, "hipMemset"))
    return memcpy_class(name);
  if (starts(name, "dma")) return KernelClass::MemcpyOther;  // MTIA dma_request
  std::string l = lower(name);
  if (is_communication_name(l)) return KernelClass::Communication;
  if (has_any(l, {"flash", "fmha", "attention", "attn", "sdpa", "xformers"}))
    return KernelClass::Attention;
  // Before GEMM: implicit-GEMM convolutions carry "gemm" in their names too.
  if (has_any(l, {"conv", "fprop", "dgrad", "wgrad", "winograd", "fft", "scudnn"}))
    return KernelClass::Convolution;
  // MTIA names fully connected layers "fc-dtype_...".
  if (has_any(l, {"gemm", "gemv", "matmul", "cublas", "nvjet", "triton_mm", "triton_tem",
                  "bmm_"}) ||
      starts(l, "cijk_") || starts(l, "fc-") || starts(l, "fc_"))
    return is_tensor_core_gemm(l) ? KernelClass::GemmTensorCore : KernelClass::Gemm;
  if (is_norm_name(l) ||
      has_any(l, {"reduce", "softmax", "welford", "triton_red", "triton_per", "argmax", "argmin",
                  "bn_fw", "bn_bw"}))
    return KernelClass::ReductionNorm;
  if (has_any(l, {"elementwise", "vectorized", "pointwise", "triton_poi", "fill", "copy",
                  "index", "gather", "scatter", "nchwtonhwc", "nhwctonchw", "transpose",
                  "permute", "dropout", "relu", "gelu", "silu", "activation"}))
    return KernelClass::Elementwise;
  return KernelClass::OtherCompute;
}

bool has_low_precision_tag(std::string_view name) {
  const std::string l = lower(name);
  return has_any(l, {"bf16", "bfloat16", "f16", "fp16", "half", "h884", "hgemm", "e4m3", "e5m2", "fp8", "int8",
                     "i8", "s8"});
}

const char* kernel_class_name(KernelClass c) {
  static constexpr std::array<const char*, kKernelClassCount> names = {
      "gemm_tensor_core", "gemm",        "attention",   "convolution", "elementwise",
      "reduction_norm",   "communication", "memcpy_htod", "memcpy_dtoh", "memcpy_dtod",
      "memcpy_other",     "memset",      "sync",        "other_compute"};
  return names[static_cast<std::size_t>(c)];
}

Collective collective_of(std::string_view name) {
  std::string l = lower(name);
  if (!is_communication_name(l)) return Collective::None;
  if (has_any(l, {"allreduce", "all_reduce"})) return Collective::AllReduce;
  if (has_any(l, {"reducescatter", "reduce_scatter"})) return Collective::ReduceScatter;
  if (has_any(l, {"allgather", "all_gather"})) return Collective::AllGather;
  if (has_any(l, {"alltoall", "all_to_all"})) return Collective::AllToAll;
  if (has(l, "broadcast")) return Collective::Broadcast;
  if (has_any(l, {"sendrecv", "send", "recv"})) return Collective::SendRecv;
  if (has(l, "reduce")) return Collective::Reduce;
  return Collective::None;
}

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::None: return "unknown";
    case Collective::AllReduce: return "all_reduce";
    case Collective::AllGather: return "all_gather";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::AllToAll: return "all_to_all";
    case Collective::SendRecv: return "send_recv";
  }
  return "unknown";
}

}  // namespace stepscope
