// The real-world trace classes (docs/tracegen.md): each preset must write the shape its ground
// truth describes, as the project's own reader sees it (and, for what the reader does not keep,
// as the JSON says). Only the generated trace and ground truth are checked here, not a diagnosis.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "stepscope/ingest.hpp"
#include "tracegen.hpp"
#include "tracegen_test_util.hpp"

namespace tg = stepscope::tracegen;
using stepscope::Kind;
using stepscope::ns_t;
using stepscope::RankTrace;
using nlohmann::json;

namespace {

const std::vector<std::string> kClasses = {"cold-start", "missing-gpu-records", "autograd-thread-old-cats",
                                           "v100-fp32",  "t4-fp32",             "fp8-moe-ep",
                                           "nested-item", "two-step",           "host-runs-ahead"};

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// A preset with fewer steps and layers where its shape does not depend on them.
tg::Params class_params(const std::string& name) {
  tg::Params p;
  if (!tg::apply_scenario(name, p)) throw std::runtime_error("unknown scenario " + name);
  if (name != "two-step" && name != "cold-start") p.steps = std::min(p.steps, name == "host-runs-ahead" ? 6 : 3);
  if (name != "cold-start") p.layers = std::min(p.layers, name == "autograd-thread-old-cats" ? 3 : 4);
  return p;
}

struct Run {
  tgtest::TempDir dir{"realclass"};
  tg::Params p;
  tg::GenerateResult files;
  json truth;
  std::vector<RankTrace> ranks;
};

std::unique_ptr<Run> run(const std::string& name) {
  auto r = std::make_unique<Run>();
  r->p = class_params(name);
  r->files = tg::generate(r->p, r->dir.path());
  r->truth = json::parse(tgtest::read_file(r->files.ground_truth));
  for (const auto& f : r->files.files) r->ranks.push_back(stepscope::read_kineto_file(f));
  return r;
}

json raw(const Run& r, std::size_t rank = 0) { return json::parse(tgtest::read_file(r.files.files.at(rank))); }

std::vector<std::size_t> named(const RankTrace& t, std::string_view name) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (t.name_of(i) == name) out.push_back(i);
  return out;
}

std::vector<std::size_t> of_kind(const RankTrace& t, Kind k) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (t.events.kind[i] == k) out.push_back(i);
  return out;
}

std::vector<std::size_t> profiler_steps(const RankTrace& t) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (t.events.kind[i] != Kind::GpuAnnotation && starts(t.name_of(i), "ProfilerStep#")) out.push_back(i);
  std::sort(out.begin(), out.end(), [&](auto a, auto b) { return t.events.ts[a] < t.events.ts[b]; });
  return out;
}

bool inside(const RankTrace& t, std::size_t inner, std::size_t outer) {
  return t.events.tid(inner) == t.events.tid(outer) && t.events.ts[outer] <= t.events.ts[inner] &&
         t.events.end(inner) <= t.events.end(outer);
}

// The GPU activity a runtime call launched, via the correlation id.
std::vector<std::uint32_t> launched(const RankTrace& t, std::size_t call) {
  auto records = t.correlations.gpu(t.events.correlation[call]);
  return {records.begin(), records.end()};
}

ns_t category(const json& step, const char* name) { return step["categories_ns"][name].get<ns_t>(); }

std::set<std::string> strings(const json& a) {
  std::set<std::string> out;
  for (const auto& v : a) out.insert(v.get<std::string>());
  return out;
}

class RealClass : public ::testing::TestWithParam<std::string> {};

// Every class: a trace the reader accepts whole, and ground truth whose partition sums to each
// window and which states the new expectations.
TEST_P(RealClass, ReadableTraceAndCompleteGroundTruth) {
  const auto r = run(GetParam());
  ASSERT_EQ(r->ranks.size(), static_cast<std::size_t>(r->p.ranks));
  for (const auto& t : r->ranks) {
    EXPECT_FALSE(t.truncated);
    EXPECT_GT(t.events.size(), 100u);
    EXPECT_FALSE(t.devices.empty()) << "deviceProperties";
    EXPECT_GT(t.correlations.launch_count(), 0u);
  }
  const json& g = r->truth;
  EXPECT_EQ(g["scenario"], GetParam());
  EXPECT_FALSE(g["description"].get<std::string>().empty());
  ASSERT_TRUE(g["expected_warnings"].is_array());
  const std::set<std::string> codes = {"cold_start", "incomplete_gpu_records", "few_steps",
                                       "one_step",   "host_runs_ahead",        "no_step_markers"};
  for (const auto& w : g["expected_warnings"]) EXPECT_TRUE(codes.count(w.get<std::string>())) << w;
  const std::set<std::string> kinds = {"training", "inference", "benchmark", "one-shot"};
  EXPECT_TRUE(kinds.count(g["expected_run_kind"].get<std::string>()));
  ASSERT_EQ(g["steps"].size(), static_cast<std::size_t>(r->p.ranks * r->p.steps));
  for (const auto& s : g["steps"]) {
    ns_t sum = 0;
    for (const auto& [name, ns] : s["categories_ns"].items()) {
      EXPECT_GE(ns.get<ns_t>(), 0) << name;
      sum += ns.get<ns_t>();
    }
    EXPECT_EQ(sum, s["duration_ns"].get<ns_t>()) << "rank " << s["rank"] << " step " << s["step"];
    EXPECT_GT(s["duration_ns"].get<ns_t>(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Tracegen, RealClass, ::testing::ValuesIn(kClasses), [](const auto& param_info) {
  std::string n = param_info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
});

TEST(RealClassList, EveryClassIsAPresetAndTheIrregularOnesStayApart) {
  for (const auto& name : kClasses) EXPECT_NE(tg::find_scenario(name), nullptr) << name;
  std::set<std::string> regular, irregular;
  for (const auto& s : tg::scenarios()) regular.insert(s.name);
  for (const auto& s : tg::irregular_scenarios()) irregular.insert(s.name);
  // The runs that are not a training loop join them (runkind_scenarios_test.cpp pins the whole list).
  for (const char* name : {"cold-start", "missing-gpu-records", "autograd-thread-old-cats", "host-runs-ahead"})
    EXPECT_TRUE(irregular.count(name)) << name;
  for (const auto& name : irregular) EXPECT_EQ(regular.count(name), 0u) << name;
}

TEST(RealClass, ColdStartIsOneUnmarkedPassWithAHugeFirstLaunch) {
  const auto r = run("cold-start");
  const RankTrace& t = r->ranks[0];
  EXPECT_TRUE(profiler_steps(t).empty());
  EXPECT_TRUE(of_kind(t, Kind::UserAnnotation).empty());
  EXPECT_TRUE(of_kind(t, Kind::GpuAnnotation).empty());
  auto launches = named(t, "cudaLaunchKernel");
  ASSERT_GE(launches.size(), 200u);
  std::sort(launches.begin(), launches.end(), [&](auto a, auto b) { return t.events.ts[a] < t.events.ts[b]; });
  std::vector<ns_t> durs;
  for (auto i : launches) durs.push_back(t.events.dur[i]);
  const ns_t first = durs.front();
  std::nth_element(durs.begin(), durs.begin() + static_cast<long>(durs.size() / 2), durs.end());
  const ns_t median = durs[durs.size() / 2];
  EXPECT_GE(first, 100 * median);
  EXPECT_GE(first, 800'000'000);
  EXPECT_LE(median, 10'000);
  for (auto k : of_kind(t, Kind::Kernel)) EXPECT_LE(t.events.dur[k], 100'000) << t.name_of(k);
  // Forward only: no backward, no optimizer, no loader.
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_FALSE(has(t.name_of(i), "Backward")) << t.name_of(i);
    EXPECT_FALSE(starts(t.name_of(i), "Optimizer.")) << t.name_of(i);
    EXPECT_FALSE(starts(t.name_of(i), "enumerate(DataLoader)")) << t.name_of(i);
  }

  const json& g = r->truth;
  EXPECT_EQ(g["expected_run_kind"], "one-shot");
  EXPECT_EQ(strings(g["expected_warnings"]), (std::set<std::string>{"cold_start", "no_step_markers", "one_step"}));
  EXPECT_EQ(strings(g["expected_not_levers"]), std::set<std::string>{"cuda_graphs"});
  ASSERT_EQ(g["steps"].size(), 1u);
  const json& s = g["steps"][0];
  EXPECT_EQ(s["name"], "");
  const ns_t startup = g["startup_ns"].get<ns_t>();
  EXPECT_EQ(startup, 900'000'000);
  EXPECT_EQ(g["startup_category"], "launch_overhead");
  EXPECT_GE(first, startup);
  EXPECT_GE(category(s, "launch_overhead"), startup);
  // The window opens with the first host event.
  ns_t first_host = INT64_MAX;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (t.events.kind[i] == Kind::CpuOp || t.events.kind[i] == Kind::Runtime) first_host = std::min(first_host, t.events.ts[i]);
  EXPECT_EQ(s["start_ns"].get<ns_t>(), first_host);
}

TEST(RealClass, MissingGpuRecordsKeepsOnlyTheHostSide) {
  const auto r = run("missing-gpu-records");
  const RankTrace& t = r->ranks[0];
  EXPECT_EQ(profiler_steps(t).size(), static_cast<std::size_t>(r->p.steps));
  const auto runtime = of_kind(t, Kind::Runtime), driver = of_kind(t, Kind::Driver);
  std::size_t launches = 0, copies = 0, cu_launches = 0;
  for (auto i : runtime) {
    EXPECT_GE(t.events.correlation[i], 0) << t.name_of(i);
    launches += t.name_of(i) == "cudaLaunchKernel";
    copies += t.name_of(i) == "cudaMemcpyAsync";
  }
  for (auto i : driver) {
    EXPECT_GE(t.events.correlation[i], 0);
    cu_launches += t.name_of(i) == "cuLaunchKernel";
  }
  EXPECT_GT(launches, 100u);
  EXPECT_GT(cu_launches, 0u);
  EXPECT_GT(copies, 0u);
  for (Kind k : {Kind::Kernel, Kind::Memcpy, Kind::Memset, Kind::GpuAnnotation})
    EXPECT_TRUE(of_kind(t, k).empty()) << stepscope::kind_name(k);
  EXPECT_TRUE(t.gpu_tracks.empty());
  EXPECT_TRUE(t.launch_flow_counts.empty());
  const json j = raw(*r);  // held: a range-for over a temporary's member would dangle
  for (const auto& e : j["traceEvents"]) EXPECT_NE(e.value("cat", ""), "ac2g");
  ASSERT_FALSE(t.devices.empty());
  EXPECT_TRUE(has(t.devices[0].name, "A100"));
  EXPECT_EQ(t.devices[0].compute_major, 8);
  EXPECT_EQ(r->truth["expected_verdict"], "inconclusive");
  EXPECT_EQ(strings(r->truth["expected_warnings"]), std::set<std::string>{"incomplete_gpu_records"});
}

TEST(RealClass, OldCategoriesWithBackwardOnTheAutogradThread) {
  const auto r = run("autograd-thread-old-cats");
  const json j = raw(*r);
  EXPECT_FALSE(j.contains("baseTimeNanoseconds"));
  std::set<std::string> cats;
  std::map<std::int64_t, std::int64_t> flow_start_tid, flow_end_tid;
  std::int64_t pid = -1;
  for (const auto& e : j["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    cats.insert(cat);
    if (e.value("ph", "") == "X" && cat != "Trace") {
      EXPECT_TRUE(e["ts"].is_number_integer()) << e["name"];
      EXPECT_TRUE(e["dur"].is_number_integer()) << e["name"];
    }
    if (cat == "Operator") pid = e["pid"].get<std::int64_t>();
    if (cat == "fwdbwd") {
      auto& m = e["ph"] == "s" ? flow_start_tid : flow_end_tid;
      m[e["id"].get<std::int64_t>()] = e["tid"].get<std::int64_t>();
    }
  }
  for (const char* c : {"Operator", "Kernel", "Runtime", "Memcpy", "fwdbwd"}) EXPECT_TRUE(cats.count(c)) << c;
  for (const char* c : {"cpu_op", "user_annotation", "cuda_runtime", "kernel", "gpu_memcpy", "ac2g", "gpu_user_annotation"})
    EXPECT_FALSE(cats.count(c)) << c;
  // fwdbwd: forward op on the main thread (tid = pid) to the backward node on the autograd thread.
  ASSERT_FALSE(flow_start_tid.empty());
  EXPECT_EQ(flow_start_tid.size(), flow_end_tid.size());
  for (const auto& [id, tid] : flow_start_tid) {
    EXPECT_EQ(tid, pid);
    ASSERT_TRUE(flow_end_tid.count(id)) << id;
    EXPECT_NE(flow_end_tid[id], pid);
  }

  const RankTrace& t = r->ranks[0];
  EXPECT_FALSE(t.base_time_ns.has_value());
  EXPECT_TRUE(named(t, "## forward ##").empty());
  EXPECT_TRUE(of_kind(t, Kind::UserAnnotation).empty());
  EXPECT_EQ(profiler_steps(t).size(), static_cast<std::size_t>(r->p.steps));
  for (Kind k : {Kind::CpuOp, Kind::Kernel, Kind::Runtime, Kind::Memcpy}) EXPECT_FALSE(of_kind(t, k).empty());
  std::set<std::int64_t> backward_tids;
  for (const char* n : {"MmBackward", "CudnnConvolutionBackward", "AddmmBackward0",
                        "autograd::engine::evaluate_function: AddmmBackward0"}) {
    const auto evs = named(t, n);
    ASSERT_FALSE(evs.empty()) << n;
    for (auto i : evs) {
      EXPECT_EQ(t.events.pid(i), pid);
      backward_tids.insert(t.events.tid(i));
    }
  }
  ASSERT_EQ(backward_tids.size(), 1u);
  EXPECT_NE(*backward_tids.begin(), pid);
  for (auto i : named(t, "aten::linear")) EXPECT_EQ(t.events.tid(i), pid);
  const auto opt = named(t, "Optimizer.step#Adam.step");
  ASSERT_EQ(opt.size(), static_cast<std::size_t>(r->p.steps));
  for (auto i : opt) EXPECT_EQ(t.events.tid(i), pid);
  // The backward node's kernels run on the GPU like any other.
  std::size_t backward_kernels = 0;
  for (auto node : named(t, "MmBackward"))
    for (auto call : of_kind(t, Kind::Runtime))
      if (inside(t, call, node)) backward_kernels += launched(t, call).size();
  EXPECT_GT(backward_kernels, 0u);

  for (const auto& s : r->truth["steps"]) {
    EXPECT_GT(category(s, "compute_forward"), 0);
    EXPECT_GT(category(s, "compute_backward"), category(s, "compute_forward"));
    EXPECT_EQ(category(s, "compute_other"), 0);
  }
  EXPECT_EQ(r->truth["expected_run_kind"], "training");
  EXPECT_EQ(r->truth["base_time_ns"], 0);
}

void expect_old_gpu(const std::string& name, std::string_view gpu, int minor, int sms, double min_gb, double max_gb,
                    int threads_per_sm) {
  const auto r = run(name);
  const RankTrace& t = r->ranks[0];
  ASSERT_FALSE(t.devices.empty());
  const auto& d = t.devices[0];
  EXPECT_EQ(d.name, gpu);
  EXPECT_EQ(d.compute_major, 7);
  EXPECT_EQ(d.compute_minor, minor);
  EXPECT_EQ(d.num_sms, sms);
  EXPECT_GE(static_cast<double>(d.total_global_mem), min_gb * 1e9);
  EXPECT_LE(static_cast<double>(d.total_global_mem), max_gb * 1e9);
  EXPECT_EQ(d.max_threads_per_sm, threads_per_sm);
  std::size_t sgemm = 0;
  for (auto k : of_kind(t, Kind::Kernel)) {
    const std::string_view n = t.name_of(k);
    sgemm += starts(n, "volta_sgemm_");
    EXPECT_FALSE(has(n, "BFloat16") || has(n, "bf16") || has(n, "ampere")) << n;
  }
  EXPECT_GT(sgemm, 0u);
  const json& g = r->truth;
  EXPECT_EQ(g["expected_gemm_dtype"], "fp32");
  EXPECT_EQ(g["expected_first_lever"], "amp_fp16");
  EXPECT_EQ(strings(g["expected_not_levers"]), (std::set<std::string>{"amp_bf16", "tf32"}));
  EXPECT_EQ(g["expected_verdict"], "gpu-bound");
}

TEST(RealClass, V100Fp32) { expect_old_gpu("v100-fp32", "Tesla V100-SXM2-16GB", 0, 80, 15.5, 17.2, 2048); }
TEST(RealClass, T4Fp32) { expect_old_gpu("t4-fp32", "Tesla T4", 5, 40, 14.5, 16.5, 1024); }

TEST(RealClass, Fp8MoeWithExpertParallelKernelsOffTheComputePath) {
  const auto r = run("fp8-moe-ep");
  ns_t comm_truth = 0;
  for (const auto& s : r->truth["steps"]) {
    comm_truth += s["comm_kernel_ns"].get<ns_t>();
    EXPECT_GE(category(s, "grad_sync_exposed"), s["duration_ns"].get<ns_t>() * 3 / 10) << s["name"];
  }
  ns_t comm_trace = 0;
  for (const auto& t : r->ranks) {
    ASSERT_FALSE(t.devices.empty());
    EXPECT_EQ(t.devices[0].compute_major, 9);
    EXPECT_EQ(t.devices[0].compute_minor, 0);
    std::map<std::string, int> seen;
    std::vector<std::pair<ns_t, ns_t>> ep, compute;
    for (auto k : of_kind(t, Kind::Kernel)) {
      const std::string_view n = t.name_of(k);
      const bool is_ep = has(n, "deep_ep::"), is_nccl = starts(n, "ncclDevKernel_");
      if (is_ep || is_nccl) comm_trace += t.events.dur[k];
      // The DDP all-reduce may overlap backward; DeepEP's kernels may not overlap compute.
      if (is_ep) ep.emplace_back(t.events.ts[k], t.events.end(k));
      if (!is_ep && !is_nccl) compute.emplace_back(t.events.ts[k], t.events.end(k));
      if (has(n, "deep_gemm::fp8_gemm_kernel<")) ++seen["deep_gemm"];
      if (has(n, "cutlass::gemm::kernel::GemmUniversal<") && has(n, "cutlass::float_e4m3_t")) ++seen["cutlass_fp8"];
      if (has(n, "deep_ep::internode::dispatch<")) ++seen["dispatch"];
      if (has(n, "deep_ep::intranode::combine<")) ++seen["combine"];
      if (has(n, "deep_ep::intranode::notify_dispatch<")) ++seen["notify"];
      if (is_nccl && has(n, "AllReduce")) ++seen["allreduce"];
      if (has(n, "cutlass::") && has(n, "Transpose")) {
        ++seen["transpose"];
        EXPECT_FALSE(has(n, "Gemm") || has(n, "gemm")) << n;
      }
    }
    for (const char* k : {"deep_gemm", "cutlass_fp8", "dispatch", "combine", "notify", "allreduce", "transpose"})
      EXPECT_GT(seen[k], 0) << k;
    // Compute kernels share one stream: sorted by start, their ends are sorted too.
    std::sort(compute.begin(), compute.end());
    ASSERT_FALSE(ep.empty());
    for (const auto& span : ep) {
      // Named copies, not structured bindings: clang before 16 cannot capture a binding.
      const auto a = span.first, b = span.second;
      auto c = std::partition_point(compute.begin(), compute.end(), [&](const auto& k) { return k.second <= a; });
      if (c != compute.end()) {
        EXPECT_GE(c->first, b) << "an EP kernel overlaps a compute kernel";
      }
    }
  }
  EXPECT_EQ(comm_trace, comm_truth);
  const ns_t steps = static_cast<ns_t>(r->truth["steps"].size());
  EXPECT_EQ(r->truth["expected_comm_kernel_ns_per_step"].get<ns_t>(), (comm_truth + steps / 2) / steps);
  EXPECT_EQ(r->truth["expected_gemm_dtype"], "fp8");
  EXPECT_EQ(r->truth["expected_verdict"], "comms-bound");
}

TEST(RealClass, NestedItemSyncsAndOneCpuItem) {
  const auto r = run("nested-item");
  const RankTrace& t = r->ranks[0];
  const auto steps = profiler_steps(t);
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(r->p.steps));
  const auto items = named(t, "aten::item"), dense = named(t, "aten::_local_scalar_dense");
  const auto copies = named(t, "cudaMemcpyAsync"), syncs = named(t, "cudaStreamSynchronize");
  for (auto step : steps) {
    int gpu_items = 0, cpu_items = 0, step_syncs = 0;
    for (auto s : syncs) step_syncs += inside(t, s, step);
    for (auto it : items) {
      if (!inside(t, it, step)) continue;
      std::size_t d = SIZE_MAX;
      for (auto x : dense)
        if (inside(t, x, it)) d = x;
      ASSERT_NE(d, SIZE_MAX) << "aten::item without _local_scalar_dense";
      std::size_t copy = SIZE_MAX, sync = SIZE_MAX;
      for (auto c : copies)
        if (inside(t, c, d)) copy = c;
      for (auto s : syncs)
        if (inside(t, s, d)) sync = s;
      if (copy == SIZE_MAX && sync == SIZE_MAX) {
        ++cpu_items;  // a CPU tensor: a few µs, nothing nested
        EXPECT_LT(t.events.dur[it], 20'000);
        continue;
      }
      ASSERT_NE(copy, SIZE_MAX);
      ASSERT_NE(sync, SIZE_MAX);
      ++gpu_items;
      EXPECT_GE(t.events.ts[sync], t.events.end(copy));
      const auto gpu = launched(t, copy);
      ASSERT_EQ(gpu.size(), 1u);
      const auto m = gpu[0];
      EXPECT_EQ(t.events.kind[m], Kind::Memcpy);
      EXPECT_EQ(t.events.copy_kind[m], stepscope::CopyKind::DtoH);
      EXPECT_LE(t.bytes_of(m), 16);
      // Queued behind earlier GPU work: the copy starts after the call returned, and the sync
      // waits for it.
      EXPECT_GT(t.events.ts[m], t.events.end(copy));
      EXPECT_GE(t.events.end(sync), t.events.end(m));
    }
    EXPECT_EQ(gpu_items, 3);
    EXPECT_EQ(cpu_items, 1);
    EXPECT_EQ(step_syncs, 3);
  }
  EXPECT_EQ(r->truth["expected_sync_calls_per_step"], 3);
}

TEST(RealClass, TwoStepsOfBlockingPageableCopies) {
  const auto r = run("two-step");
  const RankTrace& t = r->ranks[0];
  const auto steps = profiler_steps(t);
  ASSERT_EQ(steps.size(), 2u);
  const auto memcpys = named(t, "cudaMemcpy"), device_syncs = named(t, "cudaDeviceSynchronize");
  for (std::size_t s = 0; s < steps.size(); ++s) {
    ns_t longest = 0;
    for (auto c : memcpys) {
      if (!inside(t, c, steps[s])) continue;
      for (auto m : launched(t, c)) {
        EXPECT_EQ(t.events.copy_kind[m], stepscope::CopyKind::HtoD);
        EXPECT_EQ(t.events.host_mem[m], stepscope::HostMem::Pageable);
        EXPECT_GE(t.events.end(c), t.events.end(m));  // the call returns once the copy landed
        longest = std::max(longest, t.events.dur[m]);
      }
    }
    EXPECT_GE(longest, 700'000);
    EXPECT_LE(longest, 900'000);
    std::size_t ds = 0;
    for (auto d : device_syncs)
      if (inside(t, d, steps[s])) {
        ++ds;
        EXPECT_LT(t.events.dur[d], 50'000);
        // The step's last runtime call.
        for (auto rt : of_kind(t, Kind::Runtime)) {
          if (inside(t, rt, steps[s])) {
            EXPECT_LE(t.events.ts[rt], t.events.ts[d]) << t.name_of(rt);
          }
        }
      }
    EXPECT_EQ(ds, s == 1 ? 1u : 0u);
  }
  for (const auto& st : r->truth["steps"]) EXPECT_GE(4 * category(st, "h2d_copy"), st["duration_ns"].get<ns_t>());
  EXPECT_EQ(strings(r->truth["expected_warnings"]), std::set<std::string>{"few_steps"});
  EXPECT_EQ(r->truth["expected_first_lever"], "pin_memory");
  EXPECT_EQ(r->truth["expected_verdict"], "copy-bound");
}

TEST(RealClass, HostRunsAheadOfTheGpu) {
  const auto r = run("host-runs-ahead");
  const RankTrace& t = r->ranks[0];
  const auto host = profiler_steps(t);
  ASSERT_EQ(host.size(), static_cast<std::size_t>(r->p.steps));
  std::map<std::string, std::size_t> gpu;
  for (auto i : of_kind(t, Kind::GpuAnnotation)) gpu[std::string(t.name_of(i))] = i;
  ASSERT_EQ(gpu.size(), host.size());
  for (const char* n : {"aten::item", "cudaStreamSynchronize", "cudaDeviceSynchronize"}) EXPECT_TRUE(named(t, n).empty()) << n;
  const auto launches = named(t, "cudaLaunchKernel");
  int two_ahead = 0;
  double host_share = 0;
  for (std::size_t n = 0; n < host.size(); ++n) {
    const std::string name(t.name_of(host[n]));
    const auto g = gpu.at(name);
    if (n >= 1) {
      // ProfilerStep#N on the host overlaps the GPU work of step N-1.
      const auto prev = gpu.at(std::string(t.name_of(host[n - 1])));
      EXPECT_LT(t.events.ts[host[n]], t.events.end(prev)) << name;
    }
    if (n >= 2) {
      const auto prev2 = gpu.at(std::string(t.name_of(host[n - 2])));
      two_ahead += t.events.ts[host[n]] < t.events.end(prev2);
      // ...but never further: its first launch returns once step N-2 has left the GPU.
      ns_t first_launch_end = INT64_MAX, first_launch_ts = INT64_MAX;
      for (auto l : launches)
        if (inside(t, l, host[n]) && t.events.ts[l] < first_launch_ts) {
          first_launch_ts = t.events.ts[l];
          first_launch_end = t.events.end(l);
        }
      EXPECT_GE(first_launch_end, t.events.end(prev2)) << name;
    }
    // The host's own work, without the blocked launch, is about 30% of the step's GPU time.
    ns_t blocked = 0;
    for (auto l : launches)
      if (inside(t, l, host[n])) blocked = std::max(blocked, t.events.dur[l]);
    host_share += static_cast<double>(t.events.dur[host[n]] - blocked) / static_cast<double>(t.events.dur[g]);
  }
  EXPECT_GT(two_ahead, 0);
  host_share /= static_cast<double>(host.size());
  EXPECT_GT(host_share, 0.2);
  EXPECT_LT(host_share, 0.45);
  // Windows on the GPU side: from each step's first GPU activity to the next step's.
  const json& steps = r->truth["steps"];
  for (std::size_t n = 0; n < steps.size(); ++n) {
    const auto g = gpu.at(steps[n]["name"].get<std::string>());
    EXPECT_EQ(steps[n]["start_ns"].get<ns_t>(), t.events.ts[g]);
    EXPECT_EQ(steps[n]["host_start_ns"].get<ns_t>(), t.events.ts[host[n]]);
    if (n + 1 < steps.size()) {
      EXPECT_EQ(steps[n]["end_ns"], steps[n + 1]["start_ns"]);
    } else {
      EXPECT_EQ(steps[n]["end_ns"].get<ns_t>(), t.events.end(g));
    }
  }
  EXPECT_EQ(strings(r->truth["expected_warnings"]), std::set<std::string>{"host_runs_ahead"});
  EXPECT_EQ(r->truth["expected_verdict"], "gpu-bound");
}

}  // namespace
