#include "kineto_writer.hpp"

#include <algorithm>
#include <vector>

#include "gpus.hpp"
#include "model.hpp"
#include "rng.hpp"

namespace stepscope::tracegen {
namespace {

constexpr std::size_t kFlushBytes = 1 << 20;

std::string_view category(const Event& e, bool legacy) {
  // Kineto of 2021 wrote every host op (ProfilerStep and record_function ranges too) as
  // "Operator", and capitalised the GPU categories.
  switch (e.type) {
    case EvType::CpuOp: return legacy ? "Operator" : "cpu_op";
    case EvType::UserAnnotation: return legacy ? "Operator" : "user_annotation";
    case EvType::Runtime: return legacy ? "Runtime" : e.driver ? "cuda_driver" : "cuda_runtime";
    case EvType::Kernel: return legacy ? "Kernel" : "kernel";
    case EvType::Memcpy: return legacy ? "Memcpy" : "gpu_memcpy";
    case EvType::Memset: return legacy ? "Memset" : "gpu_memset";
    case EvType::GpuAnnotation: return "gpu_user_annotation";
    case EvType::PythonFunction: return "python_function";
    case EvType::MemoryInstant: return "cpu_instant_event";
  }
  return "cpu_op";
}

std::string_view copy_kind(const Event& e) {
  return e.gclass == GpuClass::DtoH ? "DtoH" : "HtoD";
}

}  // namespace

void format_us(fmt::memory_buffer& out, ns_t ns) {
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;
  }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", ns / 1000, ns % 1000);
}

void write_json_string(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", u);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

RankLayout rank_layout(const Params& p, int rank) {
  RankLayout l;
  l.rank = rank;
  Rng rng(p.seed, 0x706964ULL, static_cast<std::uint64_t>(rank));
  l.pid = 20000 + static_cast<int>(rng.next() % 40000);
  l.main_tid = l.pid;
  l.autograd_tid = l.pid + 150 + static_cast<int>(rng.next() % 50);
  l.worker_tid0 = l.pid + 212;
  l.node_devices = p.platform == Platform::Cpu ? 0 : std::clamp(p.ranks, 1, 8);
  l.device = p.platform == Platform::Cpu ? 0 : rank % std::max(1, l.node_devices);
  return l;
}

KinetoWriter::KinetoWriter(const Params& p, const RankLayout& layout, std::unique_ptr<Sink> sink)
    : p_(p), l_(layout), sink_(std::move(sink)), legacy_(p.legacy_dialect()) {
  group_ranks_ = "[";
  for (int r = 0; r < p_.ranks; ++r) group_ranks_ += (r ? ", " : "") + std::to_string(r);
  group_ranks_ += "]";
  shift_ = clock_offset_ns(p, layout.rank) + (kBaseTimeNs - base_time_ns(p, layout.rank));
}

ns_t clock_offset_ns(const Params& p, int rank) {
  if (p.clock_skew_us <= 0) return 0;
  Rng rng(p.seed, 0x636c6f636bULL, static_cast<std::uint64_t>(rank));
  const auto span = static_cast<std::uint64_t>(2 * p.clock_skew_us * 1000) + 1;
  return static_cast<ns_t>(rng.next() % span) - static_cast<ns_t>(p.clock_skew_us * 1000);
}

std::int64_t base_time_ns(const Params& p, int rank) {
  return p.base_time_split && rank % 2 ? kBaseTimeNs - kBasePeriodNs : kBaseTimeNs;
}

void KinetoWriter::flush_if_large() {
  if (buf_.size() < kFlushBytes) return;
  sink_->write({buf_.data(), buf_.size()});
  buf_.clear();
}

void KinetoWriter::write_header() {
  auto out = std::back_inserter(buf_);
  const bool gpu = p_.platform != Platform::Cpu;
  const bool rocm = p_.platform == Platform::Rocm;
  fmt::format_to(out, "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
  const GpuModel& g = gpu_model(p_.gpu_name);
  for (int d = 0; d < l_.node_devices; ++d) {
    fmt::format_to(out, "{}\n    {{\n      \"id\": {}, \"name\": ", d ? "," : "", d);
    write_json_string(buf_, p_.gpu_name);
    fmt::format_to(out,
                   ", \"totalGlobalMem\": {},\n      \"computeMajor\": {}, \"computeMinor\": {},\n"
                   "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": {},\n",
                   g.total_mem, g.major, g.minor, g.threads_per_sm);
    if (rocm) {
      fmt::format_to(out,
                     "      \"regsPerBlock\": 65536, \"warpSize\": {},\n"
                     "      \"sharedMemPerBlock\": 65536, \"numSms\": {}, "
                     "\"maxSharedMemoryPerMultiProcessor\": {}\n    }}",
                     g.warp, g.sms, g.smem_per_sm);
    } else {
      fmt::format_to(out,
                     "      \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, "
                     "\"warpSize\": {},\n      \"sharedMemPerBlock\": 49152, "
                     "\"sharedMemPerMultiprocessor\": {},\n      \"numSms\": {}, "
                     "\"sharedMemPerBlockOptin\": {}\n    }}",
                     g.warp, g.smem_per_sm, g.sms, g.smem_optin);
    }
  }
  fmt::format_to(out, "{}],\n", l_.node_devices ? "\n  " : "");
  if (legacy_) {
    // 2021: a short distributedInfo, absolute timestamps (no baseTimeNanoseconds).
    fmt::format_to(out,
                   "  \"distributedInfo\": {{\"backend\": \"{}\", \"rank\": {}, \"world_size\": {}}},\n"
                   "  \"traceEvents\": [",
                   gpu ? "nccl" : "gloo", l_.rank, p_.ranks);
    flush_if_large();
    return;
  }
  if (p_.platform == Platform::Cuda)
    fmt::format_to(out,
                   "  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12040,\n"
                   "  \"cuda_driver_version\": 12040,\n");
  if (rocm)
    fmt::format_to(out,
                   "  \"roctracer_version\": 4.1,\n  \"hip_runtime_version\": 60443483,\n"
                   "  \"hip_driver_version\": 60443483,\n");
  const std::string_view backend = gpu ? "nccl" : "gloo";
  // A process that never initialised torch.distributed (a server's frontend) has no distributedInfo.
  if (p_.workload != "frontend") {
    fmt::format_to(out,
                   "  \"distributedInfo\": {{\"backend\": \"{}\", \"rank\": {}, \"world_size\": {}, "
                   "\"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": "
                   "\"default_pg\", \"backend_config\": \"{}\", \"pg_size\": {}, \"ranks\": {}}}]",
                   backend, l_.rank, p_.ranks, gpu ? "cuda:nccl" : "cpu:gloo", p_.ranks,
                   group_ranks_);
    if (gpu) {
      fmt::format_to(out, ", \"nccl_version\": ");
      write_json_string(buf_, p_.nccl_version);
    }
    fmt::format_to(out, "}},\n");
  }
  Rng id(p_.seed, 0x7472616365ULL, static_cast<std::uint64_t>(l_.rank));
  fmt::format_to(out,
                 "  \"record_shapes\": {:d},\n  \"with_stack\": {:d},\n  \"profile_memory\": {:d},\n"
                 "  \"trace_id\": \"{:016X}{:016X}\",\n  \"displayTimeUnit\": \"ms\",\n"
                 "  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [",
                 p_.record_shapes, p_.with_stack, p_.profile_memory, id.next(), id.next(),
                 base_time_ns(p_, l_.rank));
  flush_if_large();
}

void KinetoWriter::begin_event() {
  buf_.append(std::string_view(first_ ? "\n  {\n    " : ",\n  {\n    "));
  first_ = false;
}

int KinetoWriter::host_tid(const Event& e) const {
  if (e.thread > kAutogradThread) return l_.worker_tid0 + e.thread - kAutogradThread - 1;
  return e.thread == kAutogradThread ? l_.autograd_tid : l_.main_tid;
}

void KinetoWriter::name_field(const Event& e) {
  if (e.step_number >= 0) {
    fmt::format_to(std::back_inserter(buf_), "\"{}{}\"", e.name, e.step_number);
  } else {
    write_json_string(buf_, e.name);
  }
}

void KinetoWriter::time(ns_t ns) { duration(ns + shift_); }

void KinetoWriter::duration(ns_t ns) {
  // 2021 traces carry integer µs; the generator has already rounded every interval to whole µs.
  if (legacy_) fmt::format_to(std::back_inserter(buf_), "{}", ns / 1000);
  else format_us(buf_, ns);
}

void KinetoWriter::span_fields(ns_t ts, ns_t dur) {
  buf_.append(std::string_view("\"ts\": "));
  time(ts);
  buf_.append(std::string_view(", \"dur\": "));
  duration(dur);
}

void KinetoWriter::host_event(const Event& e) {
  auto out = std::back_inserter(buf_);
  if (e.step_marker && !p_.step_markers) return;
  if (e.thread == kAutogradThread) autograd_seen_ = true;
  if (e.thread > kAutogradThread) workers_seen_.insert(e.thread);
  begin_event();
  fmt::format_to(out, "\"ph\": \"X\", \"cat\": \"{}\", \"name\": ", category(e, legacy_));
  name_field(e);
  fmt::format_to(out, ", \"pid\": {}, \"tid\": {},\n    ", l_.pid, host_tid(e));
  span_fields(e.ts, e.dur);
  buf_.append(std::string_view(",\n    \"args\": {\n      "));
  host_args(e);
  buf_.append(std::string_view("\n    }\n  }"));
  if (e.flow_out >= 0) flow('s', e.flow_out, l_.pid, host_tid(e), e.ts, "fwdbwd", "fwdbwd");
  if (e.flow_in >= 0) flow('f', e.flow_in, l_.pid, host_tid(e), e.ts, "fwdbwd", "fwdbwd");
}

void KinetoWriter::host_args(const Event& e) {
  auto out = std::back_inserter(buf_);
  if (legacy_) {
    fmt::format_to(out, "\"External id\": {}, \"Trace name\": \"PyTorch Profiler\", \"Trace iteration\": 0",
                   e.ext_id);
    if (e.seq >= 0)
      fmt::format_to(out, ", \"Sequence number\": {}, \"Fwd thread id\": {}", e.seq, e.fwd_tid);
    return;
  }
  fmt::format_to(out, "\"External id\": {}, \"Record function id\": 0", e.ext_id);
  if (e.seq >= 0)
    fmt::format_to(out, ", \"Sequence number\": {}, \"Fwd thread id\": {}", e.seq, e.fwd_tid);
  if (e.comm_nelems >= 0) comm_args(e.comm_nelems, false);
  if (p_.record_shapes && e.type == EvType::CpuOp) shape_args();
  fmt::format_to(out, ", \"Ev Idx\": {}", e.ev_idx);
}

// record_shapes: the op's inputs, as newer Kineto writes them (one activation and one weight).
void KinetoWriter::shape_args() {
  buf_.append(std::string_view(
      ", \"Concrete Inputs\": [\"\", \"\"], \"Input type\": [\"float\", \"float\"], "
      "\"Input Strides\": [[256, 1], [256, 1]], \"Input Dims\": [[64, 256], [256, 256]]"));
}

// with_stack: one Python frame.
void KinetoWriter::python_event(const Event& e) {
  auto out = std::back_inserter(buf_);
  if (e.thread > kAutogradThread) workers_seen_.insert(e.thread);
  if (e.thread == kAutogradThread) autograd_seen_ = true;
  begin_event();
  buf_.append(std::string_view("\"ph\": \"X\", \"cat\": \"python_function\", \"name\": "));
  write_json_string(buf_, e.name);
  fmt::format_to(out, ", \"pid\": {}, \"tid\": {},\n    ", l_.pid, host_tid(e));
  span_fields(e.ts, e.dur);
  fmt::format_to(out, ",\n    \"args\": {{\n      \"Python parent id\": {}, \"Python id\": {}, \"Ev Idx\": {}\n    }}\n  }}",
                 e.py_parent, e.py_id, e.ev_idx);
}

// profile_memory: one allocation (bytes > 0) or free (bytes < 0) by the caching allocator.
void KinetoWriter::memory_event(const Event& e) {
  auto out = std::back_inserter(buf_);
  begin_event();
  fmt::format_to(out, "\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", "
                      "\"pid\": {}, \"tid\": {},\n    \"ts\": ",
                 l_.pid, host_tid(e));
  time(e.ts);
  constexpr std::int64_t kBlock = std::int64_t{1} << 26;  // the allocator reserves in large segments
  const std::int64_t reserved = (e.total_allocated / kBlock + 2) * kBlock;
  fmt::format_to(out,
                 ",\n    \"args\": {{\n      \"Ev Idx\": {}, \"Device Type\": 1, \"Device Id\": {}, \"Addr\": {}, "
                 "\"Bytes\": {}, \"Total Allocated\": {}, \"Total Reserved\": {}\n    }}\n  }}",
                 e.ev_idx, l_.device, e.addr, e.bytes, e.total_allocated, reserved);
}

void KinetoWriter::comm_args(std::int64_t nelems, bool kernel) {
  auto out = std::back_inserter(buf_);
  fmt::format_to(out,
                 ", \"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": "
                 "{0}, \"Out msg nelems\": {0}, \"Group size\": {1}, \"In split size\": \"[]\", "
                 "\"Out split size\": \"[]\"",
                 nelems, p_.ranks);
  if (!kernel)
    fmt::format_to(out, ", \"Global rank start\": 0, \"Global rank stride\": 1, \"Rank\": {}",
                   l_.rank);
  fmt::format_to(out,
                 ", \"Process Group Name\": \"0\", \"Process Group Description\": "
                 "\"default_pg\", \"Process Group Ranks\": \"{}\"",
                 group_ranks_);
}

void KinetoWriter::runtime_event(const Event& e) {
  auto out = std::back_inserter(buf_);
  begin_event();
  fmt::format_to(out, "\"ph\": \"X\", \"cat\": \"{}\", \"name\": ", category(e, legacy_));
  write_json_string(buf_, e.name);
  fmt::format_to(out, ", \"pid\": {}, \"tid\": {},\n    ", l_.pid, host_tid(e));
  span_fields(e.ts, e.dur);
  buf_.append(std::string_view(",\n    \"args\": {\n      "));
  if (legacy_) {
    fmt::format_to(out, "\"cbid\": {}, \"correlation\": {}, \"external id\": {}", e.cbid, e.corr,
                   std::max<std::int64_t>(0, e.ext_id));
    if (e.ext_ts >= 0) {
      buf_.append(std::string_view(", \"external ts\": "));
      time(e.ext_ts);
    }
    buf_.append(std::string_view("\n    }\n  }"));
    return;
  }
  if (e.ext_id >= 0) fmt::format_to(out, "\"External id\": {}, ", e.ext_id);
  const bool rocm = p_.platform == Platform::Rocm;
  fmt::format_to(out, "\"{}\": {}, \"correlation\": {}\n    }}\n  }}", rocm ? "cid" : "cbid",
                 e.cbid, e.corr);
}

void KinetoWriter::gpu_event(const Event& e) {
  auto out = std::back_inserter(buf_);
  streams_.insert(e.thread);
  begin_event();
  fmt::format_to(out, "\"ph\": \"X\", \"cat\": \"{}\", \"name\": ", category(e, legacy_));
  name_field(e);
  fmt::format_to(out, ", \"pid\": {}, \"tid\": {},\n    ", l_.device, e.thread);
  span_fields(e.ts, e.dur);
  buf_.append(std::string_view(",\n    \"args\": {\n      "));
  const bool rocm = p_.platform == Platform::Rocm;
  const double gbps = static_cast<double>(e.bytes) / static_cast<double>(std::max<ns_t>(1, e.dur));
  if (e.type == EvType::GpuAnnotation) {
    fmt::format_to(out, "\"External id\": {}", e.ext_id);
  } else if (e.type == EvType::Kernel) {
    kernel_args(e);
  } else if (legacy_) {
    fmt::format_to(out,
                   "\"device\": {}, \"context\": 1, \"stream\": {}, \"correlation\": {}, "
                   "\"external id\": {}, \"bytes\": {}, \"memory bandwidth (GB/s)\": {}",
                   l_.device, e.thread, e.corr, e.ext_id, e.bytes, gbps);
  } else if (rocm) {
    fmt::format_to(out,
                   "\"External id\": {}, \"device\": {}, \"stream\": {}, \"correlation\": {}, "
                   "\"kind\": \"{}\", \"bytes\": {}, \"memory bandwidth (GB/s)\": {}",
                   e.ext_id, l_.device, e.thread, e.corr, copy_kind(e), e.bytes, gbps);
  } else {
    fmt::format_to(out,
                   "\"External id\": {}, \"device\": {}, \"context\": 1, \"stream\": {}, "
                   "\"correlation\": {}, \"bytes\": {}, \"memory bandwidth (GB/s)\": {}",
                   e.ext_id, l_.device, e.thread, e.corr, e.bytes, gbps);
  }
  buf_.append(std::string_view("\n    }\n  }"));
}

void KinetoWriter::kernel_args(const Event& e) {
  auto out = std::back_inserter(buf_);
  const KernelSpec& k = *e.kernel;
  if (legacy_) {
    fmt::format_to(out,
                   "\"queued\": 0, \"device\": {}, \"context\": 1, \"stream\": {}, \"correlation\": {}, "
                   "\"external id\": {}, \"registers per thread\": {}, \"shared memory\": {}, "
                   "\"blocks per SM\": {:.1f}, \"warps per SM\": {:.1f}, \"grid\": [{}, {}, {}], "
                   "\"block\": [{}, {}, {}], \"est. achieved occupancy %\": {}",
                   l_.device, e.thread, e.corr, e.ext_id, k.registers, k.shared_memory, k.blocks_per_sm,
                   k.warps_per_sm, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                   k.occupancy);
    return;
  }
  if (p_.platform == Platform::Rocm) {
    fmt::format_to(out,
                   "\"External id\": {}, \"device\": {}, \"stream\": {}, \"correlation\": {}, "
                   "\"kind\": \"Dispatch Kernel\", \"grid\": [{}, {}, {}], \"block\": [{}, {}, {}]",
                   e.ext_id, l_.device, e.thread, e.corr, k.grid[0], k.grid[1], k.grid[2],
                   k.block[0], k.block[1], k.block[2]);
  } else {
    fmt::format_to(out,
                   "\"External id\": {}, \"queued\": 0, \"device\": {}, \"context\": 1, "
                   "\"stream\": {}, \"correlation\": {}, \"registers per thread\": {}, "
                   "\"shared memory\": {}, \"blocks per SM\": {:.6f}, \"warps per SM\": {:.6f}, "
                   "\"grid\": [{}, {}, {}], \"block\": [{}, {}, {}], "
                   "\"est. achieved occupancy %\": {}",
                   e.ext_id, l_.device, e.thread, e.corr, k.registers, k.shared_memory,
                   k.blocks_per_sm, k.warps_per_sm, k.grid[0], k.grid[1], k.grid[2], k.block[0],
                   k.block[1], k.block[2], k.occupancy);
  }
  if (e.comm_nelems >= 0) comm_args(e.comm_nelems, true);
}

void KinetoWriter::flow(char ph, std::int64_t id, int pid, int tid, ns_t ts, std::string_view cat,
                        std::string_view name) {
  auto out = std::back_inserter(buf_);
  begin_event();
  fmt::format_to(out, "\"ph\": \"{}\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ", ph, id,
                 pid, tid);
  time(ts);
  buf_.append(std::string_view(",\n    \"cat\": "));
  write_json_string(buf_, cat);
  buf_.append(std::string_view(", \"name\": "));
  write_json_string(buf_, name);
  fmt::format_to(out, "{}\n  }}", ph == 'f' ? ", \"bp\": \"e\"" : "");
}

// The launch link: ac2g today; in 2021 "async_gpu", named after the runtime call.
void KinetoWriter::launch_flows(const Event& rt, const Event& g) {
  const std::string_view cat = legacy_ ? "async_gpu" : "ac2g";
  const std::string_view name = legacy_ ? rt.name : cat;
  flow('f', g.corr, l_.device, g.thread, g.ts, cat, name);
  runtime_event(rt);
  flow('s', rt.corr, l_.pid, host_tid(rt), rt.ts, cat, name);
}

// Kineto's order within a step: host ops first, then each GPU activity with its launch. Without
// GPU records (CUPTI activity lost) only the host side remains: runtime calls with no flows.
void KinetoWriter::write_step(std::span<const Event> events) {
  std::vector<std::uint32_t> host, gpu, lone_runtime;
  const bool gpu_rows = p_.gpu_records;
  for (std::uint32_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.type == EvType::CpuOp || e.type == EvType::UserAnnotation || e.type == EvType::PythonFunction ||
        e.type == EvType::MemoryInstant)
      host.push_back(i);
    else if (e.on_gpu()) {
      if (gpu_rows) gpu.push_back(i);
    } else if (e.partner < 0 || !gpu_rows) {
      lone_runtime.push_back(i);
    }
  }
  auto by_time = [&](std::uint32_t a, std::uint32_t b) {
    if (events[a].ts != events[b].ts) return events[a].ts < events[b].ts;
    return events[a].dur > events[b].dur;
  };
  std::stable_sort(host.begin(), host.end(), by_time);
  std::stable_sort(gpu.begin(), gpu.end(), by_time);
  if (!gpu_rows) std::stable_sort(lone_runtime.begin(), lone_runtime.end(), by_time);
  for (auto i : host) {
    const Event& e = events[i];
    if (e.type == EvType::PythonFunction) python_event(e);
    else if (e.type == EvType::MemoryInstant) memory_event(e);
    else host_event(e);
    flush_if_large();
  }
  std::vector<std::int32_t> graphs_written;  // a graph launch is written once, before its first kernel
  for (auto i : gpu) {
    const Event& g = events[i];
    gpu_event(g);
    if (g.partner >= 0) {
      const Event& rt = events[static_cast<std::size_t>(g.partner)];
      if (!rt.graph) {
        launch_flows(rt, g);
      } else if (std::find(graphs_written.begin(), graphs_written.end(), g.partner) == graphs_written.end()) {
        graphs_written.push_back(g.partner);
        launch_flows(rt, g);
      } else {
        flow('f', g.corr, l_.device, g.thread, g.ts, "ac2g", "ac2g");
      }
    }
    flush_if_large();
  }
  for (auto i : lone_runtime) runtime_event(events[i]);
  flush_if_large();
}

void KinetoWriter::metadata(std::string_view name, int pid, int tid, ns_t ts,
                            std::string_view key, std::string_view value, bool quoted) {
  auto out = std::back_inserter(buf_);
  begin_event();
  fmt::format_to(out, "\"name\": \"{}\", \"ph\": \"M\", \"ts\": ", name);
  time(ts);
  fmt::format_to(out, ", \"pid\": {}, \"tid\": {},\n    \"args\": {{\n      \"{}\": ", pid, tid,
                 key);
  if (quoted) write_json_string(buf_, value);
  else buf_.append(value);
  buf_.append(std::string_view("\n    }\n  }"));
}

void KinetoWriter::write_footer(ns_t start, ns_t end) {
  auto out = std::back_inserter(buf_);
  metadata("process_name", l_.pid, 0, start, "name", "python3", true);
  metadata("process_labels", l_.pid, 0, start, "labels", "CPU", true);
  metadata("process_sort_index", l_.pid, 0, start, "sort_index", std::to_string(l_.pid), false);
  for (int d = 0; d < l_.node_devices; ++d) {
    metadata("process_name", d, 0, start, "name", "python3", true);
    metadata("process_labels", d, 0, start, "labels", "GPU " + std::to_string(d), true);
    metadata("process_sort_index", d, 0, start, "sort_index", std::to_string(5000000 + d), false);
  }
  for (int s : streams_) {
    metadata("thread_name", l_.device, s, start, "name", "stream " + std::to_string(s) + " ", true);
    metadata("thread_sort_index", l_.device, s, start, "sort_index", std::to_string(s), false);
  }
  const auto thread = [&](int tid, std::string_view label) {
    metadata("thread_name", l_.pid, tid, start, "name",
             fmt::format("thread {} ({})", tid, label), true);
    metadata("thread_sort_index", l_.pid, tid, start, "sort_index", std::to_string(tid), false);
  };
  thread(l_.main_tid, "python3");
  if (autograd_seen_) thread(l_.autograd_tid, "pt_autograd_0");
  for (int w : workers_seen_)
    if (w > kAutogradThread) thread(l_.worker_tid0 + w - kAutogradThread - 1, "python3");
  begin_event();
  fmt::format_to(out, "\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
  time(start);
  buf_.append(std::string_view(", \"dur\": "));
  duration(end - start);
  buf_.append(std::string_view(
      ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch "
      "Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0\n    }\n  }"));
  begin_event();
  buf_.append(std::string_view("\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": "));
  time(start);
  buf_.append(std::string_view(
      ", \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n      \"sort_index\": 536870912\n    "
      "}\n  }"));
  begin_event();
  buf_.append(std::string_view(
      "\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n    "
      "\"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": "));
  time(start);
  buf_.append(std::string_view("\n  }"));
  begin_event();
  buf_.append(std::string_view(
      "\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": "
      "\"\", \"ts\": "));
  time(end + 1'000'000);
  buf_.append(std::string_view("\n  }"));
  fmt::format_to(out, "\n  ],\n  \"traceName\": \"rank-{}.pt.trace.json\"\n}}\n", l_.rank);
  sink_->write({buf_.data(), buf_.size()});
  buf_.clear();
  sink_->close();
}

}  // namespace stepscope::tracegen
