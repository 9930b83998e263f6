// The reports render the one result: text leads with the verdict, JSON carries every step.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <sys/wait.h>

#include "partition/support.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

DiagnosedResult input_bound_cpu() {
  return test::analyze_files({std::string(STEPSCOPE_FIXTURES_DIR) + "/cpu/a_dataloader_w0_slow_transform.pt.trace.json.gz"});
}

// A trace with warnings still leads with its verdict; what limits it follows at once, before the
// figures. Each wild trace below has at least two warnings.
TEST(TextReport, TheVerdictLeadsAndTheTrustWarningsFollowIt) {
  for (const char* file : {"particle_transformer_cold_forward", "tutorial_transformer_launch_bound",
                           "zoology_missing_gpu_records"}) {
    SCOPED_TRACE(file);
    const DiagnosedResult r =
        test::analyze_files({std::string(STEPSCOPE_FIXTURES_DIR) + "/wild/" + file + ".pt.trace.json.gz"});
    ASSERT_GE(r.job.trust.warnings.size(), 2u);
    const std::string text = render_text(r);
    EXPECT_EQ(text.rfind("verdict: ", 0), 0u) << text.substr(0, 200);
    const auto trust = text.find("\ntrust (what limits this analysis):\n");
    const auto steps = text.find("\nrank 0: ");
    ASSERT_NE(trust, std::string::npos);
    ASSERT_NE(steps, std::string::npos);
    EXPECT_LT(trust, steps);
  }
}

TEST(TextReport, LeadsWithTheVerdictThenTheSections) {
  const std::string text = render_text(input_bound_cpu());
  EXPECT_EQ(text.rfind("verdict: input pipeline", 0), 0u) << text.substr(0, 200);
  const auto partition = text.find("partition of the mean steady-state step");
  const auto stability = text.find("stability");
  const auto evidence = text.find("evidence:");
  const auto levers = text.find("levers");
  ASSERT_NE(partition, std::string::npos);
  EXPECT_LT(partition, stability);
  EXPECT_LT(stability, evidence);
  EXPECT_LT(evidence, levers);
  EXPECT_NE(text.find("num_workers"), std::string::npos);
  EXPECT_EQ(text.find("events by category"), std::string::npos);  // the ingest summary is --verbose only
  TextOptions verbose;
  verbose.verbose = true;
  EXPECT_NE(render_text(input_bound_cpu(), verbose).find("events by category"), std::string::npos);
}

// The recorded DDP straggler (rank 1 late by 20 ms of host work) as the JSON says it: its cause,
// and each step's host span beside its window.
TEST(JsonReport, NamesTheStragglersCauseAndEachStepsHostSpan) {
  const DiagnosedResult r =
      test::analyze_files({std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/ddp_straggler"});
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["rank_comparison"]["straggler"], 1);
  EXPECT_EQ(j["rank_comparison"]["straggler_cause"], "host_side");
  for (std::size_t k = 0; k < r.ranks.size(); ++k) {
    const auto& steps = j["ranks"][k]["partition"]["steps"];
    ASSERT_EQ(steps.size(), r.ranks[k].partition.steps.size());
    for (const auto& s : steps) {
      EXPECT_LE(s["host_start_ns"].get<ns_t>(), s["host_end_ns"].get<ns_t>());
      EXPECT_LE(s["host_start_ns"].get<ns_t>(), s["start_ns"].get<ns_t>());
    }
  }
}

TEST(JsonReport, CarriesPerStepPartitionsAndTheDiagnosis) {
  const DiagnosedResult r = input_bound_cpu();
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["schema"], "stepscope.analysis/0.10");
  ASSERT_EQ(j["ranks"].size(), 1u);
  EXPECT_TRUE(j["ranks"][0].contains("ingest"));
  const auto& steps = j["ranks"][0]["partition"]["steps"];
  ASSERT_EQ(steps.size(), r.ranks[0].partition.steps.size());
  for (const auto& s : steps) {
    ns_t sum = 0;
    for (const auto& [k, v] : s["categories_ns"].items()) sum += v.get<ns_t>();
    EXPECT_EQ(sum, s["duration_ns"].get<ns_t>());
  }
  EXPECT_EQ(j["verdict"]["bound"], "input-bound");
  EXPECT_FALSE(j["verdict"]["evidence"].empty());
  EXPECT_EQ(j["levers"].size(), r.diagnosis.levers.size());
  EXPECT_TRUE(j["levers"][0].contains("speedup_bound"));
  EXPECT_TRUE(j["ranks"][0]["stability"].contains("cv"));
}

TEST(TextReport, UntrustedNamesAreEscaped) {
  test::KinetoBuilder b;
  b.host("step\x1b[2J", 0, 50, "user_annotation");
  b.host("aten::mm", 10, 30);
  b.host("step\x1b[2J", 100, 50, "user_annotation");
  TextOptions verbose;
  verbose.verbose = true;
  const std::string text = render_text(test::analyze_json(b.trace()), verbose);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("\\x1b"), std::string::npos);
}

// Runs the CLI; returns its exit status and first output line.
std::pair<int, std::string> cli(const std::string& args) {
  std::string cmd = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope analyze -q " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 512> line{};
  std::string first = fgets(line.data(), line.size(), p) ? line.data() : "";
  while (fgets(line.data(), line.size(), p)) {
  }
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, first};
}

TEST(Cli, AnalyzeExitsZeroAndRejectsBadStageRules) {
  const std::string example = std::string(STEPSCOPE_SOURCE_DIR) + "/examples/cpu_training_step.pt.trace.json.gz";
  auto [rc, first] = cli(example);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(first.rfind("verdict: input pipeline", 0), 0u) << first;
  auto [rc2, msg] = cli("--stage 'lunch=x' " + example);
  EXPECT_EQ(rc2, 2) << msg;
}

}  // namespace
}  // namespace stepscope
