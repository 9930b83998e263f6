// Before/after pairs: the same program before and after one change, real (recorded on the CPU and
// on an H200, tests/data/recorded/pairs/pairs.json) and generated (stepscope-tracegen --apply). Each pair's
// speedup is the mean steady step before over after, as the verdict measures it; the lever that
// names the change must be offered on the before trace, and must be gone after it where the change
// removed its cause.
#include <nlohmann/json.hpp>
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "partition/support.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

const std::string kRecordedDir = std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded";
const std::string kPairsDir = kRecordedDir + "/pairs";

// A pair's paths are relative to the pairs' folder, or to the root it names: the shared fixtures,
// or the recorded GPU traces (one folder up).
std::string root_of(const nlohmann::json& pair) {
  const std::string root = pair.value("root", "");
  if (root == "fixtures") return STEPSCOPE_FIXTURES_DIR;
  if (root == "recorded") return kRecordedDir;
  EXPECT_EQ(root, "") << "unknown root of pair " << pair.at("name");
  return kPairsDir;
}

const Lever* find_lever(const DiagnosedResult& r, const std::string& id) {
  for (const auto& l : r.diagnosis.levers)
    if (lever_name(l.id) == id) return &l;
  return nullptr;
}

bool offered(const DiagnosedResult& r, const std::string& id) {
  const Lever* l = find_lever(r, id);
  return l && l->applies;
}

// Several pairs share a trace (the 0-worker loader is the before of three): analyse each once.
const DiagnosedResult& analysed(const std::string& path) {
  static std::map<std::string, DiagnosedResult> cache;
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, test::analyze_files({path})).first;
  return it->second;
}

struct RecordedPair {
  nlohmann::json spec;
  std::string before, after;
};

std::vector<RecordedPair> recorded_pairs() {
  const nlohmann::json manifest = test::read_json(kPairsDir + "/pairs.json");
  std::vector<RecordedPair> out;
  for (const auto& p : manifest.at("pairs")) {
    const std::string root = root_of(p);
    out.push_back({p, root + "/" + p.at("before").get<std::string>(), root + "/" + p.at("after").get<std::string>()});
  }
  return out;
}

// Per sample where the change altered the work a step does (a larger batch), else per step.
double measured_speedup(const RecordedPair& pair, double before_ns, double after_ns) {
  const nlohmann::json work = pair.spec.value("samples_per_step", nlohmann::json{{"before", 1}, {"after", 1}});
  return before_ns / work.at("before").get<double>() / (after_ns / work.at("after").get<double>());
}

TEST(RecordedPairs, ManifestCoversEveryRecordedTrace) {
  std::set<std::string> named;
  for (const auto& pair : recorded_pairs()) named.insert(pair.before), named.insert(pair.after);
  for (const auto& f : std::filesystem::directory_iterator(kPairsDir))
    if (f.path().string().ends_with(".pt.trace.json.gz")) {
      EXPECT_TRUE(named.count(f.path().string())) << f.path();
    }
  EXPECT_GE(named.size(), 14u);
}

// The manifest's steps and speedups are what the pipeline measures on the traces today: a change
// to step detection or the steady-state rule that moves them must re-measure the manifest
// (record_pairs.py --measure), not leave it stale.
TEST(RecordedPairs, MeasuredSpeedupIsTheManifests) {
  for (const auto& pair : recorded_pairs()) {
    SCOPED_TRACE(pair.spec.at("name").get<std::string>());
    const double before = job_step(analysed(pair.before)).step_ns, after = job_step(analysed(pair.after)).step_ns;
    EXPECT_NEAR(before, pair.spec.at("mean_step_ns").at("before").get<double>(), 1.0);
    EXPECT_NEAR(after, pair.spec.at("mean_step_ns").at("after").get<double>(), 1.0);
    EXPECT_NEAR(measured_speedup(pair, before, after), pair.spec.at("measured_speedup").get<double>(), 0.0006);
  }
}

// Offered before where the trace shows its cause; after the change, gone where the change removed
// that cause (respawned workers made persistent, the checkpoint taken out of the loop), still
// offered where more of the same helps (workers still behind the step). On the CPU, .item() reads
// no device and a step's ops are its compute: the sync and micro-batch levers are never offered.
TEST(RecordedPairs, LeverOfferedBeforeAndGoneWhereItsCauseIs) {
  for (const auto& pair : recorded_pairs()) {
    SCOPED_TRACE(pair.spec.at("name").get<std::string>());
    const std::string lever = pair.spec.at("lever");
    ASSERT_NE(find_lever(analysed(pair.before), lever), nullptr) << lever << " is no lever id";
    EXPECT_EQ(offered(analysed(pair.before), lever), pair.spec.at("offered_before").get<bool>());
    if (!pair.spec.at("offered_after").is_null()) {
      EXPECT_EQ(offered(analysed(pair.after), lever), pair.spec.at("offered_after").get<bool>());
    }
  }
}

TEST(RecordedPairs, ChangesThatPaidOff) {
  // The direction of each change, as recorded: the loader changes and the checkpoint paid off
  // many times over, the deeper prefetch queue and the removed CPU .item() did nothing.
  for (const auto& pair : recorded_pairs()) {
    const std::string name = pair.spec.at("name");
    const double s = pair.spec.at("measured_speedup");
    if (name == "prefetch_factor_2_to_4" || name == "item_print_each_step") {
      EXPECT_NEAR(s, 1.0, 0.05) << name;
    } else {
      EXPECT_GT(s, 1.05) << name;
    }
  }
}

// What the lever predicts for the change: its prediction for the pair's setting (workers, ...)
// where it gives one per setting, else its prediction. Empty in a build without the what-if
// replay's predictions on levers.
template <typename L>
std::optional<double> predicted_speedup(const L& l, const nlohmann::json& setting) {
  if constexpr (requires { l.predicted_speedup; l.predicted_by_setting; }) {
    if (setting.is_object())
      for (const auto& [knob, value] : setting.items())
        for (const auto& [at, speedup] : l.predicted_by_setting)
          if (at == value.dump() || at == "x" + value.dump()) return speedup;  // "x2": twice the micro-batch
    return l.predicted_speedup;
  } else {
    return std::nullopt;
  }
}

// Whether the lever's prediction comes from the replay (false in a build without it).
template <typename L>
bool replayed(const L& l) {
  if constexpr (requires { l.predicted_replayed; }) {
    return l.predicted_replayed;
  } else {
    return false;
  }
}

// A save slows the steps after it too: the lever acts on every steady step's excess over the
// quiet step (the lower quartile, nearest rank), the saves and their wake. Worked out here from
// the partition's steps. On this trace the saves leave 43-51 ms op-free gaps and the step after
// each runs 6.4 ms against a quiet 1.8 ms.
TEST(RecordedPairs, CheckpointLeverCountsTheSavesAndTheirWake) {
  const DiagnosedResult& r = analysed(kPairsDir + "/save_every_3rd.pt.trace.json.gz");
  std::vector<double> steps;
  for (const auto& s : r.ranks.at(0).partition.steps)
    if (!s.warmup) steps.push_back(static_cast<double>(s.duration()));
  ASSERT_GE(steps.size(), 4u);
  std::vector<double> sorted = steps;
  std::sort(sorted.begin(), sorted.end());
  const double quiet = sorted[(sorted.size() + 3) / 4 - 1];
  double excess = 0;
  for (double d : steps) excess += std::max(0.0, d - quiet);
  excess /= static_cast<double>(steps.size());
  const Lever* l = find_lever(r, "async_checkpoint");
  ASSERT_NE(l, nullptr);
  EXPECT_NEAR(l->target_ns, excess, 1e-6 * excess);
  // More than the op-free gaps alone: the steps after a save run slower.
  const JobStep j = job_step(r);
  EXPECT_GT(l->target_ns, j.category[static_cast<std::size_t>(Category::Idle)] + j.category[static_cast<std::size_t>(Category::SideWork)]);
}

// One fact, one number: no lever's "up to" is below what the replay predicts for it, on every trace
// of every recorded pair. Where the catalogue's fixed share was less (CUDA graphs on the H200
// launch-bound loop: 90% of the host time, 5.89x, against the replay's 6.01x), the bound rose to
// the prediction and the basis says so.
TEST(RecordedPairs, NoLeverPredictsMoreThanItsBound) {
  std::set<std::string> paths;
  for (const auto& pair : recorded_pairs()) paths.insert({pair.before, pair.after});
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    for (const Lever& l : analysed(path).diagnosis.levers)
      EXPECT_GE(l.speedup, l.predicted_speedup * (1 - 1e-12)) << lever_name(l.id);
  }
  const Lever* graphs = find_lever(analysed(kRecordedDir + "/launch_bound.pt.trace.json.gz"), "cuda_graphs");
  ASSERT_NE(graphs, nullptr);
  EXPECT_DOUBLE_EQ(graphs->speedup, graphs->predicted_speedup);
  EXPECT_NE(graphs->basis.find("more than the catalogue's"), std::string::npos) << graphs->basis;
  // The headline quotes the prediction once, with no bound equal to it beside it.
  const std::string& headline = analysed(kRecordedDir + "/launch_bound.pt.trace.json.gz").diagnosis.verdict.headline;
  EXPECT_NE(headline.find(fmt::format("predicted {:.2f}x faster — CUDA graphs", graphs->predicted_speedup)), std::string::npos) << headline;
  EXPECT_EQ(headline.find("(bound"), std::string::npos) << headline;
}

// A larger micro-batch on the H200's launch-bound loop (12.95 ms of host dispatch a step over
// ~1 ms of kernels): twice the samples fit under the same dispatch, so per sample it is nearly
// 2x, never more (the samples are all a larger batch adds), and four times nearly 4x, each held
// to the bound of all host and launch time gone. It stays out of the plan: a different batch is a
// different experiment. A GPU-bound step (fp32 GEMMs) takes as much longer as it gets samples: no
// lever. Where cuDNN retunes for every new image size, the host time is the tuning's, which a
// larger batch would only redo.
TEST(MicroBatch, PricedPerSampleWhereTheHostDispatchHoldsTheStep) {
  const DiagnosedResult& launch = analysed(kRecordedDir + "/launch_bound.pt.trace.json.gz");
  const Lever* l = find_lever(launch, "micro_batch");
  ASSERT_NE(l, nullptr);
  EXPECT_TRUE(l->applies);
  EXPECT_TRUE(l->predicted_replayed);
  ASSERT_EQ(l->predicted_by_setting.size(), 2u);
  const auto& [twice, by_two] = l->predicted_by_setting[0];
  const auto& [four_times, by_four] = l->predicted_by_setting[1];
  EXPECT_EQ(twice, "x2");
  EXPECT_EQ(four_times, "x4");
  EXPECT_GT(by_two, 1.8);
  EXPECT_LE(by_two, 2.0 + 1e-9);
  EXPECT_GT(by_four, 3.0);
  EXPECT_LE(by_four, 4.0 + 1e-9);
  EXPECT_LE(by_four, l->speedup * (1 + 1e-12));
  EXPECT_DOUBLE_EQ(l->predicted_speedup, by_two);
  // Its step is longer: the report says whose time the predicted step is.
  const std::string text = render_text(launch);
  EXPECT_NE(text.find("for the recorded batch's samples)\n"), std::string::npos) << text;  // its bound
  EXPECT_NE(text.find("for the recorded batch's samples; by setting: x2 -> "), std::string::npos) << text;
  for (const LeverPlanEntry& e : launch.diagnosis.plan.entries) EXPECT_NE(e.id, LeverId::MicroBatch);
  EXPECT_FALSE(offered(analysed(kRecordedDir + "/fp32_no_amp.pt.trace.json.gz"), "micro_batch"));
  EXPECT_FALSE(offered(analysed(kRecordedDir + "/cudnn_retune.pt.trace.json.gz"), "micro_batch"));
}

constexpr double kPredictionTolerance = 0.15;

// Acceptance: on every pair whose lever is offered before the change, the lever predicts the
// measured speedup within 15%; so does one the replay holds back for gaining nothing (a deeper
// queue for workers behind on average): its 1.00x is a prediction too. A pair marked
// "prediction_checked": false is one the replay does not yet get right; the README lists each with
// its predicted and measured figures.
TEST(RecordedPairs, OfferedLeverPredictsTheMeasuredSpeedup) {
  for (const auto& pair : recorded_pairs()) {
    const std::string name = pair.spec.at("name");
    SCOPED_TRACE(name);
    const Lever* l = find_lever(analysed(pair.before), pair.spec.at("lever"));
    ASSERT_NE(l, nullptr);
    if (!pair.spec.at("offered_before").get<bool>() && !replayed(*l)) continue;
    const std::optional<double> predicted = predicted_speedup(*l, pair.spec.value("setting", nlohmann::json()));
    if (!predicted) GTEST_SKIP() << "levers carry no prediction in this build";
    const double measured = pair.spec.at("measured_speedup");
    const bool within = std::abs(*predicted / measured - 1) <= kPredictionTolerance;
    std::printf("prediction %-32s predicted %7.3fx measured %7.3fx %s\n", name.c_str(), *predicted, measured,
                within ? "" : "OFF");
    if (pair.spec.value("prediction_checked", true)) {
      EXPECT_TRUE(within) << "predicted " << *predicted << "x, measured " << measured << "x";
    }
  }
}

// A generated pair: the scenario as preset, and `--apply LEVER` of it.
struct GeneratedPair {
  const char* scenario;
  const char* options;  // beside the preset, on both sides
  const char* apply;
  bool gone_after;         // the change removes all the lever acts on
  bool check_prediction = true;  // false: the replay is off by more than 15% (pairs/README.md)
  double samples_after = 1;       // samples a step after the change, against before (a larger batch)
};

// What stays after the change: sync-stall's logging still holds the host (only its read went),
// and readback-loop keeps its end-of-step loss.item(). Gone: pinned copies are pin_memory's no
// more (moving them off the compute stream is copy_stream's), 16-bit convolutions with no layout
// conversion are channels_last already, and overlapped all-reduces and an asynchronous save (its
// staging copies still in the loop) are predicted to gain nothing, which is no lever.
// The analysis takes the first step for warm-up: the options make the steady steps after it whole
// periods of each stall (loader-stall and checkpoint every 4 steps: 8 steady steps; epoch-stall
// every 5: 10), so that their mean is the long run's.
constexpr GeneratedPair kGenerated[] = {
    {"input-bound", "", "num_workers=8", true},
    {"cpu-input-bound", "", "num_workers=4", true},
    {"loader-stall", "--steps 9", "prefetch_factor", true},
    {"epoch-stall", "--steps 11", "persistent_workers", true},
    {"pageable-copy", "", "pin_memory", true},
    {"sync-stall", "", "remove_item", false},
    {"readback-loop", "", "remove_item", false},
    {"no-tensor-cores", "", "amp_bf16", true},
    {"v100-fp32", "", "amp_fp16", true},

    {"conv-nchw-amp", "", "channels_last", true},
    {"cudnn-autotune", "", "fixed_shapes", true},
    {"unfused-optimizer", "", "fused_optimizer", true},
    {"zero-grad-memsets", "", "zero_grad_set_to_none", true},
    {"anomaly-detection", "", "no_debug_apis", true},
    {"checkpoint", "--steps 9", "async_checkpoint", true},
    {"comms-bound", "", "ddp_buckets", true},

    {"straggler", "", "fix_straggler", true},
    // Twice the micro-batch on the launch-bound preset, compared per sample.
    {"launch-bound", "", "micro_batch=2", false, true, 2},
};

std::string lever_of(const GeneratedPair& g) {
  const std::string apply = g.apply;
  return apply.substr(0, apply.find('='));
}

// "num_workers=8" -> {"num_workers": 8}; null where the lever has no setting.
nlohmann::json setting_of(const GeneratedPair& g) {
  const std::string apply = g.apply;
  const auto eq = apply.find('=');
  if (eq == std::string::npos) return nullptr;
  return {{apply.substr(0, eq), std::stoi(apply.substr(eq + 1))}};
}

// The ground truth's windows over the steps the analysis kept as steady, each rank's mean then
// the mean over ranks, as job_step() reduces them.
double truth_steady_step_ns(const test::GeneratedRun& run) {
  double sum_of_means = 0;
  for (std::size_t rank = 0; rank < run.result.ranks.size(); ++rank) {
    std::set<std::int64_t> steady;
    for (const auto& s : run.result.ranks[rank].partition.steps)
      if (!s.warmup) steady.insert(s.number);
    double sum = 0;
    int n = 0;
    for (const auto& s : run.truth.at("steps"))
      if (s.at("rank") == static_cast<int>(rank) && steady.count(s.at("step").get<std::int64_t>()))
        sum += s.at("duration_ns").get<double>(), ++n;
    EXPECT_GT(n, 0) << "rank " << rank;
    sum_of_means += n ? sum / n : 0;
  }
  return sum_of_means / static_cast<double>(run.result.ranks.size());
}

TEST(GeneratedPairs, MeasuredSpeedupIsTheGroundTruths) {
  for (const auto& g : kGenerated) {
    SCOPED_TRACE(std::string(g.scenario) + " --apply " + g.apply);
    const test::GeneratedRun before = test::analyze_generated(g.scenario, g.options);
    const test::GeneratedRun after =
        test::analyze_generated(g.scenario, std::string(g.options) + " --apply " + g.apply);
    ASSERT_TRUE(after.truth.contains("applied"));
    EXPECT_GT(after.truth.at("applied").at("expected_speedup").get<double>(), 1.0);
    const double measured = g.samples_after * job_step(before.result).step_ns / job_step(after.result).step_ns;
    const double truth = g.samples_after * truth_steady_step_ns(before) / truth_steady_step_ns(after);
    EXPECT_NEAR(measured / truth, 1.0, 0.01) << "measured " << measured << ", ground truth " << truth;
    EXPECT_TRUE(offered(before.result, lever_of(g)));
    if (g.gone_after) {
      EXPECT_FALSE(offered(after.result, lever_of(g)));
    }
    const Lever* l = find_lever(before.result, lever_of(g));
    ASSERT_NE(l, nullptr);
    if (const std::optional<double> predicted = predicted_speedup(*l, setting_of(g))) {
      const bool within = std::abs(*predicted / measured - 1) <= kPredictionTolerance;
      std::printf("prediction %-22s %-24s predicted %7.3fx measured %7.3fx %s\n", g.scenario, g.apply, *predicted,
                  measured, within ? "" : "OFF");
      if (g.check_prediction) {
        EXPECT_TRUE(within) << "predicted " << *predicted << "x, measured " << measured << "x";
      }
    }
  }
}

// CUDA graphs on a launch-bound loop: a decode loop launched op by op (40 us of host work per op
// against 8 us kernels), then replayed as one CUDA graph per iteration. Held to the ground truth's
// steady steps: the speedup the analysis measures from the two traces' windows is 2.5% below the
// truth's here, beyond the 1% the pairs above are held to.

TEST(GeneratedPairs, CudaGraphsPredictALaunchBoundLoopReplayedAsGraphs) {
  const std::string options = "--cuda-graph 0 --op-us 40 --gemm-us 8 --attn-us 8";
  const test::GeneratedRun before = test::analyze_generated("inference-decode", options);
  const test::GeneratedRun after = test::analyze_generated("inference-decode", options + " --apply cuda_graphs");
  const double truth = truth_steady_step_ns(before) / truth_steady_step_ns(after);
  EXPECT_GT(truth, 1.5);
  const Lever* l = find_lever(before.result, "cuda_graphs");
  ASSERT_NE(l, nullptr);
  EXPECT_TRUE(l->applies);
  EXPECT_FALSE(offered(after.result, "cuda_graphs")) << "the launches are captured already";
  if (const std::optional<double> predicted = predicted_speedup(*l, nullptr)) {
    std::printf("prediction %-22s %-24s predicted %7.3fx measured %7.3fx\n", "inference-decode", "cuda_graphs",
                *predicted, truth);
    EXPECT_NEAR(*predicted / truth, 1.0, kPredictionTolerance) << "predicted " << *predicted << "x, truth " << truth << "x";
  }
}

}  // namespace
}  // namespace stepscope

