// The device model: which GPU a rank ran on and what its tensor cores can do.
//
// Sources, most trusted first: the trace's device properties (Kineto deviceProperties, nsys
// TARGET_INFO_GPU: name, compute capability, memory, SMs); the GPU's name alone; the
// architecture prefixes of the kernels it ran (sm80_, ampere_, volta_ ...), which give only a
// lower bound since libraries ship kernels built for older architectures too.
//
// HIP reports gfx9 CDNA parts as major 9: minor 0 is gfx908/gfx90a (MI100/MI200), 4 is gfx942
// (MI300), 5 is gfx950 (MI350); warp size 64 tells AMD from NVIDIA when the name does not.
#include <fmt/core.h>

#include <algorithm>
#include <array>

#include "facts/name_match.hpp"
#include "stepscope/facts.hpp"

namespace stepscope {
namespace {

using namespace facts_detail;

struct KnownGpu {
  std::string_view token;  // lower-case substring of the marketing name
  GpuVendor vendor;
  int major, minor;
};

// Order matters: longer tokens before their prefixes ("a100" before "a10").
constexpr std::array<KnownGpu, 34> kKnownGpus = {{
    {"gb200", GpuVendor::Nvidia, 10, 0}, {"b200", GpuVendor::Nvidia, 10, 0}, {"b100", GpuVendor::Nvidia, 10, 0},
    {"gh200", GpuVendor::Nvidia, 9, 0},  {"h200", GpuVendor::Nvidia, 9, 0},  {"h100", GpuVendor::Nvidia, 9, 0},
    {"h800", GpuVendor::Nvidia, 9, 0},   {"h20", GpuVendor::Nvidia, 9, 0},   {"l40", GpuVendor::Nvidia, 8, 9},
    {"l4", GpuVendor::Nvidia, 8, 9},     {"rtx 40", GpuVendor::Nvidia, 8, 9}, {"a100", GpuVendor::Nvidia, 8, 0},
    {"a800", GpuVendor::Nvidia, 8, 0},   {"a30", GpuVendor::Nvidia, 8, 0},   {"a40", GpuVendor::Nvidia, 8, 6},
    {"a10", GpuVendor::Nvidia, 8, 6},    {"rtx 30", GpuVendor::Nvidia, 8, 6}, {"rtx a", GpuVendor::Nvidia, 8, 6},
    {"t4", GpuVendor::Nvidia, 7, 5},     {"rtx 20", GpuVendor::Nvidia, 7, 5}, {"2080", GpuVendor::Nvidia, 7, 5},
    {"quadro rtx", GpuVendor::Nvidia, 7, 5}, {"v100", GpuVendor::Nvidia, 7, 0}, {"titan v", GpuVendor::Nvidia, 7, 0},
    {"p100", GpuVendor::Nvidia, 6, 0},   {"gp100", GpuVendor::Nvidia, 6, 0}, {"p40", GpuVendor::Nvidia, 6, 1},
    {"k80", GpuVendor::Nvidia, 3, 7},    {"mi355", GpuVendor::Amd, 9, 5},    {"mi350", GpuVendor::Amd, 9, 5},
    {"mi300", GpuVendor::Amd, 9, 4},     {"mi250", GpuVendor::Amd, 9, 0},    {"mi210", GpuVendor::Amd, 9, 0},
    {"mi100", GpuVendor::Amd, 9, 0},
}};

const KnownGpu* known_gpu(std::string_view name) {
  const std::string l = lower(name);
  for (const auto& g : kKnownGpus)
    if (has(l, g.token)) return &g;
  return nullptr;
}

GpuVendor vendor_of(const DeviceProperties& d) {
  const std::string l = lower(d.name);
  if (has_any(l, {"amd", "radeon", "instinct"}) || d.warp_size == 64) return GpuVendor::Amd;
  if (has_any(l, {"nvidia", "tesla", "quadro", "geforce"}) || d.warp_size == 32) return GpuVendor::Nvidia;
  if (const KnownGpu* g = known_gpu(d.name)) return g->vendor;
  return GpuVendor::Unknown;
}

std::string arch_name(GpuVendor v, int major, int minor) {
  if (major < 0) return "";
  if (v == GpuVendor::Amd) {
    if (major == 9) return minor >= 5 ? "gfx950" : minor == 4 ? "gfx942" : "gfx90a";
    return fmt::format("gfx{}{}", major, minor);
  }
  return fmt::format("sm_{}{}", major, minor);
}

DeviceModel from_properties(const DeviceProperties& d) {
  DeviceModel m;
  m.present = true;
  m.name = d.name;
  m.vendor = vendor_of(d);
  m.cc_major = d.compute_major;
  m.cc_minor = std::max(d.compute_minor, 0);
  m.memory_bytes = d.total_global_mem;
  m.sms = d.num_sms;
  m.source = "device properties";
  if (m.cc_major < 0)
    if (const KnownGpu* g = known_gpu(d.name)) {
      m.cc_major = g->major, m.cc_minor = g->minor;
      m.source = "GPU name";
    }
  m.arch = arch_name(m.vendor, m.cc_major, m.cc_minor);
  return m;
}

// Lowest architecture the kernel names prove: "sm90_xmma_..." ran, so the GPU is at least sm_90.
struct ArchPrefix {
  std::string_view prefix;
  int major, minor;
};
constexpr std::array<ArchPrefix, 11> kArchPrefixes = {{{"sm100_", 10, 0}, {"sm90_", 9, 0}, {"nvjet_sm90", 9, 0},
                                                       {"sm89_", 8, 9}, {"sm86_", 8, 6}, {"sm80_", 8, 0},
                                                       {"ampere_", 8, 0}, {"sm75_", 7, 5}, {"turing_", 7, 5},
                                                       {"sm70_", 7, 0}, {"volta_", 7, 0}}};

DeviceModel from_kernel_names(const RankTrace& t) {
  DeviceModel m;
  for (const auto& tr : t.gpu_tracks)
    for (auto i : tr.events) {
      if (t.events.kind[i] != Kind::Kernel) continue;
      const std::string_view n = t.name_of(i);
      for (const auto& p : kArchPrefixes)
        if (starts(n, p.prefix) && std::pair(p.major, p.minor) > std::pair(m.cc_major, m.cc_minor))
          m.cc_major = p.major, m.cc_minor = p.minor;
    }
  if (m.cc_major < 0) return m;
  m.present = true;
  m.vendor = GpuVendor::Nvidia;
  m.lower_bound = true;
  m.arch = arch_name(m.vendor, m.cc_major, m.cc_minor);
  m.source = "kernel names (a lower bound)";
  return m;
}

Capability when(bool known, bool yes) {
  if (!known) return Capability::Unknown;
  return yes ? Capability::Yes : Capability::No;
}

}  // namespace

DeviceModel device_model(const RankTrace& t) {
  for (const auto& d : t.devices)
    if (d.compute_major >= 0 || !d.name.empty()) return from_properties(d);
  return from_kernel_names(t);
}

// Predicates: what PyTorch's knobs need. A lower bound answers "yes" when the bound already
// has the feature and "unknown" otherwise (a newer GPU may run old kernels).
Capability DeviceModel::tensor_cores() const {
  const bool known = cc_major >= 0;
  if (vendor == GpuVendor::Amd) return when(known, cc_major == 9 || cc_major >= 11);
  const bool yes = cc_major >= 7;
  return lower_bound && !yes ? Capability::Unknown : when(known, yes);
}

Capability DeviceModel::bf16() const {
  const bool known = cc_major >= 0;
  if (vendor == GpuVendor::Amd) return when(known, cc_major == 9 || cc_major >= 11);
  const bool yes = cc_major >= 8;
  return lower_bound && !yes ? Capability::Unknown : when(known, yes);
}

Capability DeviceModel::tf32() const {
  const bool known = cc_major >= 0;
  if (vendor == GpuVendor::Amd) return when(known, cc_major == 9 && cc_minor == 4);  // xf32 on MI300 only
  const bool yes = cc_major >= 8;
  return lower_bound && !yes ? Capability::Unknown : when(known, yes);
}

Capability DeviceModel::fp8() const {
  const bool known = cc_major >= 0;
  if (vendor == GpuVendor::Amd) return when(known, cc_major == 9 && cc_minor >= 4);
  const bool yes = cc_major > 8 || (cc_major == 8 && cc_minor >= 9);
  return lower_bound && !yes ? Capability::Unknown : when(known, yes);
}

Capability DeviceModel::flash_attention2() const {
  const bool known = cc_major >= 0;
  if (vendor == GpuVendor::Amd) return when(known, cc_major == 9);
  const bool yes = cc_major >= 8;
  return lower_bound && !yes ? Capability::Unknown : when(known, yes);
}

std::string DeviceModel::describe() const {
  if (!present) return "GPU of unknown model";
  std::string what = name.empty() ? std::string("GPU") : name;
  if (!arch.empty()) what += fmt::format(" ({}{})", lower_bound ? ">= " : "", arch);
  return what;
}

const char* capability_name(Capability c) {
  switch (c) {
    case Capability::Yes: return "yes";
    case Capability::No: return "no";
    case Capability::Unknown: break;
  }
  return "unknown";
}

}  // namespace stepscope
