// Claims that fit the input: a generated job, then the same job with one kind of activity taken
// out (as filtered exports and merging tools write it). Each precondition of kClaimPreconditions
// that blocks a claim turns the verdict inconclusive with the row's code when its activity is
// removed; a job merged into one file reads as the same ranks as its files.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "stepscope/error.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/verdict.hpp"
#include "tracegen.hpp"
#include "tracegen_test_util.hpp"

namespace tg = stepscope::tracegen;
using nlohmann::json;

namespace {

struct Job {
  tgtest::TempDir dir{"claims"};
  std::vector<json> ranks;  // each rank's trace document
};

Job generate(const std::string& scenario, int ranks) {
  Job j;
  tg::Params p = tgtest::small_params(scenario);
  p.ranks = ranks;
  p.straggler_rank = std::min(p.straggler_rank, ranks - 1);
  p.steps = 5;
  for (const auto& f : tg::generate(p, j.dir.path()).files) j.ranks.push_back(json::parse(tgtest::read_file(f)));
  return j;
}

std::string write(const Job& j, const json& doc, const std::string& name) {
  const std::string path = j.dir.path() + "/" + name;
  std::ofstream(path) << doc.dump();
  return path;
}

// The document less the events `drop` picks.
json without(const json& doc, const std::function<bool(const json&)>& drop) {
  json out = doc;
  json& ev = out["traceEvents"];
  json kept = json::array();
  for (const auto& e : ev)
    if (!drop(e)) kept.push_back(e);
  ev = std::move(kept);
  return out;
}

std::string cat(const json& e) { return e.value("cat", ""); }
bool host_side(const json& e) {
  const std::string c = cat(e);
  return c == "cpu_op" || c == "user_annotation" || c == "cuda_runtime" || c == "cuda_driver" || c == "python_function";
}
bool gpu_side(const json& e) {
  const std::string c = cat(e);
  return c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" || c == "gpu_user_annotation" || c == "ac2g";
}
bool comm_kernel(const json& e) { return cat(e) == "kernel" && e.value("name", "").find("nccl") != std::string::npos; }

stepscope::DiagnosedResult analyze(const std::vector<std::string>& paths) {
  stepscope::PipelineOptions o;
  o.keep_trace = false;
  return stepscope::analyze_paths(paths, o).result;
}

bool has_code(const stepscope::DiagnosedResult& r, std::string_view code) { return r.job.trust.has(code); }

TEST(InputClaims, TheWholeJobHasAVerdict) {
  const Job j = generate("healthy", 1);
  const auto r = analyze({write(j, j.ranks[0], "whole.json")});
  EXPECT_NE(r.diagnosis.verdict.bound, stepscope::Bound::Inconclusive);
  const auto& inv = r.ranks.at(0).facts.inventory;
  EXPECT_TRUE(inv.has(stepscope::Activity::HostOps));
  EXPECT_TRUE(inv.has(stepscope::Activity::ComputeKernels));
  EXPECT_EQ(inv.recorder, stepscope::Recorder::TorchProfiler);
  EXPECT_EQ(inv.ranks_in_file, 1);
  EXPECT_FALSE(inv.startup_only);
  EXPECT_FALSE(r.job.trust.blocks());
}

// Row Bound / no_host_activity: a GPU-only export.
TEST(InputClaims, WithoutTheHostSideABoundIsWithheld) {
  const Job j = generate("healthy", 1);
  const auto r = analyze({write(j, without(j.ranks[0], host_side), "gpu_only.json")});
  EXPECT_TRUE(has_code(r, "no_host_activity"));
  EXPECT_EQ(r.diagnosis.verdict.bound, stepscope::Bound::Inconclusive);
}

// Row CommunicationBound / filtered_export: only the communication kernels were exported.
TEST(InputClaims, CommunicationAloneCannotBeCalledExposed) {
  const Job j = generate("comms-bound", 2);
  const json comm_only = without(j.ranks[0], [](const json& e) { return cat(e) == "kernel" && !comm_kernel(e); });
  const auto r = analyze({write(j, comm_only, "comm_only.json")});
  EXPECT_TRUE(has_code(r, "filtered_export"));
  EXPECT_EQ(r.ranks.at(0).facts.inventory.count(stepscope::Activity::ComputeKernels), 0u);
  EXPECT_GT(r.ranks.at(0).facts.inventory.count(stepscope::Activity::CommKernels), 0u);
  EXPECT_EQ(r.diagnosis.verdict.bound, stepscope::Bound::Inconclusive);
}

// Row Bound / incomplete_gpu_records: the GPU side of a GPU job was not recorded.
TEST(InputClaims, WithoutTheGpuSideABoundIsWithheld) {
  const Job j = generate("healthy", 1);
  const auto r = analyze({write(j, without(j.ranks[0], gpu_side), "host_only.json")});
  EXPECT_TRUE(has_code(r, "incomplete_gpu_records"));
  EXPECT_EQ(r.diagnosis.verdict.bound, stepscope::Bound::Inconclusive);
  EXPECT_NE(stepscope::device_line(r.ranks.at(0).facts), "CPU only");
}

// A file holding a whole job: every process named after its rank, pids made distinct.
json merged(const Job& j, bool leave_one_unnamed) {
  json out = {{"schemaVersion", 1}, {"traceEvents", json::array()}};
  json& ev = out["traceEvents"];
  for (std::size_t r = 0; r < j.ranks.size(); ++r) {
    std::set<std::int64_t> pids;
    for (json e : j.ranks[r]["traceEvents"]) {
      if (!e.contains("pid") || !e["pid"].is_number_integer()) continue;
      const std::int64_t pid = static_cast<std::int64_t>(r) * 1'000'000 + e["pid"].get<std::int64_t>();
      e["pid"] = pid;
      pids.insert(pid);
      if (e.value("ph", "") == "M" && e.value("name", "") == "process_name") continue;
      ev.push_back(std::move(e));
    }
    for (std::int64_t pid : pids)
      ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0},
                    {"args", {{"name", "RANK " + std::to_string(r) + " - " + std::to_string(pid % 1'000'000)}}}});
  }
  if (leave_one_unnamed)
    ev.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::empty"}, {"pid", 77}, {"tid", 77}, {"ts", 1.0}, {"dur", 1.0}});
  return out;
}

// Row Bound / several_ranks_in_file, met by splitting: the merged file reads as the ranks of its
// files, figure for figure, and the straggler is the same rank.
TEST(InputClaims, AMergedJobFileSplitsIntoItsRanks) {
  const Job j = generate("straggler", 3);
  std::vector<std::string> files;
  for (std::size_t r = 0; r < j.ranks.size(); ++r) files.push_back(write(j, j.ranks[r], "rank-" + std::to_string(r) + ".json"));
  const auto apart = analyze(files);
  const auto together = analyze({write(j, merged(j, false), "job.json")});
  ASSERT_EQ(together.ranks.size(), apart.ranks.size());
  for (std::size_t i = 0; i < apart.ranks.size(); ++i) {
    const auto& a = apart.ranks[i].partition;
    const auto& b = together.ranks[i].partition;
    EXPECT_EQ(together.ranks[i].rank(), apart.ranks[i].rank());
    EXPECT_EQ(b.steady_steps, a.steady_steps);
    EXPECT_DOUBLE_EQ(b.steady_mean_ns, a.steady_mean_ns);
    double sum = 0;
    for (std::size_t c = 0; c < b.steady_mean_category.size(); ++c) {
      EXPECT_DOUBLE_EQ(b.steady_mean_category[c], a.steady_mean_category[c]) << "rank " << i << " category " << c;
      EXPECT_GE(b.steady_mean_category[c], 0);
      sum += b.steady_mean_category[c];
    }
    EXPECT_NEAR(sum, b.steady_mean_ns, 1e-6 * b.steady_mean_ns);
  }
  EXPECT_EQ(together.job.rank_comparison.straggler, apart.job.rank_comparison.straggler);
  EXPECT_FALSE(has_code(together, "several_ranks_in_file"));
  EXPECT_EQ(together.diagnosis.verdict.headline, apart.diagnosis.verdict.headline);
}

// The same file with one process no rank name claims cannot be split: the bound is withheld.
TEST(InputClaims, AMergedFileThatCannotBeSplitGetsNoBound) {
  const Job j = generate("straggler", 3);
  const auto r = analyze({write(j, merged(j, true), "job.json")});
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_TRUE(has_code(r, "several_ranks_in_file"));
  EXPECT_EQ(r.ranks.at(0).facts.inventory.ranks_in_file, 3);
  EXPECT_EQ(r.diagnosis.verdict.bound, stepscope::Bound::Inconclusive);
}

// Row RankComparison / partial_job: two ranks of a world of 64 name no straggler.
TEST(InputClaims, TwoRanksOfALargeJobNameNoStraggler) {
  const Job j = generate("straggler", 2);
  std::vector<std::string> files;
  for (std::size_t r = 0; r < j.ranks.size(); ++r) {
    json doc = j.ranks[r];
    doc["distributedInfo"]["world_size"] = 64;
    files.push_back(write(j, doc, "rank-" + std::to_string(r) + ".json"));
  }
  const auto r = analyze(files);
  EXPECT_TRUE(has_code(r, "partial_job"));
  EXPECT_FALSE(r.job.rank_comparison.straggler.has_value());
  EXPECT_EQ(r.job.rank_comparison.world_size, 64);
  EXPECT_NE(r.diagnosis.verdict.bound, stepscope::Bound::Straggler);
  // The same two ranks as the whole job (world 2) do name it.
  std::vector<std::string> whole;
  for (std::size_t k = 0; k < j.ranks.size(); ++k) whole.push_back(write(j, j.ranks[k], "whole-" + std::to_string(k) + ".json"));
  EXPECT_FALSE(has_code(analyze(whole), "partial_job"));
}

// Two recordings of one script, 17 s apart, in one folder: no rank, no collective, disjoint windows.
TEST(InputClaims, SeparateRunsAreNotComparedAsRanks) {
  const Job j = generate("input-bound", 1);
  json first = j.ranks[0], second = j.ranks[0];
  first.erase("distributedInfo");
  second.erase("distributedInfo");
  for (auto& e : second["traceEvents"])
    if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() + 17e6;
  const auto r = analyze({write(j, first, "a.json"), write(j, second, "b.json")});
  EXPECT_TRUE(has_code(r, "separate_runs"));
  EXPECT_EQ(r.diagnosis.verdict.bound, stepscope::Bound::Inconclusive);
  EXPECT_FALSE(r.job.rank_comparison.withheld.empty());
  // The same two files recorded at the same time are two ranks as far as the trace can tell.
  const auto together = analyze({write(j, first, "c.json"), write(j, first, "d.json")});
  EXPECT_FALSE(has_code(together, "separate_runs"));
}

// Ten forward passes in a loop, without step markers or stage ranges: the repeated top-level call
// that opens each pass makes the iterations, and the run is inference, not one pass.
TEST(InputClaims, AForwardLoopWithoutMarkersHasItsIterations) {
  tgtest::TempDir dir{"fwdloop"};
  tg::Params p = tgtest::small_params("healthy");
  p.ranks = 1, p.steps = 10, p.training = false, p.step_markers = false, p.stage_annotations = false;
  const auto files = tg::generate(p, dir.path()).files;
  const auto r = analyze(files);
  EXPECT_EQ(r.ranks.at(0).facts.run_kind, stepscope::RunKind::Inference) << r.ranks.at(0).facts.run_kind_evidence;
  EXPECT_EQ(r.ranks.at(0).partition.steps.size(), 10u);
  EXPECT_FALSE(has_code(r, "no_step_markers"));
}

// A figure that cannot be so (a step's categories that do not sum to it, a negative time) is a
// blocking trust warning naming it, not a number in a report.
TEST(InputClaims, ABrokenInvariantIsNamedAndWithholdsTheBound) {
  const Job j = generate("healthy", 1);
  auto r = analyze({write(j, j.ranks[0], "whole.json")});
  ASSERT_FALSE(r.job.trust.has("invariant_violated"));
  ASSERT_FALSE(r.ranks.at(0).partition.steps.empty());
  r.ranks.at(0).partition.steps.front().ns[0] -= 1'000;  // no longer sums to its window
  r.ranks.at(0).partition.steady_mean_category[1] = -5;
  stepscope::check_invariants(r);
  const stepscope::TrustWarning* w = r.job.trust.find("invariant_violated");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->severity, stepscope::TrustSeverity::Blocks);
  EXPECT_NE(w->text.find("sum to"), std::string::npos) << w->text;
  EXPECT_NE(w->text.find("negative"), std::string::npos) << w->text;
}

std::string refusal(const std::vector<std::string>& paths) {
  try {
    analyze(paths);
  } catch (const stepscope::InputError& e) {
    return e.what();
  }
  return "";
}

// A TensorBoard log directory: one folder per run. Which to pass is said, not "no traces".
TEST(InputClaims, ALogDirectoryOfRunsSaysWhichToPass) {
  const Job j = generate("input-bound", 1);
  std::filesystem::create_directories(j.dir.path() + "/logs/run_a");
  std::filesystem::create_directories(j.dir.path() + "/logs/run_b");
  write(j, j.ranks[0], "logs/run_a/trace.json");
  write(j, j.ranks[0], "logs/run_b/trace.json");
  const std::string why = refusal({j.dir.path() + "/logs"});
  EXPECT_NE(why.find("a log directory of 2 runs in subfolders (run_a, run_b)"), std::string::npos) << why;
  EXPECT_NE(why.find("stepscope diff"), std::string::npos) << why;
}

// Inputs that are not profiler traces are named, each with what to pass instead.
TEST(InputClaims, InputsThatAreNotTracesAreNamed) {
  tgtest::TempDir dir{"notraces"};
  auto put = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() + "/" + name) << text;
    return refusal({dir.path() + "/" + name});
  };
  EXPECT_NE(put("requests.json", R"({"traceEvents":[{"name":"POST /generate","cat":"request","ph":"X","ts":1,"dur":9,"pid":1,"tid":1}]})")
                .find("a Chrome trace, but not a profiler's"),
            std::string::npos);
  EXPECT_NE(put("et.json", R"({"schema":"1.0.1","pid":1,"nodes":[]})").find("execution trace"), std::string::npos);
  EXPECT_NE(put("rocprof.json", R"({"rocprofiler-sdk-tool":[]})").find("rocprofv3"), std::string::npos);
  EXPECT_NE(put("timeline.json", "[[1, 0, 1024, 3]]").find("export_memory_timeline"), std::string::npos);
  EXPECT_NE(put("nccl.log", "node1:123:456 [0] NCCL INFO Bootstrap\n").find("NCCL debug log"), std::string::npos);
  EXPECT_NE(put("dmon.log", "# gpu   pwr gtemp mtemp    sm   mem\n").find("stepscope triage"), std::string::npos);
  EXPECT_NE(put("snap.pickle", std::string("\x80\x04\x95", 3) + "junk").find("pickle"), std::string::npos);
}

// Every blocking row of the table names a code that one of the tests above (or the facts tests)
// raises; a new row without a test fails here.
TEST(InputClaims, EveryBlockingRowIsTested) {
  const std::set<std::string> tested = {"no_host_activity", "incomplete_gpu_records", "startup_only",
                                        "several_ranks_in_file", "filtered_export", "partial_job",
                                        "separate_runs"};
  for (const auto& row : stepscope::kClaimPreconditions)
    if (row.blocks) {
      EXPECT_TRUE(tested.contains(row.code)) << row.code;
    }
}

}  // namespace
