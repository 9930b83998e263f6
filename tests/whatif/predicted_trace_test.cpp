// The plan's predicted timeline: the replayed graph with every lever of the plan, written as a
// trace for Perfetto (`stepscope whatif --annotate`) and read back.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "stepscope/whatif_report.hpp"
#include "stepscope/whatif_run.hpp"

namespace stepscope {
namespace {

using nlohmann::json;

const std::string kBefore = std::string(STEPSCOPE_FIXTURES_DIR) + "/cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz";

struct Process {
  std::string name;
  std::vector<const json*> steps, events;
};

// The trace's processes by pid: their names, step slices and other slices.
std::map<std::int64_t, Process> processes(const json& trace) {
  std::map<std::int64_t, Process> out;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> threads;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") out[e["pid"]].name = e["args"]["name"];
    else if (e["ph"] == "M" && e["name"] == "thread_name") threads[{e["pid"], e["tid"]}] = e["args"]["name"];
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    Process& p = out[e["pid"]];
    (threads[{e["pid"], e["tid"]}] == "steps" ? p.steps : p.events).push_back(&e);
  }
  return out;
}

// From the first step's start to the last one's end, in ns.
double span_ns(const std::vector<const json*>& steps) {
  double lo = 1e300, hi = -1e300;
  for (const json* s : steps) {
    lo = std::min(lo, (*s)["ts"].get<double>());
    hi = std::max(hi, (*s)["ts"].get<double>() + (*s)["dur"].get<double>());
  }
  return 1000 * (hi - lo);
}

TEST(PredictedTrace, ThePlansStepsReadBackAtThePlansPredictedStep) {
  const DiagnosedResult r = whatif_paths({kBefore}, {{}, 0, 0, true});
  const whatif::RankWhatIf& w = r.ranks.at(0).whatif;
  ASSERT_TRUE(w.timeline.present);
  ASSERT_FALSE(w.plan.empty());
  ASSERT_EQ(r.diagnosis.plan.entries.size(), w.plan.size());
  const json trace = json::parse(predicted_trace_json(r));
  const auto ps = processes(trace);
  ASSERT_EQ(ps.size(), 2u);
  const Process& recorded = ps.begin()->second;
  const Process& predicted = std::next(ps.begin())->second;
  EXPECT_EQ(recorded.name, "recorded: rank 0");
  EXPECT_EQ(predicted.name.rfind("predicted: rank 0 (" + std::string(lever_name(w.plan.front().id)), 0), 0u) << predicted.name;
  ASSERT_EQ(recorded.steps.size(), w.steps.size());
  ASSERT_EQ(predicted.steps.size(), w.steps.size());
  // The recorded side is the recording: each step as long as its measured window.
  for (std::size_t k = 0; k < w.steps.size(); ++k)
    EXPECT_NEAR(1000 * (*recorded.steps[k])["dur"].get<double>(), static_cast<double>(w.steps[k].measured_ns), 1.0);
  // The predicted side is the plan's last replay: its steps' span is the recorded one over the
  // plan's speedup (this host-only trace replays exactly), and its mean step the plan's
  // predicted step for these steps.
  const double rec = span_ns(recorded.steps), pred = span_ns(predicted.steps);
  const double speedup = w.plan.back().speedup;
  EXPECT_NEAR(rec / pred, speedup, 1e-6 * speedup);
  const double recorded_mean = rec / static_cast<double>(w.steps.size());
  const LeverPlan& plan = r.diagnosis.plan;
  EXPECT_NEAR(pred / static_cast<double>(w.steps.size()), plan.entries.back().step_ns * recorded_mean / plan.step_ns,
              1e-6 * plan.entries.back().step_ns);
  EXPECT_LT(pred, rec);
  // The plan's predicted step is the steady mean over the speedup; the span also holds the gaps
  // between the windows (0.1% here).
  EXPECT_NEAR(pred / static_cast<double>(w.steps.size()), plan.entries.back().step_ns, 0.005 * plan.entries.back().step_ns);
  // Every replayed event is on the recorded side; the plan takes the loader's waits down, never
  // adds an event.
  EXPECT_EQ(recorded.events.size(), w.timeline.events.size());
  EXPECT_LE(predicted.events.size(), recorded.events.size());
  EXPECT_GT(predicted.events.size(), 0u);
}

TEST(PredictedTrace, NoEventsKeptUnlessAsked) {
  const DiagnosedResult r = whatif_paths({kBefore}, {});
  ASSERT_TRUE(r.ranks.at(0).whatif.timeline.present);
  EXPECT_TRUE(r.ranks.at(0).whatif.timeline.events.empty());
  EXPECT_FALSE(r.ranks.at(0).whatif.timeline.predicted.host_waits.empty());
  EXPECT_LE(r.ranks.at(0).whatif.timeline.predicted.host_waits.size(), whatif::kTimelineSpans);
}

}  // namespace
}  // namespace stepscope
