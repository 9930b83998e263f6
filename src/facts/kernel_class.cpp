// HTA's kernel types, reproduced rule for rule, and the names of our own classes. Plain
// substring tests instead of std::regex: every HTA pattern is a prefix or substring test, and
// std::regex is slow to build and to match. Our finer classes live in kernel_names.cpp.
#include "stepscope/kernel_class.hpp"

#include <array>
#include <cctype>
#include <string>

#include "facts/name_match.hpp"

namespace stepscope {

namespace {

using facts_detail::has;
using facts_detail::starts;

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

const char* kernel_class_name(KernelClass c) {
  static constexpr std::array<const char*, kKernelClassCount> names = {
      "gemm_tensor_core", "gemm",        "attention",   "convolution", "elementwise",
      "reduction_norm",   "communication", "memcpy_htod", "memcpy_dtoh", "memcpy_dtod",
      "memcpy_other",     "memset",      "sync",        "other_compute"};
  return names[static_cast<std::size_t>(c)];
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
