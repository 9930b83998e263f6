// Generated traces must not drift from what PyTorch writes: their `cat` values and the `args`
// keys under each are a subset of those in real traces of the same kind, and the core
// categories of those real traces all appear.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tracegen.hpp"
#include "tracegen_test_util.hpp"

namespace tg = stepscope::tracegen;

namespace {

const std::string kFixtures = STEPSCOPE_FIXTURES_DIR;

// Parsing a 15 MB fixture takes a while: each is read once per test run.
const tgtest::Shape& one_fixture(const std::string& file) {
  static std::map<std::string, tgtest::Shape> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    it = cache.emplace(file, tgtest::Shape{}).first;
    tgtest::collect_shape(kFixtures + "/" + file, it->second);
  }
  return it->second;
}

tgtest::Shape fixture_shape(const std::vector<std::string>& files) {
  tgtest::Shape s;
  for (const auto& f : files)
    for (const auto& [cat, keys] : one_fixture(f).args_by_cat) s.args_by_cat[cat].insert(keys.begin(), keys.end());
  return s;
}

tgtest::Shape generated_shape(const std::vector<std::string>& scenarios) {
  tgtest::Shape s;
  for (const auto& name : scenarios) {
    tgtest::TempDir dir("shape");
    tg::Params p = tgtest::small_params(name);
    p.steps = 2;
    // Every rank, so rank-dependent fields (collectives) are covered.
    for (const auto& f : tg::generate(p, dir.path()).files) tgtest::collect_shape(f, s);
  }
  return s;
}

void expect_subset(const tgtest::Shape& generated, const tgtest::Shape& real) {
  for (const auto& [cat, keys] : generated.args_by_cat) {
    auto it = real.args_by_cat.find(cat);
    ASSERT_NE(it, real.args_by_cat.end()) << "cat \"" << cat << "\" is not in the fixtures";
    for (const auto& k : keys)
      EXPECT_TRUE(it->second.count(k)) << "args key \"" << k << "\" under cat \"" << cat
                                       << "\" is not in the fixtures";
  }
}

void expect_present(const tgtest::Shape& generated, const std::vector<std::string>& cats) {
  for (const auto& c : cats)
    EXPECT_TRUE(generated.args_by_cat.count(c)) << "generated traces lack cat \"" << c << "\"";
}

const std::vector<std::string> kCudaScenarios = {"healthy", "comms-bound", "checkpoint", "memory-bound",
                                                 "pageable-copy", "sync-stall"};

TEST(TracegenShape, CudaMatchesRealKinetoTraces) {
  const auto real = fixture_shape({"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                                   "tracelens/b200/eager_trace.json.gz",
                                   "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"});
  const auto gen = generated_shape(kCudaScenarios);
  expect_subset(gen, real);
  expect_present(gen, {"cpu_op", "user_annotation", "cuda_runtime", "kernel", "gpu_memcpy",
                       "gpu_memset", "gpu_user_annotation", "ac2g", "fwdbwd", "Trace", ""});
}

TEST(TracegenShape, NcclArgsMatchADdpTrace) {
  const auto real = fixture_shape({"param/dlrm_8rank/kineto/worker0_step_12.1694128201545.pt.trace.json.gz",
                                   "tracelens/b200/eager_trace.json.gz"});
  auto gen = generated_shape({"straggler"});
  // Compare what the DDP traces carry: the collective kernels' and launches' args.
  for (const char* cat : {"kernel", "cuda_runtime", "gpu_memcpy"}) {
    tgtest::Shape one;
    one.args_by_cat[cat] = gen.args_by_cat[cat];
    expect_subset(one, real);
  }
}

TEST(TracegenShape, LegacyNcclNamesMatchAnOlderDdpTrace) {
  const auto real = fixture_shape({"param/dlrm_8rank/kineto/worker0_step_12.1694128201545.pt.trace.json.gz",
                                   "hta/nccl_parser_config/nccl_data.json.gz"});
  tgtest::TempDir dir("legacy-nccl");
  tg::Params p = tgtest::small_params("comms-bound");
  p.nccl_version = "2.14.3";
  p.steps = 1;
  tgtest::Shape gen;
  bool legacy_name = false;
  for (const auto& f : tg::generate(p, dir.path()).files) {
    tgtest::collect_shape(f, gen);
    legacy_name = legacy_name || tgtest::read_file(f).find("ncclKernel_AllReduce_RING_LL_Sum_float") !=
                                     std::string::npos;
  }
  EXPECT_TRUE(legacy_name);
  tgtest::Shape kernels;
  kernels.args_by_cat["kernel"] = gen.args_by_cat["kernel"];
  expect_subset(kernels, real);
}

TEST(TracegenShape, RocmMatchesRealRocmTraces) {
  const auto real = fixture_shape({"tracelens/mi300/resnet_act_checkpoint.json.gz",
                                   "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"});
  const auto gen = generated_shape({"rocm-healthy", "rocm-input-bound"});
  expect_subset(gen, real);
  expect_present(gen, {"cpu_op", "user_annotation", "cuda_runtime", "kernel", "gpu_memcpy",
                       "gpu_user_annotation", "ac2g", "Trace", ""});
}

TEST(TracegenShape, CpuOnlyMatchesRealHostSides) {
  // The CPU-only fixture is tiny; the host side of a real CUDA trace adds the autograd args
  // and fwdbwd flows a CPU-only Kineto trace also carries.
  auto real = fixture_shape({"hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"});
  const auto cuda = fixture_shape({"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"});
  for (const char* cat : {"cpu_op", "user_annotation", "fwdbwd"})
    real.args_by_cat[cat].insert(cuda.args_by_cat.at(cat).begin(), cuda.args_by_cat.at(cat).end());
  const auto gen = generated_shape({"cpu-input-bound", "cpu-compute-bound"});
  expect_subset(gen, real);
  for (const char* gpu_cat : {"kernel", "cuda_runtime", "gpu_memcpy", "ac2g"})
    EXPECT_FALSE(gen.args_by_cat.count(gpu_cat)) << gpu_cat;
}

}  // namespace
