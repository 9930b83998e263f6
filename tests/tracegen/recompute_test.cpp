// The ground truth must follow from the trace file alone. This test re-derives every step's
// partition from the written JSON (names, tids, correlation ids; nothing generator-internal)
// with its own implementation of the rules in docs/tracegen.md, and compares to the nanosecond.
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tracegen.hpp"
#include "tracegen_test_util.hpp"

namespace tg = stepscope::tracegen;
using tgtest::to_ns;

namespace {

struct Span {
  std::int64_t a, b;
};

struct HostOp {
  std::int64_t a, b, tid;
  std::string name;
  bool launch = false;
};

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

int stage_of_name(const std::string& n) {
  if (n == "## forward ##" || n == "DistributedDataParallel.forward") return 0;
  if (starts(n, "autograd::engine::evaluate_function: ")) return 1;
  if (starts(n, "Optimizer.step#")) return 2;
  return 3;
}

// 0 loader, 1 sync, 2 side, 3 launch, 4 other op, -1 marker
int role_of(const HostOp& op) {
  const std::string& n = op.name;
  if (starts(n, "ProfilerStep#")) return -1;
  if (starts(n, "enumerate(DataLoader)#")) return 0;
  static const std::set<std::string> sync = {
      "aten::item", "aten::_local_scalar_dense", "cudaStreamSynchronize", "cudaDeviceSynchronize",
      "cudaEventSynchronize", "cudaMemcpy", "hipStreamSynchronize", "hipDeviceSynchronize",
      "hipEventSynchronize", "hipMemcpy", "hipMemcpyWithStream"};
  if (sync.count(n)) return 1;
  if (n == "checkpoint" || n == "torch.save") return 2;
  if (op.launch) return 3;
  return 4;
}

struct Trace {
  std::vector<HostOp> host;
  std::vector<std::pair<Span, std::string>> gpu;  // interval, class
  std::int64_t main_tid = -1;
};

Trace load(const std::string& path) {
  const auto j = nlohmann::json::parse(tgtest::read_file(path));
  Trace t;
  std::map<std::int64_t, std::size_t> runtime_by_corr;
  std::vector<std::pair<std::int64_t, nlohmann::json>> kernels;  // correlation, event
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("cat")) continue;
    const std::string cat = e["cat"], name = e["name"];
    const std::int64_t a = to_ns(e["ts"].get<double>()), b = a + to_ns(e["dur"].get<double>());
    if (cat == "cpu_op" || cat == "user_annotation" || cat == "cuda_runtime") {
      t.host.push_back({a, b, e["tid"].get<std::int64_t>(), name});
      if (cat == "cuda_runtime") runtime_by_corr[e["args"]["correlation"]] = t.host.size() - 1;
      if (starts(name, "ProfilerStep#")) t.main_tid = e["tid"];
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      kernels.emplace_back(e["args"]["correlation"].get<std::int64_t>(), e);
    }
  }
  for (const auto& [corr, e] : kernels) {
    const std::string cat = e["cat"], name = e["name"];
    const std::int64_t a = to_ns(e["ts"].get<double>()), b = a + to_ns(e["dur"].get<double>());
    HostOp& rt = t.host.at(runtime_by_corr.at(corr));
    rt.launch = true;
    std::string cls;
    if (cat == "gpu_memset") cls = "memset";
    else if (cat == "gpu_memcpy") cls = name.find("HtoD") != std::string::npos ? "h2d" : "d2h";
    else if (starts(name, "nccl")) cls = "comm";
    else {
      // The stage of the innermost enclosing op that marks one, on the launching thread.
      int stage = 3;
      std::int64_t best = -1;
      for (const HostOp& op : t.host)
        if (op.tid == rt.tid && op.a <= rt.a && rt.b <= op.b && op.a >= best &&
            stage_of_name(op.name) != 3) {
          stage = stage_of_name(op.name);
          best = op.a;
        }
      cls = "compute" + std::to_string(stage);
    }
    t.gpu.push_back({{a, b}, cls});
  }
  return t;
}

std::string host_category(const Trace& t, std::int64_t tid, std::int64_t x, bool gpu) {
  int best = 99;
  int stage = 3;
  bool any = false;
  for (const HostOp& op : t.host) {
    if (op.tid != tid || x < op.a || x >= op.b) continue;
    const int r = role_of(op);
    if (r < 0) continue;
    any = true;
    best = std::min(best, r);
    if (stage_of_name(op.name) != 3) stage = std::min(stage, stage_of_name(op.name));
  }
  if (!any) return "";
  if (best == 0) return "batch_wait";
  if (best == 1) return "sync_stall";
  if (best == 2) return "side_work";
  if (gpu && best == 3) return "launch_overhead";
  if (!gpu && stage < 3)
    return std::vector<std::string>{"compute_forward", "compute_backward", "compute_optimizer"}[stage];
  return "host_compute";
}

std::string category_at(const Trace& t, std::int64_t x, bool gpu,
                        const std::vector<Span>& tails) {
  if (gpu) {
    static const std::vector<std::pair<std::string, std::string>> order = {
        {"compute0", "compute_forward"}, {"compute1", "compute_backward"},
        {"compute2", "compute_optimizer"}, {"compute3", "compute_other"},
        {"comm", "grad_sync_exposed"}, {"h2d", "h2d_copy"}, {"d2h", "d2h_copy"},
        {"memset", "memset"}};
    for (const auto& [cls, cat] : order)
      for (const auto& [s, c] : t.gpu)
        if (c == cls && s.a <= x && x < s.b) return cat;
  }
  std::string h = host_category(t, t.main_tid, x, gpu);
  if (h.empty()) {
    for (const HostOp& op : t.host)
      if (op.tid != t.main_tid && op.a <= x && x < op.b) {
        h = host_category(t, op.tid, x, gpu);
        break;
      }
  }
  if (!h.empty()) return h;
  for (const Span& s : tails)
    if (gpu && s.a <= x && x < s.b) return "sync_stall";
  return "idle";
}

// Sync tails: from a synchronising call's end to the next GPU activity start.
std::vector<Span> sync_tails(const Trace& t, std::int64_t w1) {
  std::vector<std::int64_t> starts_;
  for (const auto& [s, c] : t.gpu) starts_.push_back(s.a);
  std::sort(starts_.begin(), starts_.end());
  std::vector<Span> out;
  for (const HostOp& op : t.host) {
    if (role_of(op) != 1) continue;
    auto it = std::lower_bound(starts_.begin(), starts_.end(), op.b);
    out.push_back({op.b, it == starts_.end() ? w1 : *it});
  }
  return out;
}

void recheck(const std::string& scenario) {
  tgtest::TempDir dir("recheck");
  tg::Params p = tgtest::small_params(scenario);
  p.steps = 2;
  p.ranks = std::min(p.ranks, 2);
  if (p.straggler_rank >= p.ranks) p.straggler_rank = p.ranks - 1;
  p.layers = std::min(p.layers, 2);
  p.tiny_ops = std::min(p.tiny_ops, 6);
  const auto r = tg::generate(p, dir.path());
  const auto truth = nlohmann::json::parse(tgtest::read_file(r.ground_truth));
  const bool gpu = p.platform != tg::Platform::Cpu;
  for (std::size_t f = 0; f < r.files.size(); ++f) {
    const Trace t = load(r.files[f]);
    for (const auto& s : truth["steps"]) {
      if (s["rank"] != static_cast<int>(f)) continue;
      const std::int64_t w0 = s["start_ns"], w1 = s["end_ns"];
      const auto tails = sync_tails(t, w1);
      // Every boundary of every interval splits the window into constant pieces.
      std::vector<std::int64_t> cuts = {w0, w1};
      for (const HostOp& op : t.host) cuts.insert(cuts.end(), {op.a, op.b});
      for (const auto& [sp, c] : t.gpu) cuts.insert(cuts.end(), {sp.a, sp.b});
      for (const Span& sp : tails) cuts.insert(cuts.end(), {sp.a, sp.b});
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      std::map<std::string, std::int64_t> got;
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::int64_t a = std::max(cuts[i], w0), b = std::min(cuts[i + 1], w1);
        if (b > a) got[category_at(t, a, gpu, tails)] += b - a;
      }
      for (const auto& [cat, ns] : s["categories_ns"].items())
        EXPECT_EQ(got[cat], ns.get<std::int64_t>())
            << scenario << " rank " << f << " step " << s["step"] << " " << cat;
    }
  }
}

class Recompute : public ::testing::TestWithParam<std::string> {};

TEST_P(Recompute, GroundTruthFollowsFromTheTraceAlone) { recheck(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Tracegen, Recompute,
                         ::testing::Values("healthy", "input-bound", "pageable-copy",
                                           "sync-stall", "launch-bound", "comms-bound",
                                           "straggler", "checkpoint", "memory-bound", "cpu-input-bound",
                                           "rocm-healthy"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
