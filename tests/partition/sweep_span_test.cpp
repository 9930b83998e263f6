// The partition's sweep stores its interval edges packed (8 bytes, time as an offset) when the
// trace spans less than 2^56 ns, and as plain (time, channel, delta) records beyond: both must
// give every step the same categories.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "partition/support.hpp"

namespace stepscope {
namespace {

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  std::string out;
  char buf[1 << 16];
  for (int n; f && (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  if (f) gzclose(f);
  return out;
}

TEST(PartitionSweep, AKernelYearsLaterMovesTheSweepToWideEdgesAndChangesNoStep) {
  nlohmann::json doc = nlohmann::json::parse(
      gunzip(std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/sync_then_host_work.pt.trace.json.gz"));
  const DiagnosedResult packed = test::analyze_json(doc);
  double last_us = 0;
  for (const auto& e : doc["traceEvents"])
    if (e.contains("ts") && e["ts"].is_number()) last_us = std::max(last_us, e["ts"].get<double>());
  // 2^57 ns (4.6 years) after the last event: past the packed form's 2^56 ns span.
  doc["traceEvents"].push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", "far_kernel"}, {"pid", 0}, {"tid", 7},
                                {"ts", last_us + 144115188075855.872}, {"dur", 1.0},
                                {"args", {{"device", 0}, {"stream", 7}}}});
  const DiagnosedResult wide = test::analyze_json(doc);
  const auto& a = packed.ranks.at(0).partition.steps;
  const auto& b = wide.ranks.at(0).partition.steps;
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GE(a.size(), 3u);
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].start, b[k].start) << k;
    EXPECT_EQ(a[k].end, b[k].end) << k;
    EXPECT_EQ(a[k].ns, b[k].ns) << k;
  }
}

}  // namespace
}  // namespace stepscope
