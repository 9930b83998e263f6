// Untrusted text is escaped at each sink: the terminal (text report), the error line and CSV.
#include <gtest/gtest.h>

#include "harness.hpp"
#include "stepscope/report.hpp"
#include "stepscope/watch/render.hpp"

namespace reliability {
namespace {

using stepscope::terminal_safe;

TEST(TerminalSafe, EscapesEveryCodePointATerminalActsOn) {
  EXPECT_EQ(terminal_safe("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(terminal_safe("\n\r\t\x7f"), "\\x0a\\x0d\\x09\\x7f");
  EXPECT_EQ(terminal_safe("csi \xc2\x9b" "31m"), "csi \\u009b31m");          // C1 CSI
  EXPECT_EQ(terminal_safe("osc \xc2\x9d"), "osc \\u009d");                  // C1 OSC
  EXPECT_EQ(terminal_safe("\xe2\x80\xae" "evil"), "\\u202eevil");           // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(terminal_safe("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069"); // isolates
  EXPECT_EQ(terminal_safe("lone \x9b byte"), "lone \\x9b byte");           // 8-bit CSI, not UTF-8
  EXPECT_EQ(terminal_safe("aten::mm \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "aten::mm \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST(WatchSanitize, ReplacesEveryCodePointATerminalActsOnAndKeepsText) {
  using stepscope::watch::sanitize;
  EXPECT_EQ(sanitize("a\x1b[2J\nb"), "a?[2J?b");
  EXPECT_EQ(sanitize("csi \xc2\x9b" "31m osc \xc2\x9d"), "csi ?31m osc ?");
  EXPECT_EQ(sanitize("\xe2\x80\xae" "evil \xe2\x81\xa6"), "?evil ?");
  EXPECT_EQ(sanitize("lone \x9b"), "lone ?");
  EXPECT_EQ(sanitize("python \xc3\xa9\xe2\x82\xac"), "python \xc3\xa9\xe2\x82\xac");
}

struct Sinks : ::testing::Test {
  Scratch s;
  const std::string hostile = "=HYPERLINK(\\\"http://x\\\")\\u009b31m\\u202eevil\\u001b[2J";
  void SetUp() override {
    spit(s / "t.json",
         kineto(R"({"ph":"X","name":")" + hostile + R"(","cat":"cpu_op","pid":1,"tid":1,"ts":10,"dur":500000},)"
                R"({"ph":"X","name":"-2+3","cat":"cpu_op","pid":1,"tid":1,"ts":600000,"dur":300000})"));
  }
};

TEST_F(Sinks, TheTextReportCarriesNoControlOrBidiCode) {
  const Result r = run({"analyze", "t.json", "--wide", "-v", "-q"}, s.limits());
  ASSERT_LT(r.rc, 2) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos);
}

TEST_F(Sinks, CsvCellsNeverStartAFormula) {
  const Result r = run({"analyze", "t.json", "--csv", "tables", "-q"}, s.limits());
  ASSERT_LT(r.rc, 2) << r.err;
  const std::string csv = slurp(s / "tables/operators_by_name.csv");
  EXPECT_NE(csv.find(",\"'=HYPERLINK("), std::string::npos) << csv;
  EXPECT_NE(csv.find(",\"'-2+3\""), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",=HYPERLINK"), std::string::npos);
}

TEST_F(Sinks, AFileNameCannotForgeOrHideAnErrorLine) {
  const Result r = run({"analyze", "a\x1b[2Jb\nstepscope: error: forged.json"}, s.limits());
  EXPECT_REFUSED(r);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
}

TEST_F(Sinks, AnUnknownOptionIsEscaped) {
  const Result r = run({"analyze", "t.json", "--t\x1b[2Jop"}, s.limits());
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace reliability
