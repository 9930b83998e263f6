// Every pass is near-linear: the shapes that once grew with the square of the input (many GPU
// devices, pids sharing a tid, many streams, deep host nesting, one correlation id for every
// launch, a dmon log of many GPUs) take, at ten times the size, well under 30 times as long.
// Bounds are generous ratios, never an absolute speed.
#include <gtest/gtest.h>

#include <functional>

#include "harness.hpp"

namespace reliability {
namespace {

std::string ev(const std::string& ph_cat_name, int pid, int tid, long ts, long dur, const std::string& args = "") {
  return "{\"ph\":\"X\"," + ph_cat_name + ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) + (args.empty() ? "" : ",\"args\":" + args) + "},";
}
const std::string kLaunch = R"("cat":"cuda_runtime","name":"cudaLaunchKernel")";
const std::string kKernel = R"("cat":"kernel","name":"k")";
const std::string kOp = R"("cat":"cpu_op","name":"op")";

std::string launch_and_kernel(int i, int corr, int pid, int stream, int device) {
  const std::string c = std::to_string(corr);
  return ev(kLaunch, 1, 1, 10 + i * 10L, 5, "{\"correlation\":" + c + "}") +
         ev(kKernel, pid, stream, 12 + i * 10L, 5,
            "{\"correlation\":" + c + ",\"stream\":" + std::to_string(stream) + ",\"device\":" + std::to_string(device) + "}");
}

std::string trace_of(int n, const std::function<std::string(int)>& one) {
  std::string events;
  for (int i = 0; i < n; ++i) events += one(i);
  events.pop_back();
  return kineto(events);
}

struct Shape {
  const char* name;
  int n;  // the small size; the large one is 10 n
  std::function<std::string(int)> make;
  std::vector<std::string> command;  // FILE stands for the input
};

std::vector<Shape> shapes() {
  return {
      {"devices", 3000, [](int n) { return trace_of(n, [](int i) { return launch_and_kernel(i, i + 1, i, 7, i); }); }, {"analyze", "FILE", "-q"}},
      {"pids_sharing_a_tid", 20000, [](int n) { return trace_of(n, [](int i) { return ev(kOp, i + 2, 5, 10 + i * 10L, 5); }); }, {"analyze", "FILE", "-q"}},
      {"streams", 10000, [](int n) { return trace_of(n, [](int i) { return launch_and_kernel(i, i + 1, 0, i + 7, 0); }); }, {"analyze", "FILE", "-q"}},
      {"nested_host_ops", 20000, [](int n) { return trace_of(n, [n](int i) { return ev(kOp, 1, 1, 10 + i, 2L * (n - i)); }); }, {"analyze", "FILE", "-q"}},
      {"shared_correlation_id", 1000, [](int n) { return trace_of(n, [](int i) { return launch_and_kernel(i, 7, 0, 7, 0); }); }, {"analyze", "FILE", "-q"}},
      {"dmon_gpus", 6000,
       [](int n) {
         std::string log = "# gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk\n# Idx     W     C     C     %     %     %     %   MHz   MHz\n";
         for (int i = 0; i < n; ++i) log += std::to_string(i) + "    60    40     -    90    50     0     0  1215  1410\n";
         return log;
       },
       {"triage", "FILE"}},
  };
}

class Scaling : public ::testing::TestWithParam<Shape> {};

double seconds_for(const Scratch& s, const Shape& shape, int n) {
  const std::string file = std::string(shape.name) + std::to_string(n);
  spit(s / file, shape.make(n));
  std::vector<std::string> args = shape.command;
  for (auto& a : args)
    if (a == "FILE") a = file;
  Limits l = s.limits();
  l.timeout_s = 120;
  const Result r = run(args, l);
  EXPECT_FALSE(r.timed_out) << shape.name << " n=" << n;
  EXPECT_LT(r.rc, 2) << shape.name << " n=" << n << ": " << r.err;
  return r.seconds;
}

TEST_P(Scaling, TenTimesTheInputTakesWellUnderThirtyTimesTheTime) {
  const Shape& shape = GetParam();
  Scratch s;
  const double small = seconds_for(s, shape, shape.n);
  const double large = seconds_for(s, shape, shape.n * 10);
  // The small run's time is floored: a process start dominates tiny inputs.
  EXPECT_LT(large, 30 * std::max(small, 0.05)) << shape.name << ": " << small << " s, then " << large << " s";
}

INSTANTIATE_TEST_SUITE_P(Shapes, Scaling, ::testing::ValuesIn(shapes()),
                         [](const ::testing::TestParamInfo<Shape>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace reliability
