// Hand-built RankTrace objects for unit tests: every column of the EventTable is filled
// directly, so a test states exactly which events exist. Times are given in µs for
// readability (converted to ns) unless a helper says otherwise.
#pragma once

#include <cstdint>
#include <string_view>

#include "stepscope/trace.hpp"

namespace stepscope::test {

inline constexpr ns_t us(double v) { return static_cast<ns_t>(v * 1000.0 + (v >= 0 ? 0.5 : -0.5)); }

class TraceBuilder {
 public:
  // Any event; times in ns.
  std::uint32_t add_ns(Kind kind, std::string_view cat, std::string_view name, ns_t ts, ns_t dur,
                       std::int32_t stream = -1, std::int64_t correlation = kNone,
                       Phase phase = Phase::Complete) {
    EventTable& ev = t_.events;
    ev.ts.push_back(ts);
    ev.dur.push_back(dur);
    ev.name.push_back(t_.strings.intern(name));
    ev.category.push_back(t_.strings.intern(cat));
    ev.kind.push_back(kind);
    ev.phase.push_back(phase);
    ev.copy_kind.push_back(CopyKind::None);
    ev.host_mem.push_back(HostMem::Unknown);
    bool gpu = kind == Kind::Kernel || kind == Kind::Memcpy || kind == Kind::Memset || kind == Kind::GpuSync;
    ev.track.push_back(ev.keys.intern(gpu ? 0 : 100, gpu ? stream : 100));
    ev.correlation.push_back(correlation);
    ev.external_id.push_back(kNone);
    ev.stream.push_back(stream);
    ev.device.push_back(gpu ? 0 : -1);
    ev.kernel_args.push_back(-1);
    ev.extra.push_back(-1);
    return static_cast<std::uint32_t>(ev.ts.size() - 1);
  }

  std::uint32_t kernel(std::string_view name, double ts, double dur, std::int32_t stream,
                       std::int64_t corr = kNone) {
    return add_ns(Kind::Kernel, "kernel", name, us(ts), us(dur), stream, corr);
  }
  std::uint32_t runtime(std::string_view name, double ts, double dur, std::int64_t corr = kNone) {
    return add_ns(Kind::Runtime, "cuda_runtime", name, us(ts), us(dur), -1, corr);
  }
  // A cudaLaunchKernel call and the kernel it launched, joined by `corr`.
  std::uint32_t launch(std::string_view name, double call_ts, double call_dur, double ts, double dur,
                       std::int32_t stream, std::int64_t corr) {
    runtime("cudaLaunchKernel", call_ts, call_dur, corr);
    return kernel(name, ts, dur, stream, corr);
  }
  std::uint32_t step(std::int64_t n, double ts, double dur) {
    return add_ns(Kind::UserAnnotation, "user_annotation", "ProfilerStep#" + std::to_string(n), us(ts), us(dur));
  }
  std::uint32_t copy(std::string_view name, double ts, double dur, std::int32_t stream, CopyKind dir,
                     HostMem host, std::int64_t bytes, std::int64_t corr = kNone) {
    std::uint32_t i = add_ns(Kind::Memcpy, "gpu_memcpy", name, us(ts), us(dur), stream, corr);
    t_.events.copy_kind.set(i, dir);
    t_.events.host_mem.set(i, host);
    EventExtra x;
    x.bytes = bytes;
    set_extra(i, x);
    return i;
  }
  std::uint32_t memory_sample(double ts, std::int64_t allocated, std::int64_t reserved, std::int32_t device = 0) {
    std::uint32_t i = add_ns(Kind::CpuInstant, "cpu_instant_event", "[memory]", us(ts), 0, -1, kNone, Phase::Instant);
    EventExtra x;
    x.total_allocated = allocated;
    x.total_reserved = reserved;
    x.device_type = 1;
    x.device_id = device;
    set_extra(i, x);
    return i;
  }
  void set_kernel_args(std::uint32_t i, const KernelArgs& a) {
    t_.events.kernel_args.set(i, t_.add_kernel_args(a));
  }
  void set_extra(std::uint32_t i, const EventExtra& x) {
    t_.events.extra.set(i, t_.add_extra(x));
  }

  RankTrace& trace() { return t_; }

 private:
  RankTrace t_;
};

}  // namespace stepscope::test
