// The memory analysis against generated snapshots whose answers the generator knows
// (tools/memsnap/generate.py writes PATH.truth.json beside each snapshot).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "memory_test_util.hpp"
#include "stepscope/memory/analysis.hpp"

namespace stepscope::memory {
namespace {

nlohmann::json truth_of(const std::string& snapshot) { return nlohmann::json::parse(read_all(snapshot + ".truth.json")); }

std::int64_t cls(const MemoryMoment& m, MemClass c) { return m.by_class[static_cast<std::size_t>(c)]; }

const MemLever& lever(const DeviceMemory& d, std::string_view id) {
  for (const auto& l : d.levers)
    if (l.id == id) return l;
  throw std::runtime_error("no lever " + std::string(id));
}

void expect_split(const MemoryMoment& m, const nlohmann::json& by_class) {
  for (std::size_t c = 0; c < kMemClasses; ++c) {
    const std::string name(class_name(static_cast<MemClass>(c)));
    EXPECT_EQ(m.by_class[c], by_class.at(name).get<std::int64_t>()) << name;
  }
}

TEST(MemoryAnalysis, TrainingPeakSplitMatchesGroundTruth) {
  const std::string path = generated("training");
  const nlohmann::json truth = truth_of(path);
  SnapshotAnalysis a = analyze_snapshot_file(path);
  ASSERT_EQ(a.devices.size(), 1u);
  const DeviceMemory& d = a.devices[0];
  EXPECT_EQ(d.peak.allocated_bytes, truth["peak"]["allocated_bytes"].get<std::int64_t>());
  EXPECT_EQ(d.peak.reserved_bytes, truth["peak"]["reserved_bytes"].get<std::int64_t>());
  expect_split(d.peak, truth["peak"]["by_class"]);
  EXPECT_EQ(total(d.peak.by_class), d.peak.allocated_bytes);
  // Every class of the split is present in this scenario, so each rule was exercised.
  for (std::size_t c = 0; c < kMemClasses; ++c) EXPECT_GT(d.peak.by_class[c], 0) << class_name(static_cast<MemClass>(c));
  EXPECT_FALSE(d.oom);
}

TEST(MemoryAnalysis, EachStepPeakMatchesGroundTruth) {
  const std::string path = generated("training");
  const nlohmann::json truth = truth_of(path);
  const DeviceMemory d = analyze_snapshot_file(path).devices.at(0);
  ASSERT_EQ(static_cast<std::size_t>(d.steps), truth["steps"].size());
  ASSERT_EQ(d.step_peaks.size(), truth["steps"].size());
  for (std::size_t i = 0; i < d.step_peaks.size(); ++i) {
    const auto& t = truth["steps"][std::to_string(i + 1)];
    EXPECT_EQ(d.step_peaks[i].allocated_bytes, t["allocated_bytes"].get<std::int64_t>()) << "step " << i + 1;
    expect_split(d.step_peaks[i], t["by_class"]);
  }
}

TEST(MemoryAnalysis, ClassesSayHowTheyWereRecognised) {
  const DeviceMemory d = analyze_snapshot_file(generated("training")).devices.at(0);
  std::map<MemClass, std::set<Reason>> seen;
  for (const auto& e : d.evidence)
    if (e.peak_bytes > 0) seen[e.cls].insert(e.reason);
  EXPECT_TRUE(seen[MemClass::parameters].count(Reason::setup_kept));
  EXPECT_TRUE(seen[MemClass::gradients].count(Reason::backward_kept));
  EXPECT_TRUE(seen[MemClass::optimizer_state].count(Reason::optimizer_kept));
  EXPECT_TRUE(seen[MemClass::activations].count(Reason::forward_kept));
  EXPECT_TRUE(seen[MemClass::temporaries].count(Reason::same_phase));
  EXPECT_TRUE(seen[MemClass::unknown].count(Reason::no_phase));  // the input batch: no phase in its stack
}

TEST(MemoryAnalysis, FragmentationOomIsExplained) {
  const std::string path = generated("fragmentation");
  const nlohmann::json truth = truth_of(path);
  const DeviceMemory d = analyze_snapshot_file(path).devices.at(0);
  ASSERT_TRUE(d.oom);
  const auto& t = truth["oom"];
  EXPECT_EQ(d.oom->requested_bytes, t["requested"].get<std::int64_t>());
  EXPECT_EQ(d.oom->device_free_bytes, t["device_free"].get<std::int64_t>());
  EXPECT_EQ(d.oom->alive.allocated_bytes, t["allocated"].get<std::int64_t>());
  EXPECT_EQ(d.oom->fragmentation.reserved_bytes, t["reserved"].get<std::int64_t>());
  EXPECT_EQ(d.oom->fragmentation.cached_free_bytes, t["cached_free"].get<std::int64_t>());
  EXPECT_EQ(d.oom->fragmentation.largest_free_block_large, t["largest_free_block"].get<std::int64_t>());
  EXPECT_TRUE(d.oom->fragmentation_cause);
  EXPECT_EQ(t["cause"], "fragmentation");
  EXPECT_NE(d.oom->explanation.find("fragmentation"), std::string::npos);
  EXPECT_FALSE(d.oom->frames.empty());
  const MemLever& l = lever(d, "expandable_segments");
  EXPECT_TRUE(l.applies);
  EXPECT_EQ(l.frees_bytes, t["cached_free"].get<std::int64_t>());
  EXPECT_EQ(d.levers.front().id, "expandable_segments");
}

TEST(MemoryAnalysis, ExpandableSegmentsAlreadyOnIsNotAdvised) {
  const DeviceMemory d = analyze_snapshot_file(generated("fragmentation", "--expandable", "fragmentation-expandable")).devices.at(0);
  EXPECT_TRUE(d.expandable_segments);
  EXPECT_FALSE(lever(d, "expandable_segments").applies);
}

TEST(MemoryAnalysis, ExhaustionOomIsExplainedWithWhatWasAlive) {
  const std::string path = generated("exhaustion");
  const nlohmann::json truth = truth_of(path);
  const DeviceMemory d = analyze_snapshot_file(path).devices.at(0);
  ASSERT_TRUE(d.oom);
  const auto& t = truth["oom"];
  EXPECT_EQ(t["cause"], "exhaustion");
  EXPECT_FALSE(d.oom->fragmentation_cause);
  EXPECT_EQ(d.oom->requested_bytes, t["requested"].get<std::int64_t>());
  EXPECT_EQ(d.oom->fragmentation.cached_free_bytes, t["cached_free"].get<std::int64_t>());
  expect_split(d.oom->alive, t["by_class"]);
}

TEST(MemoryAnalysis, LeversPriceTheBytesTheyFree) {
  const DeviceMemory d = analyze_snapshot_file(generated("training")).devices.at(0);
  const std::int64_t act = cls(d.peak, MemClass::activations), opt = cls(d.peak, MemClass::optimizer_state);
  EXPECT_EQ(lever(d, "optimizer_8bit").frees_bytes, static_cast<std::int64_t>(static_cast<double>(opt) * 0.75));
  EXPECT_EQ(lever(d, "bf16_autocast").frees_bytes, act / 2);
  EXPECT_TRUE(lever(d, "activation_checkpointing").applies);
  EXPECT_FALSE(lever(d, "empty_cache").applies);
  for (const auto& l : d.levers) {
    EXPECT_LE(l.frees_bytes, l.peak_bytes) << l.id;
    EXPECT_FALSE(l.precondition.empty());
    EXPECT_FALSE(l.risk.empty());
  }
}

TEST(MemoryAnalysis, ReferencesHeldAcrossStepsAreFound) {
  const std::string path = generated("training", "--hold-outputs", "training-held");
  const DeviceMemory d = analyze_snapshot_file(path).devices.at(0);
  const nlohmann::json truth = truth_of(path);
  expect_split(d.peak, truth["peak"]["by_class"]);
  // The peak falls in a later step's forward, where the previous step's logits (batch x hidden
  // fp32) are still held, and where the gradients kept since the last step wait for backward.
  ASSERT_GT(d.peak.step, 1);
  ASSERT_EQ(d.peak.phase, Phase::forward);
  const MemLever& l = lever(d, "held_references");
  EXPECT_TRUE(l.applies);
  EXPECT_EQ(l.frees_bytes, 64 * 1024 * 4);
  const MemLever& none = lever(d, "zero_grad_set_to_none");
  EXPECT_TRUE(none.applies);
  EXPECT_EQ(none.frees_bytes, cls(d.peak, MemClass::gradients));
  EXPECT_EQ(none.frees_bytes, truth["peak"]["by_class"]["gradients"].get<std::int64_t>());
}

TEST(MemoryAnalysis, ReportsRenderEveryFigure) {
  const SnapshotAnalysis a = analyze_snapshot_file(generated("fragmentation"));
  const std::string text = render_text(a);
  EXPECT_NE(text.find("OUT OF MEMORY"), std::string::npos);
  const nlohmann::json j = to_json(a);
  EXPECT_EQ(j["devices"][0]["peak"]["allocated_bytes"], a.devices[0].peak.allocated_bytes);
  EXPECT_EQ(j["devices"][0]["oom"]["cause"], "fragmentation");
  const std::string html = render_html_section(a);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace stepscope::memory

namespace stepscope::memory {
namespace {

// A run with half the batch: `diff` says the peak fell and that activations are what went.
TEST(MemoryDiff, HalfTheBatchFreesActivations) {
  const SnapshotAnalysis base = analyze_snapshot_file(generated("training"));
  const SnapshotAnalysis test = analyze_snapshot_file(generated("training", "--batch 32", "training-half-batch"));
  const auto diffs = diff_snapshots(base, test);
  ASSERT_EQ(diffs.size(), 1u);
  const MemoryDiff& d = diffs[0];
  EXPECT_EQ(d.base_peak, base.devices[0].peak.allocated_bytes);
  EXPECT_EQ(d.test_peak, test.devices[0].peak.allocated_bytes);
  EXPECT_LT(d.test_peak, d.base_peak);
  const ClassChange& act = d.classes[static_cast<std::size_t>(MemClass::activations)];
  EXPECT_LT(act.test_bytes, act.base_bytes);
  const ClassChange& params = d.classes[static_cast<std::size_t>(MemClass::parameters)];
  EXPECT_EQ(params.test_bytes, params.base_bytes);  // the model did not change
  EXPECT_NE(d.headline.find("activations"), std::string::npos);
  EXPECT_EQ(diff_to_json(diffs)["devices"][0]["peak"]["change_bytes"], d.test_peak - d.base_peak);
}

}  // namespace
}  // namespace stepscope::memory
