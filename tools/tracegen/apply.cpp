// --apply LEVER: the scenario's job after the one change a lever names, so that every lever a
// scenario shows has a generated before/after pair whose speedup is known by construction.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include "ground_truth.hpp"
#include "gpus.hpp"
#include "tracegen.hpp"

namespace stepscope::tracegen {
namespace {

// __next__ when a worker already has the batch ready (Params' default fetch_us).
constexpr double kReadyFetchUs = 120;
// Pinned host-to-device bandwidth (Params' default h2d_gbps, an A100 on PCIe 4).
constexpr double kPinnedGbps = 22;

// What the scenario as preset takes per step, read back from its own ground truth.
struct BaseRun {
  double mean_step_ns = 0;
  double mean_batch_wait_ns = 0;
};

struct LeverChange {
  const char* lever;
  bool (*shows)(const Params&);
  void (*apply)(Params&, int setting, const BaseRun&);
  int default_setting;  // 0: the lever has no setting
};

bool fp16_only_gpu(const Params& p) {
  return p.gpu_name.find("V100") != std::string::npos || p.gpu_name.find("T4") != std::string::npos;
}

// The GEMMs move from fp32 SIMT units to 16-bit tensor cores: their time by the device's peak
// ratio (an A100: 19.5 -> 312 TFLOP/s, 16x; a V100: 15.7 -> 125, 8x), as large GEMMs attain about
// the same share of either peak (the recorded H200 pair: 17x per 8192^3 GEMM against 14.8x at
// peak), plus autocast's casts of the two fp32 inputs (read 4 bytes and write 2 an element, at
// the memory's bandwidth). The presets record no shapes: a GEMM is taken as n x n x n, n from its
// work at 80% of the fp32 peak. Example: an A100's 1400 us GEMM -> 87.5 us + 29 us of casts.
void to_tensor_cores(Params& p) {
  const GpuModel& g = gpu_model(p.gpu_name);
  const double flops = p.gemm_us * 1e-6 * g.fp32_tflops * 1e12 * 0.8;
  const double n = std::cbrt(flops / 2);
  const double casts_us = 2 * n * n * 6 / (g.memory_gbs * 1e9) * 1e6;
  p.tensor_cores = true;
  p.fp32_aten = false;
  p.gemm_us = p.gemm_us / (g.tc16_tflops / g.fp32_tflops) + casts_us;
}

// N workers load batches side by side: one is ready every load/N, and the rest of the step (what
// it takes besides the wait) hides as much of that. Example: 70 ms to load, 48 ms of the rest,
// 2 workers: 35 - 48 < 0, the batch is waiting (120 us); 1 worker would wait 22 ms.
void more_workers(Params& p, int workers, const BaseRun& base) {
  const double load_us = p.fetch_us;
  const double rest_us = (base.mean_step_ns - base.mean_batch_wait_ns) / 1e3;
  p.num_workers = workers;
  p.fetch_us = std::max(kReadyFetchUs, load_us / workers - rest_us);
}

// The first sync a scenario shows is the one removed: the mid-step read (its logging stays), the
// readback after every op, or the reads before the end-of-step loss.item().
void remove_sync(Params& p, int, const BaseRun&) {
  if (p.mid_sync && p.mid_sync_read)
    p.mid_sync_read = false;
  else if (p.readback_us > 0)
    p.readback_us = 0;
  else
    p.item_syncs = 1;
}

// A micro-batch `factor` times larger: what a sample costs grows with the samples (every GPU
// kernel, linearly; the input's copy; a single-process loader's batch), what a step costs once
// stays (the host's dispatch and launches, the optimizer, the gradients' all-reduce, a save).
// Example: launch-bound, 2 us kernels under 21 us of host work an op, x2 -> 4 us kernels, the
// same host work: twice the samples in about the same step.
void larger_micro_batch(Params& p, int factor, const BaseRun&) {
  for (double* kernel_us : {&p.gemm_us, &p.eltwise_us, &p.norm_us, &p.tiny_us, &p.conv_us, &p.transpose_us,
                            &p.attn_gemm_us, &p.softmax_us, &p.ep_us, &p.expert_gemm_us, &p.attn_us})
    *kernel_us *= factor;
  p.batch_mb *= factor;
  if (p.num_workers == 0) p.fetch_us *= factor;
  p.applied_samples = factor;
}

const LeverChange kChanges[] = {
    {"num_workers", [](const Params& p) { return p.num_workers == 0 && p.fetch_us > kReadyFetchUs; }, more_workers, 8},
    {"prefetch_factor", [](const Params& p) { return p.stall_every > 0 && p.stall_us > 0; },
     [](Params& p, int, const BaseRun&) { p.stall_every = 0, p.stall_us = 0; }, 0},
    {"persistent_workers", [](const Params& p) { return p.epoch_steps > 0 && p.epoch_stall_us > 0; },
     [](Params& p, int, const BaseRun&) { p.epoch_steps = 0, p.epoch_stall_us = 0; }, 0},
    {"pin_memory", [](const Params& p) { return p.platform != Platform::Cpu && !p.pinned && p.batch_mb > 0; },
     [](Params& p, int, const BaseRun&) { p.pinned = true, p.blocking_copy = false, p.h2d_gbps = kPinnedGbps; }, 0},
    {"remove_item",
     [](const Params& p) {
       return p.platform != Platform::Cpu && ((p.mid_sync && p.mid_sync_read) || p.readback_us > 0 || p.item_syncs > 1);
     },
     remove_sync, 0},
    {"amp_bf16", [](const Params& p) { return p.platform == Platform::Cuda && !p.tensor_cores && !fp16_only_gpu(p); },
     [](Params& p, int, const BaseRun&) { to_tensor_cores(p); }, 0},
    {"amp_fp16", [](const Params& p) { return p.platform == Platform::Cuda && !p.tensor_cores && fp16_only_gpu(p); },
     [](Params& p, int, const BaseRun&) { to_tensor_cores(p); }, 0},
    {"channels_last", [](const Params& p) { return p.convs > 0 && p.nchw_transposes; },
     [](Params& p, int, const BaseRun&) { p.nchw_transposes = false; }, 0},
    // Fixed shapes: cuDNN tunes once (before the window), torch.compile compiles once (the first
    // step) and never gives up for eager.
    {"fixed_shapes",
     [](const Params& p) {
       return p.autotune_trials > 0 || (p.recompile_every > 0 && p.recompile_every < p.steps) ||
              (p.eager_after > 0 && p.eager_after < p.steps);
     },
     [](Params& p, int, const BaseRun&) {
       p.autotune_trials = 0;
       if (p.recompile_every > 0) p.recompile_every = p.steps;
       if (p.eager_after > 0) p.eager_after = p.steps + 1;
     },
     0},
    // A decode loop launched op by op, replayed as one CUDA graph per iteration.
    {"cuda_graphs", [](const Params& p) { return p.workload == "decode" && !p.cuda_graph; },
     [](Params& p, int, const BaseRun&) { p.cuda_graph = true; }, 0},
    {"fused_optimizer", [](const Params& p) { return p.opt_params > 0; },
     [](Params& p, int, const BaseRun&) { p.opt_params = 0; }, 0},
    {"zero_grad_set_to_none", [](const Params& p) { return p.zero_grad_memsets > 0; },
     [](Params& p, int, const BaseRun&) { p.zero_grad_memsets = 0; }, 0},
    {"no_debug_apis", [](const Params& p) { return p.anomaly; }, [](Params& p, int, const BaseRun&) { p.anomaly = false; },
     0},
    // An asynchronous save (torch.distributed.checkpoint.async_save) stages the weights in host
    // memory before it returns and serialises them on a thread of its own: the copies stay in the
    // loop, the serialisation leaves it.
    {"async_checkpoint", [](const Params& p) { return p.ckpt_every > 0 && p.ckpt_us > 0; },
     [](Params& p, int, const BaseRun&) { p.ckpt_us = 0; }, 0},
    {"ddp_buckets", [](const Params& p) { return p.ranks > 1 && !p.overlap && !p.fp8_moe; },
     [](Params& p, int, const BaseRun&) { p.overlap = true; }, 0},
    {"fix_straggler", [](const Params& p) { return p.ranks > 1 && p.straggler_rank >= 0; },
     [](Params& p, int, const BaseRun&) { p.straggler_rank = -1; }, 0},
    // A model of many small ops, whose host dispatch outlasts their kernels.
    {"micro_batch", [](const Params& p) { return p.platform != Platform::Cpu && p.workload == "model" && p.tiny_ops > 0; },
     larger_micro_batch, 2},
};

const LeverChange& find_change(const std::string& lever) {
  for (const auto& c : kChanges)
    if (lever == c.lever) return c;
  std::string known;
  for (const auto& c : kChanges) known += (known.empty() ? "" : ", ") + std::string(c.lever);
  throw std::invalid_argument("--apply: unknown lever '" + lever + "' (known: " + known + ")");
}

int parse_setting(const LeverChange& c, const std::string& text) {
  if (text.empty()) return c.default_setting;
  if (c.default_setting == 0) throw std::invalid_argument("--apply: lever '" + std::string(c.lever) + "' takes no setting");
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || v < 1 || v > 256)
    throw std::invalid_argument("--apply: setting '" + text + "' of " + c.lever + " must be a whole number in [1, 256]");
  return static_cast<int>(v);
}

// Generates `p` into a scratch folder and reads its ground truth back: the mean window, the
// mean batch wait, and the verdict most steps have.
struct RunSummary {
  BaseRun run;
  std::string verdict;
};

RunSummary dry_run(Params p) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("stepscope-tracegen-apply-" + std::to_string(::getpid()) + "-" + p.scenario);
  p.gzip = false;
  RunSummary s;
  try {
    const GenerateResult r = generate(p, dir.string());
    const nlohmann::json truth = nlohmann::json::parse(std::ifstream(r.ground_truth));
    const auto& totals = truth.at("totals");
    const double steps = totals.at("steps").get<double>();
    s.run.mean_step_ns = totals.at("duration_ns").get<double>() / steps;
    s.run.mean_batch_wait_ns = totals.at("categories_ns").at("batch_wait").get<double>() / steps;
    std::map<std::string, int> votes;
    for (const auto& st : truth.at("steps")) ++votes[st.at("verdict").get<std::string>()];
    s.verdict = std::max_element(votes.begin(), votes.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  } catch (...) {
    std::filesystem::remove_all(dir);
    throw;
  }
  std::filesystem::remove_all(dir);
  return s;
}

// "fetch_us: 70000 -> 120" for every parameter the change moved.
std::vector<std::string> changed_parameters(const Params& before, const Params& after) {
  const nlohmann::json a = parameters_json(before), b = parameters_json(after);
  std::vector<std::string> out;
  for (const auto& [k, v] : b.items())
    if (a.at(k) != v) out.push_back(k + ": " + a.at(k).dump() + " -> " + v.dump());
  return out;
}

}  // namespace

std::vector<std::string> applicable_levers(const Params& p) {
  std::vector<std::string> out;
  for (const auto& c : kChanges)
    if (c.shows(p)) out.push_back(c.lever);
  return out;
}

GenerateResult generate_applied(Params p, const std::string& spec, const std::string& out_dir) {
  const auto eq = spec.find('=');
  const LeverChange& change = find_change(spec.substr(0, eq));
  const int setting = parse_setting(change, eq == std::string::npos ? "" : spec.substr(eq + 1));
  if (!change.shows(p))
    throw std::invalid_argument("--apply: scenario '" + p.scenario + "' shows nothing lever '" + change.lever +
                                "' changes");
  if (auto why = validate(p); !why.empty()) throw std::invalid_argument(why);
  const RunSummary base = dry_run(p);
  Params after = p;
  change.apply(after, setting, base.run);
  after.applied_lever = change.lever;
  after.applied_setting = change.default_setting ? std::to_string(setting) : "";
  after.applied_changes = changed_parameters(p, after);
  after.description = p.description + "; with " + spec + " applied";
  // The preset's expectations were about the job before the change; the verdict is what the
  // changed job's own steps reach.
  after.expected_first_lever.clear();
  after.expected_not_levers.clear();
  const RunSummary applied = dry_run(after);
  after.expected_verdict = applied.verdict;
  after.base_mean_step_ns = base.run.mean_step_ns;
  after.applied_mean_step_ns = applied.run.mean_step_ns;
  return generate(after, out_dir);
}

}  // namespace stepscope::tracegen
