// GPU readings for a live watch. The NVIDIA driver's NVML library is loaded at run time, so the
// tool builds and runs on machines without a driver; the interface lets tests substitute a double.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "stepscope/watch.hpp"

namespace stepscope::watch {

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // Whether readings can be taken at all.
  virtual bool available() const = 0;
  // One line for the user: the library and driver in use, or why there are no GPU readings.
  virtual std::string status() const = 0;
  // One reading per device; `target_pids` marks the devices the watched processes use.
  virtual std::vector<GpuReading> sample(const std::vector<int>& target_pids) = 0;
};

// The environment variable that points to another NVML library (a test double, or a driver
// installed outside the loader's search path).
inline constexpr const char* kNvmlLibraryEnv = "STEPSCOPE_NVML_LIBRARY";
inline constexpr const char* kNvmlDefaultLibrary = "libnvidia-ml.so.1";

// Loads NVML from `library`; empty means $STEPSCOPE_NVML_LIBRARY, else libnvidia-ml.so.1.
// Never throws: a missing library or driver yields a source that is not available and says why.
std::unique_ptr<GpuSource> open_nvml(const std::string& library = "");

// A source that never has readings (--no-gpu).
std::unique_ptr<GpuSource> no_gpu_source(std::string reason);

}  // namespace stepscope::watch
