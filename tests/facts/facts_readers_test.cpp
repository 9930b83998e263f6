// The GPU timeline, the HTML kernel table and the kernel diff read kernel classes, launch calls,
// blocking calls and step markers from the facts. On real traces, the facts say for every event
// exactly what the name rules those readers used to apply themselves said.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <string_view>

#include "stepscope/facts.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// The sync points' rule: explicit synchronisation, and copies unless *Async.
bool blocking_call(std::string_view n) {
  for (std::string_view e : {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                             "cudaThreadSynchronize", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
                             "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize", "hipCtxSynchronize"})
    if (n == e) return true;
  return (starts(n, "cudaMemcpy") || starts(n, "hipMemcpy") || starts(n, "cuMemcpy")) && !has(n, "Async");
}

// "ProfilerStep#N" with N a non-negative number.
bool step_marker(std::string_view n) {
  constexpr std::string_view prefix = "ProfilerStep#";
  if (!starts(n, prefix)) return false;
  std::int64_t v = -1;
  const auto s = n.substr(prefix.size());
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() && v >= 0;
}

TEST(FactsReaders, CallFlagsOfNames) {
  EXPECT_TRUE(host_name_fact("cudaLaunchKernel").has(kNameLaunchApi));
  EXPECT_TRUE(host_name_fact("cudaGraphLaunch").has(kNameLaunchApi));
  EXPECT_TRUE(host_name_fact("cudaLaunchHostFunc").has(kNameLaunchApi));
  EXPECT_FALSE(host_name_fact("cudaMemcpyAsync").has(kNameLaunchApi));
  EXPECT_TRUE(host_name_fact("cudaDeviceSynchronize").has(kNameBlockingCall));
  EXPECT_TRUE(host_name_fact("cudaThreadSynchronize").has(kNameBlockingCall));
  EXPECT_TRUE(host_name_fact("cudaMemcpy").has(kNameBlockingCall));
  EXPECT_TRUE(host_name_fact("cuMemcpyDtoH_v2").has(kNameBlockingCall));
  EXPECT_FALSE(host_name_fact("cudaMemcpyAsync").has(kNameBlockingCall));
  EXPECT_FALSE(host_name_fact("cudaStreamWaitEvent").has(kNameBlockingCall));
}

class FactsOnTrace : public testing::TestWithParam<const char*> {};

TEST_P(FactsOnTrace, AgreeWithTheNameRulesEventByEvent) {
  const RankTrace t = read_kineto_file(std::string(STEPSCOPE_FIXTURES_DIR) + "/" + GetParam());
  const RankFacts facts = compute_facts(t);
  const EventTable& ev = t.events;
  std::size_t gpu = 0, calls = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const std::string_view n = t.name_of(i);
    const NameFact& f = facts.of_event(t, i);
    const Kind k = ev.kind[i];
    if (k == Kind::Kernel || k == Kind::Memcpy || k == Kind::Memset) {
      ++gpu;
      ASSERT_EQ(f.cls, classify_kernel(n)) << n;
      ASSERT_EQ(f.collective, collective_of(n)) << n;
    } else if (k == Kind::Runtime || k == Kind::Driver) {
      ++calls;
      ASSERT_EQ(f.has(kNameLaunchApi), has(n, "Launch")) << n;
      ASSERT_EQ(f.has(kNameBlockingCall), blocking_call(n)) << n;
    } else if (k == Kind::CpuOp || k == Kind::UserAnnotation) {
      ASSERT_EQ(f.has(kNameProfilerStep), step_marker(n)) << n;
    }
  }
  EXPECT_GT(gpu, 0u);
  EXPECT_GT(calls, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FactsOnTrace,
                         testing::Values("hta/triton_example/triton_example.json.gz",
                                         "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                                         "hta/trace_file_list/inference_rank_1.json.gz",
                                         "hta/with_gpu_user_annotation/step_based_trace_2543932.json.gz",
                                         "wild/tutorial_transformer_launch_bound.pt.trace.json.gz"),
                         [](const testing::TestParamInfo<const char*>& param) {
                           std::string name = param.param;
                           name = name.substr(name.rfind('/') + 1);
                           name = name.substr(0, name.find('.'));
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

// Each device sync's GPU busy time, against the union of the GPU's kernels, copies and memsets
// built here by sorting and merging them, then cut to the call.
TEST(FactsReaders, DeviceSyncBusyIsTheGpuUnionWithinTheCall) {
  const RankTrace t = read_kineto_file(std::string(STEPSCOPE_SOURCE_DIR) + "/tests/data/recorded/sync_then_host_work.pt.trace.json.gz");
  const RankFacts facts = compute_facts(t);
  const EventTable& ev = t.events;
  std::vector<std::pair<ns_t, ns_t>> work, merged;
  for (std::size_t i = 0; i < ev.size(); ++i)
    if ((ev.kind[i] == Kind::Kernel || ev.kind[i] == Kind::Memcpy || ev.kind[i] == Kind::Memset) && ev.dur[i] > 0)
      work.emplace_back(ev.ts[i], ev.end(i));
  std::sort(work.begin(), work.end());
  for (const auto& [a, b] : work)
    if (!merged.empty() && a <= merged.back().second) merged.back().second = std::max(merged.back().second, b);
    else merged.emplace_back(a, b);
  ASSERT_GE(facts.device_syncs.size(), 3u);
  ASSERT_EQ(facts.device_sync_busy.size(), facts.device_syncs.size());
  ns_t any = 0;
  for (std::size_t k = 0; k < facts.device_syncs.size(); ++k) {
    const auto i = facts.device_syncs[k];
    ns_t want = 0;
    for (const auto& [a, b] : merged) want += std::max<ns_t>(0, std::min(b, ev.end(i)) - std::max(a, ev.ts[i]));
    EXPECT_EQ(facts.device_sync_busy[k], want) << "sync " << k;
    any += want;
  }
  EXPECT_GT(any, 0);  // the syncs wait on GPU work
}

}  // namespace
}  // namespace stepscope
