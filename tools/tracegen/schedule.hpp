// The step schedule: explicit intervals on host threads and GPU streams.
//
// A StepBuilder lays out one training step: host ops nest on a per-thread stack, each GPU launch
// creates a runtime call and its GPU activity placed on a stream after the stream is free. The
// resulting events are what the writer serialises and what the ground truth partitions.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tracegen.hpp"

namespace stepscope::tracegen {

enum class EvType : std::uint8_t {
  CpuOp,
  UserAnnotation,
  Runtime,
  Kernel,
  Memcpy,
  Memset,
  GpuAnnotation,
  PythonFunction,  // with_stack frames (python_function)
  MemoryInstant    // profile_memory allocations ([memory] cpu_instant_event)
};

// What an instant on the host is blamed on, derived from the op's name (see host_role()).
enum class HostRole : std::uint8_t { Marker, Loader, Sync, Side, Launch, Op };
enum class Stage : std::uint8_t { Forward, Backward, Optimizer, Other };
enum class GpuClass : std::uint8_t { None, Compute, Comm, HtoD, DtoH, Memset };

struct KernelSpec {
  std::string_view name;
  int grid[3];
  int block[3];
  int registers;
  int shared_memory;
  double blocks_per_sm;
  double warps_per_sm;
  int occupancy;
};

inline constexpr int kMainThread = 0;
inline constexpr int kAutogradThread = 1;
// Further host threads (a server's workers) are 2, 3, ...; the partition reads main and autograd only.
inline constexpr int kMaxThreads = 8;

struct Event {
  EvType type = EvType::CpuOp;
  HostRole role = HostRole::Op;
  Stage stage = Stage::Other;
  GpuClass gclass = GpuClass::None;
  int thread = 0;  // host events: kMainThread / kAutogradThread; GPU events: stream id
  ns_t ts = 0;
  ns_t dur = 0;
  std::string_view name;
  std::int64_t ext_id = -1;
  std::int64_t corr = -1;
  std::int64_t ev_idx = -1;
  std::int64_t seq = -1;       // "Sequence number" of autograd-recorded ops
  int fwd_tid = -1;            // "Fwd thread id"
  std::int64_t bytes = -1;     // memcpy / memset size
  int cbid = -1;               // runtime callback id
  const KernelSpec* kernel = nullptr;
  std::int64_t comm_nelems = -1;  // collective size (record_param_comms, NCCL kernel)
  int step_number = -1;           // ProfilerStep#N: the name is written with N appended
  std::int32_t partner = -1;   // runtime <-> GPU activity (index in the step's events)
  std::int64_t flow_out = -1;  // fwdbwd flow starting at this op
  std::int64_t flow_in = -1;   // fwdbwd flow ending at this op
  bool pageable = false;
  bool side_work = false;      // GPU work launched inside side work (a checkpoint's copies)
  bool driver = false;         // a driver API call (cuLaunchKernel): cat cuda_driver
  ns_t ext_ts = -1;            // start of the op the runtime call ran in (2021 "external ts")
  bool step_marker = false;    // the step's own host range (ProfilerStep#N or a custom marker)
  bool graph = false;          // a cudaGraphLaunch: several GPU activities share its correlation id
  std::int64_t py_id = -1;     // python_function: "Python id" and "Python parent id"
  std::int64_t py_parent = -1;
  std::int64_t addr = -1;            // [memory]: address, and bytes allocated after the event
  std::int64_t total_allocated = -1;

  ns_t end() const { return ts + dur; }
  bool on_gpu() const {
    return type == EvType::Kernel || type == EvType::Memcpy || type == EvType::Memset ||
           type == EvType::GpuAnnotation;
  }
};

HostRole host_role(std::string_view name);
Stage stage_mark(std::string_view name);  // Other when the name marks no stage

// Ids that run through a whole rank trace.
struct Counters {
  std::int64_t ext_id = 1;
  std::int64_t ev_idx = 0;
  std::int64_t corr = 100;
  std::int64_t flow = 1;
  std::int64_t seq = 0;
  std::int64_t py_id = 1;          // python_function ids
  std::int64_t allocated = 1'342'177'280;  // [memory]: bytes allocated on the device (weights, optimizer state)
  std::int64_t next_addr = 0x7f3a40000000;
};

// Names of the runtime API on a platform.
struct Api {
  std::string_view launch, launch_ext, memcpy_async, memcpy_blocking, stream_sync, wait_event,
      event_record, memset_async;
  int launch_id, launch_ext_id, memcpy_async_id, memcpy_blocking_id, stream_sync_id,
      wait_event_id, event_record_id, memset_async_id;
  std::string_view memcpy_sync, device_sync;  // empty: the platform's presets do not use it
  int memcpy_sync_id, device_sync_id;
  std::string_view graph_launch, event_sync, event_elapsed;  // empty: not on this platform
  int graph_launch_id, event_sync_id, event_elapsed_id;
};
const Api& api_for(Platform p);

class StepBuilder {
 public:
  StepBuilder(Platform platform, std::vector<Event>& out, Counters& ids);

  ns_t now(int th) const { return now_[th]; }
  void set_now(int th, ns_t t) { now_[th] = t; }
  void work(int th, ns_t d) { now_[th] += d; }

  // Opens a host op at the thread's cursor; close() ends the innermost one at the cursor.
  std::size_t open(int th, EvType type, std::string_view name);
  void close(int th);
  Event& event(std::size_t i) { return out_[i]; }
  // Whether the thread is inside a cpu_op (not only annotations or Python frames).
  bool inside_op(int th) const;
  // Opens a Python frame (with_stack): like open(), but frames carry no External id.
  std::size_t open_frame(int th, std::string_view name);

  // A kernel launch from the host thread; the kernel starts when the launch has reached the
  // GPU, the stream is free and `not_before` has passed. Returns the kernel's index.
  std::size_t launch_kernel(int th, const KernelSpec& k, GpuClass cls, int stream, ns_t dur,
                            ns_t launch_dur, ns_t not_before = 0, bool ext_api = false);
  // A memcpy on `stream`. Pageable copies and `blocking` ones hold the host until they finish;
  // `sync_call` names the call cudaMemcpy (the synchronous API) on CUDA.
  std::size_t copy(int th, GpuClass dir, std::string_view name, std::int64_t bytes, ns_t dur,
                   int stream, bool blocking, bool pageable, ns_t call_dur, bool sync_call = false);
  // cudaMemsetAsync on `stream`.
  std::size_t memset(int th, std::int64_t bytes, ns_t dur, int stream, ns_t call_dur);
  // A runtime call with no GPU work (cudaStreamWaitEvent, cudaEventRecord, ...).
  void runtime(int th, std::string_view name, int cbid, ns_t dur);
  // Blocks the host thread until `stream` (or every stream when stream < 0) is drained.
  void sync(int th, int stream, ns_t min_dur);
  // cudaDeviceSynchronize (ROCm: hipStreamSynchronize on every stream).
  void device_sync(int th, ns_t min_dur);
  // A kernel launched through the driver API (cuLaunchKernel, as Triton does).
  std::size_t launch_driver_kernel(int th, const KernelSpec& k, int stream, ns_t dur, ns_t launch_dur);
  // cudaGraphLaunch: one runtime call; the graph's kernels run back to back on `stream`, `gap`
  // apart, all carrying the launch's correlation id. Returns the index of the first kernel.
  std::size_t launch_graph(int th, const std::vector<std::pair<const KernelSpec*, ns_t>>& kernels, int stream,
                           ns_t launch_dur, ns_t gap);
  // cudaEventSynchronize on an event recorded last on `stream`: waits until the stream drains.
  void event_sync(int th, int stream, ns_t min_dur);
  // Streams created blocking serialise with the legacy default stream: every GPU activity waits
  // for all work queued before it, on any stream.
  void serialise_streams(bool on) { serialise_ = on; }

  // Ops opened on `th` inside no stage-marking op get this stage (presets without stage
  // annotations: the phase the job is in). Other: the name rules alone.
  void set_phase(int th, Stage s) { phase_[static_cast<std::size_t>(th)] = s; }
  // The next kernel launch takes `extra` longer (a cold first launch), or does not return before
  // `t` (the launch queue is full).
  void delay_next_launch(ns_t extra) { launch_extra_ += extra; }
  void block_next_launch_until(ns_t t) { launch_until_ = t; }

  ns_t stream_free(int stream) const;
  ns_t device_free() const;
  void set_stream_free(int stream, ns_t t);

 private:
  std::size_t attach_to_launch(Event& g, std::size_t rt, int stream);
  std::size_t add_runtime(int th, std::string_view name, int cbid, ns_t dur);
  Stage current_stage(int th) const;
  std::int64_t current_ext(int th) const;

  Platform platform_;
  std::vector<Event>& out_;
  Counters& ids_;
  ns_t gpu_ready(int stream) const { return serialise_ ? device_free() : stream_free(stream); }

  std::array<ns_t, kMaxThreads> now_{};
  std::array<std::vector<std::size_t>, kMaxThreads> stack_;
  std::array<std::pair<int, ns_t>, 4> streams_{};  // (stream id, free at); id -1 unused
  std::array<Stage, kMaxThreads> phase_;  // filled with Stage::Other
  ns_t launch_extra_ = 0;
  ns_t launch_until_ = -1;
  bool serialise_ = false;
};

}  // namespace stepscope::tracegen
