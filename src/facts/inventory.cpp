// The input inventory: what one input file holds (recorder, recording options, activity kinds,
// processes, devices, ranks, time window, start-up only, evidence of a GPU), in one pass over its
// events after the name facts.
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "facts/name_match.hpp"
#include "stepscope/facts.hpp"

namespace stepscope {

namespace {

using namespace facts_detail;

void bump(InputInventory& inv, Activity a) { ++inv.counts[static_cast<std::size_t>(a)]; }

// The activity an event is, or none (flows, counters, the profiler's own spans).
//   cpu_op "aten::mm" -> HostOps; kernel "ncclKernel_AllReduce..." -> CommKernels
void count_event(const RankTrace& t, const RankFacts& f, std::size_t i, InputInventory& inv) {
  const NameFact& n = f.of_event(t, i);
  switch (t.events.kind[i]) {
    case Kind::CpuOp:
      bump(inv, Activity::HostOps);
      if (const std::optional<EventExtra> x = t.extra_of(i); x && x->input_dims != kNoStr) bump(inv, Activity::Shapes);
      if (n.collective != Collective::None || n.role == HostRole::Comm) bump(inv, Activity::HostCollectives);
      break;
    case Kind::UserAnnotation:
      bump(inv, Activity::Annotations);
      if (n.collective != Collective::None || n.role == HostRole::Comm) bump(inv, Activity::HostCollectives);
      break;
    case Kind::PythonFunction: bump(inv, Activity::PythonFrames); break;
    case Kind::Runtime:
    case Kind::Driver: bump(inv, Activity::RuntimeCalls); break;
    case Kind::Kernel: bump(inv, n.is_comm() ? Activity::CommKernels : Activity::ComputeKernels); break;
    case Kind::Memcpy: bump(inv, Activity::Copies); break;
    case Kind::Memset: bump(inv, Activity::Memsets); break;
    case Kind::CpuInstant:
      if (t.name_of(i) == "[memory]") bump(inv, Activity::MemoryEvents);
      break;
    default: break;
  }
}

// A top-level header flag the profiler wrote ("with_stack": 1), true or false.
bool header_flag(const RankTrace& t, std::string_view key) {
  for (const auto& [k, v] : t.metadata)
    if (k == key) return v == "1" || v == "true" || v == "True";
  return false;
}

void recording_options(const RankTrace& t, InputInventory& inv) {
  auto option = [&](const char* name, Activity evidence) {
    if (inv.has(evidence) || header_flag(t, name)) inv.options.emplace_back(name);
  };
  option("with_stack", Activity::PythonFrames);
  option("record_shapes", Activity::Shapes);
  option("profile_memory", Activity::MemoryEvents);
}

std::string format_of(const RankTrace& t) {
  switch (t.layout) {
    case TraceLayout::Kineto:
      return t.schema_version >= 0 ? fmt::format("Kineto JSON, schema {}", t.schema_version) : "Kineto JSON";
    case TraceLayout::LegacyArray: return "JSON event array";
    case TraceLayout::NsysSqlite: return "SQLite export";
  }
  return "";
}

}  // namespace

Recorder recorder_of(TraceLayout layout) {
  switch (layout) {
    case TraceLayout::Kineto: return Recorder::TorchProfiler;
    case TraceLayout::LegacyArray: return Recorder::AutogradProfiler;
    case TraceLayout::NsysSqlite: return Recorder::NsightSystems;
  }
  return Recorder::TorchProfiler;
}

namespace {

// Processes, threads, GPUs and streams; and how many ranks the file holds. A merged job file
// names its processes after ranks, or has several processes each launching GPU work.
void processes_and_ranks(const RankTrace& t, const RankFacts& f, InputInventory& inv) {
  std::set<std::int64_t> pids, devices, launching;
  for (const auto& tr : t.host_tracks) pids.insert(tr.pid);
  for (const auto& tr : t.gpu_tracks) devices.insert(tr.pid);
  for (const auto& tr : t.host_tracks)
    for (auto i : tr.events)
      if (f.of_event(t, i).has(kNameLaunchCall)) {
        launching.insert(tr.pid);
        break;
      }
  inv.processes = static_cast<int>(pids.size());
  inv.threads = static_cast<int>(t.host_tracks.size());
  inv.gpus = static_cast<int>(devices.size());
  inv.streams = static_cast<int>(t.gpu_tracks.size());
  std::set<int> named;
  for (const auto& [pid, name] : t.process_names)
    if (const int r = rank_in_process_name(name); r >= 0) named.insert(r);
  if (named.size() >= 2) {
    inv.ranks_in_file = static_cast<int>(named.size());
    inv.ranks_evidence = fmt::format("its processes are named after {} ranks (\"RANK n\")", named.size());
  } else if (launching.size() >= 2 && devices.size() >= 2) {
    inv.ranks_in_file = static_cast<int>(std::min(launching.size(), devices.size()));
    inv.ranks_evidence =
        fmt::format("{} processes launch GPU work on {} GPUs", launching.size(), devices.size());
  }
}

// Share of the window that one-time calls must hold, with no step and no compute kernel, for the
// input to be start-up only; and the launches past which the program was running kernels (whose
// records were lost: that is incomplete_gpu_records, not start-up).
constexpr double kStartupOnlyShare = 0.5;
constexpr std::uint64_t kStartupMaxLaunches = 8;

void startup_only(const RankTrace& t, const RankFacts& f, InputInventory& inv) {
  if (inv.has(Activity::ComputeKernels) || f.launch_calls > kStartupMaxLaunches || inv.window_ns <= 0) return;
  std::uint64_t markers = 0;
  ns_t setup = 0;
  std::string longest;
  ns_t longest_ns = 0;
  for (const auto& tr : t.host_tracks)
    for (auto i : tr.events) {
      const NameFact& n = f.of_event(t, i);
      markers += n.has(kNameProfilerStep) || n.has(kNameServing) || n.role == HostRole::Loader;
      if (!n.has(kNameOneTimeSetup)) continue;
      setup += t.events.dur[i];
      if (t.events.dur[i] > longest_ns) longest_ns = t.events.dur[i], longest = std::string(t.name_of(i));
    }
  for (const auto& s : f.startup) setup += s.end - s.start;
  if (markers > 0 || static_cast<double>(setup) < kStartupOnlyShare * static_cast<double>(inv.window_ns)) return;
  inv.startup_only = true;
  inv.startup_evidence =
      fmt::format("no step and no compute kernel; one-time calls (context creation, allocation, module loading, "
                  "autotuning) hold {:.1f} ms of its {:.1f} ms, the longest {} ({:.1f} ms)",
                  static_cast<double>(setup) / 1e6, static_cast<double>(inv.window_ns) / 1e6,
                  longest.empty() ? std::string("a start-up call") : longest, static_cast<double>(longest_ns) / 1e6);
}

// The first thing in view that says a GPU was used, in words; "" for none.
std::string device_evidence(const RankTrace& t, const RankFacts& f, const InputInventory& inv) {
  if (f.device.present && f.device.source == "device properties") return "device properties (" + f.device.describe() + ")";
  if (inv.gpu_side()) return "GPU records";
  if (f.launch_calls > 0) return "kernel launches on the host";
  if (f.device.present) return f.device.source;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Kind k = t.events.kind[i];
    if (k == Kind::PythonFunction || is_gpu_kind(k)) continue;
    if (f.of_event(t, i).has(kNameDeviceApi)) return fmt::format("GPU library or runtime names such as {}", t.name_of(i));
  }
  return "";
}

}  // namespace

InputInventory take_inventory(const RankTrace& t, const RankFacts& f) {
  InputInventory inv;
  inv.recorder = recorder_of(t.layout);
  inv.format = format_of(t);
  for (std::size_t i = 0; i < t.events.size(); ++i) count_event(t, f, i, inv);
  recording_options(t, inv);
  processes_and_ranks(t, f, inv);
  inv.window_ns = std::max<ns_t>(0, t.last_end() - t.first_ts());
  startup_only(t, f, inv);
  inv.device_evidence = device_evidence(t, f, inv);
  return inv;
}

const char* recorder_name(Recorder r) {
  switch (r) {
    case Recorder::TorchProfiler: return "torch.profiler";
    case Recorder::AutogradProfiler: return "autograd_profiler";
    case Recorder::NsightSystems: return "nsys";
  }
  return "torch.profiler";
}

const char* recorder_label(Recorder r) {
  switch (r) {
    case Recorder::TorchProfiler: return "torch.profiler (Kineto)";
    case Recorder::AutogradProfiler: return "legacy autograd profiler";
    case Recorder::NsightSystems: return "Nsight Systems";
  }
  return "torch.profiler (Kineto)";
}

const char* activity_name(Activity a) {
  static constexpr const char* kNames[kActivityCount] = {
      "host_ops", "annotations", "python_frames", "runtime_calls",   "compute_kernels", "comm_kernels",
      "copies",   "memsets",     "host_collectives", "memory_events", "shapes"};
  return kNames[static_cast<int>(a)];
}

const char* claim_name(Claim c) {
  switch (c) {
    case Claim::Bound: return "bound";
    case Claim::CommunicationBound: return "communication_bound";
    case Claim::HostLevers: return "host_levers";
    case Claim::RankComparison: return "rank_comparison";
    case Claim::Stability: return "stability";
  }
  return "bound";
}

namespace {

std::string plural(std::uint64_t n, std::string_view what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : what.ends_with('s') ? "es" : "s");
}

std::string duration_text(ns_t ns) {
  if (ns >= 1'000'000'000) return fmt::format("{:.2f} s", static_cast<double>(ns) / 1e9);
  return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
}

}  // namespace

std::string describe_inventory(const InputInventory& inv) {
  std::string s = fmt::format("{}: {}, {}", recorder_label(inv.recorder), plural(static_cast<std::uint64_t>(inv.processes), "process"),
                              plural(static_cast<std::uint64_t>(inv.threads), "thread"));
  if (inv.gpus > 0) s += fmt::format(", {} ({})", plural(static_cast<std::uint64_t>(inv.gpus), "GPU"),
                                     plural(static_cast<std::uint64_t>(inv.streams), "stream"));
  if (inv.ranks_in_file > 1) s += fmt::format(", {} ranks", inv.ranks_in_file);
  std::string kinds;
  auto add = [&](Activity a, std::string_view label) {
    if (inv.has(a)) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", label, inv.count(a));
  };
  add(Activity::HostOps, "host ops");
  add(Activity::Annotations, "annotations");
  add(Activity::RuntimeCalls, "runtime calls");
  add(Activity::ComputeKernels, "kernels");
  add(Activity::CommKernels, "comm kernels");
  add(Activity::Copies, "copies");
  add(Activity::Memsets, "memsets");
  s += "; " + (kinds.empty() ? std::string("no host op, runtime call or GPU record") : kinds);
  for (const auto& o : inv.options) s += "; " + o;
  s += "; " + duration_text(inv.window_ns);
  if (inv.startup_only) s += "; start-up only";
  return s;
}

std::string device_line(const RankFacts& f) {
  if (f.device.present) return f.device.describe();
  return f.inventory.gpu_job() ? "GPU of unknown model" : "CPU only";
}

std::string recording_advice(Recorder r, std::string_view what) {
  if (r == Recorder::NsightSystems) {
    if (what == "gpu") return "nsys profile --trace=cuda,nvtx,osrt (add --cuda-graph-trace=node for CUDA graphs), then nsys export --type sqlite";
    if (what == "host") return "nsys profile --trace=cuda,nvtx,osrt with NVTX ranges around the training step (torch.cuda.nvtx.range or emit_nvtx)";
    if (what == "steps") return "mark each iteration with an NVTX range (torch.cuda.nvtx.range_push('step')) and pass it as --step-range";
    if (what == "more_steps") return "capture at least 3 iterations past warm-up (a longer --duration or capture range)";
    if (what == "warm") return "start the capture after warm-up: nsys profile --capture-range=cudaProfilerApi, and call torch.cuda.profiler.start() a few steps in";
    if (what == "lean") return "leave out --backtrace and --sample=cpu when judging host time";
    if (what == "ranks") return "write one report per rank: nsys profile -o report_%q{RANK}";
    return "";
  }
  if (r == Recorder::AutogradProfiler) {
    if (what == "lean") return "record without with_stack and record_shapes when judging host time";
    return "record with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
           "schedule=torch.profiler.schedule(wait=1, warmup=2, active=3)) and prof.step() every iteration: the "
           "legacy autograd profiler records no GPU timeline";
  }
  if (what == "gpu")
    return "record again with ProfilerActivity.CUDA and let the profiler context exit normally (prof.stop() or the end "
           "of the with block) before exporting";
  if (what == "host") return "record with ProfilerActivity.CPU as well as CUDA, and export the whole trace, not a filtered view";
  if (what == "steps") return "call prof.step() once per iteration so that every step is marked";
  if (what == "more_steps") return "record at least 3 active steps: torch.profiler.schedule(wait=1, warmup=1, active=3)";
  if (what == "warm")
    return "profile warm steps: torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=2, active=3)) "
           "and call prof.step() every iteration";
  if (what == "lean") return "re-record without with_stack, record_shapes and profile_memory to judge host and launch time";
  if (what == "ranks") return "write one trace per rank: tensorboard_trace_handler(dir) names each file after its worker";
  return "";
}

}  // namespace stepscope
