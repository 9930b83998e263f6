#include "kineto_writer.hpp"

#include <algorithm>
#include <vector>

#include "model.hpp"
#include "rng.hpp"

namespace stepscope::tracegen {
namespace {

constexpr std::size_t kFlushBytes = 1 << 20;

struct GpuModel {
  std::string_view match;
  std::int64_t total_mem;
  int major, minor, sms, warp;
  int smem_per_sm, smem_optin;
};

// deviceProperties of the GPUs the presets name; unknown names get A100 numbers.
constexpr GpuModel kGpus[] = {
    {"A100", 85051572224, 8, 0, 108, 32, 167936, 166912},
    {"H100", 85018279936, 9, 0, 132, 32, 233472, 232448},
    {"V100", 34079637504, 7, 0, 80, 32, 98304, 98304},
    {"MI300X", 206141652992, 9, 4, 304, 64, 65536, 65536},
};

const GpuModel& gpu_model(std::string_view name) {
  for (const auto& g : kGpus)
    if (name.find(g.match) != std::string_view::npos) return g;
  return kGpus[0];
}

std::string_view category(const Event& e) {
  switch (e.type) {
    case EvType::CpuOp: return "cpu_op";
    case EvType::UserAnnotation: return "user_annotation";
    case EvType::Runtime: return "cuda_runtime";
    case EvType::Kernel: return "kernel";
    case EvType::Memcpy: return "gpu_memcpy";
    case EvType::Memset: return "gpu_memset";
    case EvType::GpuAnnotation: return "gpu_user_annotation";
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
  l.node_devices = p.platform == Platform::Cpu ? 0 : std::clamp(p.ranks, 1, 8);
  l.device = p.platform == Platform::Cpu ? 0 : rank % std::max(1, l.node_devices);
  return l;
}

KinetoWriter::KinetoWriter(const Params& p, const RankLayout& layout, std::unique_ptr<Sink> sink)
    : p_(p), l_(layout), sink_(std::move(sink)) {
  group_ranks_ = "[";
  for (int r = 0; r < p_.ranks; ++r) group_ranks_ += (r ? ", " : "") + std::to_string(r);
  group_ranks_ += "]";
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
                   "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n",
                   g.total_mem, g.major, g.minor);
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
  if (p_.platform == Platform::Cuda)
    fmt::format_to(out,
                   "  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12040,\n"
                   "  \"cuda_driver_version\": 12040,\n");
  if (rocm)
    fmt::format_to(out,
                   "  \"roctracer_version\": 4.1,\n  \"hip_runtime_version\": 60443483,\n"
                   "  \"hip_driver_version\": 60443483,\n");
  const std::string_view backend = gpu ? "nccl" : "gloo";
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
  Rng id(p_.seed, 0x7472616365ULL, static_cast<std::uint64_t>(l_.rank));
  fmt::format_to(out,
                 "}},\n  \"record_shapes\": 0,\n  \"with_stack\": 0,\n  \"profile_memory\": 0,\n"
                 "  \"trace_id\": \"{:016X}{:016X}\",\n  \"displayTimeUnit\": \"ms\",\n"
                 "  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [",
                 id.next(), id.next(), kBaseTimeNs);
  flush_if_large();
}

void KinetoWriter::begin_event() {
  buf_.append(std::string_view(first_ ? "\n  {\n    " : ",\n  {\n    "));
  first_ = false;
}

int KinetoWriter::host_tid(const Event& e) const {
  return e.thread == kAutogradThread ? l_.autograd_tid : l_.main_tid;
}

void KinetoWriter::name_field(const Event& e) {
  if (e.step_number >= 0) {
    fmt::format_to(std::back_inserter(buf_), "\"{}{}\"", e.name, e.step_number);
  } else {
    write_json_string(buf_, e.name);
  }
}

void KinetoWriter::host_event(const Event& e) {
  auto out = std::back_inserter(buf_);
  if (e.thread == kAutogradThread) autograd_seen_ = true;
  begin_event();
  fmt::format_to(out, "\"ph\": \"X\", \"cat\": \"{}\", \"name\": ", category(e));
  name_field(e);
  fmt::format_to(out, ", \"pid\": {}, \"tid\": {},\n    \"ts\": ", l_.pid, host_tid(e));
  format_us(buf_, e.ts);
  buf_.append(std::string_view(", \"dur\": "));
  format_us(buf_, e.dur);
  buf_.append(std::string_view(",\n    \"args\": {\n      "));
  host_args(e);
  buf_.append(std::string_view("\n    }\n  }"));
  if (e.flow_out >= 0) flow('s', e.flow_out, l_.pid, host_tid(e), e.ts, "fwdbwd");
  if (e.flow_in >= 0) flow('f', e.flow_in, l_.pid, host_tid(e), e.ts, "fwdbwd");
}

void KinetoWriter::host_args(const Event& e) {
  auto out = std::back_inserter(buf_);
  fmt::format_to(out, "\"External id\": {}, \"Record function id\": 0", e.ext_id);
  if (e.seq >= 0)
    fmt::format_to(out, ", \"Sequence number\": {}, \"Fwd thread id\": {}", e.seq, e.fwd_tid);
  if (e.comm_nelems >= 0) comm_args(e.comm_nelems, false);
  fmt::format_to(out, ", \"Ev Idx\": {}", e.ev_idx);
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
  fmt::format_to(out, "\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": ");
  write_json_string(buf_, e.name);
  fmt::format_to(out, ", \"pid\": {}, \"tid\": {},\n    \"ts\": ", l_.pid, host_tid(e));
  format_us(buf_, e.ts);
  buf_.append(std::string_view(", \"dur\": "));
  format_us(buf_, e.dur);
  buf_.append(std::string_view(",\n    \"args\": {\n      "));
  if (e.ext_id >= 0) fmt::format_to(out, "\"External id\": {}, ", e.ext_id);
  const bool rocm = p_.platform == Platform::Rocm;
  fmt::format_to(out, "\"{}\": {}, \"correlation\": {}\n    }}\n  }}", rocm ? "cid" : "cbid",
                 e.cbid, e.corr);
}

void KinetoWriter::gpu_event(const Event& e) {
  auto out = std::back_inserter(buf_);
  streams_.insert(e.thread);
  begin_event();
  fmt::format_to(out, "\"ph\": \"X\", \"cat\": \"{}\", \"name\": ", category(e));
  name_field(e);
  fmt::format_to(out, ", \"pid\": {}, \"tid\": {},\n    \"ts\": ", l_.device, e.thread);
  format_us(buf_, e.ts);
  buf_.append(std::string_view(", \"dur\": "));
  format_us(buf_, e.dur);
  buf_.append(std::string_view(",\n    \"args\": {\n      "));
  const bool rocm = p_.platform == Platform::Rocm;
  if (e.type == EvType::GpuAnnotation) {
    fmt::format_to(out, "\"External id\": {}", e.ext_id);
  } else if (e.type == EvType::Kernel) {
    kernel_args(e);
  } else if (rocm) {
    fmt::format_to(out,
                   "\"External id\": {}, \"device\": {}, \"stream\": {}, \"correlation\": {}, "
                   "\"kind\": \"{}\", \"bytes\": {}, \"memory bandwidth (GB/s)\": {}",
                   e.ext_id, l_.device, e.thread, e.corr, copy_kind(e), e.bytes,
                   static_cast<double>(e.bytes) / static_cast<double>(std::max<ns_t>(1, e.dur)));
  } else {
    fmt::format_to(out,
                   "\"External id\": {}, \"device\": {}, \"context\": 1, \"stream\": {}, "
                   "\"correlation\": {}, \"bytes\": {}, \"memory bandwidth (GB/s)\": {}",
                   e.ext_id, l_.device, e.thread, e.corr, e.bytes,
                   static_cast<double>(e.bytes) / static_cast<double>(std::max<ns_t>(1, e.dur)));
  }
  buf_.append(std::string_view("\n    }\n  }"));
  if (e.corr >= 0) flow('f', e.corr, l_.device, e.thread, e.ts, "ac2g");
}

void KinetoWriter::kernel_args(const Event& e) {
  auto out = std::back_inserter(buf_);
  const KernelSpec& k = *e.kernel;
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

void KinetoWriter::flow(char ph, std::int64_t id, int pid, int tid, ns_t ts,
                        std::string_view cat) {
  auto out = std::back_inserter(buf_);
  begin_event();
  fmt::format_to(out, "\"ph\": \"{}\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ", ph, id,
                 pid, tid);
  format_us(buf_, ts);
  fmt::format_to(out, ",\n    \"cat\": \"{0}\", \"name\": \"{0}\"{1}\n  }}", cat,
                 ph == 'f' ? ", \"bp\": \"e\"" : "");
}

// Kineto's order within a step: host ops first, then each GPU activity with its launch.
void KinetoWriter::write_step(std::span<const Event> events) {
  std::vector<std::uint32_t> host, gpu, lone_runtime;
  for (std::uint32_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.type == EvType::CpuOp || e.type == EvType::UserAnnotation) host.push_back(i);
    else if (e.on_gpu()) gpu.push_back(i);
    else if (e.partner < 0) lone_runtime.push_back(i);
  }
  auto by_time = [&](std::uint32_t a, std::uint32_t b) {
    if (events[a].ts != events[b].ts) return events[a].ts < events[b].ts;
    return events[a].dur > events[b].dur;
  };
  std::stable_sort(host.begin(), host.end(), by_time);
  std::stable_sort(gpu.begin(), gpu.end(), by_time);
  for (auto i : host) {
    host_event(events[i]);
    flush_if_large();
  }
  for (auto i : gpu) {
    const Event& g = events[i];
    gpu_event(g);
    if (g.partner >= 0) {
      const Event& rt = events[static_cast<std::size_t>(g.partner)];
      runtime_event(rt);
      flow('s', rt.corr, l_.pid, host_tid(rt), rt.ts, "ac2g");
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
  format_us(buf_, ts);
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
  begin_event();
  fmt::format_to(out, "\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
  format_us(buf_, start);
  buf_.append(std::string_view(", \"dur\": "));
  format_us(buf_, end - start);
  buf_.append(std::string_view(
      ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch "
      "Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0\n    }\n  }"));
  begin_event();
  buf_.append(std::string_view("\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": "));
  format_us(buf_, start);
  buf_.append(std::string_view(
      ", \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n      \"sort_index\": 536870912\n    "
      "}\n  }"));
  begin_event();
  buf_.append(std::string_view(
      "\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n    "
      "\"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": "));
  format_us(buf_, start);
  buf_.append(std::string_view("\n  }"));
  begin_event();
  buf_.append(std::string_view(
      "\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": "
      "\"\", \"ts\": "));
  format_us(buf_, end + 1'000'000);
  buf_.append(std::string_view("\n  }"));
  fmt::format_to(out, "\n  ],\n  \"traceName\": \"rank-{}.pt.trace.json\"\n}}\n", l_.rank);
  sink_->write({buf_.data(), buf_.size()});
  buf_.clear();
  sink_->close();
}

}  // namespace stepscope::tracegen
