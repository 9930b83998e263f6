// Runs that are not a training loop (docs/tracegen.md, "Runs that are not a training loop"): each
// preset must write the shape its ground truth describes (the kind of run, the steps a correct
// analysis finds, the syncs, copies and streams behind its verdict), as the project's own reader
// sees it. Only the generated trace and ground truth are checked here, not a diagnosis.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "stepscope/ingest.hpp"
#include "stepscope/lever_ids.hpp"
#include "tracegen.hpp"
#include "tracegen_test_util.hpp"

namespace tg = stepscope::tracegen;
using nlohmann::json;
using stepscope::CopyKind;
using stepscope::HostMem;
using stepscope::Kind;
using stepscope::ns_t;
using stepscope::RankTrace;

namespace {

const std::vector<std::string> kIrregular = {"inference-decode", "serving-frontend", "timing-harness", "one-shot-nvtx"};
const std::vector<std::string> kRegular = {"readback-loop", "blocking-streams", "profiler-heavy"};

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

struct Run {
  tgtest::TempDir dir{"runkind"};
  tg::Params p;
  tg::GenerateResult files;
  json truth;
  RankTrace trace;
};

// Every preset as shipped: its shape is what the expectations are about.
std::unique_ptr<Run> run(const std::string& name) {
  auto r = std::make_unique<Run>();
  if (!tg::apply_scenario(name, r->p)) throw std::runtime_error("unknown scenario " + name);
  r->files = tg::generate(r->p, r->dir.path());
  r->truth = json::parse(tgtest::read_file(r->files.ground_truth));
  r->trace = stepscope::read_kineto_file(r->files.files.at(0));
  return r;
}

json raw(const Run& r) { return json::parse(tgtest::read_file(r.files.files.at(0))); }

std::vector<std::size_t> where(const RankTrace& t, const std::function<bool(std::size_t)>& keep) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (keep(i)) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&](auto a, auto b) { return t.events.ts[a] < t.events.ts[b]; });
  return out;
}
std::vector<std::size_t> named(const RankTrace& t, std::string_view name) {
  return where(t, [&](std::size_t i) { return t.name_of(i) == name; });
}
std::vector<std::size_t> of_kind(const RankTrace& t, Kind k) {
  return where(t, [&](std::size_t i) { return t.events.kind[i] == k; });
}
std::vector<std::size_t> host_ranges(const RankTrace& t, std::string_view name) {
  return where(t, [&](std::size_t i) { return t.events.kind[i] == Kind::UserAnnotation && t.name_of(i) == name; });
}
std::vector<std::size_t> profiler_steps(const RankTrace& t) {
  return where(t, [&](std::size_t i) {
    return t.events.kind[i] != Kind::GpuAnnotation && starts(t.name_of(i), "ProfilerStep#");
  });
}

bool inside(const RankTrace& t, std::size_t inner, std::size_t outer) {
  return t.events.tid(inner) == t.events.tid(outer) && t.events.ts[outer] <= t.events.ts[inner] &&
         t.events.end(inner) <= t.events.end(outer);
}
std::vector<std::size_t> within(const RankTrace& t, const std::vector<std::size_t>& evs, std::size_t outer) {
  std::vector<std::size_t> out;
  for (auto i : evs)
    if (inside(t, i, outer)) out.push_back(i);
  return out;
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

// No backward, optimizer or data loader anywhere: not a training loop.
void expect_no_training(const RankTrace& t) {
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const std::string_view n = t.name_of(i);
    EXPECT_FALSE(has(n, "Backward") || has(n, "backward")) << n;
    EXPECT_FALSE(starts(n, "Optimizer.")) << n;
    EXPECT_FALSE(starts(n, "enumerate(DataLoader)")) << n;
    EXPECT_FALSE(starts(n, "ProfilerStep#")) << n;
  }
}

// Each step window of the ground truth opens where the step's host range starts.
void expect_windows_at(const Run& r, const std::vector<std::size_t>& ranges) {
  const json& steps = r.truth["steps"];
  ASSERT_EQ(steps.size(), ranges.size());
  for (std::size_t s = 0; s < ranges.size(); ++s) {
    EXPECT_EQ(steps[s]["start_ns"].get<ns_t>(), r.trace.events.ts[ranges[s]]);
    EXPECT_EQ(steps[s]["name"].get<std::string>(), std::string(r.trace.name_of(ranges[s])));
  }
}

class RunKind : public ::testing::TestWithParam<std::string> {};

// Every preset: a trace the reader takes whole and without warnings, and ground truth that
// states the kind of run, the steps, the verdict and the levers in the project's own words.
TEST_P(RunKind, ReadableTraceAndCompleteGroundTruth) {
  const auto r = run(GetParam());
  const RankTrace& t = r->trace;
  EXPECT_FALSE(t.truncated);
  EXPECT_TRUE(t.warnings.empty()) << (t.warnings.empty() ? "" : ingest_warning_text(t.warnings[0]));
  EXPECT_GT(t.events.size(), 100u);
  const json& g = r->truth;
  EXPECT_EQ(g["scenario"], GetParam());
  EXPECT_FALSE(g["description"].get<std::string>().empty());
  const std::set<std::string> kinds = {"training", "inference", "benchmark", "one-shot"};
  EXPECT_TRUE(kinds.count(g["expected_run_kind"].get<std::string>())) << g["expected_run_kind"];
  const std::set<std::string> bounds = {"gpu-bound",   "input-bound", "copy-bound", "host/launch-bound", "sync-bound",
                                        "comms-bound", "side-work",   "straggler",  "inconclusive"};
  EXPECT_TRUE(bounds.count(g["expected_verdict"].get<std::string>())) << g["expected_verdict"];
  const std::set<std::string> codes = {"cold_start", "incomplete_gpu_records", "few_steps",       "one_step",
                                       "host_runs_ahead", "no_step_markers",   "no_model_work", "profiler_overhead"};
  for (const auto& w : g["expected_warnings"]) EXPECT_TRUE(codes.count(w.get<std::string>())) << w;
  // Every lever id a preset names is a registered one.
  const auto is_lever = [](const json& id) { return stepscope::find_lever(id.get<std::string>()).has_value(); };
  for (const auto& l : g.value("expected_not_levers", json::array())) EXPECT_TRUE(is_lever(l)) << l;
  if (g.contains("expected_first_lever")) {
    EXPECT_TRUE(is_lever(g["expected_first_lever"])) << g["expected_first_lever"];
    EXPECT_FALSE(strings(g.value("expected_not_levers", json::array())).count(g["expected_first_lever"]));
  }
  // The regular ones state no step count (their ProfilerSteps are the steps); the others do.
  const bool irregular = std::count(kIrregular.begin(), kIrregular.end(), GetParam()) > 0;
  EXPECT_EQ(g.contains("expected_steps"), irregular);
  if (irregular) {
    EXPECT_GE(g["expected_steps"].get<int>(), 0);
  }
  ASSERT_EQ(g["steps"].size(), static_cast<std::size_t>(r->p.steps));
  for (const auto& s : g["steps"]) {
    ns_t sum = 0;
    for (const auto& [name, ns] : s["categories_ns"].items()) {
      EXPECT_GE(ns.get<ns_t>(), 0) << name;
      sum += ns.get<ns_t>();
    }
    EXPECT_EQ(sum, s["duration_ns"].get<ns_t>()) << "step " << s["step"];
    EXPECT_GT(s["duration_ns"].get<ns_t>(), 0);
  }
}

std::vector<std::string> every() {
  std::vector<std::string> v = kIrregular;
  v.insert(v.end(), kRegular.begin(), kRegular.end());
  return v;
}

INSTANTIATE_TEST_SUITE_P(Tracegen, RunKind, ::testing::ValuesIn(every()), [](const auto& param_info) {
  std::string n = param_info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
});

TEST(RunKindList, NoProfilerStepMeansIrregular) {
  std::set<std::string> regular, irregular;
  for (const auto& s : tg::scenarios()) regular.insert(s.name);
  for (const auto& s : tg::irregular_scenarios()) irregular.insert(s.name);
  for (const auto& n : kIrregular) {
    EXPECT_TRUE(irregular.count(n)) << n;
    EXPECT_FALSE(regular.count(n)) << n;
  }
  for (const auto& n : kRegular) {
    EXPECT_TRUE(regular.count(n)) << n;
    EXPECT_FALSE(irregular.count(n)) << n;
  }
  // The whole list of presets that break the contract of scenarios(), with the real-world classes.
  EXPECT_EQ(irregular, (std::set<std::string>{"cold-start", "missing-gpu-records", "autograd-thread-old-cats",
                                              "host-runs-ahead", "inference-decode", "serving-frontend",
                                              "timing-harness", "one-shot-nvtx"}));
}

// The old presets state no step count and keep their bytes: the knobs default to off.
TEST(RunKindList, OlderPresetsStateNoStepCount) {
  for (const auto* list : {&tg::scenarios(), &tg::irregular_scenarios()})
    for (const auto& s : *list) {
      tg::Params p;
      ASSERT_TRUE(tg::apply_scenario(s.name, p));
      const bool mine = std::count(kIrregular.begin(), kIrregular.end(), s.name) > 0 ||
                        std::count(kRegular.begin(), kRegular.end(), s.name) > 0;
      if (!mine) {
        EXPECT_LT(p.expected_steps, 0) << s.name;
        EXPECT_EQ(p.workload, "model") << s.name;
      }
    }
}

// The profiler options' events and the new runtime calls look as real traces have them: every
// `cat` and `args` key is one that real traces of the same kind carry (vLLM with with_stack and
// record_shapes; an HTA trace with profile_memory; a DDP training trace).
TEST(RunKindShape, NewEventsMatchRealKinetoTraces) {
  tgtest::Shape real;
  for (const char* f : {"tracelens/b200/eager_trace.json.gz", "hta/df_index_resolver/df_index_resolver.json.gz",
                        "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"})
    tgtest::collect_shape(std::string(STEPSCOPE_FIXTURES_DIR) + "/" + f, real);
  tgtest::Shape gen;
  for (const auto& name : every()) {
    tgtest::TempDir dir("runkind-shape");
    tg::Params p;
    ASSERT_TRUE(tg::apply_scenario(name, p));
    p.steps = std::min(p.steps, 2);
    for (const auto& f : tg::generate(p, dir.path()).files) tgtest::collect_shape(f, gen);
  }
  for (const char* cat : {"python_function", "cpu_instant_event", "cpu_op", "cuda_runtime", "gpu_user_annotation"})
    EXPECT_TRUE(gen.args_by_cat.count(cat)) << cat;
  for (const auto& [cat, keys] : gen.args_by_cat) {
    auto it = real.args_by_cat.find(cat);
    ASSERT_NE(it, real.args_by_cat.end()) << "cat \"" << cat << "\" is not in the fixtures";
    for (const auto& k : keys)
      EXPECT_TRUE(it->second.count(k)) << "args key \"" << k << "\" under cat \"" << cat << "\" is not in the fixtures";
  }
}

TEST(RunKind, InferenceDecodeIsOneGraphReplayPerEngineIteration) {
  const auto r = run("inference-decode");
  const RankTrace& t = r->trace;
  expect_no_training(t);
  const auto iters = host_ranges(t, "execute_context_0(0)_generation_32(32)");
  ASSERT_EQ(iters.size(), 12u);
  EXPECT_EQ(r->truth["expected_steps"], 12);
  expect_windows_at(*r, iters);
  const auto graphs = named(t, "cudaGraphLaunch"), copies = named(t, "cudaMemcpyAsync"),
             syncs = named(t, "cudaStreamSynchronize");
  ASSERT_EQ(graphs.size(), iters.size());
  for (auto it : iters) {
    const auto g = within(t, graphs, it);
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(t.events.kind[g[0]], Kind::Runtime);
    // The graph's kernels: many small ones, all under the one launch's correlation id, back to
    // back on one stream.
    auto ks = launched(t, g[0]);
    ASSERT_GE(ks.size(), 35u);
    ASSERT_LE(ks.size(), 45u);
    std::sort(ks.begin(), ks.end(), [&](auto a, auto b) { return t.events.ts[a] < t.events.ts[b]; });
    ns_t busy = 0;
    for (std::size_t k = 0; k < ks.size(); ++k) {
      EXPECT_EQ(t.events.kind[ks[k]], Kind::Kernel);
      EXPECT_EQ(t.events.stream[ks[k]], t.events.stream[ks[0]]);
      EXPECT_LT(t.events.dur[ks[k]], 1'000'000) << t.name_of(ks[k]);
      if (k > 0) {
        EXPECT_GE(t.events.ts[ks[k]], t.events.end(ks[k - 1]));
      }
      busy += t.events.dur[ks[k]];
    }
    const ns_t graph_end = t.events.end(ks.back());
    // The graph keeps the GPU busy through most of the iteration.
    EXPECT_GE(busy * 10, t.events.dur[it] * 9);
    // After the replay: the sampled token ids copied back (DtoH), then a sync that waits while
    // the GPU still runs the graph.
    std::size_t dtoh = SIZE_MAX;
    for (auto c : within(t, copies, it)) {
      for (auto m : launched(t, c))
        if (t.events.copy_kind[m] == CopyKind::DtoH && t.events.ts[c] > t.events.ts[g[0]]) dtoh = c;
    }
    ASSERT_NE(dtoh, SIZE_MAX);
    const auto s = within(t, syncs, it);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_GE(t.events.ts[s[0]], t.events.end(dtoh));
    EXPECT_LT(t.events.ts[s[0]], graph_end);
    EXPECT_GE(t.events.end(s[0]), graph_end);
  }
  // One flow start for the launch, one flow end per kernel.
  std::map<std::int64_t, std::pair<int, int>> flows;
  const json j = raw(*r);
  for (const auto& e : j["traceEvents"])
    if (e.value("cat", "") == "ac2g") {
      auto& f = flows[e["id"].get<std::int64_t>()];
      (e["ph"] == "s" ? f.first : f.second)++;
    }
  const auto corr = t.events.correlation[graphs[0]];
  EXPECT_EQ(flows[corr].first, 1);
  EXPECT_EQ(static_cast<std::size_t>(flows[corr].second), launched(t, graphs[0]).size());

  const json& g = r->truth;
  EXPECT_EQ(g["expected_run_kind"], "inference");
  EXPECT_EQ(g["expected_verdict"], "gpu-bound");
  EXPECT_TRUE(g["expected_warnings"].empty());
  EXPECT_EQ(strings(g["expected_not_levers"]), (std::set<std::string>{"remove_item", "micro_batch", "fused_optimizer",
                                                                       "ddp_buckets", "accumulate_allreduce",
                                                                       "cuda_graphs"}));
  for (const auto& s : g["steps"]) EXPECT_EQ(s["verdict"], "gpu-bound");
}

TEST(RunKind, ServingFrontendIsPythonOnly) {
  const auto r = run("serving-frontend");
  const RankTrace& t = r->trace;
  EXPECT_TRUE(t.devices.empty()) << "deviceProperties";
  EXPECT_TRUE(t.gpu_tracks.empty());
  EXPECT_EQ(t.correlations.launch_count(), 0u);
  std::map<Kind, std::size_t> kinds;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (t.events.phase[i] == stepscope::Phase::Complete && t.events.kind[i] != Kind::TraceSpan) ++kinds[t.events.kind[i]];
  ASSERT_EQ(kinds.size(), 1u);
  EXPECT_EQ(kinds.begin()->first, Kind::PythonFunction);
  EXPECT_GT(kinds.begin()->second, 500u);
  const json j = raw(*r);
  EXPECT_EQ(j["with_stack"], 1);
  EXPECT_FALSE(j.contains("distributedInfo"));
  // A main thread and 4 parked workers, all in one process, for ~24 s.
  const auto frames = of_kind(t, Kind::PythonFunction);
  const std::int64_t pid = t.events.pid(frames[0]);
  ns_t first = INT64_MAX, last = 0;
  std::map<std::int64_t, std::vector<std::size_t>> by_tid;
  for (auto i : frames) {
    EXPECT_EQ(t.events.pid(i), pid);
    by_tid[t.events.tid(i)].push_back(i);
    first = std::min(first, t.events.ts[i]);
    last = std::max(last, t.events.end(i));
  }
  const ns_t session = last - first;
  EXPECT_GE(session, 23'500'000'000);
  EXPECT_LE(session, 24'500'000'000);
  ASSERT_EQ(by_tid.size(), 5u);
  int parked = 0;
  for (const auto& [tid, evs] : by_tid) {
    if (tid == pid) continue;  // the main thread: the event loop
    bool waits = false, gets = false;
    for (auto i : evs) {
      const std::string_view n = t.name_of(i);
      const bool whole = t.events.dur[i] * 10 >= session * 9;
      waits = waits || (has(n, "threading.py(") && has(n, "): wait") && whole);
      gets = gets || (has(n, "queue.py(") && has(n, "): get") && whole);
    }
    parked += waits && gets;
  }
  EXPECT_EQ(parked, 4);
  std::size_t tokenizer = 0;
  for (auto i : by_tid[pid]) tokenizer += has(t.name_of(i), "tokenizers.Tokenizer");
  EXPECT_EQ(tokenizer, static_cast<std::size_t>(r->p.requests));

  const json& g = r->truth;
  EXPECT_EQ(g["expected_run_kind"], "inference");
  EXPECT_EQ(g["expected_verdict"], "inconclusive");
  EXPECT_EQ(strings(g["expected_warnings"]), std::set<std::string>{"no_model_work"});
  EXPECT_EQ(g["expected_steps"], 0);
  // No lever applies: every lever of the catalogue is listed as not to be offered.
  const auto not_levers = strings(g["expected_not_levers"]);
  EXPECT_GE(not_levers.size(), 25u);
  for (const char* l : {"num_workers", "pin_memory", "cuda_graphs", "amp_bf16", "tf32", "torch_compile", "remove_item"})
    EXPECT_TRUE(not_levers.count(l)) << l;
}

TEST(RunKind, TimingHarnessTimesOneGemmPerRepetition) {
  const auto r = run("timing-harness");
  const RankTrace& t = r->trace;
  expect_no_training(t);
  const auto warmup = host_ranges(t, "warmup"), measure = host_ranges(t, "measure");
  ASSERT_EQ(warmup.size(), 5u);
  ASSERT_EQ(measure.size(), 15u);
  EXPECT_LT(t.events.ts[warmup.back()], t.events.ts[measure.front()]);
  std::vector<std::size_t> reps = warmup;
  reps.insert(reps.end(), measure.begin(), measure.end());
  EXPECT_EQ(r->truth["expected_steps"], 20);
  expect_windows_at(*r, reps);
  const auto records = named(t, "cudaEventRecord"), launches = named(t, "cudaLaunchKernel"),
             event_syncs = named(t, "cudaEventSynchronize"), device_syncs = named(t, "cudaDeviceSynchronize");
  EXPECT_EQ(records.size(), 40u);
  EXPECT_EQ(launches.size(), 20u);
  for (auto rep : reps) {
    const auto rec = within(t, records, rep), l = within(t, launches, rep), es = within(t, event_syncs, rep),
               ds = within(t, device_syncs, rep);
    ASSERT_EQ(rec.size(), 2u);
    ASSERT_EQ(l.size(), 1u);
    ASSERT_EQ(es.size(), 1u);
    ASSERT_EQ(ds.size(), 1u);
    // record, launch, record, wait for the event, wait for the device.
    EXPECT_LT(t.events.ts[rec[0]], t.events.ts[l[0]]);
    EXPECT_LT(t.events.ts[l[0]], t.events.ts[rec[1]]);
    EXPECT_LE(t.events.end(rec[1]), t.events.ts[es[0]]);
    EXPECT_LE(t.events.end(es[0]), t.events.ts[ds[0]]);
    const auto k = launched(t, l[0]);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_TRUE(has(t.name_of(k[0]), "gemm")) << t.name_of(k[0]);
    EXPECT_GE(t.events.end(es[0]), t.events.end(k[0]));  // the event sync waited for the GEMM
  }
  const json& g = r->truth;
  EXPECT_EQ(g["expected_run_kind"], "benchmark");
  EXPECT_EQ(g["expected_verdict"], "gpu-bound");
  EXPECT_EQ(strings(g["expected_not_levers"]), (std::set<std::string>{"micro_batch", "accumulate_allreduce",
                                                                       "torch_compile", "remove_item", "num_workers",
                                                                       "cuda_graphs", "sync_once_per_step"}));
}

TEST(RunKind, OneShotNvtxIsParameterMovesThenOneForward) {
  const auto r = run("one-shot-nvtx");
  const RankTrace& t = r->trace;
  expect_no_training(t);
  const auto moves = host_ranges(t, "Module._apply"), forward = host_ranges(t, "forward");
  ASSERT_EQ(moves.size(), 10u);
  ASSERT_EQ(forward.size(), 1u);
  const auto memcpys = named(t, "cudaMemcpy");
  const auto launches = where(t, [&](std::size_t i) { return t.events.kind[i] == Kind::Runtime && has(t.name_of(i), "LaunchKernel"); });
  for (auto m : moves) {
    EXPECT_LT(t.events.end(m), t.events.ts[forward[0]]);
    // One blocking parameter copy, no kernel: the ranges neither tile the work nor repeat it.
    const auto c = within(t, memcpys, m);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_TRUE(within(t, launches, m).empty());
    const auto g = launched(t, c[0]);
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(t.events.copy_kind[g[0]], CopyKind::HtoD);
    EXPECT_EQ(t.events.host_mem[g[0]], HostMem::Pageable);
    EXPECT_GE(t.events.dur[g[0]], 100'000);
    EXPECT_LE(t.events.dur[g[0]], 400'000);
    EXPECT_GE(t.events.end(c[0]), t.events.end(g[0]));
  }
  const auto fwd_launches = within(t, launches, forward[0]);
  EXPECT_GE(fwd_launches.size(), 140u);
  EXPECT_LE(fwd_launches.size(), 160u);
  EXPECT_EQ(of_kind(t, Kind::Kernel).size(), fwd_launches.size());
  for (auto k : of_kind(t, Kind::Kernel)) EXPECT_LE(t.events.dur[k], 50'000) << t.name_of(k);

  const json& g = r->truth;
  EXPECT_EQ(g["expected_run_kind"], "one-shot");
  EXPECT_EQ(g["expected_steps"], 1);
  ASSERT_EQ(g["steps"].size(), 1u);
  EXPECT_EQ(g["steps"][0]["name"], "");
  EXPECT_EQ(g["steps"][0]["start_ns"].get<ns_t>(), t.events.ts[moves[0]]);
  EXPECT_EQ(strings(g["expected_warnings"]), (std::set<std::string>{"no_step_markers", "one_step"}));
  EXPECT_EQ(strings(g["expected_not_levers"]), (std::set<std::string>{"cuda_graphs", "torch_compile", "micro_batch"}));
  EXPECT_EQ(g["expected_verdict"], g["steps"][0]["verdict"]);
}

TEST(RunKind, ReadbackLoopSyncsAfterEveryOp) {
  const auto r = run("readback-loop");
  const RankTrace& t = r->trace;
  const auto steps = profiler_steps(t);
  ASSERT_EQ(steps.size(), 6u);
  const auto syncs = named(t, "cudaStreamSynchronize"), copies = named(t, "cudaMemcpyAsync");
  const auto launches = named(t, "cudaLaunchKernel");
  for (auto step : steps) {
    const auto s = where(t, [&](std::size_t i) {
      return t.events.ts[i] >= t.events.ts[step] && t.events.end(i) <= t.events.end(step) &&
             t.name_of(i) == "cudaStreamSynchronize";
    });
    EXPECT_GE(s.size(), 50u);
    EXPECT_LE(s.size(), 70u);
    std::size_t host_gaps = 0;
    for (auto sync : s) {
      // The few bytes copied back just before, on the same thread.
      std::size_t copy = SIZE_MAX;
      for (auto c : copies)
        if (t.events.tid(c) == t.events.tid(sync) && t.events.end(c) <= t.events.ts[sync] &&
            (copy == SIZE_MAX || t.events.ts[c] > t.events.ts[copy]))
          copy = c;
      ASSERT_NE(copy, SIZE_MAX);
      const auto m = launched(t, copy);
      ASSERT_EQ(m.size(), 1u);
      EXPECT_EQ(t.events.copy_kind[m[0]], CopyKind::DtoH);
      EXPECT_LE(t.bytes_of(m[0]), 16);
      EXPECT_GE(t.events.end(sync), t.events.end(m[0]));
      // ~15 us of host work before the next launch on that thread.
      for (auto l : launches)
        if (t.events.tid(l) == t.events.tid(sync) && t.events.ts[l] >= t.events.end(sync)) {
          host_gaps += t.events.ts[l] - t.events.end(sync) >= 12'000;
          break;
        }
    }
    EXPECT_GE(host_gaps * 10, s.size() * 9);
  }
  for (const auto& st : r->truth["steps"]) {
    EXPECT_EQ(st["verdict"], "sync-bound");
    EXPECT_GE(4 * category(st, "sync_stall"), st["duration_ns"].get<ns_t>());
  }
  EXPECT_EQ(r->truth["expected_verdict"], "sync-bound");
  EXPECT_EQ(r->truth["expected_first_lever"], "remove_item");
  EXPECT_EQ(strings(r->truth["expected_not_levers"]), std::set<std::string>{"cuda_graphs"});
}

TEST(RunKind, BlockingStreamsSerialiseTheBatchCopyWithCompute) {
  const auto r = run("blocking-streams");
  const RankTrace& t = r->trace;
  const auto steps = profiler_steps(t);
  ASSERT_EQ(steps.size(), 6u);
  std::vector<std::pair<ns_t, ns_t>> kernels;
  std::set<std::int64_t> kernel_streams;
  for (auto k : of_kind(t, Kind::Kernel)) {
    kernels.emplace_back(t.events.ts[k], t.events.end(k));
    kernel_streams.insert(t.events.stream[k]);
    const std::string_view n = t.name_of(k);
    EXPECT_FALSE(has(n, "bf16") || has(n, "BFloat16")) << n;
  }
  std::size_t sgemm = 0;
  for (auto k : of_kind(t, Kind::Kernel)) sgemm += has(t.name_of(k), "sgemm");
  EXPECT_GT(sgemm, 0u);
  std::size_t big = 0;
  for (auto m : of_kind(t, Kind::Memcpy)) {
    if (t.bytes_of(m) < 10'000'000) continue;
    ++big;
    EXPECT_EQ(t.events.copy_kind[m], CopyKind::HtoD);
    EXPECT_EQ(t.events.host_mem[m], HostMem::Pinned);
    EXPECT_FALSE(kernel_streams.count(t.events.stream[m])) << "the copy has a stream of its own";
    EXPECT_NEAR(static_cast<double>(t.events.dur[m]), 2e6, 2e5);  // 40 MB at 20 GB/s
    for (const auto& [a, b] : kernels) EXPECT_TRUE(b <= t.events.ts[m] || a >= t.events.end(m)) << "overlaps a kernel";
    const auto call = t.correlations.launch(t.events.correlation[m]);
    ASSERT_NE(call, stepscope::CorrelationIndex::kNoEvent);
    EXPECT_EQ(t.name_of(call), "cudaMemcpyAsync");
  }
  EXPECT_EQ(big, steps.size());
  for (const auto& st : r->truth["steps"]) {
    const double share = static_cast<double>(category(st, "h2d_copy")) / st["duration_ns"].get<double>();
    EXPECT_GE(share, 0.27);
    EXPECT_LE(share, 0.36);
    EXPECT_EQ(st["verdict"], "copy-bound");
  }
  EXPECT_EQ(r->truth["expected_first_lever"], "copy_stream");
  EXPECT_EQ(r->truth["expected_verdict"], "copy-bound");
}

TEST(RunKind, ProfilerHeavyRecordsAThousandEventsPerStep) {
  const auto r = run("profiler-heavy");
  const RankTrace& t = r->trace;
  const json j = raw(*r);
  for (const char* k : {"with_stack", "record_shapes", "profile_memory"}) EXPECT_EQ(j[k], 1) << k;
  const auto steps = profiler_steps(t);
  ASSERT_EQ(steps.size(), 8u);
  // Events of every kind the JSON holds inside each step window (flows included).
  std::vector<std::size_t> per_step(steps.size(), 0);
  for (const auto& e : j["traceEvents"]) {
    if (!e.contains("ts") || e.value("ph", "") == "M" || e.value("cat", "") == "Trace") continue;
    const ns_t ts = tgtest::to_ns(e["ts"].get<double>());
    for (std::size_t s = 0; s < steps.size(); ++s)
      if (ts >= t.events.ts[steps[s]] && ts < t.events.end(steps[s])) ++per_step[s];
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    EXPECT_GE(per_step[s], 1000u) << s;
    EXPECT_LE(per_step[s], 1300u) << s;
    EXPECT_GE(t.events.dur[steps[s]], 1'000'000);
    EXPECT_LE(t.events.dur[steps[s]], 1'600'000);
  }
  std::size_t shaped = 0, ops = 0;
  for (auto i : of_kind(t, Kind::CpuOp)) {
    ++ops;
    const auto x = t.extra_of(i);
    shaped += x && x->input_dims != stepscope::kNoStr && x->input_type != stepscope::kNoStr;
  }
  EXPECT_EQ(shaped, ops);
  const auto frames = of_kind(t, Kind::PythonFunction), memory = of_kind(t, Kind::CpuInstant);
  EXPECT_GE(frames.size(), 100u * steps.size());
  ASSERT_GE(memory.size(), 100u * steps.size());
  for (auto m : memory) {
    EXPECT_EQ(t.name_of(m), "[memory]");
    const auto x = t.extra_of(m);
    ASSERT_TRUE(x.has_value());
    EXPECT_NE(x->bytes, 0);
    EXPECT_GT(x->total_allocated, 0);
  }
  for (auto k : of_kind(t, Kind::Kernel)) EXPECT_LE(t.events.dur[k], 20'000) << t.name_of(k);
  EXPECT_EQ(strings(r->truth["expected_warnings"]), std::set<std::string>{"profiler_overhead"});
  EXPECT_EQ(strings(r->truth["expected_not_levers"]), std::set<std::string>{"cuda_graphs"});
  EXPECT_EQ(r->truth["expected_run_kind"], "training");
}

}  // namespace
