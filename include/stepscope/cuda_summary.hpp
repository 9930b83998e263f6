// The figures of Nsight Systems' `nsys stats` reports and `nsys analyze` rules, by their
// documented definitions, computed from the trace model: so they read the same on an nsys
// export and on a Kineto trace of the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepscope/trace.hpp"

namespace stepscope {

// Durations of one group of rows (kernels of one name, copies of one kind, calls of one API).
struct DurationStats {
  std::string name;
  std::uint64_t instances = 0;
  ns_t total = 0;
  double avg = 0;
  double median = 0;  // mean of the two middle values when the count is even
  ns_t min = 0, max = 0;
  double stddev = 0;    // sample standard deviation (n - 1); 0 for a single row
  double time_pct = 0;  // share of the group's total in the table's total
};

struct CopyKindStats {
  std::string kind;  // copy_kind_name: HtoD, DtoH, DtoD, HtoH, PtoP, other
  std::int64_t bytes = 0;
  DurationStats time;
};

// One device's GPU time: the union of its kernels, copies and memsets.
struct DeviceBusy {
  std::int64_t device = 0;
  ns_t span = 0;  // first activity start to last activity end
  ns_t busy = 0;
  ns_t idle = 0;
  double idle_pct = 0;
  std::uint64_t gaps_over_threshold = 0;  // idle gaps longer than CudaSummary::gap_threshold
  ns_t largest_gap = 0;
};

struct CudaSummary {
  bool present = false;  // any GPU activity or CUDA API call
  std::vector<DurationStats> kernels;             // by the model's (demangled) name, total desc
  std::vector<DurationStats> kernels_short_name;  // by the source's short name (nsys), if any
  std::uint64_t kernel_count = 0;
  ns_t kernel_total = 0;
  std::vector<CopyKindStats> memcpy_by_kind;      // total desc
  std::vector<DurationStats> runtime_api;         // CUDA API calls by recorded name, total desc
  std::uint64_t sync_calls = 0;            // API calls that block on the device
  std::uint64_t pageable_async_copies = 0;  // *Async copies from/to pageable host memory
  // Kernel launches, and those the same thread follows with a synchronising call before its
  // next launch (the host waits for every kernel: the GPU idles through each launch).
  std::uint64_t kernel_launches = 0;
  std::uint64_t launches_then_sync = 0;
  std::string sync_after_launch;  // the most frequent such call ("cudaDeviceSynchronize")
  ns_t gap_threshold = 500'000'000;
  std::vector<DeviceBusy> devices;  // devices with activity, by id
};

// Summary statistics of durations as nsys reports them.
DurationStats duration_stats(std::string name, std::vector<ns_t> durations);

CudaSummary summarize_cuda(const RankTrace& t, ns_t gap_threshold = 500'000'000);

}  // namespace stepscope
