// NVML through dlopen. Only the handful of entry points used here are declared, with the layouts
// of NVML's public header (nvml.h), so the build needs neither the driver nor the CUDA toolkit.
// Every entry point except initialisation and device enumeration is optional: older drivers and
// some boards lack one or another, and a missing reading must not hide the others.
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "stepscope/watch/gpu.hpp"

namespace stepscope::watch {

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
constexpr unsigned kClockGraphics = 0;
constexpr unsigned kClockSm = 1;
constexpr unsigned kClockMem = 2;
constexpr unsigned kTemperatureGpu = 0;
constexpr unsigned kPcieTxBytes = 0;
constexpr unsigned kPcieRxBytes = 1;
constexpr unsigned long long kValueNotAvailable = ULLONG_MAX;

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// The v2/v3 process record; the unversioned (v1) call uses only the first two fields.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*device_count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*pcie)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*processes_v1)(nvmlDevice_t, unsigned*, nvmlProcessInfo_v1_t*) = nullptr;
};

// The first of `names` the library exports.
template <typename Fn>
void bind(void* lib, Fn& fn, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = ::dlsym(lib, n)) {
      fn = reinterpret_cast<Fn>(p);
      return;
    }
  }
}

void bind_all(void* lib, NvmlApi& a) {
  bind(lib, a.init, {"nvmlInit_v2", "nvmlInit"});
  bind(lib, a.shutdown, {"nvmlShutdown"});
  bind(lib, a.error_string, {"nvmlErrorString"});
  bind(lib, a.device_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  bind(lib, a.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  bind(lib, a.driver_version, {"nvmlSystemGetDriverVersion"});
  bind(lib, a.name, {"nvmlDeviceGetName"});
  bind(lib, a.utilization, {"nvmlDeviceGetUtilizationRates"});
  bind(lib, a.clock, {"nvmlDeviceGetClockInfo"});
  bind(lib, a.max_clock, {"nvmlDeviceGetMaxClockInfo"});
  bind(lib, a.power, {"nvmlDeviceGetPowerUsage"});
  bind(lib, a.power_limit,
       {"nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit"});
  bind(lib, a.temperature, {"nvmlDeviceGetTemperature"});
  bind(lib, a.memory, {"nvmlDeviceGetMemoryInfo"});
  bind(lib, a.pcie, {"nvmlDeviceGetPcieThroughput"});
  bind(lib, a.throttle,
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  bind(lib, a.processes,
       {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  if (!a.processes) bind(lib, a.processes_v1, {"nvmlDeviceGetComputeRunningProcesses"});
}

class NvmlSource final : public GpuSource {
 public:
  explicit NvmlSource(const std::string& library) : library_(library) { open(); }
  ~NvmlSource() override {
    if (initialised_ && api_.shutdown) api_.shutdown();
    if (lib_) ::dlclose(lib_);
  }
  bool available() const override { return !devices_.empty(); }
  std::string status() const override { return status_; }

  std::vector<GpuReading> sample(const std::vector<int>& target_pids) override {
    std::vector<GpuReading> out;
    for (size_t i = 0; i < devices_.size(); ++i) out.push_back(read_device(int(i), target_pids));
    return out;
  }

 private:
  std::string error_text(nvmlReturn_t rc) const {
    if (api_.error_string)
      if (const char* s = api_.error_string(rc)) return fmt::format("{} (code {})", s, rc);
    return fmt::format("NVML error {}", rc);
  }

  void open() {
    lib_ = ::dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      const char* why = ::dlerror();
      status_ = fmt::format("no NVIDIA driver: cannot load {} ({}); triaging the host side only",
                            library_, why ? why : "unknown reason");
      return;
    }
    bind_all(lib_, api_);
    if (!api_.init || !api_.device_count || !api_.handle_by_index) {
      status_ = fmt::format("{} lacks nvmlInit/nvmlDeviceGetCount; triaging the host side only",
                            library_);
      return;
    }
    if (nvmlReturn_t rc = api_.init(); rc != kNvmlSuccess) {
      status_ =
          fmt::format("NVML failed to start: {}; triaging the host side only", error_text(rc));
      return;
    }
    initialised_ = true;
    unsigned count = 0;
    if (nvmlReturn_t rc = api_.device_count(&count); rc != kNvmlSuccess) {
      status_ =
          fmt::format("NVML cannot count GPUs: {}; triaging the host side only", error_text(rc));
      return;
    }
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t d = nullptr;
      if (api_.handle_by_index(i, &d) == kNvmlSuccess) devices_.push_back(d);
    }
    std::string driver = "unknown";
    char buf[96] = {};
    if (api_.driver_version && api_.driver_version(buf, sizeof buf) == kNvmlSuccess) driver = buf;
    if (devices_.empty())
      status_ = fmt::format("NVML (driver {}) sees no GPU; triaging the host side only", driver);
    else
      status_ =
          fmt::format("NVML from {}, driver {}, {} GPU(s)", library_, driver, devices_.size());
  }

  template <typename... Params, typename... Args>
  static bool ok(nvmlReturn_t (*fn)(Params...), Args... args) {
    return fn && fn(args...) == kNvmlSuccess;
  }

  void read_processes(nvmlDevice_t d, const std::vector<int>& targets, GpuReading& g) {
    auto note = [&](unsigned pid, unsigned long long mem) {
      if (std::find(targets.begin(), targets.end(), int(pid)) == targets.end()) return;
      g.target_pids.push_back(int(pid));
      if (mem != kValueNotAvailable) g.target_mem_mib += double(mem) / (1024.0 * 1024.0);
    };
    // The count is an in/out parameter; a busy GPU can gain processes between the two calls.
    for (unsigned capacity = 64; capacity <= 4096; capacity *= 4) {
      unsigned n = capacity;
      nvmlReturn_t rc;
      if (api_.processes) {
        std::vector<nvmlProcessInfo_t> info(capacity);
        rc = api_.processes(d, &n, info.data());
        if (rc == kNvmlSuccess)
          for (unsigned i = 0; i < n && i < capacity; ++i) note(info[i].pid, info[i].usedGpuMemory);
      } else if (api_.processes_v1) {
        std::vector<nvmlProcessInfo_v1_t> info(capacity);
        rc = api_.processes_v1(d, &n, info.data());
        if (rc == kNvmlSuccess)
          for (unsigned i = 0; i < n && i < capacity; ++i) note(info[i].pid, info[i].usedGpuMemory);
      } else {
        return;
      }
      if (rc != kNvmlInsufficientSize) return;
    }
  }

  GpuReading read_device(int index, const std::vector<int>& targets) {
    nvmlDevice_t d = devices_[size_t(index)];
    GpuReading g;
    g.index = index;
    char name[96] = {};
    if (ok(api_.name, d, static_cast<char*>(name), unsigned(sizeof name))) g.name = name;
    nvmlUtilization_t u{};
    if (ok(api_.utilization, d, &u)) {
      g.util_pct = u.gpu;
      g.mem_util_pct = u.memory;
    }
    unsigned v = 0;
    if (ok(api_.clock, d, kClockSm, &v) || ok(api_.clock, d, kClockGraphics, &v))
      g.sm_clock_mhz = v;
    if (ok(api_.max_clock, d, kClockSm, &v) || ok(api_.max_clock, d, kClockGraphics, &v))
      g.sm_clock_max_mhz = v;
    if (ok(api_.clock, d, kClockMem, &v)) g.mem_clock_mhz = v;
    if (ok(api_.power, d, &v)) g.power_w = v / 1000.0;  // milliwatts
    if (ok(api_.power_limit, d, &v)) g.power_limit_w = v / 1000.0;
    if (ok(api_.temperature, d, kTemperatureGpu, &v)) g.temp_c = v;
    nvmlMemory_t m{};
    if (ok(api_.memory, d, &m)) {
      g.mem_used_mib = double(m.used) / (1024.0 * 1024.0);
      g.mem_total_mib = double(m.total) / (1024.0 * 1024.0);
    }
    if (ok(api_.pcie, d, kPcieRxBytes, &v)) g.pcie_rx_mbps = v * 1024.0 / 1e6;  // KB/s
    if (ok(api_.pcie, d, kPcieTxBytes, &v)) g.pcie_tx_mbps = v * 1024.0 / 1e6;
    unsigned long long reasons = 0;
    if (ok(api_.throttle, d, &reasons)) g.throttle_reasons = reasons;
    read_processes(d, targets, g);
    return g;
  }

  std::string library_;
  void* lib_ = nullptr;
  bool initialised_ = false;
  NvmlApi api_;
  std::vector<nvmlDevice_t> devices_;
  std::string status_;
};

class NoGpu final : public GpuSource {
 public:
  explicit NoGpu(std::string reason) : reason_(std::move(reason)) {}
  bool available() const override { return false; }
  std::string status() const override { return reason_; }
  std::vector<GpuReading> sample(const std::vector<int>&) override { return {}; }

 private:
  std::string reason_;
};

}  // namespace

std::unique_ptr<GpuSource> open_nvml(const std::string& library) {
  std::string path = library;
  if (path.empty())
    if (const char* env = std::getenv(kNvmlLibraryEnv); env && *env) path = env;
  if (path.empty()) path = kNvmlDefaultLibrary;
  return std::make_unique<NvmlSource>(path);
}

std::unique_ptr<GpuSource> no_gpu_source(std::string reason) {
  return std::make_unique<NoGpu>(std::move(reason));
}

}  // namespace stepscope::watch
