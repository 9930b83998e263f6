// Every fuzzing seed and every input a fuzz target ever crashed on goes through the pipeline the
// targets run (exercise.hpp): read on two threads, analysed, diagnosed and rendered to every
// report. A refusal with InputError is allowed; a crash or any other exception fails the test.
// Crashers live in fuzz/regressions/<target>/, seeds in fuzz/seeds/<kind>/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "exercise.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using fuzzing::InputKind;

const fs::path kFuzzDir = fs::path(STEPSCOPE_SOURCE_DIR) / "fuzz";

struct FuzzInput {
  fs::path path;
  InputKind kind;
};

// The folder says how its files were fed: fuzz_nsys and the nsys seeds as SQLite exports,
// everything else (fuzz_kineto, fuzz_pipeline, the Kineto seeds) as a Kineto trace file.
InputKind kind_of_folder(const fs::path& dir) {
  std::string name = dir.filename().string();
  return name == "nsys" || name == "fuzz_nsys" ? InputKind::nsys : InputKind::kineto;
}

void add_files_under(const fs::path& root, std::vector<FuzzInput>& out) {
  if (!fs::is_directory(root)) return;
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path()))
      if (f.is_regular_file()) out.push_back({f.path(), kind_of_folder(dir.path())});
  }
}

std::vector<FuzzInput> fuzz_inputs() {
  std::vector<FuzzInput> out;
  add_files_under(kFuzzDir / "seeds", out);
  add_files_under(kFuzzDir / "regressions", out);
  std::sort(out.begin(), out.end(), [](const FuzzInput& a, const FuzzInput& b) { return a.path < b.path; });
  return out;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// gtest names allow letters, digits and '_' only; a crasher is named by its hash.
std::string test_name(const testing::TestParamInfo<FuzzInput>& info) {
  std::string name = info.param.path.parent_path().filename().string() + "_" + info.param.path.filename().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name + "_" + std::to_string(info.index);
}

void PrintTo(const FuzzInput& in, std::ostream* os) { *os << in.path.string(); }

class FuzzInputTest : public testing::TestWithParam<FuzzInput> {};

TEST_P(FuzzInputTest, GoesThroughThePipelineOrIsRefused) {
  const FuzzInput& in = GetParam();
  std::string bytes = read_bytes(in.path);
  EXPECT_NO_THROW(fuzzing::exercise_bytes(bytes, in.kind)) << in.path;
}

INSTANTIATE_TEST_SUITE_P(Inputs, FuzzInputTest, testing::ValuesIn(fuzz_inputs()), test_name);

// The seeds are real traces and exports: each must be analysed, not merely refused, or the
// fuzzers would start from inputs that never reach the analysis.
TEST(FuzzSeeds, EverySeedIsAnalysed) {
  std::vector<FuzzInput> seeds;
  add_files_under(kFuzzDir / "seeds", seeds);
  ASSERT_FALSE(seeds.empty()) << "no seeds under " << (kFuzzDir / "seeds");
  for (const auto& s : seeds) EXPECT_TRUE(fuzzing::exercise_bytes(read_bytes(s.path), s.kind)) << s.path;
}

TEST(FuzzSeeds, BothKindsAreSeeded) {
  std::vector<FuzzInput> seeds;
  add_files_under(kFuzzDir / "seeds", seeds);
  auto count = [&](InputKind k) {
    return std::count_if(seeds.begin(), seeds.end(), [&](const FuzzInput& s) { return s.kind == k; });
  };
  EXPECT_GT(count(InputKind::kineto), 0);
  EXPECT_GT(count(InputKind::nsys), 0);
}

}  // namespace
}  // namespace stepscope
