// The plan's predicted timeline as a trace of its own (stepscope/whatif_report.hpp).
#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "stepscope/whatif_report.hpp"

namespace stepscope {
namespace {

// GPU streams get tids of their own, clear of the host threads' (stream 7 -> "stream 7").
constexpr std::int64_t kStreamTid = 1'000'000'000;

// The steps' own track, clear of both.
constexpr std::int64_t kStepsTid = kStreamTid - 1;

// Each rank's two processes: its recording (even) and the plan's prediction (odd).
constexpr std::int64_t kFirstPid = 1'000'000;

// Exact to the ns, as Perfetto reads microseconds. Example: 39168250 -> "39168.250".
std::string predicted_us(ns_t ns) {
  const ns_t a = ns < 0 ? -ns : ns;
  return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", a / 1000, a % 1000);
}

struct Writer {
  std::string out;
  bool first = true;

  void open() {
    if (!first) out += ",\n";
    first = false;
  }
  void meta(std::string_view what, std::int64_t pid, std::int64_t tid, std::string_view name) {
    open();
    fmt::format_to(std::back_inserter(out), R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"name":{}}}}})", what, pid,
                   tid, nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  void sort_index(std::int64_t pid, std::int64_t index) {
    open();
    fmt::format_to(std::back_inserter(out), R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})",
                   pid, index);
  }
  void slice(std::int64_t pid, std::int64_t tid, std::string_view name, ns_t ts, ns_t dur) {
    open();
    fmt::format_to(std::back_inserter(out), R"({{"ph":"X","name":{},"pid":{},"tid":{},"ts":{},"dur":{}}})",
                   nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), pid, tid, predicted_us(ts),
                   predicted_us(dur));
  }
};

std::string plan_label(const whatif::RankWhatIf& w) {
  std::string s;
  for (const whatif::PlanStep& p : w.plan) s += fmt::format("{}{}", s.empty() ? "" : " + ", lever_name(p.id));
  return fmt::format("{}, {:.2f}x", s, w.plan.back().speedup);
}

// One side of a rank: its steps on the first track, then each host thread and GPU stream.
void write_side(Writer& w, const whatif::RankWhatIf& rw, std::int64_t pid, bool predicted) {
  const whatif::TimelineView& v = predicted ? rw.timeline.predicted : rw.timeline.recorded;
  w.meta("thread_name", pid, kStepsTid, "steps");
  for (std::size_t k = 0; k < v.steps.size(); ++k)
    w.slice(pid, kStepsTid, fmt::format("step {}", k < rw.steps.size() ? rw.steps[k].number : static_cast<std::int64_t>(k)),
            v.steps[k].start, v.steps[k].end - v.steps[k].start);
  std::vector<std::int64_t> named;
  for (const whatif::TimelineEvent& e : rw.timeline.events) {
    const std::int64_t tid = e.gpu ? kStreamTid + e.lane : e.lane;
    if (std::find(named.begin(), named.end(), tid) == named.end()) {
      named.push_back(tid);
      w.meta("thread_name", pid, tid, e.gpu ? fmt::format("stream {}", e.lane) : fmt::format("thread {}", e.lane));
    }
    // What the plan takes away has no time left: it is not drawn on the predicted side.
    if (predicted && e.predicted_dur <= 0 && e.recorded_dur > 0) continue;
    w.slice(pid, tid, e.name, predicted ? e.predicted_ts : e.recorded_ts, predicted ? e.predicted_dur : e.recorded_dur);
  }
}

}  // namespace

std::string predicted_trace_json(const DiagnosedResult& r) {
  Writer w;
  w.out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    const whatif::RankWhatIf& rw = r.ranks[i].whatif;
    if (!rw.timeline.present) continue;
    const std::int64_t pid = kFirstPid + 2 * static_cast<std::int64_t>(i);
    const int rank = r.ranks[i].rank();
    w.meta("process_name", pid, 0, fmt::format("recorded: rank {}", rank));
    w.sort_index(pid, 2 * static_cast<std::int64_t>(i));
    write_side(w, rw, pid, false);
    w.meta("process_name", pid + 1, 0, fmt::format("predicted: rank {} ({})", rank, plan_label(rw)));
    w.sort_index(pid + 1, 2 * static_cast<std::int64_t>(i) + 1);
    write_side(w, rw, pid + 1, true);
  }
  w.out += "\n]}\n";
  return w.out;
}

}  // namespace stepscope
