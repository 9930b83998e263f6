// Ingest throughput and memory against a bare simdjson DOM parse of the same bytes, in one run.
//
//   bench_ingest TRACE [--jobs N]
//   bench_ingest --bare TRACE     one DOM parse in this (fresh) process: prints its seconds
//   bench_ingest --bare-warm TRACE  the second of two DOM parses with one parser: its seconds
//   bench_ingest --decode TRACE   igzip's decode of a .gz trace alone: prints its seconds
//   bench_ingest --stages TRACE   each analysis of the rank on its own, one thread: where the
//                                 time after reading goes
//
// The two single-figure modes are the baselines scripts/run-bench times stepscope against, each
// in a process of its own as the command is.
//
// Order matters: the streaming ingest runs first, so the peak RSS read right after it is the
// ingest's own; only then is the whole file decoded into memory for the baseline parse.
#include <fmt/core.h>
#include <isa-l.h>
#include <simdjson.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stepscope/analysis.hpp"
#include "stepscope/clock_alignment.hpp"
#include "stepscope/footgun_detector.hpp"
#include "stepscope/ingest.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Memory figures are in MB (10^6 bytes), the unit of the JSON sizes they are compared with; the
// kernel reports KiB.
double kib_to_mb(long kib) { return static_cast<double>(kib) * 1024.0 / 1e6; }

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return kib_to_mb(ru.ru_maxrss);  // ru_maxrss is in KiB on Linux
}

// Resident and peak resident size now, from /proc/self/status (VmRSS, VmHWM), in MB.
std::pair<double, double> rss_now_and_peak_mb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return {0, 0};
  char line[256];
  double now = 0, peak = 0;
  while (std::fgets(line, sizeof line, f)) {
    long kb = 0;
    if (std::sscanf(line, "VmRSS: %ld kB", &kb) == 1) now = kib_to_mb(kb);
    if (std::sscanf(line, "VmHWM: %ld kB", &kb) == 1) peak = kib_to_mb(kb);
  }
  std::fclose(f);
  return {now, peak};
}

// Sets the peak resident size back to the current one (Linux 4.0+), so that the next reading of
// VmHWM is the peak of the stage that follows alone, not of the whole run.
void reset_peak_rss() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

std::string read_all(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string s;
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

// Whole-buffer igzip decode into a padded string, for the baseline.
simdjson::padded_string decode(const std::string& raw, std::size_t expected) {
  bool gz = raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f &&
            static_cast<unsigned char>(raw[1]) == 0x8b;
  if (!gz) return simdjson::padded_string(raw);
  simdjson::padded_string out(expected);
  inflate_state st{};
  isal_inflate_init(&st);
  st.crc_flag = ISAL_GZIP;
  st.next_in = reinterpret_cast<std::uint8_t*>(const_cast<char*>(raw.data()));
  st.avail_in = static_cast<std::uint32_t>(raw.size());
  st.next_out = reinterpret_cast<std::uint8_t*>(out.data());
  st.avail_out = static_cast<std::uint32_t>(expected);
  isal_inflate(&st);
  return out;
}

struct Run {
  double secs = 0;
  std::uint64_t bytes = 0;
  std::size_t events = 0;
};

Run time_ingest(const std::string& path, int jobs, bool with_analysis) {
  stepscope::IngestOptions o;
  o.jobs = jobs;
  auto t0 = Clock::now();
  stepscope::Trace t = stepscope::read_traces({path}, o);
  if (with_analysis) {
    auto r = stepscope::analyze(t);
    (void)r;
  }
  Run run{seconds_since(t0), t.ranks[0].bytes_read, t.ranks[0].events.size()};
  return run;
}

// The analysis alone, on a trace read once: the best of three runs without the drill-down and
// with it, so their ratio is the drill-down's cost on this trace.
struct AnalyzeCost {
  double base_secs = 0, full_secs = 0;
};

double best_of_three(const stepscope::Trace& t, const stepscope::AnalyzeOptions& o) {
  double best = 1e300;
  for (int k = 0; k < 3; ++k) {
    auto t0 = Clock::now();
    auto r = stepscope::analyze(t, o);
    best = std::min(best, seconds_since(t0));
    (void)r;
  }
  return best;
}

AnalyzeCost time_analyze(const std::string& path) {
  stepscope::IngestOptions io;
  io.jobs = 1;
  const stepscope::Trace t = stepscope::read_traces({path}, io);
  stepscope::AnalyzeOptions base, full;
  base.jobs = full.jobs = 1;
  base.with_drilldown = false;
  return {best_of_three(t, base), best_of_three(t, full)};
}

}  // namespace

int run_bench(int argc, char** argv);

// The size a gzip member says its data has (ISIZE, the last 4 bytes: the size modulo 4 GiB).
std::size_t gzip_size(const std::string& raw) {
  std::uint32_t isize = 0;
  std::memcpy(&isize, raw.data() + raw.size() - 4, 4);
  return isize;
}

// Bytes in use, not reserved: the reader reserves its columns from an estimate of the event
// count, and pages past the rows written are never touched, so they cost no resident memory.
template <class T>
std::size_t held(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}
template <class W, class N>
std::size_t held(const stepscope::NarrowColumn<W, N>& c) {
  return c.bytes_used();
}
template <class T, class C>
std::size_t held(const stepscope::DictColumn<T, C>& c) {
  return c.bytes_used();
}
template <class T, T kAbsent>
std::size_t held(const stepscope::BasicSparseColumn<T, kAbsent>& c) {
  return c.bytes_used();
}

// What the rank's model holds, column by column: the bytes per event that the peak RSS starts from.
void print_model_bytes(const stepscope::RankTrace& t) {
  const auto& e = t.events;
  std::size_t tracks = 0;
  for (const auto* side : {&t.host_tracks, &t.gpu_tracks})
    for (const auto& k : *side) tracks += held(k.events);
  const std::pair<const char*, std::size_t> parts[] = {
      {"ts, dur", held(e.ts) + held(e.dur)},
      {"name, category", held(e.name) + held(e.category)},
      {"kind, phase, copy", held(e.kind) + held(e.phase) + held(e.copy_kind) + held(e.host_mem)},
      {"track", held(e.track)},
      {"correlation, ext id", held(e.correlation) + held(e.external_id)},
      {"stream, device", held(e.stream) + held(e.device)},
      {"side indexes", held(e.kernel_args) + held(e.extra)},
      {"kernel args", t.kernel_args.bytes_used()},
      {"extras", t.extras.bytes_used()},
      {"track indexes", tracks},
  };
  std::size_t total = 0;
  for (const auto& [name, bytes] : parts) total += bytes;
  const double n = static_cast<double>(std::max<std::size_t>(1, e.size()));
  fmt::print("  model of {} events: {:.1f} MB, {:.1f} B/event ({} extras, {} distinct kernel args)\n", e.size(),
             static_cast<double>(total) / 1e6, static_cast<double>(total) / n, t.extras.size(), t.kernel_args.size());
  for (const auto& [name, bytes] : parts)
    fmt::print("    {:<22} {:7.1f} MB {:6.1f} B/event\n", name, static_cast<double>(bytes) / 1e6,
               static_cast<double>(bytes) / n);
}

// Each analysis of one rank timed on its own (best of three), in analyze_rank's order.
int stages(const std::string& path) {
  stepscope::IngestOptions io;
  io.jobs = 1;
  const stepscope::RankTrace t = std::move(stepscope::read_traces({path}, io).ranks.at(0));
  print_model_bytes(t);
  // The memory columns: resident before the stage's first run, and the most any run of it held
  // above that (its transients, and what it keeps).
  auto best = [](const char* name, auto&& fn) {
    double secs = 1e300;
    const double before = rss_now_and_peak_mb().first;
    reset_peak_rss();
    for (int k = 0; k < 3; ++k) {
      auto t0 = Clock::now();
      fn();
      secs = std::min(secs, seconds_since(t0));
    }
    const double peak = rss_now_and_peak_mb().second;
    fmt::print("  {:<22} {:8.1f} ms   resident before {:6.1f} MB, peak during +{:6.1f} MB\n", name,
               1e3 * secs, before, std::max(0.0, peak - before));
    return secs;
  };
  stepscope::RankFacts facts;
  stepscope::RankPartition part;
  stepscope::GpuTimeline gpu;
  double total = 0;
  total += best("summarize_ingest", [&] { (void)stepscope::summarize_ingest(t); });
  total += best("compute_facts", [&] { facts = stepscope::compute_facts(t); });
  // Part of compute_facts: the input inventory's own pass (its cost against the whole analysis).
  const double inventory = best("  input inventory", [&] { (void)stepscope::take_inventory(t, facts); });
  total += best("partition_rank", [&] { part = stepscope::partition_rank(t, facts); });
  total += best("compute_stability", [&] { (void)stepscope::compute_stability(part); });
  total += best("analyze_gpu_timeline", [&] { gpu = stepscope::analyze_gpu_timeline(t, facts); });
  total += best("summarize_cuda", [&] { (void)stepscope::summarize_cuda(t); });
  total += best("analyze_drilldown", [&] { (void)stepscope::analyze_drilldown(t, facts, gpu.steps); });
  best("  critical path", [&] { (void)stepscope::analyze_critical_path(t, stepscope::primary_critical_path_options(t)); });
  best("  operators by name", [&] { (void)stepscope::operator_rows(t, facts, stepscope::OperatorGrouping::Name); });
  best("  queue length", [&] { (void)stepscope::hta_queue_length(t); });
  best("  kernel sequences", [&] { (void)stepscope::hta_kernel_sequences(t, ""); });
  total += best("footgun scan", [&] { (void)stepscope::footgun::scan_footguns(t, facts, part); });
  total += best("collective_marks", [&] { (void)stepscope::collective_marks(t, facts, part, 0); });
  // The step graph, its replay, every lever's replay and the plan (docs/whatif.md).
  total += best("whatif::model_rank", [&] { (void)stepscope::whatif::model_rank(t, facts, part); });
  fmt::print("  {:<22} {:8.1f} ms   (input inventory {:.2f}% of it)\n", "all", 1e3 * total, 100 * inventory / total);
  return 0;
}

int baseline(const char* mode, const std::string& path) {
  const std::string raw = read_all(path);
  const bool gz = raw.size() >= 4 && static_cast<unsigned char>(raw[0]) == 0x1f;
  auto t0 = Clock::now();
  simdjson::padded_string json = decode(raw, gz ? gzip_size(raw) : raw.size());
  const double decode_secs = seconds_since(t0);
  if (std::strcmp(mode, "--decode") == 0) {
    fmt::print("{:.4f}\n", decode_secs);
    return 0;
  }
  simdjson::dom::parser parser;
  // --bare-warm parses twice with one parser and times the second: its buffers are already
  // touched, so it shows the parse without the page faults a fresh process pays (which some
  // virtual machines make several times dearer than the parse itself).
  const int runs = std::strcmp(mode, "--bare-warm") == 0 ? 2 : 1;
  double parse_secs = 0;
  for (int k = 0; k < runs; ++k) {
    t0 = Clock::now();
    auto doc = parser.parse(json);
    parse_secs = seconds_since(t0);
    if (doc.error()) {
      std::fprintf(stderr, "bench_ingest: the parse failed: %s\n", simdjson::error_message(doc.error()));
      return 2;
    }
  }
  fmt::print("{:.4f}\n", parse_secs);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(stderr, "usage: bench_ingest TRACE [--jobs N] | --bare TRACE | --bare-warm TRACE | --decode TRACE | --stages TRACE\n");
    return 2;
  }
  try {
    const bool baseline_mode = std::strcmp(argv[1], "--bare") == 0 || std::strcmp(argv[1], "--bare-warm") == 0 ||
                               std::strcmp(argv[1], "--decode") == 0;
    if (baseline_mode && argc == 3)
      return baseline(argv[1], argv[2]);
    if (std::strcmp(argv[1], "--stages") == 0 && argc == 3) return stages(argv[2]);
    return run_bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ingest: %s\n", e.what());
    return 2;
  }
}

int run_bench(int argc, char** argv) {
  std::string path = argv[1];
  int jobs = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--jobs") == 0) jobs = std::atoi(argv[i + 1]);

  double rss_before = peak_rss_mb();
  Run one = time_ingest(path, 1, false);
  double rss_ingest = peak_rss_mb();
  Run analysed = time_ingest(path, 1, true);
  Run many = time_ingest(path, jobs, false);

  std::string raw = read_all(path);
  auto t0 = Clock::now();
  simdjson::padded_string json = decode(raw, one.bytes);
  double decode_secs = seconds_since(t0);
  simdjson::dom::parser parser;
  t0 = Clock::now();
  auto doc = parser.parse(json);
  double parse_secs = seconds_since(t0);
  if (doc.error()) {
    std::fprintf(stderr, "baseline parse failed: %s\n", simdjson::error_message(doc.error()));
    return 2;
  }

  double mb = static_cast<double>(one.bytes) / 1e6;
  double ingest_rate = mb / one.secs, parse_rate = mb / parse_secs;
  fmt::print("trace            {} ({:.1f} MB of JSON, {} events)\n", path, mb, one.events);
  fmt::print("bare DOM parse   {:8.1f} MB/s  (simdjson, whole buffer in memory)\n", parse_rate);
  fmt::print("gzip decode      {:8.1f} MB/s  (igzip, whole buffer; 0 if plain)\n",
             raw.size() == one.bytes ? 0.0 : mb / decode_secs);
  fmt::print("ingest, 1 thread {:8.1f} MB/s  ratio to bare parse {:.2f}\n", ingest_rate,
             ingest_rate / parse_rate);
  fmt::print("ingest+analyze   {:8.1f} MB/s  ratio to bare parse {:.2f}\n", mb / analysed.secs,
             (mb / analysed.secs) / parse_rate);
  fmt::print("ingest, {} threads {:6.1f} MB/s  ratio to bare parse {:.2f}\n", jobs, mb / many.secs,
             (mb / many.secs) / parse_rate);
  fmt::print("peak RSS ingest  {:8.1f} MB  ({:.3f} x the JSON size; {:.1f} MB before)\n", rss_ingest,
             rss_ingest / mb, rss_before);
  const AnalyzeCost cost = time_analyze(path);
  fmt::print("analyze          {:8.1f} ms without the drill-down, {:.1f} ms with it: ratio {:.2f}\n", 1e3 * cost.base_secs,
             1e3 * cost.full_secs, cost.full_secs / cost.base_secs);
  fmt::print("read + analyze   ratio with / without the drill-down {:.2f} (1 thread)\n",
             (one.secs + cost.full_secs) / (one.secs + cost.base_secs));
  return 0;
}
