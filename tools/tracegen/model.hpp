// One training step of the synthetic job, laid out as host and GPU intervals.
#pragma once

#include <string>
#include <vector>

#include "schedule.hpp"

namespace stepscope::tracegen {

struct StepContext {
  const Params* p = nullptr;
  int rank = 0;
  int index = 0;  // 0-based step index in the trace
  ns_t start = 0;  // ProfilerStep start on the host
  // End of each bucket's all-reduce agreed by all ranks; null: this rank alone decides.
  const std::vector<ns_t>* collective_end = nullptr;
  ns_t gpu_free = 0;             // the compute stream is busy with earlier steps until then
  ns_t launch_block_until = -1;  // the step's first kernel launch does not return before then
};

struct StepResult {
  ns_t host_end = 0;      // ProfilerStep end
  ns_t window_end = 0;    // max(host end, end of the last GPU activity launched in the step)
  std::size_t profiler_step = 0;  // index of the ProfilerStep event
  std::vector<ns_t> arrivals;     // per bucket: when this rank's all-reduce could start
  ns_t gpu_start = -1;            // first and last instant of the step's GPU activity (-1: none)
  ns_t gpu_end = -1;
};

// Name of step `index`'s host range as the trace writes it: "ProfilerStep#N", a custom marker
// ("warmup" for the first warmup_steps), or "" when the trace has no step markers.
std::string step_marker_name(const Params& p, int index);

int compute_stream(Platform p);
int comm_stream(Platform p);
bool has_collectives(const Params& p);
ns_t allreduce_duration(const Params& p, int index, int bucket);

StepResult build_step(const StepContext& ctx, std::vector<Event>& out, Counters& ids);

}  // namespace stepscope::tracegen
