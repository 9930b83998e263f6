// What a GPU activity is, from its name alone.
//
// Two vocabularies:
//  - HtaKernelType: the three classes (plus OTHER) that Holistic Trace Analysis uses for its
//    temporal breakdown, overlap and kernel breakdown, reproduced rule for rule so that our
//    HTA-compatible figures agree with HTA's;
//  - KernelClass: finer classes for our own figures (GEMM with/without tensor cores, attention,
//    convolution, elementwise, reduction/normalisation, communication, copies by direction,
//    memset, sync) and, for communication, the collective.
#pragma once

#include <cstdint>
#include <string_view>

namespace stepscope {

// HTA's kernel type (hta/utils/utils.py::get_kernel_type, patterns in hta/common/types.py).
// Python `re.match` semantics (anchored at the start), checked in this order:
//   COMMUNICATION  ^nccl | ^hip | ^hccl | contains "ncclKernel"
//   MEMORY         ^Memcpy | ^hipMemcpy | ^Memset | ^hipMemset | ^dma
//   COMPUTATION    everything that does NOT match any of
//                  ^nccl, contains Memcpy/Memset/dma/Sync, ^Stream Wait Event,
//                  ^cuda.*LaunchKernel, ^runFunction, ^hip, ^job_exe, ^packet, ^pe_exe,
//                  ^cpum_exe_subgraph, ^hccl, ^collective_subgraph_execution
//   OTHER          the rest (Stream Sync, Event Sync, Stream Wait Event, "...dma..." names)
// Quirks kept on purpose: any name starting with "hip" is COMMUNICATION (so a GPU row named
// hipMemcpy... would be too); a name containing "dma" anywhere but not at the start is OTHER.
enum class HtaKernelType : std::uint8_t { Computation, Communication, Memory, Other };

HtaKernelType hta_kernel_type(std::string_view name);
// "COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER" (HTA's spelling).
const char* hta_kernel_type_name(HtaKernelType t);

// Finer classes of GPU activity.
enum class KernelClass : std::uint8_t {
  GemmTensorCore,  // GEMM on tensor cores / matrix cores (Engine::TensorCore in the facts layer)
  Gemm,            // other GEMM / GEMV: SIMT, or the name does not say
  Attention,       // flash / memory-efficient / fused multi-head attention
  Convolution,     // cuDNN / implicit-GEMM convolutions, FFT and Winograd convolutions
  Elementwise,     // pointwise, copies inside kernels, fills, index/gather/scatter
  ReductionNorm,   // reductions, softmax, layer/batch/RMS norm
  Communication,   // NCCL / RCCL / HCCL collectives, expert-parallel all-to-all, NVSHMEM, custom collectives
  MemcpyHtoD,
  MemcpyDtoH,
  MemcpyDtoD,
  MemcpyOther,     // HtoH, PtoP, unknown direction, MTIA dma
  Memset,
  Sync,            // Stream Sync, Event Sync, Context Sync, Stream Wait Event rows
  OtherCompute,    // any other kernel
};
inline constexpr int kKernelClassCount = 14;

// The class of a GPU activity by its name (the facts layer's rule: stepscope/facts.hpp gives the
// engine, data type and communication kind too).
KernelClass classify_kernel(std::string_view name);
const char* kernel_class_name(KernelClass c);  // snake_case, e.g. "gemm_tensor_core"

// Coarse grouping used by the step partition: compute vs communication vs copy/memset.
inline bool is_compute_class(KernelClass c) {
  return c <= KernelClass::ReductionNorm || c == KernelClass::OtherCompute;
}
inline bool is_memory_class(KernelClass c) {
  return c >= KernelClass::MemcpyHtoD && c <= KernelClass::Memset;
}

// Collective of a communication kernel, from its name (ncclDevKernel_AllReduce_..., ...).
enum class Collective : std::uint8_t {
  None,  // not a communication kernel, or the name does not say
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  SendRecv,
};
inline constexpr int kCollectiveCount = 8;

Collective collective_of(std::string_view name);
const char* collective_name(Collective c);  // "all_reduce", ...; "unknown" for None

}  // namespace stepscope
