// Serialises steps to a Kineto trace, in the layout torch.profiler writes (newer Kineto:
// baseTimeNanoseconds with ts relative to it, in µs with nanosecond decimals).
#pragma once

#include <fmt/format.h>

#include <memory>
#include <set>
#include <span>
#include <string>

#include "schedule.hpp"
#include "sink.hpp"

namespace stepscope::tracegen {

// Process / thread ids of one rank as the trace shows them.
struct RankLayout {
  int rank = 0;
  int pid = 0;
  int main_tid = 0;
  int autograd_tid = 0;
  int worker_tid0 = 0;  // host threads 2, 3, ... (a server's workers): worker_tid0, worker_tid0 + 1, ...
  int device = 0;       // GPU pid and args.device
  int node_devices = 1;  // deviceProperties entries (GPUs on the node)
};
RankLayout rank_layout(const Params& p, int rank);

inline constexpr std::int64_t kBaseTimeNs = 1767189312000000000LL;
// Kineto floors its base time to a multiple of this ("trimonths").
inline constexpr std::int64_t kBasePeriodNs = 7'889'238'000'000'000LL;

// How far rank's trace clock is from the true one (Params::clock_skew_us), in [-skew, skew].
ns_t clock_offset_ns(const Params& p, int rank);
// The baseTimeNanoseconds the rank writes (Params::base_time_split).
std::int64_t base_time_ns(const Params& p, int rank);

class KinetoWriter {
 public:
  KinetoWriter(const Params& p, const RankLayout& layout, std::unique_ptr<Sink> sink);
  void write_header();
  void write_step(std::span<const Event> events);
  // Metadata, the profiler span and the closing brackets; `start`/`end` bound the session.
  void write_footer(ns_t start, ns_t end);
  std::uint64_t bytes() const { return sink_->bytes_in(); }

 private:
  void begin_event();
  void host_event(const Event& e);
  void host_args(const Event& e);
  void shape_args();
  void python_event(const Event& e);
  void memory_event(const Event& e);
  void comm_args(std::int64_t nelems, bool kernel);
  void runtime_event(const Event& e);
  void gpu_event(const Event& e);
  void kernel_args(const Event& e);
  void launch_flows(const Event& rt, const Event& g);
  void flow(char ph, std::int64_t id, int pid, int tid, ns_t ts, std::string_view cat,
            std::string_view name);
  void time(ns_t ns);      // a timestamp, on the rank's clock
  void duration(ns_t ns);  // a length of time
  void span_fields(ns_t ts, ns_t dur);
  void metadata(std::string_view name, int pid, int tid, ns_t ts, std::string_view key,
                std::string_view value, bool quoted);
  void name_field(const Event& e);
  int host_tid(const Event& e) const;
  void flush_if_large();

  const Params& p_;
  RankLayout l_;
  std::unique_ptr<Sink> sink_;
  bool legacy_ = false;  // the 2021 dialect (Params::kineto_dialect)
  fmt::memory_buffer buf_;
  bool first_ = true;
  std::set<int> streams_;
  bool autograd_seen_ = false;
  std::set<int> workers_seen_;  // host threads beyond main and autograd
  std::string group_ranks_;  // "[0, 1, ...]", shared by every collective
  ns_t shift_ = 0;           // added to every time written: the clock offset, and the base time's change
};

// "1234.567" from nanoseconds: Kineto's microseconds with three decimals.
void format_us(fmt::memory_buffer& out, ns_t ns);
void write_json_string(fmt::memory_buffer& out, std::string_view s);

}  // namespace stepscope::tracegen
