// The Kineto event parser, compiled once per SIMD kernel (see kineto_events.hpp): simdjson's
// On-Demand API takes its kernel from the flags a file is compiled with, so each build of this
// file lives in its own namespace, kernel_<STEPSCOPE_PARSER_KERNEL>, and none of its symbols can
// be taken for another build's.
#include "ingest/kineto_events.hpp"

#include <fmt/core.h>
#include <simdjson.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"

#ifndef STEPSCOPE_PARSER_KERNEL
#define STEPSCOPE_PARSER_KERNEL baseline
#endif
#define STEPSCOPE_KERNEL_NS_(k) kernel_##k
#define STEPSCOPE_KERNEL_NS(k) STEPSCOPE_KERNEL_NS_(k)

namespace stepscope::ingest::STEPSCOPE_KERNEL_NS(STEPSCOPE_PARSER_KERNEL) {
namespace od = simdjson::ondemand;

namespace {

#define STEPSCOPE_KINETO_SCAN_INSIDE_KERNEL
#include "ingest/kineto_scan.hpp"
#undef STEPSCOPE_KINETO_SCAN_INSIDE_KERNEL


// Context for error messages: which event, where.
struct Where {
  const std::string& name;
  const EventBatch& batch;
  std::size_t index;
  [[noreturn]] void fail(std::string_view what) const {
    throw InputError(fmt::format("{}: event {} (byte {}): {}", name, batch.first_index + index,
                                 batch.stream_offset + batch.starts[index] - 1, what));
  }
};

Kind kind_from_category(std::string_view c) {
  struct Entry {
    std::string_view cat;
    Kind kind;
  };
  static constexpr std::array<Entry, 26> table{{
      {"cpu_op", Kind::CpuOp},
      {"Operator", Kind::CpuOp},
      {"user_annotation", Kind::UserAnnotation},
      {"python_function", Kind::PythonFunction},
      {"cuda_runtime", Kind::Runtime},
      {"Runtime", Kind::Runtime},
      {"mtia_runtime", Kind::Runtime},
      {"xpu_runtime", Kind::Runtime},
      {"privateuse1_runtime", Kind::Runtime},
      {"cuda_driver", Kind::Driver},
      {"xpu_driver", Kind::Driver},
      {"privateuse1_driver", Kind::Driver},
      {"kernel", Kind::Kernel},
      {"Kernel", Kind::Kernel},
      {"mtia_ccp_events", Kind::Kernel},
      {"gpu_memcpy", Kind::Memcpy},
      {"Memcpy", Kind::Memcpy},
      {"gpu_memset", Kind::Memset},
      {"Memset", Kind::Memset},
      {"gpu_user_annotation", Kind::GpuAnnotation},
      {"cuda_sync", Kind::GpuSync},
      {"cpu_instant_event", Kind::CpuInstant},
      {"ac2g", Kind::Flow},
      {"async_cpu_to_gpu", Kind::Flow},
      {"fwdbwd", Kind::Flow},
      {"Trace", Kind::TraceSpan},
  }};
  for (const auto& e : table)
    if (e.cat == c) return e.kind;
  if (c == "overhead") return Kind::Overhead;
  return Kind::Other;
}

Phase phase_from(std::string_view ph) {
  if (ph.size() != 1) return Phase::Other;
  switch (ph[0]) {
    case 'X': return Phase::Complete;
    case 'B': return Phase::Begin;
    case 'E': return Phase::End;
    case 'i':
    case 'I':
    case 'n': return Phase::Instant;
    case 's': return Phase::FlowStart;
    case 't': return Phase::FlowStep;
    case 'f': return Phase::FlowEnd;
    case 'C': return Phase::Counter;
    case 'M': return Phase::Metadata;
    default: return Phase::Other;
  }
}

// The key of a field without unescaping; keys in traces never hold escapes, but if one does we
// fall back to the unescaped form.
std::string_view field_key(od::field& f) {
  const char* r = f.key().raw();
  std::size_t n = 0;
  while (r[n] != '"') {
    if (r[n] == '\\') {
      auto k = f.unescaped_key();
      return k.error() ? std::string_view{} : k.value_unsafe();
    }
    ++n;
  }
  return {r, n};
}

bool as_int64(od::value v, std::int64_t& out) {
  // Integers are the common case; only a failed integer read pays for the type check.
  auto i = v.get_int64();
  if (!i.error()) {
    out = i.value_unsafe();
    return true;
  }
  auto d = v.get_double();
  // Outside int64 (or NaN) the conversion is undefined: not an integer this column can hold.
  if (d.error() || !(std::abs(d.value_unsafe()) < 9.2e18)) return false;
  out = static_cast<std::int64_t>(d.value_unsafe());
  return true;
}

bool as_double(od::value v, double& out) {
  auto d = v.get_double();
  if (d.error()) return false;
  out = d.value_unsafe();
  return true;
}

std::string_view without_trailing_space(std::string_view s) {
  while (!s.empty() && scan::is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// A value's text as the file spells it. simdjson's raw token runs up to the next structural
// character, so it carries the whitespace a pretty-printed file puts before the ',' or '}'.
std::string_view raw_text(od::value v) { return without_trailing_space(v.raw_json_token()); }

// A pid or tid: a number, or a label such as "Spans" or "CPU functions". Labels are interned
// and stored at 2^62 and above (string_track_id); a number that large, or beyond int64, is kept
// by its text as a label too, so that no number can be read as a label's id.
// Example: "pid": 9223372036854775807 -> the track labelled "9223372036854775807".
bool as_track_id(od::value v, StringTable& strings, std::int64_t& out) {
  auto t = v.type();
  if (t.error()) return false;
  if (t.value_unsafe() == od::json_type::string) {
    auto s = v.get_string();
    if (s.error()) return false;
    out = string_track_id(strings.intern(s.value_unsafe()));
    return true;
  }
  if (t.value_unsafe() != od::json_type::number) return false;
  if (as_int64(v, out) && !is_string_track_id(out)) return true;
  out = string_track_id(strings.intern(raw_text(v)));
  return true;
}

// A value's whole text, arrays included: raw_json_token() of an array is its '[' alone.
// Example: "Input Dims": [[8, 16], []] -> "[[8, 16], []]".
std::string_view whole_text(od::value v) {
  auto t = v.type();
  if (t.error() || t.value_unsafe() != od::json_type::array) return raw_text(v);
  auto arr = v.get_array();
  if (arr.error()) return {};
  auto raw = arr.value_unsafe().raw_json();
  return raw.error() ? std::string_view{} : without_trailing_space(raw.value_unsafe());
}

bool as_time(od::value v, std::int64_t& out) {
  auto ns = parse_us_to_ns(raw_text(v));
  if (ns) out = *ns;
  return ns.has_value();
}

void read_int3(od::value v, std::int32_t (&dst)[3]) {
  auto arr = v.get_array();
  if (arr.error()) return;
  int k = 0;
  for (auto x : arr.value_unsafe()) {
    std::int64_t n = 0;
    if (k < 3 && !x.error() && as_int64(x.value_unsafe(), n)) dst[k] = static_cast<std::int32_t>(n);
    ++k;
  }
}

// Arguments of one event, gathered before the event's kind decides which are kept.
struct ArgValues {
  std::int64_t correlation = kNone, external_id = kNone, stream = kNone, device = kNone;
  EventExtra extra;
  bool has_extra = false;
  KernelArgs kernel;
  bool has_kernel = false;
  std::string_view meta_name;  // M events: args.name
  bool meta_name_set = false;
};

void parse_args(od::object obj, StringTable& strings, Phase phase, ns_t ts, StrId name,
                ArgValues& a, std::vector<CounterSample>& counters) {
  for (auto fr : obj) {
    if (fr.error()) return;
    od::field f = std::move(fr.value_unsafe());
    std::string_view k = field_key(f);
    od::value v = f.value();
    if (phase == Phase::Counter) {
      double d = 0;
      if (as_double(v, d)) counters.push_back({ts, name, strings.intern(k), d});
      continue;
    }
    if (k == "correlation") {
      as_int64(v, a.correlation);
    } else if (k == "External id" || k == "external id") {
      as_int64(v, a.external_id);
    } else if (k == "stream") {
      as_int64(v, a.stream);
    } else if (k == "device") {
      as_int64(v, a.device);
    } else if (k == "name") {  // kept for M events; their "ph" may come after "args" (keys in any order)
      auto s = v.get_string();
      if (!s.error()) {
        a.meta_name = s.value_unsafe();
        a.meta_name_set = true;
        // Interning keeps the text alive past the next get_string.
        a.meta_name = strings.view(strings.intern(a.meta_name));
      }
    } else if (k == "Sequence number") {
      a.has_extra |= as_int64(v, a.extra.sequence_number);
    } else if (k == "Fwd thread id") {
      a.has_extra |= as_int64(v, a.extra.fwd_thread_id);
    } else if (k == "bytes" || k == "Bytes") {
      a.has_extra |= as_int64(v, a.extra.bytes);
    } else if (k == "memory bandwidth (GB/s)") {
      a.has_extra |= as_double(v, a.extra.bandwidth_gbps);
    } else if (k == "Total Allocated") {
      a.has_extra |= as_int64(v, a.extra.total_allocated);
    } else if (k == "Total Reserved") {
      a.has_extra |= as_int64(v, a.extra.total_reserved);
    } else if (k == "Device Type") {
      std::int64_t x = 0;
      if (as_int64(v, x)) a.extra.device_type = static_cast<std::int32_t>(x), a.has_extra = true;
    } else if (k == "Device Id") {
      std::int64_t x = 0;
      if (as_int64(v, x)) a.extra.device_id = static_cast<std::int32_t>(x), a.has_extra = true;
    } else if (k == "wait_on_stream") {
      a.has_extra |= as_int64(v, a.extra.wait_on_stream);
    } else if (k == "wait_on_cuda_event_record_corr_id") {
      a.has_extra |= as_int64(v, a.extra.wait_on_event_record_corr);
    } else if (k == "Seq") {
      a.has_extra |= as_int64(v, a.extra.collective_seq);
    } else if (k == "Process Group Name") {
      auto pg = v.get_string();
      if (!pg.error()) a.extra.process_group = strings.intern(pg.value_unsafe()), a.has_extra = true;
    } else if (k == "Input Dims") {
      a.extra.input_dims = strings.intern(whole_text(v));
      a.has_extra = true;
    } else if (k == "Input type") {
      a.extra.input_type = strings.intern(whole_text(v));
      a.has_extra = true;
    } else if (k == "grid") {
      read_int3(v, a.kernel.grid);
      a.has_kernel = true;
    } else if (k == "block") {
      read_int3(v, a.kernel.block);
      a.has_kernel = true;
    } else if (k == "registers per thread") {
      std::int64_t x = 0;
      if (as_int64(v, x)) a.kernel.registers_per_thread = static_cast<std::int32_t>(x);
      a.has_kernel = true;
    } else if (k == "shared memory") {
      as_int64(v, a.kernel.shared_memory);
      a.has_kernel = true;
    } else if (k == "warps per SM") {
      as_double(v, a.kernel.warps_per_sm);
      a.has_kernel = true;
    } else if (k == "blocks per SM") {
      as_double(v, a.kernel.blocks_per_sm);
      a.has_kernel = true;
    } else if (k == "est. achieved occupancy %") {
      as_double(v, a.kernel.est_occupancy_pct);
      a.has_kernel = true;
    }
  }
}

// One event object's top-level fields.
struct EventFields {
  Phase phase = Phase::Other;
  bool has_ph = false, has_ts = false;
  StrId name = kNoStr, cat = kNoStr;
  bool has_cat = false;
  std::int64_t pid = 0, tid = 0, flow_id = kNone;
  ns_t ts = 0, dur = 0;
  ArgValues args;
};

void read_string_field(od::value v, const Where& where, const char* what, RankTrace& out, StrId& dst) {
  auto s = v.get_string();
  if (s.error()) where.fail(fmt::format("\"{}\" is not a string", what));
  dst = out.strings.intern(s.value_unsafe());
}

// Dispatches on the key's length first: every event has these few keys, and comparing lengths
// is cheaper than a chain of string compares.
void parse_one_event(od::object obj, const Where& where, RankTrace& out, EventFields& e) {
  for (auto fr : obj) {
    if (fr.error()) where.fail(simdjson::error_message(fr.error()));
    od::field f = std::move(fr.value_unsafe());
    std::string_view k = field_key(f);
    od::value v = f.value();
    switch (k.size()) {
      case 2:
        if (k == "ph") {
          auto s = v.get_string();
          if (s.error()) where.fail("\"ph\" is not a string");
          e.phase = phase_from(s.value_unsafe());
          e.has_ph = true;
        } else if (k == "ts") {
          if (!as_time(v, e.ts)) where.fail("\"ts\" is not a number");
          e.has_ts = true;
        } else if (k == "id") {
          std::int64_t x = 0;
          if (as_int64(v, x)) e.flow_id = x;
        }
        break;
      case 3:
        if (k == "cat") {
          read_string_field(v, where, "cat", out, e.cat);
          e.has_cat = true;
        } else if (k == "pid") {
          if (!as_track_id(v, out.strings, e.pid)) where.fail("\"pid\" is neither a number nor a string");
        } else if (k == "tid") {
          if (!as_track_id(v, out.strings, e.tid)) where.fail("\"tid\" is neither a number nor a string");
        } else if (k == "dur") {
          if (!as_time(v, e.dur)) where.fail("\"dur\" is not a number");
        }
        break;
      case 4:
        if (k == "name") {
          read_string_field(v, where, "name", out, e.name);
        } else if (k == "args") {
          auto o = v.get_object();
          if (o.error()) where.fail("\"args\" is not an object");
          parse_args(o.value_unsafe(), out.strings, e.phase, e.ts, e.name, e.args, out.counters);
        }
        break;
      default:
        break;
    }
  }
  if (!e.has_ph) where.fail("event has no \"ph\" (phase)");
}

CopyKind copy_kind_from_name(std::string_view n) {
  if (n.find("HtoD") != n.npos || n.find("HostToDevice") != n.npos) return CopyKind::HtoD;
  if (n.find("DtoH") != n.npos || n.find("DeviceToHost") != n.npos) return CopyKind::DtoH;
  if (n.find("DtoD") != n.npos || n.find("DeviceToDevice") != n.npos) return CopyKind::DtoD;
  if (n.find("HtoH") != n.npos || n.find("HostToHost") != n.npos) return CopyKind::HtoH;
  if (n.find("PtoP") != n.npos || n.find("Peer") != n.npos) return CopyKind::PtoP;
  return CopyKind::Other;
}

HostMem host_mem_from_name(std::string_view n) {
  if (n.find("Pageable") != n.npos) return HostMem::Pageable;
  if (n.find("Pinned") != n.npos) return HostMem::Pinned;
  return HostMem::Unknown;
}

void store_metadata(const EventFields& e, RankTrace& out) {
  if (!e.args.meta_name_set) return;
  std::string_view what = out.strings.view(e.name);
  if (what == "process_name") out.process_names[e.pid] = std::string(e.args.meta_name);
  else if (what == "thread_name") out.thread_names[e.tid] = std::string(e.args.meta_name);
}

bool is_launch_flow(std::string_view cat) { return cat == "ac2g" || cat == "async_cpu_to_gpu"; }

Kind kind_of(const EventFields& e, TraceLayout layout, const StringTable& strings) {
  if (e.phase == Phase::FlowStart || e.phase == Phase::FlowEnd || e.phase == Phase::FlowStep) return Kind::Flow;
  if (!e.has_cat) return layout == TraceLayout::LegacyArray ? Kind::CpuOp : Kind::Other;
  return kind_from_category(strings.view(e.cat));
}

// The row of an event that is kept; its kernel args and extras go to `out`'s side tables.
EventRow row_of(const EventFields& e, Kind kind, RankTrace& out) {
  EventRow r;
  r.ts = e.ts;
  r.dur = e.phase == Phase::Complete && e.dur > 0 ? e.dur : 0;
  r.name = e.name;
  r.category = e.cat;
  r.kind = kind;
  r.phase = e.phase;
  if (kind == Kind::Memcpy) {
    std::string_view name = out.strings.view(e.name);
    r.copy_kind = copy_kind_from_name(name);
    r.host_mem = host_mem_from_name(name);
  }
  r.pid = e.pid;
  r.tid = e.tid;
  // A flow's id is the correlation id of the launch it ties to its kernel (ac2g), so flows keep
  // it in the correlation column rather than in a side record.
  r.correlation = kind == Kind::Flow && e.flow_id != kNone ? e.flow_id : e.args.correlation;
  r.external_id = e.args.external_id;
  r.stream = e.args.stream;
  r.device = static_cast<std::int32_t>(e.args.device);
  if (e.args.has_kernel) r.kernel_args = out.add_kernel_args(e.args.kernel);
  if (e.args.has_extra) r.extra = out.add_extra(e.args.extra);
  return r;
}

void append_event(const EventFields& e, TraceLayout layout, RankTrace& out) {
  const Kind kind = kind_of(e, layout, out.strings);
  if (kind == Kind::Flow && is_launch_flow(out.strings.view(e.cat))) {
    ++out.launch_flow_counts[e.cat];
    return;
  }
  out.events.append(row_of(e, kind, out));
}

}  // namespace

namespace {

// ---- The fast path: one event read straight from its bytes -----------------------------------
//
// It fills EventFields from the same keys, with the same meanings, as parse_one_event and
// parse_args do through simdjson; each reader answers false to leave the event to them.

struct Cursor {
  const char* p;
  const char* end;
  void ws() { p = scan::skip_ws(p, end); }
  bool at(char c) const { return p < end && *p == c; }
  bool starts_number() const { return p < end && (*p == '-' || scan::is_digit(*p)); }
  // A number at the cursor: its text, and whether it is an integer; false for anything else.
  bool number(std::string_view& text, bool& integer) { return starts_number() && scan::number(p, end, text, integer); }
};

// as_int64 on the value at the cursor: a number gives its value (`got`), or none when it is out
// of int64's range; any other value is passed over with none, as a failed get_int64 leaves it.
bool int_value(Cursor& c, std::int64_t& out, bool& got) {
  got = false;
  if (!c.starts_number()) return scan::skip_value(c.p, c.end, 0);
  std::string_view text;
  bool integer = false;
  if (!c.number(text, integer)) return false;
  std::int64_t v = 0;
  const scan::Read r = scan::int64_of(text, integer, v);
  if (r == scan::Read::Value) out = v, got = true;
  return r != scan::Read::GiveUp;
}

bool int_value(Cursor& c, std::int64_t& out) {
  bool got = false;
  return int_value(c, out, got);
}

// as_double on the value at the cursor, with the same reading of other values as int_value.
bool double_value(Cursor& c, double& out, bool& got) {
  got = false;
  if (!c.starts_number()) return scan::skip_value(c.p, c.end, 0);
  std::string_view text;
  bool integer = false;
  if (!c.number(text, integer)) return false;
  got = scan::double_of(text, out) == scan::Read::Value;
  return got;
}

bool double_value(Cursor& c, double& out) {
  bool got = false;
  return double_value(c, out, got);
}

// An int32 column (registers, device ids) from as_int64, as parse_args casts it.
bool int32_value(Cursor& c, std::int32_t& out, bool& got) {
  std::int64_t v = 0;
  if (!int_value(c, v, got)) return false;
  if (got) out = static_cast<std::int32_t>(v);
  return true;
}

// A string value interned; a value of another type is passed over with `got` false.
bool interned_string(Cursor& c, StringTable& strings, StrId& out, bool& got) {
  got = false;
  if (!c.at('"')) return scan::skip_value(c.p, c.end, 0);
  std::string_view s;
  if (!scan::string(c.p, c.end, s)) return false;
  out = strings.intern(s);
  got = true;
  return true;
}

// grid / block: up to three integers of an array (read_int3).
bool int3_value(Cursor& c, std::int32_t (&dst)[3]) {
  if (!c.at('[')) return scan::skip_value(c.p, c.end, 0);
  ++c.p;
  c.ws();
  if (c.at(']')) return ++c.p, true;
  for (int k = 0;; ++k) {
    std::int64_t v = 0;
    bool got = false;
    if (!int_value(c, v, got)) return false;
    if (got && k < 3) dst[k] = static_cast<std::int32_t>(v);
    c.ws();
    if (c.at(']')) return ++c.p, true;
    if (!c.at(',')) return false;
    ++c.p;
    c.ws();
  }
}

// One member of args, by parse_args's rules.
bool arg_member(Cursor& c, std::string_view k, const EventFields& e, StringTable& strings, ArgValues& a,
                std::vector<CounterSample>& counters) {
  bool got = false;
  if (e.phase == Phase::Counter) {
    double d = 0;
    if (!double_value(c, d, got)) return false;
    if (got) counters.push_back({e.ts, e.name, strings.intern(k), d});
    return true;
  }
  auto extra_int = [&](std::int64_t& dst) {
    const bool ok = int_value(c, dst, got);
    a.has_extra |= got;
    return ok;
  };
  auto kernel_arg = [&](bool ok) {
    a.has_kernel = true;
    return ok;
  };
  if (k == "correlation") return int_value(c, a.correlation);
  if (k == "External id" || k == "external id") return int_value(c, a.external_id);
  if (k == "stream") return int_value(c, a.stream);
  if (k == "device") return int_value(c, a.device);
  // Kept for M events, whatever comes first: a writer that sorts keys puts "args" before "ph".
  if (k == "name") {
    StrId id = kNoStr;
    if (!interned_string(c, strings, id, got)) return false;
    if (got) a.meta_name = strings.view(id), a.meta_name_set = true;
    return true;
  }
  if (k == "Sequence number") return extra_int(a.extra.sequence_number);
  if (k == "Fwd thread id") return extra_int(a.extra.fwd_thread_id);
  if (k == "bytes" || k == "Bytes") return extra_int(a.extra.bytes);
  if (k == "Total Allocated") return extra_int(a.extra.total_allocated);
  if (k == "Total Reserved") return extra_int(a.extra.total_reserved);
  if (k == "wait_on_stream") return extra_int(a.extra.wait_on_stream);
  if (k == "wait_on_cuda_event_record_corr_id") return extra_int(a.extra.wait_on_event_record_corr);
  if (k == "Seq") return extra_int(a.extra.collective_seq);
  if (k == "memory bandwidth (GB/s)") {
    const bool ok = double_value(c, a.extra.bandwidth_gbps, got);
    a.has_extra |= got;
    return ok;
  }
  if (k == "Device Type" || k == "Device Id") {
    const bool ok = int32_value(c, k == "Device Type" ? a.extra.device_type : a.extra.device_id, got);
    a.has_extra |= got;
    return ok;
  }
  if (k == "Process Group Name") {
    const bool ok = interned_string(c, strings, a.extra.process_group, got);
    a.has_extra |= got;
    return ok;
  }
  if (k == "Input Dims" || k == "Input type") {
    std::string_view text;
    if (!scan::value_text(c.p, c.end, text)) return false;
    (k == "Input Dims" ? a.extra.input_dims : a.extra.input_type) = strings.intern(text);
    a.has_extra = true;
    return true;
  }
  if (k == "grid") return kernel_arg(int3_value(c, a.kernel.grid));
  if (k == "block") return kernel_arg(int3_value(c, a.kernel.block));
  if (k == "registers per thread") return kernel_arg(int32_value(c, a.kernel.registers_per_thread, got));
  if (k == "shared memory") return kernel_arg(int_value(c, a.kernel.shared_memory));
  if (k == "warps per SM") return kernel_arg(double_value(c, a.kernel.warps_per_sm));
  if (k == "blocks per SM") return kernel_arg(double_value(c, a.kernel.blocks_per_sm));
  if (k == "est. achieved occupancy %") return kernel_arg(double_value(c, a.kernel.est_occupancy_pct));
  return scan::skip_value(c.p, c.end, 0);
}

// The members of an object at the cursor, each handed to `member(key)` with the cursor on its
// value. Example: `{"a": 1, "b": [2]}` -> member("a"), member("b").
template <class Member>
bool object_members(Cursor& c, Member&& member) {
  if (!c.at('{')) return false;
  ++c.p;
  c.ws();
  if (c.at('}')) return ++c.p, true;
  for (;;) {
    std::string_view key;
    if (!scan::string(c.p, c.end, key)) return false;
    c.ws();
    if (!c.at(':')) return false;
    ++c.p;
    c.ws();
    if (!member(key)) return false;
    c.ws();
    if (c.at('}')) return ++c.p, true;
    if (!c.at(',')) return false;
    ++c.p;
    c.ws();
  }
}

// "ts" or "dur": a number whose text parse_us_to_ns reads.
bool time_value(Cursor& c, ns_t& out) {
  std::string_view text;
  bool integer = false;
  if (!c.number(text, integer)) return false;
  const auto ns = parse_us_to_ns(text);
  if (ns) out = *ns;
  return ns.has_value();
}

// "pid" or "tid" by as_track_id's rules: a label is interned; a number is kept unless it
// cannot be told from a label, and then its text is interned.
bool track_value(Cursor& c, StringTable& strings, std::int64_t& out) {
  if (c.at('"')) {
    std::string_view s;
    if (!scan::string(c.p, c.end, s)) return false;
    out = string_track_id(strings.intern(s));
    return true;
  }
  std::string_view text;
  bool integer = false;
  if (!c.number(text, integer)) return false;
  std::int64_t v = 0;
  const scan::Read r = scan::int64_of(text, integer, v);
  if (r == scan::Read::GiveUp) return false;
  out = r == scan::Read::Value && !is_string_track_id(v) ? v : string_track_id(strings.intern(text));
  return true;
}

bool event_member(Cursor& c, std::string_view k, RankTrace& out, EventFields& e) {
  StrId id = kNoStr;
  bool got = false;
  switch (k.size()) {
    case 2:
      if (k == "ph") {
        std::string_view ph;
        if (!c.at('"') || !scan::string(c.p, c.end, ph)) return false;
        e.phase = phase_from(ph);
        e.has_ph = true;
        return true;
      }
      if (k == "ts") {
        if (!time_value(c, e.ts)) return false;
        e.has_ts = true;
        return true;
      }
      if (k == "id") {
        std::int64_t x = 0;
        if (!int_value(c, x, got)) return false;
        if (got) e.flow_id = x;
        return true;
      }
      break;
    case 3:
      if (k == "cat") {
        if (!c.at('"') || !interned_string(c, out.strings, e.cat, got)) return false;
        e.has_cat = true;
        return true;
      }
      if (k == "pid") return track_value(c, out.strings, e.pid);
      if (k == "tid") return track_value(c, out.strings, e.tid);
      if (k == "dur") return time_value(c, e.dur);
      break;
    case 4:
      if (k == "name") {
        if (!c.at('"') || !interned_string(c, out.strings, id, got)) return false;
        e.name = id;
        return true;
      }
      if (k == "args")
        return object_members(c, [&](std::string_view key) {
          return arg_member(c, key, e, out.strings, e.args, out.counters);
        });
      break;
    default:
      break;
  }
  return scan::skip_value(c.p, c.end, 0);
}

// Where event i of a batch may end: the next event's opening brace, or the batch's closing ']'.
const char* event_bound(const EventBatch& batch, std::size_t i) {
  return batch.json() + (i + 1 < batch.count() ? batch.starts[i + 1] : batch.text_size - 1);
}

// The closing brace of event i, found back from its bound across the separator, which must be
// whitespace around one ',' (none after the last event); null when it is anything else.
const char* event_close(const EventBatch& batch, std::size_t i) {
  const char* p = event_bound(batch, i);
  const char* const begin = batch.json() + batch.starts[i];
  auto back_over_ws = [&] {
    while (p > begin && scan::is_ws(p[-1])) --p;
  };
  back_over_ws();
  if (i + 1 < batch.count()) {
    if (p == begin || p[-1] != ',') return nullptr;
    --p;
    back_over_ws();
  }
  return p > begin && p[-1] == '}' ? p - 1 : nullptr;
}

// Event i, ending at `close`, through the fast path: false leaves it to simdjson.
bool fast_event(const EventBatch& batch, std::size_t i, const char* close, RankTrace& out, EventFields& e) {
  Cursor c{batch.json() + batch.starts[i], close + 1};
  return object_members(c, [&](std::string_view key) { return event_member(c, key, out, e); }) && c.p == close + 1;
}

}  // namespace

namespace {

// Times at or beyond 2^62 ns (146 years) are no profile's: skipped, so that end = ts + dur and
// every difference of two times stays inside int64.
constexpr std::int64_t kMaxTraceTimeNs = std::int64_t{1} << 62;

bool time_in_range(std::int64_t ts, std::int64_t dur) {
  return ts > -kMaxTraceTimeNs && ts < kMaxTraceTimeNs && dur > -kMaxTraceTimeNs && dur < kMaxTraceTimeNs;
}

}  // namespace

namespace {

// Event i, ending at `close`, through simdjson, for what the fast path leaves: the event's own
// text, alone.
void simdjson_event(const EventBatch& batch, std::size_t i, const char* close, od::parser& parser, const Where& where,
                    RankTrace& out, EventFields& e) {
  const char* const begin = batch.json() + batch.starts[i];
  auto doc = parser.iterate(begin, static_cast<std::size_t>(close + 1 - begin), batch.json_capacity() - batch.starts[i]);
  if (doc.error()) where.fail(simdjson::error_message(doc.error()));
  auto obj = doc.get_object();
  if (obj.error()) where.fail("not a JSON object");
  parse_one_event(obj.value_unsafe(), where, out, e);
}

// The fields of event i: by the fast path, or, where it gives up, by simdjson from a clean
// start (the counter samples the fast path stored for the event are taken back first). True
// when the fast path read it.
bool read_event(const EventBatch& batch, std::size_t i, EventPath path, od::parser& parser, const Where& where,
                RankTrace& out, EventFields& e) {
  const char* const close = event_close(batch, i);
  if (!close) where.fail("malformed JSON after this event");
  const std::size_t counters = out.counters.size();
  if (path == EventPath::Fast && fast_event(batch, i, close, out, e)) {
    if (!e.has_ph) where.fail("event has no \"ph\" (phase)");
    return true;
  }
  out.counters.resize(counters);
  e = EventFields{};
  simdjson_event(batch, i, close, parser, where, out, e);
  return false;
}

void parse_batch(const EventBatch& batch, EventPath path, od::parser& parser, TraceLayout layout,
                 const std::string& name, RankTrace& out, BatchStats& stats) {
  Where where{name, batch, 0};
  for (std::size_t i = 0; i < batch.count(); ++i) {
    where.index = i;
    EventFields e;
    stats.fast_events += read_event(batch, i, path, parser, where, out, e);
    if (e.phase == Phase::Metadata) {
      store_metadata(e, out);
      continue;
    }
    if (e.phase == Phase::Counter) continue;  // samples already stored with the args
    if (!e.has_ts) {
      ++stats.missing_ts;
      continue;
    }
    if (!time_in_range(e.ts, e.dur)) {
      ++stats.time_out_of_range;
      continue;
    }
    append_event(e, layout, out);
  }
}

// One thread's parser: simdjson's buffers grow to the largest run of events and are reused.
class Parser final : public EventParser {
 public:
  explicit Parser(EventPath path) : path_(path) {}
  void parse(const EventBatch& batch, TraceLayout layout, const std::string& name, RankTrace& out,
             BatchStats& stats) override {
    parse_batch(batch, path_, parser_, layout, name, out, stats);
  }

 private:
  EventPath path_;
  od::parser parser_;
};

}  // namespace

std::unique_ptr<EventParser> make_parser(EventPath path) { return std::make_unique<Parser>(path); }

}  // namespace stepscope::ingest::STEPSCOPE_KERNEL_NS(STEPSCOPE_PARSER_KERNEL)
