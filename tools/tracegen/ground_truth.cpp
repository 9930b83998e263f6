#include "ground_truth.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kineto_writer.hpp"
#include "rng.hpp"

namespace stepscope::tracegen {
namespace {

// Bound classes of the verdict, each the sum of some partition categories.
enum class Group { Input, Host, Sync, Comms, Copy, Side, Count };
constexpr const char* kGroupVerdict[] = {"input-bound", "host/launch-bound", "sync-bound",
                                         "comms-bound", "copy-bound",        "side-work"};

std::array<ns_t, static_cast<std::size_t>(Group::Count)> groups(const Breakdown& b) {
  auto at = [&](Category c) { return b[static_cast<std::size_t>(c)]; };
  return {at(Category::BatchWait),
          at(Category::LaunchOverhead) + at(Category::HostCompute),
          at(Category::SyncStall),
          at(Category::GradSyncExposed),
          at(Category::H2DCopy) + at(Category::D2HCopy) + at(Category::Memset),
          at(Category::SideWork)};
}

// The footgun knobs join the params only when a preset sets one, so that the other presets'
// output stays byte for byte what it was.
void add_footgun_params(const Params& p, nlohmann::json& j, bool every) {
  const Params d;
  if (!every && p.convs == d.convs && p.nchw_transposes == d.nchw_transposes && p.autotune_trials == d.autotune_trials &&
      p.unfused_attention == d.unfused_attention && p.opt_params == d.opt_params && p.anomaly == d.anomaly &&
      p.recompile_every == d.recompile_every && p.eager_after == d.eager_after)
    return;
  j["convs"] = p.convs;
  j["conv_us"] = p.conv_us;
  j["nchw_transposes"] = p.nchw_transposes;
  j["transpose_us"] = p.transpose_us;
  j["autotune_trials"] = p.autotune_trials;
  j["unfused_attention"] = p.unfused_attention;
  j["attn_gemm_us"] = p.attn_gemm_us;
  j["softmax_us"] = p.softmax_us;
  j["opt_params"] = p.opt_params;
  j["opt_param_us"] = p.opt_param_us;
  j["anomaly"] = p.anomaly;
  j["recompile_every"] = p.recompile_every;
  j["compile_us"] = p.compile_us;
  j["eager_after"] = p.eager_after;
}

// Likewise the knobs of the real-world trace classes.
void add_trace_class_params(const Params& p, nlohmann::json& j, bool every) {
  const Params d;
  if (!every && p.training == d.training && p.step_markers == d.step_markers && p.stage_annotations == d.stage_annotations &&
      p.gpu_records == d.gpu_records && p.kineto_dialect == d.kineto_dialect && p.cold_start_us == d.cold_start_us &&
      p.triton_pointwise == d.triton_pointwise && p.item_syncs == d.item_syncs && p.cpu_item == d.cpu_item &&
      p.blocking_copy == d.blocking_copy && p.final_device_sync == d.final_device_sync &&
      p.host_ahead == d.host_ahead && p.fp8_moe == d.fp8_moe && p.ep_nccl == d.ep_nccl)
    return;
  j["training"] = p.training;
  j["step_markers"] = p.step_markers;
  j["stage_annotations"] = p.stage_annotations;
  j["gpu_records"] = p.gpu_records;
  j["kineto_dialect"] = p.kineto_dialect;
  j["cold_start_us"] = p.cold_start_us;
  j["triton_pointwise"] = p.triton_pointwise;
  j["item_syncs"] = p.item_syncs;
  j["cpu_item"] = p.cpu_item;
  j["blocking_copy"] = p.blocking_copy;
  j["final_device_sync"] = p.final_device_sync;
  j["host_ahead"] = p.host_ahead;
  j["fp8_moe"] = p.fp8_moe;
  j["ep_us"] = p.ep_us;
  j["ep_nccl"] = p.ep_nccl;
  j["expert_gemm_us"] = p.expert_gemm_us;
}

// Likewise the knobs of runs that are not a training loop and of the profiler's options.
void add_run_kind_params(const Params& p, nlohmann::json& j, bool every) {
  const Params d;
  if (!every && p.workload == d.workload && p.step_marker == d.step_marker && p.warmup_steps == d.warmup_steps &&
      p.cuda_graph == d.cuda_graph && p.param_moves == d.param_moves && p.forward_range == d.forward_range &&
      p.readback_us == d.readback_us && p.copy_stream_blocking == d.copy_stream_blocking && p.fp32_aten == d.fp32_aten &&
      p.with_stack == d.with_stack && p.record_shapes == d.record_shapes && p.profile_memory == d.profile_memory)
    return;
  j["workload"] = p.workload;
  j["step_marker"] = p.step_marker;
  j["warmup_steps"] = p.warmup_steps;
  j["cuda_graph"] = p.cuda_graph;
  j["attn_us"] = p.attn_us;
  j["param_moves"] = p.param_moves;
  j["param_move_mb"] = p.param_move_mb;
  j["forward_range"] = p.forward_range;
  j["readback_us"] = p.readback_us;
  j["copy_stream_blocking"] = p.copy_stream_blocking;
  j["fp32_aten"] = p.fp32_aten;
  j["with_stack"] = p.with_stack;
  j["record_shapes"] = p.record_shapes;
  j["profile_memory"] = p.profile_memory;
  j["py_frames"] = p.py_frames;
  j["worker_threads"] = p.worker_threads;
  j["requests"] = p.requests;
  j["session_s"] = p.session_s;
}

// --apply: the change, and the speedup it gives by construction (both jobs generated), per sample
// where the change made each step process more of them (a larger micro-batch).
// Example: {"lever": "num_workers", "setting": "8", "changes": ["fetch_us: 70000 -> 120", ...],
//           "base_mean_step_ns": 1.2e8, "mean_step_ns": 5.0e7, "samples_per_step": 1,
//           "expected_speedup": 2.4}
nlohmann::json applied_json(const Params& p) {
  return {{"lever", p.applied_lever},
          {"setting", p.applied_setting},
          {"changes", p.applied_changes},
          {"base_mean_step_ns", p.base_mean_step_ns},
          {"mean_step_ns", p.applied_mean_step_ns},
          {"samples_per_step", p.applied_samples},
          {"expected_speedup", p.applied_samples * p.base_mean_step_ns / p.applied_mean_step_ns}};
}

// What a correct analysis concludes besides the verdict; the optional ones only when stated.
std::string expectations_json(const Params& p) {
  nlohmann::json j = nlohmann::json::object();
  j["expected_run_kind"] = p.expected_run_kind;
  j["expected_warnings"] = p.expected_warnings;
  if (p.expected_sync_calls_per_step >= 0) j["expected_sync_calls_per_step"] = p.expected_sync_calls_per_step;
  if (!p.expected_gemm_dtype.empty()) j["expected_gemm_dtype"] = p.expected_gemm_dtype;
  if (!p.expected_first_lever.empty()) j["expected_first_lever"] = p.expected_first_lever;
  if (!p.expected_not_levers.empty()) j["expected_not_levers"] = p.expected_not_levers;
  if (p.expected_steps >= 0) j["expected_steps"] = p.expected_steps;
  if (!p.applied_lever.empty()) j["applied"] = applied_json(p);
  if (p.cold_start_us > 0) {
    // The one-time cost inside the first kernel launch, counted in the window as launch overhead.
    j["startup_ns"] = us_to_ns(p.cold_start_us);
    j["startup_category"] = category_name(Category::LaunchOverhead);
  }
  std::string out;
  for (const auto& [k, v] : j.items()) out += "  \"" + k + "\": " + v.dump() + ",\n";
  return out;
}

// `every`: each group of knobs even where a preset sets none of it (to compare two jobs).
nlohmann::json params_json(const Params& p, bool every = false) {
  nlohmann::json j = {
      {"scenario", p.scenario},
      {"platform", platform_name(p.platform)},
      {"gpu_name", p.gpu_name},
      {"ranks", p.ranks},
      {"steps", p.steps},
      {"first_step", p.first_step},
      {"seed", p.seed},
      {"jitter", p.jitter},
      {"layers", p.layers},
      {"gemm_us", p.gemm_us},
      {"eltwise_us", p.eltwise_us},
      {"norm_us", p.norm_us},
      {"extra_eltwise", p.extra_eltwise},
      {"tiny_ops", p.tiny_ops},
      {"tiny_us", p.tiny_us},
      {"tensor_cores", p.tensor_cores},
      {"bwd_factor", p.bwd_factor},
      {"zero_grad_memsets", p.zero_grad_memsets},
      {"opt_kernels", p.opt_kernels},
      {"opt_us", p.opt_us},
      {"op_us", p.op_us},
      {"launch_us", p.launch_us},
      {"num_workers", p.num_workers},
      {"fetch_us", p.fetch_us},
      {"stall_every", p.stall_every},
      {"stall_us", p.stall_us},
      {"epoch_steps", p.epoch_steps},
      {"epoch_stall_us", p.epoch_stall_us},
      {"batch_mb", p.batch_mb},
      {"pinned", p.pinned},
      {"h2d_gbps", p.h2d_gbps},
      {"mid_sync", p.mid_sync},
      {"sync_gap_us", p.sync_gap_us},
      {"buckets", p.buckets},
      {"grad_mb", p.grad_mb},
      {"busbw_gbps", p.busbw_gbps},
      {"overlap", p.overlap},
      {"nccl_version", p.nccl_version},
      {"straggler_rank", p.straggler_rank},
      {"straggler_factor", p.straggler_factor},
      {"clock_skew_us", p.clock_skew_us},
      {"base_time_split", p.base_time_split},
      {"ckpt_every", p.ckpt_every},
      {"ckpt_us", p.ckpt_us},
      {"ckpt_mb", p.ckpt_mb},
      {"gzip", p.gzip},
  };
  add_footgun_params(p, j, every);
  add_trace_class_params(p, j, every);
  add_run_kind_params(p, j, every);
  if (every || !p.mid_sync_read) j["mid_sync_read"] = p.mid_sync_read;
  return j;
}

void append_categories(std::string& out, const Breakdown& b) {
  out += '{';
  for (std::size_t i = 0; i < kCategoryCount; ++i)
    fmt::format_to(std::back_inserter(out), "{}\"{}\": {}", i ? ", " : "",
                   category_name(static_cast<Category>(i)), b[i]);
  out += '}';
}

}  // namespace

nlohmann::json parameters_json(const Params& p) { return params_json(p, true); }

const char* category_name(Category c) {
  static constexpr const char* kNames[] = {
      "compute_forward", "compute_backward", "compute_optimizer", "compute_other",
      "grad_sync_exposed", "h2d_copy", "d2h_copy", "memset", "batch_wait", "sync_stall",
      "side_work", "launch_overhead", "host_compute", "idle"};
  return kNames[static_cast<std::size_t>(c)];
}

std::string step_verdict(const Params& p, int rank, const Breakdown& b, ns_t window,
                         std::string* dominant) {
  const auto g = groups(b);
  std::size_t top = 0;
  for (std::size_t i = 1; i < g.size(); ++i)
    if (g[i] > g[top]) top = i;
  if (dominant) *dominant = g[top] > 0 ? kGroupVerdict[top] : "none";
  if (p.straggler_rank >= 0 && p.ranks > 1) return "straggler";
  ns_t compute = 0;
  for (int s = 0; s < 4; ++s) compute += b[static_cast<std::size_t>(s)];
  // A stall is the verdict once it holds a quarter of the step or outweighs the compute.
  if (g[top] > 0 && (4 * g[top] >= window || g[top] >= compute)) return kGroupVerdict[top];
  (void)rank;
  return "gpu-bound";
}

namespace {

// Each rank's trace clock minus the true one, which every time in this file is on (a rank's
// trace times are these plus its offset, and plus one base period on odd ranks under base_time_split).
nlohmann::json clock_offsets_json(const Params& p) {
  nlohmann::json j = nlohmann::json::array();
  for (int r = 0; r < p.ranks; ++r) j.push_back(clock_offset_ns(p, r));
  return j;
}

}  // namespace

GroundTruthWriter::GroundTruthWriter(const Params& p, const std::string& path)
    : p_(p), sink_(open_sink(path, false)) {
  nlohmann::json cats = nlohmann::json::array();
  for (std::size_t i = 0; i < kCategoryCount; ++i) cats.push_back(category_name(static_cast<Category>(i)));
  buf_ = "{\n";
  fmt::format_to(std::back_inserter(buf_),
                 "  \"schema\": \"{}\",\n  \"generator\": \"stepscope-tracegen\",\n"
                 "  \"scenario\": {},\n  \"description\": {},\n  \"expected_verdict\": {},\n{}"
                 "  \"straggler_rank\": {},\n  \"platform\": \"{}\",\n  \"ranks\": {},\n"
                 "  \"steps_per_rank\": {},\n  \"seed\": {},\n"
                 "  \"time_unit\": \"ns\",\n  \"time_origin\": \"{}\",\n  \"base_time_ns\": {},\n"
                 "  \"clock_offsets_ns\": {},\n"
                 "  \"categories\": {},\n  \"parameters\": {},\n  \"steps\": [",
                 kGroundTruthSchema, nlohmann::json(p.scenario).dump(),
                 nlohmann::json(p.description).dump(), nlohmann::json(p.expected_verdict).dump(),
                 expectations_json(p), p.straggler_rank, platform_name(p.platform), p.ranks, p.steps, p.seed,
                 p.legacy_dialect() ? "trace ts (us, absolute: no baseTimeNanoseconds) x 1000"
                                    : "trace ts (us, relative to baseTimeNanoseconds) x 1000",
                 p.legacy_dialect() ? 0 : kBaseTimeNs, clock_offsets_json(p).dump(), cats.dump(), params_json(p).dump());
}

void GroundTruthWriter::add(const StepTruth& s) {
  fmt::format_to(std::back_inserter(buf_),
                 "{}\n    {{\"rank\": {}, \"step\": {}, \"name\": {}, "
                 "\"start_ns\": {}, \"end_ns\": {}, \"duration_ns\": {}, ",
                 first_ ? "" : ",", s.rank, s.step, nlohmann::json(s.name).dump(), s.start, s.end, s.end - s.start);
  if (s.host_start >= 0) fmt::format_to(std::back_inserter(buf_), "\"host_start_ns\": {}, ", s.host_start);
  if (p_.report_comm_kernel_ns) fmt::format_to(std::back_inserter(buf_), "\"comm_kernel_ns\": {}, ", s.comm_kernel_ns);
  fmt::format_to(std::back_inserter(buf_),
                 "\"host_end_ns\": {}, \"verdict\": \"{}\", \"dominant\": \"{}\", \"categories_ns\": ",
                 s.host_end, s.verdict, s.dominant);
  append_categories(buf_, s.categories);
  buf_ += '}';
  first_ = false;
  for (std::size_t i = 0; i < kCategoryCount; ++i) totals_[i] += s.categories[i];
  total_window_ += s.end - s.start;
  total_comm_ += s.comm_kernel_ns;
  ++count_;
  if (buf_.size() > (1u << 20)) flush();
}

void GroundTruthWriter::flush() {
  sink_->write(buf_);
  buf_.clear();
}

void GroundTruthWriter::finish() {
  fmt::format_to(std::back_inserter(buf_),
                 "\n  ],\n  \"totals\": {{\"steps\": {}, \"duration_ns\": {}, \"categories_ns\": ",
                 count_, total_window_);
  append_categories(buf_, totals_);
  buf_ += "},\n";
  if (p_.report_comm_kernel_ns) {
    // Communication kernels (NCCL, expert-parallel) per step, averaged over every step of every rank.
    const ns_t per_step = count_ > 0 ? (total_comm_ + count_ / 2) / count_ : 0;
    fmt::format_to(std::back_inserter(buf_), "  \"expected_comm_kernel_ns_per_step\": {},\n", per_step);
  }
  buf_ += "  \"files\": " + nlohmann::json(files_).dump() + "\n}\n";
  flush();
  sink_->close();
}

}  // namespace stepscope::tracegen
