// The two real snapshots (shared/fixtures/memory, see its LICENSES.md), each figure pinned with
// the reason it must hold, and `analyze` telling a snapshot from a trace by its bytes.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unordered_map>

#include "memory_test_util.hpp"
#include "stepscope/error.hpp"
#include "stepscope/memory/analysis.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope::memory {
namespace {

const std::string kDir = STEPSCOPE_FIXTURES_DIR "/memory/";
const std::string kTraining = kDir + "forward_and_backward_memory_snapshot_100.pickle";
const std::string kForward = kDir + "forward_memory_snapshot_100.pickle";

// The recorded TransformerLM (CATALOG.md): vocab 10,000, d_model 512, 4 layers, d_ff 1,344,
// untied embedding and LM head, RMSNorm weights, SwiGLU; fp32.
constexpr std::int64_t kParams = 10000 * 512                                      // embedding
                                 + 4 * (4 * 512 * 512 + 3 * 512 * 1344 + 2 * 512)  // blocks
                                 + 512                                             // final norm
                                 + 512 * 10000;                                    // LM head
constexpr std::int64_t kParamBytes = kParams * 4;

std::int64_t cls(const MemoryMoment& m, MemClass c) { return m.by_class[static_cast<std::size_t>(c)]; }

// The largest sum of live allocations, replayed here the simplest way (alloc adds, the completed
// free subtracts): an independent check of the analysis's peak.
std::int64_t replayed_peak(const Snapshot& s) {
  std::unordered_map<std::uint64_t, std::int64_t> live;
  std::int64_t now = 0, peak = 0;
  for (const auto& e : s.devices.at(0).entries) {
    if (e.action == Action::alloc) {
      live[e.addr] = e.size;
      now += e.size;
      peak = std::max(peak, now);
    } else if (e.action == Action::free_completed && live.count(e.addr)) {
      now -= live[e.addr];
      live.erase(e.addr);
    }
  }
  return peak;
}

TEST(MemoryFixtures, TrainingSnapshot) {
  if (!std::filesystem::exists(kTraining)) GTEST_SKIP() << "no fixture " << kTraining;
  const Snapshot s = read_snapshot_file(kTraining);
  const SnapshotAnalysis a = analyze_snapshot(s);
  ASSERT_EQ(a.devices.size(), 1u);
  const DeviceMemory& d = a.devices[0];
  // Every parameter was made by the model's __init__ and, after each step, by the optimizer's
  // out-of-place update that replaces it: the parameter bytes are the model's, exactly.
  EXPECT_EQ(cls(d.peak, MemClass::parameters), kParamBytes);
  // Adam keeps two fp32 states per parameter, made in the optimizer's __init__ and replaced in step.
  EXPECT_EQ(cls(d.peak, MemClass::optimizer_state), 2 * kParamBytes);
  // Three training steps were recorded (zero_grad, forward, backward, step).
  EXPECT_EQ(d.steps, 3);
  // The peak is the largest sum of live allocations, and the classes add up to it.
  EXPECT_EQ(d.peak.allocated_bytes, replayed_peak(s));
  EXPECT_EQ(total(d.peak.by_class), d.peak.allocated_bytes);
  // No segment was ever released, so the reserved bytes at the peak are every segment of the dump.
  std::int64_t reserved = 0;
  for (const auto& seg : s.segments) reserved += seg.total_size;
  EXPECT_EQ(d.peak.reserved_bytes, reserved);
  EXPECT_EQ(d.segment_frees, 0);
  // The peak falls in backward: activations are still held and only part of the gradients exist
  // (zero_grad sets them to None, so each backward makes them anew).
  EXPECT_EQ(d.peak.phase, Phase::backward);
  EXPECT_GT(cls(d.peak, MemClass::activations), cls(d.peak, MemClass::gradients));
  EXPECT_GT(cls(d.peak, MemClass::gradients), 0);
  EXPECT_LT(cls(d.peak, MemClass::gradients), kParamBytes);
  // What no phase explains is small: the loss's target and the like, outside any module.
  EXPECT_LT(cls(d.peak, MemClass::unknown), 64 * 1024);
  EXPECT_FALSE(d.oom);
  EXPECT_FALSE(d.expandable_segments);
}

TEST(MemoryFixtures, ForwardOnlySnapshot) {
  if (!std::filesystem::exists(kForward)) GTEST_SKIP() << "no fixture " << kForward;
  const Snapshot s = read_snapshot_file(kForward);
  const SnapshotAnalysis a = analyze_snapshot(s);
  const DeviceMemory& d = a.devices.at(0);
  // The same model, built in the recording: its parameters, and nothing of an optimizer.
  EXPECT_EQ(cls(d.peak, MemClass::parameters), kParamBytes);
  EXPECT_EQ(cls(d.peak, MemClass::gradients), 0);
  EXPECT_EQ(cls(d.peak, MemClass::optimizer_state), 0);
  // Without a backward, steps are not visible, and the report says so.
  EXPECT_EQ(d.steps, 0);
  ASSERT_FALSE(a.warnings.empty());
  EXPECT_EQ(a.warnings[0].id, WarningId::SnapshotNoBackward);
  EXPECT_NE(a.warnings[0].text.find("no backward"), std::string::npos);
  EXPECT_EQ(d.peak.allocated_bytes, replayed_peak(s));
  EXPECT_EQ(d.peak.phase, Phase::forward);
}

TEST(MemoryPipeline, SnapshotToldByItsBytesNotItsName) {
  const std::filesystem::path renamed = temp_dir() / "trace.json";
  std::filesystem::copy_file(generated("training"), renamed, std::filesystem::copy_options::overwrite_existing);
  const Analysis run = analyze_paths({renamed.string()});
  ASSERT_EQ(run.result.job.memory_snapshots.size(), 1u);
  EXPECT_TRUE(run.result.ranks.empty());
  const nlohmann::json j = to_json(run.result);
  ASSERT_TRUE(j.contains("memory_snapshots"));
  EXPECT_EQ(j["memory_snapshots"][0]["devices"][0]["peak"]["allocated_bytes"],
            run.result.job.memory_snapshots[0].devices[0].peak.allocated_bytes);
  EXPECT_NE(render_text(run.result).find("memory snapshot"), std::string::npos);
}

TEST(MemoryPipeline, TraceDocumentsHaveNoMemorySection) {
  const Analysis run = analyze_paths({STEPSCOPE_SOURCE_DIR "/examples/cpu_training_step.pt.trace.json.gz"});
  EXPECT_TRUE(run.result.job.memory_snapshots.empty());
  EXPECT_FALSE(to_json(run.result).contains("memory_snapshots"));
}

TEST(MemoryPipeline, RefusedPickleIsAnInputErrorNamingTheFile) {
  const std::filesystem::path bad = temp_dir() / "evil.pickle";
  {
    std::ofstream out(bad, std::ios::binary);
    out << std::string("\x80\x02" "cos\nsystem\n" "X\x04\x00\x00\x00true" "\x85" "R.", 25);
  }
  try {
    (void)analyze_paths({bad.string()});
    FAIL() << "a GLOBAL opcode was not refused";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(bad.string()), std::string::npos) << what;
    EXPECT_NE(what.find("GLOBAL"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace stepscope::memory

namespace stepscope::memory {
namespace {

// `--model`: a preset's planned model states beside the observed peak. The recorded model is no
// GPT-2 (22.7 M parameters, fp32): its states are a fraction of GPT-2's, and each class says so.
TEST(PlannedVsObserved, APresetThatIsNotTheRecordedModelDiffersClassByClass) {
  PipelineOptions o;
  o.memory_model = "gpt2-124m";
  const Analysis run = analyze_paths({kTraining}, o);
  ASSERT_EQ(run.result.job.memory_snapshots.size(), 1u);
  const auto& a = run.result.job.memory_snapshots.front();
  ASSERT_TRUE(a.planned.has_value());
  const PlannedVsObserved& p = *a.planned;
  EXPECT_EQ(p.model, "gpt2-124m");
  EXPECT_EQ(p.bytes_per_parameter, 4);  // 0.73 observed bytes per GPT-2 parameter: not a 16-bit GPT-2
  ASSERT_EQ(p.rows.size(), 3u);
  const std::int64_t params = static_cast<std::int64_t>(std::llround(p.parameters));
  EXPECT_EQ(p.rows[0].planned_bytes, params * 4);
  EXPECT_EQ(p.rows[1].planned_bytes, params * 4);
  EXPECT_EQ(p.rows[2].planned_bytes, params * 8);  // Adam: two fp32 states
  EXPECT_EQ(p.rows[0].observed_bytes, cls(a.devices.at(0).peak, MemClass::parameters));
  EXPECT_EQ(p.rows[2].observed_bytes, cls(a.devices.at(0).peak, MemClass::optimizer_state));
  EXPECT_EQ(p.differences.size(), 3u);
  EXPECT_NE(to_json(a).dump().find("\"planned\""), std::string::npos);
  EXPECT_NE(render_text(a).find("planned (gpt2-124m"), std::string::npos);
}

TEST(PlannedVsObserved, AnUnknownPresetIsRefused) {
  PipelineOptions o;
  o.memory_model = "no-such-model";
  EXPECT_THROW(analyze_paths({kTraining}, o), InputError);
}

}  // namespace
}  // namespace stepscope::memory
