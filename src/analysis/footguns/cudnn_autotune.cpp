// cudnn.benchmark re-tuning in steady steps: one convolution call runs several algorithms and
// waits on the device while cuDNN times them, or cudnnFind* calls show on the host.
#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

// A convolution call running this many different convolution kernels and waiting on the device
// is timing algorithms (FFT and Winograd launch several kernels too, but never synchronise).
constexpr std::size_t kTuneDistinctKernels = 3;

// One convolution op instance (its outermost aten::conv*/convolution op) and the convolution
// kernels it launched.
struct ConvCall {
  std::int64_t step = -1;
  bool synchronises = false;         // a synchronising runtime call inside (cudnnFind times algorithms)
  std::vector<std::string> kernels;  // distinct convolution kernel names, in launch order
  std::int64_t conv_kernels = 0;
  ns_t conv_time = 0, last_conv_time = 0;
  ns_t op_gpu_idle = 0;              // time inside the op with no GPU work on any stream (tuning calls only)
  bool tunes() const { return kernels.size() >= kTuneDistinctKernels && synchronises; }
  void fields(EvidenceFields& v) {
    v.field("step", step);
    v.field("synchronises", synchronises);
    v.field("kernels", kernels);
    v.field("conv_kernels", conv_kernels);
    v.field("conv_time", conv_time);
    v.field("last_conv_time", last_conv_time);
    v.field("op_gpu_idle", op_gpu_idle);
  }
};

struct CudnnAutotune : EvidenceOf<CudnnAutotune> {
  std::vector<ConvCall> convs;
  ByName autotune_calls;  // host events named cudnnFind* / *cudnnFind*

  void host(const HostEvent& e) override {
    if ((e.kind == Kind::Runtime || e.kind == Kind::Driver) && e.ctx.conv_op >= 0 && (e.flags & kSynchronize))
      syncing_.push_back(e.ctx.conv_op);
    if ((e.flags & kFind) && e.steady_step() >= 0) add(autotune_calls, e.name(), e.dur);
  }
  void gpu(const GpuEvent& e) override {
    if (e.kind != Kind::Kernel || e.cls != KernelClass::Convolution || !e.ctx || e.ctx->conv_op < 0) return;
    auto [it, fresh] = index_.try_emplace(e.ctx->conv_op, convs.size());
    if (fresh) convs.push_back({e.step, false, {}, 0, 0, 0, 0});
    ConvCall& c = convs[it->second];
    ++c.conv_kernels;
    c.conv_time += e.dur;
    c.last_conv_time = e.dur;
    const std::string_view n = e.name();
    if (std::find(c.kernels.begin(), c.kernels.end(), n) == c.kernels.end()) c.kernels.emplace_back(n);
  }
  // Only the calls that tune are judged: the others (every convolution of a CNN, 1.65 MB on the
  // 107 MB benchmark trace) and the lookups go before the evidence joins the rank's result.
  void finish(const Scan& s) override {
    for (auto op : syncing_)
      if (auto it = index_.find(op); it != index_.end()) convs[it->second].synchronises = true;
    tuning_idle(s);
    std::erase_if(convs, [](const ConvCall& c) { return !c.tunes(); });
    convs.shrink_to_fit();
    decltype(index_)().swap(index_);
    decltype(syncing_)().swap(syncing_);
  }
  void fields(EvidenceFields& v) override {
    record_list(v, "convs", convs);
    v.field("autotune_calls", autotune_calls);
  }

 private:
  // A convolution call that times algorithms holds the GPU idle while cuDNN builds and compares
  // its candidates on the host: that idle time is most of what re-tuning costs a step.
  void tuning_idle(const Scan& s) {
    std::vector<std::size_t> tuning;
    std::vector<std::pair<ns_t, ns_t>> spans;
    for (const auto& [op, k] : index_)
      if (convs[k].tunes()) {
        tuning.push_back(k);
        spans.emplace_back(s.t.events.ts[static_cast<std::size_t>(op)], s.t.events.end(static_cast<std::size_t>(op)));
      }
    if (spans.empty()) return;
    const std::vector<ns_t> busy = gpu_busy_within(s.t, spans);
    for (std::size_t i = 0; i < tuning.size(); ++i)
      convs[tuning[i]].op_gpu_idle = spans[i].second - spans[i].first - busy[i];
  }

  std::unordered_map<std::int64_t, std::size_t> index_;  // convolution op -> its call in `convs`
  std::vector<std::int64_t> syncing_;                     // convolution ops holding a sync
};

// What a tuning call costs: its trial kernels, and the GPU idle inside it while cuDNN builds and
// compares its candidates on the host (waiting on queued work is no cost: that work runs anyway).
// Example: a backward convolution of 411 ms holding 9 ms of trials and 15 ms of other GPU work
// -> 9 + (411 - 24) = 396 ms.
std::optional<FootgunJudgement> judge_cudnn_autotune(const Judge& j) {
  std::int64_t calls = 0;
  double trial_time = 0;
  std::vector<std::int64_t> steps;
  ByName trials;
  for (const RankFootguns* r : j.ranks)
    for (const auto& c : j.of<CudnnAutotune>(*r).convs) {
      if (!c.tunes()) continue;
      ++calls;
      trial_time += static_cast<double>(c.conv_time - c.last_conv_time + c.op_gpu_idle);
      steps.push_back(c.step + 1'000'000 * r->rank);
      for (const auto& k : c.kernels) trials[k].count++;
    }
  const ByName finds = j.merged(&CudnnAutotune::autotune_calls);
  std::sort(steps.begin(), steps.end());
  const auto distinct_steps = std::unique(steps.begin(), steps.end()) - steps.begin();
  if ((distinct_steps < 2 && finds.empty()) || calls + total(finds).count == 0) return std::nullopt;
  const double gain = j.per_step(trial_time + static_cast<double>(total(finds).time));
  if (!j.worth(gain)) return std::nullopt;
  std::vector<std::string> ev;
  if (calls)
    ev.push_back(fmt::format("{} convolution calls in {} steady steps each ran {} or more different convolution "
                             "kernels (algorithm trials) and waited on the device: {:.1f} per step",
                             calls, distinct_steps, kTuneDistinctKernels, j.per_step(static_cast<double>(calls))));
  if (!finds.empty()) ev.push_back("autotuning calls: " + j.top_names(finds));
  std::string names;
  std::size_t n = 0;
  for (const auto& [k, v] : trials)
    if (n++ < 4) names += fmt::format("{}'{}'", n > 1 ? "; " : "", shorten(k, 70));
  if (!names.empty()) ev.push_back("kernels tried: " + names);
  ev.push_back(fmt::format("gain: per tuning call, the trial kernels' time and the GPU idle inside the call while "
                           "the candidates are built and compared, {} per step",
                           ms(gain)));
  return FootgunJudgement{FootgunId::CudnnAutotune,
                          "cudnn.benchmark re-tunes convolutions in steady-state steps: input shapes keep changing",
                          std::move(ev), gain, j.step()};
}

}  // namespace

extern const Detector kCudnnAutotune{"cudnn_autotune",
                                     true,
                                     {.host_flags = kSynchronize | kFind, .gpu_classes = class_bit(KernelClass::Convolution)},
                                     CudnnAutotune::make,
                                     judge_cudnn_autotune};

}  // namespace stepscope::footgun
