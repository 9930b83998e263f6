// The text and JSON views: every number of the verdict reaches them, untrusted names are escaped.
#include "stepscope/watch/render.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace stepscope::watch;

namespace {

Series pegged_series() {
  Series s;
  s.target.pid = 4242;
  s.target.command = "python train.py";
  s.target.online_cpus = 8;
  s.gpu_status = "no NVIDIA driver: test";
  s.notes.push_back({stepscope::WarningId::NoGpuObserved, s.gpu_status});
  for (int i = 0; i < 4; ++i) {
    Sample x;
    x.t_s = i;
    HostReading h;
    ProcessReading p;
    p.pid = 4242;
    p.comm = "py\x1b[2Jthon";  // a hostile process name
    p.cpu_pct = 99;
    p.threads = 1;
    h.processes.push_back(p);
    ThreadReading t;
    t.pid = t.tid = 4242;
    t.comm = p.comm;
    t.cpu_pct = 99;
    t.wait_pct = 0.5;
    t.state = 'R';
    h.threads.push_back(t);
    x.host = h;
    s.samples.push_back(x);
  }
  return s;
}

}  // namespace

TEST(Render, JsonCarriesVerdictStatsAndSamples) {
  auto s = pegged_series();
  auto c = classify(s);
  auto doc = nlohmann::json::parse(render_json(s, c, "watch"));
  EXPECT_EQ(doc["schema"], kWatchJsonSchema);
  EXPECT_EQ(doc["target"]["pid"], 4242);
  EXPECT_EQ(doc["target"]["usable_cpus"], 8.0);
  EXPECT_TRUE(doc["target"]["OMP_NUM_THREADS"].is_null());
  // No GPU in the series: a host-side verdict, and the JSON says the GPU side is unknown.
  EXPECT_EQ(doc["verdict"]["rule"], "cpu-bound-thread");
  EXPECT_FALSE(doc["gpu_in_view"].get<bool>());
  EXPECT_FALSE(doc["gpu_side"]["known"].get<bool>());
  EXPECT_NE(doc["gpu_side"]["how_to_find_out"].get<std::string>().find("stepscope watch"),
            std::string::npos);
  EXPECT_EQ(doc["verdict"]["confidence_basis"]["samples"], 4);
  EXPECT_EQ(doc["verdict"]["confidence_basis"]["margins"][0]["metric"], "host.top_thread.demand");
  EXPECT_EQ(doc["host_stats"]["busy_threads"], 1);
  EXPECT_FALSE(doc["verdict"]["evidence"].empty());
  EXPECT_NEAR(doc["host_stats"]["top_thread"]["demand_cores"].get<double>(), 0.995, 1e-12);
  EXPECT_EQ(doc["samples"].size(), 4u);
  EXPECT_EQ(doc["samples"][0]["host"]["top_threads"][0]["state"], "R");
  EXPECT_EQ(doc["notes"][0], "no NVIDIA driver: test");
  EXPECT_FALSE(doc.contains("logs"));
  std::vector<LogReport> logs(1);
  logs[0].file = "dmon.log";
  logs[0].malformed = 2;
  auto with_logs = nlohmann::json::parse(render_json(s, c, "triage", &logs));
  EXPECT_EQ(with_logs["logs"][0]["malformed"], 2);
}

TEST(Render, SummaryShowsVerdictNextStepAndEscapesNames) {
  auto s = pegged_series();
  auto c = classify(s);
  std::string text = render_summary(s, c, "watched pid 4242");
  EXPECT_NE(text.find("verdict: cpu-bound-thread"), std::string::npos) << text;
  EXPECT_EQ(text.find("input-bound"), std::string::npos) << text;
  EXPECT_EQ(text.find("num_workers"), std::string::npos) << text;
  EXPECT_NE(text.find("gpu side: unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("to find out:"), std::string::npos) << text;
  // 4 samples: medium, and the text names what would raise it.
  EXPECT_NE(text.find("[medium confidence]"), std::string::npos) << text;
  EXPECT_NE(text.find("to raise it: more samples"), std::string::npos) << text;
  EXPECT_NE(text.find("py-spy top --pid 4242"), std::string::npos);
  EXPECT_NE(text.find("no NVIDIA driver: test"), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);  // no escape sequence reaches the terminal
  EXPECT_NE(text.find("py?[2Jthon"), std::string::npos);
}

TEST(Render, LiveBlockShowsLatestSampleAndMissingGpu) {
  auto s = pegged_series();
  std::string live = render_live(s, 10);
  EXPECT_NE(live.find("3.0/10 s"), std::string::npos) << live;
  EXPECT_NE(live.find("cpu    99% of a core"), std::string::npos) << live;
  EXPECT_NE(live.find("gpu   none: no NVIDIA driver"), std::string::npos);
  EXPECT_EQ(live.find('\x1b'), std::string::npos);
}

// On a narrow terminal every line of the live view fits (a wrapped line breaks the redraw):
// whole fields go first, then the line is cut.
TEST(Render, LiveBlockFitsTheTerminalWidth) {
  auto s = pegged_series();
  for (std::size_t width : {100u, 60u, 40u, 12u}) {
    const std::string live = render_live(s, 10, width);
    std::size_t start = 0;
    while (start < live.size()) {
      const std::size_t end = live.find('\n', start);
      const std::string line = live.substr(start, end - start);
      std::size_t cols = 0;
      for (char c : line) cols += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      EXPECT_LE(cols, width) << line;
      start = end + 1;
    }
  }
  EXPECT_EQ(fit_line("gpu0 util 97% · sm 1410 MHz · 300 W", 24), "gpu0 util 97% · …");
  EXPECT_EQ(fit_line("gpu0 util 97% · sm 1410 MHz · 300 W", 80), "gpu0 util 97% · sm 1410 MHz · 300 W");
  EXPECT_EQ(fit_line("abcdefghij", 5), "abcd…");
}

TEST(Render, SanitizeReplacesControlCharacters) {
  EXPECT_EQ(sanitize("a\tb\nc\x7f"), "a?b?c?");
  EXPECT_EQ(sanitize("plain"), "plain");
}
