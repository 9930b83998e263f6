#include "schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace stepscope::tracegen {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

constexpr std::string_view kSyncNames[] = {
    "aten::item",          "aten::_local_scalar_dense", "cudaStreamSynchronize",
    "cudaDeviceSynchronize", "cudaEventSynchronize",    "cudaMemcpy",
    "hipStreamSynchronize", "hipDeviceSynchronize",      "hipEventSynchronize",
    "hipMemcpy",           "hipMemcpyWithStream"};

const Api kCudaApi{"cudaLaunchKernel", "cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemcpyAsync",
                   "cudaStreamSynchronize", "cudaStreamWaitEvent", "cudaEventRecord",
                   "cudaMemsetAsync", 211, 211, 41, 41, 131, 147, 135, 51,
                   "cudaMemcpy", "cudaDeviceSynchronize", 31, 165,
                   "cudaGraphLaunch", "cudaEventSynchronize", "cudaEventElapsedTime", 311, 137, 139};
// hipBLASLt GEMMs go through hipExtModuleLaunchKernel; the rest through hipLaunchKernel.
const Api kRocmApi{"hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync",
                   "hipMemcpyWithStream", "hipStreamSynchronize", "hipStreamWaitEvent",
                   "hipEventRecord", "hipMemsetAsync", 107, 65, 134, 153, 132, 200, 128, 159,
                   "", "", -1, -1, "", "", "", -1, -1, -1};

}  // namespace

HostRole host_role(std::string_view name) {
  if (starts_with(name, "ProfilerStep#")) return HostRole::Marker;
  if (starts_with(name, "enumerate(DataLoader)#")) return HostRole::Loader;
  for (auto s : kSyncNames)
    if (name == s) return HostRole::Sync;
  if (name == "checkpoint" || name == "torch.save") return HostRole::Side;
  return HostRole::Op;
}

Stage stage_mark(std::string_view name) {
  if (name == "## forward ##" || name == "forward" || name == "DistributedDataParallel.forward") return Stage::Forward;
  if (starts_with(name, "autograd::engine::evaluate_function: ")) return Stage::Backward;
  if (starts_with(name, "Optimizer.step#")) return Stage::Optimizer;
  return Stage::Other;
}

const Api& api_for(Platform p) { return p == Platform::Rocm ? kRocmApi : kCudaApi; }

StepBuilder::StepBuilder(Platform platform, std::vector<Event>& out, Counters& ids)
    : platform_(platform), out_(out), ids_(ids) {
  for (auto& s : streams_) s = {-1, 0};
  phase_.fill(Stage::Other);
}

std::size_t StepBuilder::open(int th, EvType type, std::string_view name) {
  Event e;
  e.type = type;
  e.name = name;
  e.thread = th;
  e.ts = now_[th];
  e.role = host_role(name);
  const Stage own = stage_mark(name);
  e.stage = own != Stage::Other ? own : current_stage(th);
  e.ext_id = ids_.ext_id++;
  e.ev_idx = ids_.ev_idx++;
  out_.push_back(e);
  stack_[th].push_back(out_.size() - 1);
  return out_.size() - 1;
}

std::size_t StepBuilder::open_frame(int th, std::string_view name) {
  Event e;
  e.type = EvType::PythonFunction;
  e.name = name;
  e.thread = th;
  e.ts = now_[th];
  e.role = HostRole::Op;
  e.stage = current_stage(th);
  e.ev_idx = ids_.ev_idx++;
  out_.push_back(e);
  stack_[th].push_back(out_.size() - 1);
  return out_.size() - 1;
}

bool StepBuilder::inside_op(int th) const {
  for (std::size_t i : stack_[th])
    if (out_[i].type == EvType::CpuOp) return true;
  return false;
}

void StepBuilder::close(int th) {
  if (stack_[th].empty()) throw std::logic_error("tracegen: close() without open()");
  Event& e = out_[stack_[th].back()];
  stack_[th].pop_back();
  e.dur = now_[th] - e.ts;
}

Stage StepBuilder::current_stage(int th) const {
  const Stage phase = phase_[static_cast<std::size_t>(th)];
  if (stack_[th].empty()) return phase;
  const Stage s = out_[stack_[th].back()].stage;
  return s != Stage::Other ? s : phase;
}

std::int64_t StepBuilder::current_ext(int th) const {
  return stack_[th].empty() ? -1 : out_[stack_[th].back()].ext_id;
}

std::size_t StepBuilder::add_runtime(int th, std::string_view name, int cbid, ns_t dur) {
  Event e;
  e.type = EvType::Runtime;
  e.name = name;
  e.thread = th;
  e.ts = now_[th];
  e.dur = dur;
  e.role = host_role(name);
  e.stage = current_stage(th);
  e.ext_id = current_ext(th);
  if (!stack_[th].empty()) e.ext_ts = out_[stack_[th].back()].ts;
  e.corr = ids_.corr++;
  e.cbid = cbid;
  out_.push_back(e);
  now_[th] += dur;
  return out_.size() - 1;
}

void StepBuilder::runtime(int th, std::string_view name, int cbid, ns_t dur) {
  add_runtime(th, name, cbid, dur);
}

ns_t StepBuilder::stream_free(int stream) const {
  for (const auto& s : streams_)
    if (s.first == stream) return s.second;
  return 0;
}

ns_t StepBuilder::device_free() const {
  ns_t t = 0;
  for (const auto& s : streams_) t = std::max(t, s.second);
  return t;
}

void StepBuilder::set_stream_free(int stream, ns_t t) {
  for (auto& s : streams_)
    if (s.first == stream || s.first == -1) {
      s = {stream, t};
      return;
    }
  throw std::logic_error("tracegen: too many streams");
}

// GPU activity inherits its launch call's stage and ids, the two point at each other, and the
// stream is busy until the activity ends.
std::size_t StepBuilder::attach_to_launch(Event& g, std::size_t rt, int stream) {
  g.stage = out_[rt].stage;
  g.ext_id = out_[rt].ext_id;
  g.corr = out_[rt].corr;
  g.partner = static_cast<std::int32_t>(rt);
  out_.push_back(g);
  out_[rt].partner = static_cast<std::int32_t>(out_.size() - 1);
  set_stream_free(stream, g.end());
  return out_.size() - 1;
}

std::size_t StepBuilder::launch_kernel(int th, const KernelSpec& k, GpuClass cls, int stream,
                                       ns_t dur, ns_t launch_dur, ns_t not_before, bool ext_api) {
  const Api& api = api_for(platform_);
  // A cold or throttled launch returns late; the kernel reaches the GPU at its usual point
  // before the return.
  ns_t call_dur = launch_dur + launch_extra_;
  if (launch_until_ >= 0) call_dur = std::max(call_dur, launch_until_ - now_[th]);
  launch_extra_ = 0;
  launch_until_ = -1;
  const std::size_t rt = add_runtime(th, ext_api ? api.launch_ext : api.launch,
                                     ext_api ? api.launch_ext_id : api.launch_id, call_dur);
  out_[rt].role = HostRole::Launch;
  // The kernel can start shortly before the launch call returns (as CUPTI shows).
  const ns_t reached = out_[rt].end() - launch_dur / 5;
  Event g;
  g.type = EvType::Kernel;
  g.gclass = cls;
  g.name = k.name;
  g.kernel = &k;
  g.thread = stream;
  g.ts = std::max({reached, gpu_ready(stream), not_before});
  g.dur = dur;
  return attach_to_launch(g, rt, stream);
}

std::size_t StepBuilder::copy(int th, GpuClass dir, std::string_view name, std::int64_t bytes,
                              ns_t dur, int stream, bool blocking, bool pageable, ns_t call_dur,
                              bool sync_call) {
  const Api& api = api_for(platform_);
  const bool rocm_sync = blocking && platform_ == Platform::Rocm;
  const bool cuda_sync = sync_call && !api.memcpy_sync.empty();
  const bool sync_api = rocm_sync || cuda_sync;
  if (cuda_sync) blocking = true;
  const std::size_t rt =
      cuda_sync ? add_runtime(th, api.memcpy_sync, api.memcpy_sync_id, call_dur)
                : add_runtime(th, rocm_sync ? api.memcpy_blocking : api.memcpy_async,
                              rocm_sync ? api.memcpy_blocking_id : api.memcpy_async_id, call_dur);
  if (!sync_api) out_[rt].role = HostRole::Launch;
  const ns_t reached = out_[rt].ts + call_dur - call_dur / 5;
  Event g;
  g.type = EvType::Memcpy;
  g.gclass = dir;
  g.name = name;
  g.thread = stream;
  g.ts = std::max(reached, gpu_ready(stream));
  g.dur = dur;
  g.bytes = bytes;
  g.pageable = pageable;
  attach_to_launch(g, rt, stream);
  if (blocking || pageable) {
    // The call returns once the copy has landed; the host sat inside it meanwhile.
    Event& r = out_[rt];
    r.dur = std::max(r.dur, g.end() + 2'000 - r.ts);
    now_[th] = r.end();
  }
  return out_.size() - 1;
}

std::size_t StepBuilder::memset(int th, std::int64_t bytes, ns_t dur, int stream, ns_t call_dur) {
  const Api& api = api_for(platform_);
  const std::size_t rt = add_runtime(th, api.memset_async, api.memset_async_id, call_dur);
  out_[rt].role = HostRole::Launch;
  Event g;
  g.type = EvType::Memset;
  g.gclass = GpuClass::Memset;
  g.name = "Memset (Device)";
  g.thread = stream;
  g.ts = std::max(out_[rt].end() - call_dur / 5, gpu_ready(stream));
  g.dur = dur;
  g.bytes = bytes;
  return attach_to_launch(g, rt, stream);
}

std::size_t StepBuilder::launch_driver_kernel(int th, const KernelSpec& k, int stream, ns_t dur,
                                              ns_t launch_dur) {
  const std::size_t g = launch_kernel(th, k, GpuClass::Compute, stream, dur, launch_dur);
  if (platform_ == Platform::Cuda) {
    Event& rt = out_[static_cast<std::size_t>(out_[g].partner)];
    rt.name = "cuLaunchKernel";
    rt.cbid = 307;
    rt.driver = true;
  }
  return g;
}

std::size_t StepBuilder::launch_graph(int th, const std::vector<std::pair<const KernelSpec*, ns_t>>& kernels,
                                      int stream, ns_t launch_dur, ns_t gap) {
  const Api& api = api_for(platform_);
  if (api.graph_launch.empty()) throw std::logic_error("tracegen: no graph launch on this platform");
  const std::size_t rt = add_runtime(th, api.graph_launch, api.graph_launch_id, launch_dur);
  out_[rt].role = HostRole::Launch;
  out_[rt].graph = true;
  const std::size_t first = out_.size();
  ns_t t = std::max(out_[rt].end() - launch_dur / 5, gpu_ready(stream));
  for (const auto& [k, dur] : kernels) {
    Event g;
    g.type = EvType::Kernel;
    g.gclass = GpuClass::Compute;
    g.name = k->name;
    g.kernel = k;
    g.thread = stream;
    g.ts = t;
    g.dur = dur;
    attach_to_launch(g, rt, stream);
    t = out_.back().end() + gap;
  }
  return first;
}

void StepBuilder::event_sync(int th, int stream, ns_t min_dur) {
  const Api& api = api_for(platform_);
  const ns_t start = now_[th];
  const ns_t end = std::max(start + min_dur, stream_free(stream) + 3'000);
  add_runtime(th, api.event_sync, api.event_sync_id, end - start);
}

void StepBuilder::device_sync(int th, ns_t min_dur) {
  const Api& api = api_for(platform_);
  if (api.device_sync.empty()) return sync(th, -1, min_dur);
  const ns_t start = now_[th];
  const ns_t end = std::max(start + min_dur, device_free() + 3'000);
  add_runtime(th, api.device_sync, api.device_sync_id, end - start);
}

void StepBuilder::sync(int th, int stream, ns_t min_dur) {
  const Api& api = api_for(platform_);
  const ns_t drained = stream < 0 ? device_free() : stream_free(stream);
  const ns_t start = now_[th];
  const ns_t end = std::max(start + min_dur, drained + 3'000);
  add_runtime(th, api.stream_sync, api.stream_sync_id, end - start);
}

}  // namespace stepscope::tracegen
