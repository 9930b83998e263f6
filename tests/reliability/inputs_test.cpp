// The working directory and every input are untrusted: a project file, a stream, a forged size,
// a shape that demands memory are refused or read within bounded memory and time.
#include <gtest/gtest.h>

#include "harness.hpp"

namespace reliability {
namespace {

// A launch call and its kernel, both carrying correlation id `corr`.
std::string fmt_event(int i, int corr) {
  const std::string c = std::to_string(corr), t = std::to_string(10 + i * 10);
  return R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" + t +
         R"(,"dur":5,"args":{"correlation":)" + c + R"(}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" + t +
         R"(5,"dur":5,"args":{"correlation":)" + c + R"(,"stream":7,"device":0}},)";
}

struct Inputs : ::testing::Test {
  Scratch s;
  Limits tight() const {
    Limits l = s.limits();
    l.memory_bytes = 1ull << 30;
    l.timeout_s = 60;
    return l;
  }
};

TEST_F(Inputs, AFifoNamedLikeTheProjectFileIsRefusedNotWaitedOn) {
  ASSERT_EQ(::mkfifo((s / "stepscope.toml").c_str(), 0600), 0);
  Limits l = tight();
  l.timeout_s = 20;
  EXPECT_REFUSED(run({"--version"}, l));
  EXPECT_REFUSED(run({"analyze", example_trace()}, l));
}

TEST_F(Inputs, DeeplyNestedProjectFileIsRefusedInBoundedMemory) {
  spit(s / "stepscope.toml", "[analyze]\ntop = " + std::string(100000, '[') + std::string(100000, ']') + "\n");
  EXPECT_REFUSED(run({"analyze", example_trace()}, tight()));
}

TEST_F(Inputs, AHugeProjectFileIsRefused) {
  spit(s / "stepscope.toml", "[analyze]\n" + std::string(2 << 20, '#') + "\n");
  EXPECT_REFUSED(run({"--version"}, tight()));
}

TEST_F(Inputs, AnUnknownProjectKeyIsEscaped) {
  spit(s / "stepscope.toml", "[analyze]\ntop\x1b]0;owned\x07x = 3\n");
  const Result r = run({"analyze", example_trace(), "-q"}, tight());
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.err.find('\x07'), std::string::npos);
}

TEST_F(Inputs, DevicesAndEndlessStreamsAreRefusedAtTheirFirstBytes) {
  EXPECT_REFUSED(run({"analyze", "/dev/zero"}, tight()));
  EXPECT_REFUSED(run({"merge", "/dev/zero"}, tight()));
  EXPECT_REFUSED(run({"triage", "/dev/zero"}, tight()));
  EXPECT_REFUSED(run({"--config", "/dev/zero", "--version"}, tight()));
  Limits piped = tight();
  piped.stdin_path = "/dev/zero";
  EXPECT_REFUSED(run({"analyze", "-"}, piped));
}

TEST_F(Inputs, AGzipOfZerosIsNoSummary) {
  spit(s / "zeros.summary", gzip(std::string(64 << 20, '\0')));  // 64 KB on disk
  EXPECT_REFUSED(run({"merge", "zeros.summary"}, tight()));
}

TEST_F(Inputs, AForgedGzipSizeReservesNothing) {
  std::string gz = gzip(kineto(R"({"ph":"X","name":"aten::mm","cat":"cpu_op","pid":1,"tid":1,"ts":10,"dur":5})"));
  for (std::size_t i = gz.size() - 4; i < gz.size(); ++i) gz[i] = '\xff';  // ISIZE: 4 GiB
  spit(s / "forged.json.gz", gz);
  const Result r = run({"analyze", "forged.json.gz", "-q"}, tight());
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.rc, 3) << r.err;  // read or refused, never killed
}

TEST_F(Inputs, LaunchesSharingOneCorrelationIdAreJoinedInLinearMemory) {
  for (int corr : {7, 0}) {
    std::string ev;
    for (int i = 0; i < 2000; ++i)
      ev += fmt_event(i, corr);
    ev.pop_back();
    spit(s / "corr.json", kineto(ev));
    const Result r = run({"analyze", "corr.json", "-q"}, tight());
    EXPECT_FALSE(r.timed_out);
    EXPECT_LT(r.rc, 3) << r.err;
  }
}

TEST_F(Inputs, RunningOutOfMemoryIsOneLineAndExitTwo) {
  std::string ev;
  for (int i = 0; i < 100000; ++i) {
    const std::string t = std::to_string(10 + i * 10L), c = std::to_string(i + 1), st = std::to_string(i + 7);
    ev += R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" + t +
          R"(,"dur":5,"args":{"correlation":)" + c + R"(}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":)" + st +
          R"(,"ts":)" + t + R"(2,"dur":5,"args":{"correlation":)" + c + R"(,"stream":)" + st + R"(,"device":0}},)";
  }
  ev.pop_back();
  spit(s / "streams.json", kineto(ev));  // 30 MB that take about 200 MB to analyse
  Limits l = tight();
  l.memory_bytes = 120ull << 20;
  const Result r = run({"analyze", "streams.json", "-q"}, l);
  EXPECT_REFUSED(r);
  EXPECT_NE(r.err.find("out of memory"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace reliability
