// Golden tests: for each real Nsight Systems export, the JSON report's CUDA summary reproduces
// the figures of `nsys stats` / `nsys analyze` that the oracle computed from their definitions.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> oracle_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(std::string(STEPSCOPE_ORACLES_DIR) + "/nsys"))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// CUPTI's copy kinds, by the enum name of schema 3 and by the number schema 2 writes.
std::string copy_kind_of_oracle_key(const std::string& key) {
  static const std::map<std::string, std::string> names = {
      {"CUDA_MEMCPY_KIND_HTOD", "HtoD"}, {"1", "HtoD"}, {"CUDA_MEMCPY_KIND_DTOH", "DtoH"}, {"2", "DtoH"},
      {"CUDA_MEMCPY_KIND_DTOD", "DtoD"}, {"8", "DtoD"}, {"CUDA_MEMCPY_KIND_HTOH", "HtoH"}, {"9", "HtoH"},
      {"CUDA_MEMCPY_KIND_PTOP", "PtoP"}, {"10", "PtoP"}};
  auto it = names.find(key);
  return it == names.end() ? "?" + key : it->second;
}

const nlohmann::json* find_named(const nlohmann::json& rows, const std::string& name, const char* key = "name") {
  for (const auto& r : rows)
    if (r[key] == name) return &r;
  return nullptr;
}

// Durations are integer ns and must be equal; means and deviations to double precision; the
// oracle's percentages are rounded to 4 places.
void expect_stats(const nlohmann::json& got, const nlohmann::json& want, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got["instances"].get<std::int64_t>(), want["instances"].get<std::int64_t>());
  EXPECT_EQ(got["total_ns"].get<std::int64_t>(), want["total"].get<std::int64_t>());
  EXPECT_EQ(got["min_ns"].get<std::int64_t>(), want["min"].get<std::int64_t>());
  EXPECT_EQ(got["max_ns"].get<std::int64_t>(), want["max"].get<std::int64_t>());
  EXPECT_DOUBLE_EQ(got["median_ns"].get<double>(), want["med"].get<double>());
  EXPECT_NEAR(got["avg_ns"].get<double>(), want["avg"].get<double>(), 1e-9 * want["avg"].get<double>());
  EXPECT_NEAR(got["stddev_ns"].get<double>(), want["stddev"].get<double>(), 1e-9 * want["avg"].get<double>());
  if (want.contains("time_pct")) {
    EXPECT_NEAR(100.0 * got["time_share"].get<double>(), want["time_pct"].get<double>(), 0.5e-4);
  }
}

void expect_table(const nlohmann::json& got, const nlohmann::json& want, const std::string& what) {
  ASSERT_FALSE(want.empty()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    std::string name = want[i]["name"];
    const nlohmann::json* g = find_named(got, name);
    ASSERT_NE(g, nullptr) << what << ": no row " << name;
    expect_stats(*g, want[i], what + " " + name);
  }
  // Same order (largest total first) over the rows the oracle lists.
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i]["name"], want[i]["name"]) << what << " row " << i;
}

class NsysGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    oracle = nlohmann::json::parse(std::ifstream(GetParam()));
    std::string fixture = std::string(STEPSCOPE_FIXTURES_DIR) + "/" + oracle["fixture"].get<std::string>();
    Analysis a = analyze_paths({fixture});
    report = to_json(a.result);
    ASSERT_EQ(report["ranks"].size(), 1u);
    summary = report["ranks"][0]["cuda_summary"];
    trace = std::move(a.trace);
  }
  nlohmann::json oracle, report, summary;
  Trace trace;
};

TEST_P(NsysGolden, KernelSummaryByShortAndDemangledName) {
  expect_table(summary["kernels_by_short_name"], oracle["kernels_by_shortName"], "kernels by short name");
  expect_table(summary["kernels"], oracle["kernels_by_demangledName"], "kernels by demangled name");
  EXPECT_EQ(summary["kernel_count"].get<std::int64_t>(), oracle["kernel_count"].get<std::int64_t>());
  EXPECT_EQ(summary["kernel_total_ns"].get<std::int64_t>(), oracle["kernel_total"].get<std::int64_t>());
}

TEST_P(NsysGolden, MemcpyTimeAndBytesByKind) {
  const auto& want = oracle["memcpy_by_kind"];
  EXPECT_EQ(summary["memcpy_by_kind"].size(), want.size());
  for (const auto& [key, w] : want.items()) {
    std::string kind = copy_kind_of_oracle_key(key);
    const nlohmann::json* g = find_named(summary["memcpy_by_kind"], kind, "kind");
    ASSERT_NE(g, nullptr) << kind;
    EXPECT_EQ((*g)["bytes"].get<std::int64_t>(), w["bytes"].get<std::int64_t>()) << kind;
    expect_stats(*g, w, "memcpy " + kind);
  }
}

TEST_P(NsysGolden, RuntimeApiSummary) {
  expect_table(summary["runtime_api"], oracle["runtime_api_top"], "runtime API");
}

TEST_P(NsysGolden, SyncCallsAndPageableAsyncCopies) {
  EXPECT_EQ(summary["sync_api_calls"].get<std::int64_t>(), oracle["sync_api_calls"].get<std::int64_t>());
  EXPECT_EQ(summary["pageable_async_memcpy"].get<std::int64_t>(), oracle["pageable_async_memcpy"].get<std::int64_t>());
}

TEST_P(NsysGolden, GpuBusyIdleAndGapsPerDevice) {
  const auto& want = oracle["gpu_time_by_device"];
  ASSERT_EQ(summary["gpu_time_by_device"].size(), want.size());
  EXPECT_EQ(summary["gap_threshold_ns"].get<std::int64_t>(), 500'000'000);
  for (const auto& [dev, w] : want.items()) {
    const nlohmann::json* g = nullptr;
    for (const auto& d : summary["gpu_time_by_device"])
      if (std::to_string(d["device"].get<std::int64_t>()) == dev) g = &d;
    ASSERT_NE(g, nullptr) << "device " << dev;
    EXPECT_EQ((*g)["span_ns"].get<std::int64_t>(), w["span"].get<std::int64_t>());
    EXPECT_EQ((*g)["busy_ns"].get<std::int64_t>(), w["busy"].get<std::int64_t>());
    EXPECT_EQ((*g)["idle_ns"].get<std::int64_t>(), w["idle"].get<std::int64_t>());
    EXPECT_NEAR(100.0 * (*g)["idle_share"].get<double>(), w["idle_pct"].get<double>(), 0.5e-4);
    EXPECT_EQ((*g)["gaps_over_threshold"].get<std::int64_t>(), w["gaps_over_500ms"].get<std::int64_t>());
    EXPECT_EQ((*g)["largest_gap_ns"].get<std::int64_t>(), w["largest_gap"].get<std::int64_t>());
  }
}

TEST_P(NsysGolden, GpusFromTargetInfo) {
  const auto& want = oracle["gpus"];
  const RankTrace& r = trace.ranks[0];
  ASSERT_EQ(r.devices.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.devices[i].name, want[i]["name"].get<std::string>());
    EXPECT_EQ(r.devices[i].total_global_mem, want[i]["totalMemory"].get<std::int64_t>());
  }
  EXPECT_EQ(report["ranks"][0]["ingest"]["layout"], "nsys sqlite");
}

// CloverLeaf synchronises after each of its kernels: the verdict says so, in its headline and
// first evidence line; the saxpy run (blocking copies, no explicit sync) gets no such claim.
TEST_P(NsysGolden, VerdictNamesTheSyncAfterEveryKernel) {
  const auto& v = report["verdict"];
  const std::string headline = v["headline"];
  std::int64_t syncs = oracle["sync_api_calls"], kernels = oracle["kernel_count"];
  bool every_kernel = syncs == kernels && kernels >= 10;
  EXPECT_EQ(headline.find("after every kernel") != std::string::npos, every_kernel) << headline;
  if (every_kernel) {
    EXPECT_NE(headline.find("cudaDeviceSynchronize"), std::string::npos) << headline;
    EXPECT_NE(headline.find(std::to_string(kernels) + " of " + std::to_string(kernels)), std::string::npos) << headline;
    EXPECT_NE(v["evidence"][0].get<std::string>().find("after every kernel"), std::string::npos);
  }
  EXPECT_EQ(summary["launches_then_sync"].get<std::int64_t>(), every_kernel ? kernels : 0);
  if (every_kernel) {
    // Its lever comes first and retires the catalogue's per-step sync lever (the same time).
    const auto& levers = report["levers"];
    ASSERT_FALSE(levers.empty());
    EXPECT_EQ(levers[0]["id"], "sync_once_per_step");
    EXPECT_GT(levers[0]["speedup_bound"].get<double>(), 1.05);
    for (const auto& l : levers) {
      if (l["id"] == "remove_item") {
        EXPECT_FALSE(l["applies"].get<bool>());
      }
    }
  }
}

// Without step ranges, an nsys capture's window is its GPU work: start-up (context creation,
// the first cudaMalloc) before the first launch is left out, so it cannot pass for host work.
TEST_P(NsysGolden, CaptureWithoutStepsIsItsGpuWork) {
  const auto& p = report["ranks"][0]["partition"];
  if (p["step_source"] != "whole trace") GTEST_SKIP() << "steps from " << p["step_source"];
  ASSERT_EQ(p["steps"].size(), 1u);
  const auto& step = p["steps"][0];
  const auto span = oracle["gpu_time_by_device"]["0"]["span"].get<std::int64_t>();
  const auto window = step["duration_ns"].get<std::int64_t>();
  EXPECT_GE(window, span);
  EXPECT_LT(window - span, 1'000'000) << "more than a launch call before the first GPU activity";
  const RankTrace& r = trace.ranks[0];
  EXPECT_GT(step["start_ns"].get<std::int64_t>(), r.first_ts());
  EXPECT_LT(step["categories_ns"]["host_compute"].get<double>(), 0.01 * static_cast<double>(window));
  if (oracle["fixture"].get<std::string>().find("cloverleaf") != std::string::npos) {
    // 269 ms of start-up, 234 ms of it one cudaMalloc; the GPU is then busy 88.7% of its span.
    EXPECT_GT(step["start_ns"].get<std::int64_t>() - r.first_ts(), 260'000'000);
    EXPECT_EQ(report["verdict"]["bound"], "gpu-bound");
    // Its stencil kernels are no GEMM, convolution or attention: the mix says so, not "dense math".
    EXPECT_EQ(report["verdict"]["compute_kind"].get<std::string>().rfind("custom kernels", 0), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Oracles, NsysGolden, ::testing::ValuesIn(oracle_files()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = fs::path(p.param).stem().string();
                           for (auto& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace stepscope
