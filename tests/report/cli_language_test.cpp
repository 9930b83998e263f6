// The CLI as a user meets it: typos get the nearest real name, a trace can come on standard
// input, and an output named *.gz is written gzipped.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

const std::string kTrace = std::string(STEPSCOPE_FIXTURES_DIR) + "/hta/triton_example/triton_example.json.gz";

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string text;
  char buf[1 << 14];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return text;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// The analysis part of the report: the inputs' names differ between a file and a pipe.
nlohmann::json analysis_of(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  for (auto& r : j["ranks"]) r["ingest"].erase("path");
  return j;
}

TEST(CliLanguage, ATypoGetsTheNearestCommandOrOption) {
  CliRun r = cli("anlyze x");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("stepscope: unknown command 'anlyze'; did you mean 'analyze'?"), std::string::npos) << r.output;
  r = cli("analyze --jsn out.json x");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("stepscope analyze: unknown option '--jsn'; did you mean '--json'?"), std::string::npos) << r.output;
  r = cli("plan memry");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("stepscope plan: unknown command 'memry'; did you mean 'memory'?"), std::string::npos) << r.output;
  // A trace named without a command: the hint is the command that reads it.
  r = cli("run.json");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.output.find("to analyse a trace: stepscope analyze run.json"), std::string::npos) << r.output;
}

TEST(CliLanguage, HelpNamesTheProgramAndEndsWithExamples) {
  for (const char* cmd : {"analyze", "diff", "plan", "triage", "watch"}) {
    const CliRun r = cli(std::string(cmd) + " --help");
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_NE(r.output.find("Usage: stepscope " + std::string(cmd)), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("Examples:\n  stepscope " + std::string(cmd)), std::string::npos) << cmd;
  }
}

TEST(CliLanguage, StandardInputGivesTheSameReportAsTheFile) {
  const fs::path dir = fs::temp_directory_path() / "stepscope-cli-stdin";
  fs::create_directories(dir);
  const std::string from_file = (dir / "file.json").string(), from_pipe = (dir / "pipe.json").string();
  ASSERT_EQ(cli("analyze -q " + kTrace + " --json " + from_file).rc, 0);
  // Gzipped on the pipe: recognised by its magic bytes, as a file is.
  const CliRun r = cli("analyze -q - --json " + from_pipe, kTrace);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(analysis_of(slurp(from_pipe)), analysis_of(slurp(from_file)));
  fs::remove_all(dir);
}

TEST(CliLanguage, OutputsNamedGzAreGzipped) {
  const fs::path dir = fs::temp_directory_path() / "stepscope-cli-gz";
  fs::create_directories(dir);
  const std::string plain = (dir / "r.json").string(), gz = (dir / "r.json.gz").string(), annotated = (dir / "a.json.gz").string();
  ASSERT_EQ(cli("analyze -q " + kTrace + " --json " + plain).rc, 0);
  const CliRun r = cli("analyze -q " + kTrace + " --json " + gz + " --annotate " + annotated);
  ASSERT_EQ(r.rc, 0) << r.output;
  const std::string bytes = slurp(gz);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  EXPECT_EQ(nlohmann::json::parse(gunzip(gz)), nlohmann::json::parse(slurp(plain)));
  // The annotated trace still parses, and holds the input's events and ours.
  const nlohmann::json a = nlohmann::json::parse(gunzip(annotated));
  const nlohmann::json in = nlohmann::json::parse(gunzip(kTrace));
  EXPECT_GT(a["traceEvents"].size(), in["traceEvents"].size());
  fs::remove_all(dir);
}

TEST(CliLanguage, CsvTablesOneFilePerTable) {
  const fs::path dir = fs::temp_directory_path() / "stepscope-cli-csv";
  fs::remove_all(dir);
  const CliRun r = cli("analyze -q " + kTrace + " --csv " + dir.string());
  ASSERT_EQ(r.rc, 0) << r.output;
  for (const char* f : {"operators_by_name.csv", "kernels.csv", "kernel_sequences.csv", "queue_length.csv", "memory_bandwidth.csv",
                        "critical_path.csv", "memory.csv"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  // The kernel table holds the trace's one Triton kernel, named in full.
  EXPECT_NE(slurp((dir / "kernels.csv").string()).find("triton_poi_fused_add_cos_sin_0"), std::string::npos);
  EXPECT_EQ(cli("analyze -q " + kTrace + " --csv -").rc, 2);
  fs::remove_all(dir);
}

TEST(CliLanguage, PlanTakesJsonFileAsEveryCommandDoes) {
  const fs::path out = fs::temp_directory_path() / "stepscope-plan-kv.json";
  fs::remove(out);
  const std::string args = "plan kv --model llama-3-8b --seq 8K";
  const CliRun to_file = cli(args + " --json " + out.string());
  ASSERT_EQ(to_file.rc, 0) << to_file.output;
  EXPECT_NE(to_file.output.find("KV cache"), std::string::npos);  // the text still goes to the terminal
  const CliRun to_stdout = cli(args + " --json");
  ASSERT_EQ(to_stdout.rc, 0);
  EXPECT_EQ(nlohmann::json::parse(to_stdout.output), nlohmann::json::parse(slurp(out.string())));
  EXPECT_EQ(nlohmann::json::parse(cli(args + " --json -").output), nlohmann::json::parse(to_stdout.output));
  fs::remove(out);
}

// Rows of the text report's operator table.
std::size_t operator_rows(const std::string& text) {
  const std::size_t head = text.find("operators (by host self time");
  const std::size_t kernels = text.find("kernels (by total time", head);
  if (head == std::string::npos || kernels == std::string::npos) return 0;
  const std::string block = text.substr(head, kernels - head);
  return static_cast<std::size_t>(std::count(block.begin(), block.end(), '\n')) - 1;
}

TEST(CliLanguage, ProjectFileHoldsDefaultsTheCommandLineOverrides) {
  const fs::path dir = fs::temp_directory_path() / "stepscope-cli-config";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "stepscope.toml") << "[analyze]\ntop = 1\nstage = [\"forward=Torch-Compiled.*\"]\n";
  std::ofstream(dir / "other.toml") << "[analyze]\ntop = 2\n";
  std::ofstream(dir / "typo.toml") << "[analyze]\ntopp = 2\n";
  const std::string bin = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope";
  const std::string in_dir = "cd " + dir.string() + " && " + bin;
  EXPECT_EQ(operator_rows(cli_shell(in_dir + " analyze -q " + kTrace).output), 1u);
  EXPECT_EQ(operator_rows(cli_shell(in_dir + " analyze -q --top 3 " + kTrace).output), 3u);
  EXPECT_EQ(operator_rows(cli_shell(in_dir + " --config other.toml analyze -q " + kTrace).output), 2u);
  EXPECT_EQ(operator_rows(cli_shell(in_dir + " analyze --config other.toml -q " + kTrace).output), 2u);
  // The file's stage rule is applied: the compiled region is counted as forward.
  EXPECT_NE(cli_shell(in_dir + " analyze -q " + kTrace).output.find("compute: forward"), std::string::npos);
  const CliRun typo = cli_shell(in_dir + " --config typo.toml analyze -q " + kTrace);
  EXPECT_EQ(typo.rc, 2);
  EXPECT_NE(typo.output.find("typo.toml: [analyze] has no option 'topp'; did you mean 'top'?"), std::string::npos) << typo.output;
  fs::remove_all(dir);
}

// `script` gives the command a terminal, as a user's shell would.
CliRun on_terminal(const std::string& env, const std::string& args) {
  return cli_shell(env + " script -qec \"" + std::string(STEPSCOPE_BINARY_DIR) + "/stepscope " + args + "\" /dev/null");
}

TEST(CliLanguage, ColourOnATerminalUnlessNoColor) {
  const std::string args = "analyze -q " + kTrace;
  const CliRun piped = cli(args);
  ASSERT_EQ(piped.rc, 0);
  EXPECT_EQ(piped.output.find('\x1b'), std::string::npos);
  const CliRun tty = on_terminal("env -u NO_COLOR", args);
  ASSERT_EQ(tty.rc, 0) << tty.output;
  EXPECT_NE(tty.output.find("\x1b[1mverdict:"), std::string::npos) << tty.output.substr(0, 300);
  const CliRun no_color = on_terminal("NO_COLOR=1", args);
  ASSERT_EQ(no_color.rc, 0);
  EXPECT_NE(no_color.output.find("verdict:"), std::string::npos);
  EXPECT_EQ(no_color.output.find('\x1b'), std::string::npos);
}

// One parser for sizes behind every integer option, one for durations behind every time option:
// the same answer whichever way a number is written, and the same one-line refusal.
TEST(CliLanguage, EveryIntegerTakesSizesAndEveryTimeTakesUnits) {
  const CliRun bare = cli("plan memory --model llama-3-8b --seq 8192 --batch 2 --json -");
  const CliRun suffixed = cli("plan memory --model llama-3-8b --seq 8K --batch 2 --json -");
  ASSERT_EQ(bare.rc, 0) << bare.output;
  EXPECT_EQ(suffixed.output, bare.output);
  EXPECT_EQ(cli("plan roofline --layernorm 1M --json -").output, cli("plan roofline --layernorm 1048576 --json -").output);
  EXPECT_EQ(cli("plan comm --params 7B --backward-ms 0.12s --json -").output,
            cli("plan comm --params 7B --backward-ms 120 --json -").output);
  const CliRun top = cli("analyze --top 1.5 " + kTrace);
  EXPECT_EQ(top.rc, 2);
  EXPECT_NE(top.output.find("--top: '1.5' is not a whole number"), std::string::npos) << top.output;
  const CliRun seq = cli("plan kv --model llama-3-8b --seq 8Q");
  EXPECT_EQ(seq.rc, 2);
  EXPECT_NE(seq.output.find("--seq: unknown suffix in '8Q'"), std::string::npos) << seq.output;
  // watch and triage count seconds; a bare 1000 is not the old milliseconds.
  const CliRun interval = cli("watch --interval 1000 --seconds 3 --no-gpu -- true");
  EXPECT_EQ(interval.rc, 2);
  EXPECT_NE(interval.output.find("--interval 1000s: must be between 0.05s and 60s"), std::string::npos) << interval.output;
  const CliRun unit = cli("watch --interval 2min --seconds 1 --no-gpu -- true");
  EXPECT_EQ(unit.rc, 2);
  EXPECT_NE(unit.output.find("--interval 120s"), std::string::npos) << unit.output;
}

// The event parser is built for the x86-64-v2 baseline and again for AVX2, picked at start-up:
// both builds read every fixture kind to the same report (a multi-rank directory, a ROCm trace, a
// legacy array, a trace with memory events).
TEST(CliLanguage, BothParserKernelsGiveTheSameReport) {
  const std::string fixtures = STEPSCOPE_FIXTURES_DIR;
  for (const std::string trace : {kTrace, fixtures + "/hta/sampled_world128",
                                  fixtures + "/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                                  fixtures + "/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"}) {
    const CliRun chosen = cli("analyze -q -j 2 --json - " + trace);
    const CliRun baseline = cli_shell("STEPSCOPE_PARSER_KERNEL=baseline " + std::string(STEPSCOPE_BINARY_DIR) +
                                      "/stepscope analyze -q -j 2 --json - " + trace);
    ASSERT_EQ(chosen.rc, 0) << trace << chosen.output.substr(0, 300);
    EXPECT_EQ(chosen.output, baseline.output) << trace;
  }
}

}  // namespace
}  // namespace stepscope
