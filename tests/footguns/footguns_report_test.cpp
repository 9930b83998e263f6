// The reports carry each footgun finding whole: the text report lists it with its evidence, the
// JSON report adds the evidence, the lever and the gain to its entry in "findings".
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include "partition/support.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

DiagnosedResult conv_nchw() {
  const auto dir = test::generate("conv-nchw-amp", "--steps 4");
  EXPECT_FALSE(dir.empty());
  PipelineOptions o;
  o.ingest.jobs = 1;
  DiagnosedResult r = analyze_paths({(dir / "rank-0.pt.trace.json").string()}, o).result;
  std::filesystem::remove_all(dir);
  return r;
}

TEST(FootgunReports, TextAndJsonCarryEvidenceLeverAndGain) {
  const DiagnosedResult r = conv_nchw();
  const Finding* f = nullptr;
  for (const auto& x : r.diagnosis.findings)
    if (x.footgun == FootgunId::NchwLayout) f = &x;
  ASSERT_NE(f, nullptr);

  const std::string text = render_text(r);
  EXPECT_NE(text.find("footguns (each with what to look for in the trace):"), std::string::npos);
  EXPECT_NE(text.find("[nchw_layout] " + f->text), std::string::npos);
  for (const auto& e : f->evidence) EXPECT_NE(text.find(e), std::string::npos) << e;
  EXPECT_NE(text.find("footguns in this trace: nchw_layout"), std::string::npos);

  const nlohmann::json j = to_json(r);
  const nlohmann::json* entry = nullptr;
  const auto find = [&](const nlohmann::json& node, auto&& self) -> void {
    if (node.is_object()) {
      if (node.contains("id") && node["id"] == "nchw_layout" && node.contains("evidence")) entry = &node;
      for (const auto& [k, v] : node.items()) self(v, self);
    } else if (node.is_array()) {
      for (const auto& v : node) self(v, self);
    }
  };
  find(j, find);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ((*entry)["lever"], "channels_last");
  EXPECT_DOUBLE_EQ((*entry)["gain_ns"].get<double>(), f->gain_ns);
  EXPECT_DOUBLE_EQ((*entry)["speedup"].get<double>(), f->speedup);
  EXPECT_EQ((*entry)["evidence"].size(), f->evidence.size());

  // The lever ranking uses the measured gain.
  for (const auto& l : r.diagnosis.levers) {
    if (l.id == LeverId::ChannelsLast) {
      EXPECT_DOUBLE_EQ(l.removable_ns, f->gain_ns);
    }
  }
}

}  // namespace
}  // namespace stepscope
