// Every scenario loads through the project's own Kineto reader without a warning, with the
// steps, GPU activity and launch links the ground truth speaks of.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "stepscope/ingest.hpp"
#include "tracegen.hpp"
#include "tracegen_test_util.hpp"

namespace tg = stepscope::tracegen;

namespace {

class IngestEveryScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(IngestEveryScenario, LoadsWithoutWarnings) {
  tgtest::TempDir dir("ingest");
  tg::Params p = tgtest::small_params(GetParam());
  p.gzip = GetParam() == "healthy";  // one gzipped run through the reader's gzip path
  const auto r = tg::generate(p, dir.path());
  const auto truth = nlohmann::json::parse(tgtest::read_file(r.ground_truth));
  for (std::size_t i = 0; i < r.files.size(); ++i) {
    const stepscope::RankTrace t = stepscope::read_kineto_file(r.files[i]);
    EXPECT_TRUE(t.warnings.empty()) << r.files[i] << ": " << (t.warnings.empty() ? "" : stepscope::ingest_warning_text(t.warnings[0]));
    EXPECT_FALSE(t.truncated);
    EXPECT_EQ(t.distributed.rank, std::optional<int>(static_cast<int>(i)));
    EXPECT_EQ(t.base_time_ns, std::optional<std::int64_t>(1767189312000000000LL));
    // Each ProfilerStep#N on the host starts where the ground truth's window starts.
    std::size_t steps = 0;
    for (std::size_t e = 0; e < t.events.size(); ++e) {
      if (t.events.kind[e] != stepscope::Kind::UserAnnotation) continue;
      if (t.name_of(e).rfind("ProfilerStep#", 0) != 0) continue;
      const auto& s = truth["steps"][i * static_cast<std::size_t>(p.steps) + steps];
      EXPECT_EQ(t.events.ts[e], s["start_ns"].get<std::int64_t>()) << t.name_of(e);
      EXPECT_EQ(std::string(t.name_of(e)), s["name"].get<std::string>());
      ++steps;
    }
    EXPECT_EQ(steps, static_cast<std::size_t>(p.steps));
    const bool gpu = p.platform != tg::Platform::Cpu;
    EXPECT_EQ(t.gpu_tracks.empty(), !gpu);
    EXPECT_EQ(t.correlations.launch_count() == 0, !gpu);
  }
}

std::vector<std::string> names() {
  std::vector<std::string> v;
  for (const auto& s : tg::scenarios()) v.emplace_back(s.name);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Tracegen, IngestEveryScenario, ::testing::ValuesIn(names()),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
