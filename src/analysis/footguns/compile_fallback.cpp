// torch.compile giving up: steady steps ran compiled code, then only eager steps follow.
#include <fmt/core.h>

#include <algorithm>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

struct CompileFallback : EvidenceOf<CompileFallback> {
  // Steady steps with a compiled region, then (after the last of them) steady steps without one.
  std::int64_t fallback_compiled = 0, fallback_eager = 0;
  double compiled_mean_ns = 0, eager_mean_ns = 0;
  std::int64_t first_eager_step = -1;  // ProfilerStep number (or index) of the first eager step

  void host(const HostEvent& e) override {
    if (const std::int64_t step = e.scan.any_step(e.i); step >= 0) compiled_.push_back(step);
  }
  void finish(const Scan& s) override {
    std::sort(compiled_.begin(), compiled_.end());
    compiled_.erase(std::unique(compiled_.begin(), compiled_.end()), compiled_.end());
    if (compiled_.empty()) return;
    const std::int64_t last_compiled = compiled_.back();
    double compiled = 0, eager = 0;
    for (std::size_t k = 0; k < s.p.steps.size(); ++k) {
      const auto& st = s.p.steps[k];
      if (st.warmup) continue;
      if (std::binary_search(compiled_.begin(), compiled_.end(), static_cast<std::int64_t>(k))) {
        ++fallback_compiled;
        compiled += static_cast<double>(st.duration());
      } else if (static_cast<std::int64_t>(k) > last_compiled) {
        if (first_eager_step < 0) first_eager_step = st.number;
        ++fallback_eager;
        eager += static_cast<double>(st.duration());
      } else {
        fallback_compiled = fallback_eager = 0;  // uncompiled steps between compiled ones
        return;
      }
    }
    if (fallback_compiled) compiled_mean_ns = compiled / static_cast<double>(fallback_compiled);
    if (fallback_eager) eager_mean_ns = eager / static_cast<double>(fallback_eager);
  }
  void fields(EvidenceFields& v) override {
    v.field("fallback_compiled", fallback_compiled);
    v.field("fallback_eager", fallback_eager);
    v.field("compiled_mean_ns", compiled_mean_ns);
    v.field("eager_mean_ns", eager_mean_ns);
    v.field("first_eager_step", first_eager_step);
  }

 private:
  std::vector<std::int64_t> compiled_;  // steps (warm-up included) running a compiled region
};

std::optional<FootgunJudgement> judge_compile_fallback(const Judge& j) {
  double excess = 0;
  std::vector<std::string> ev;
  for (const RankFootguns* rank : j.ranks) {
    const CompileFallback& r = j.of<CompileFallback>(*rank);
    if (r.fallback_compiled < 2 || r.fallback_eager < 2 || r.eager_mean_ns <= r.compiled_mean_ns) continue;
    excess += static_cast<double>(r.fallback_eager) * (r.eager_mean_ns - r.compiled_mean_ns);
    ev.push_back(fmt::format("rank {}: {} steady steps ran a compiled region (mean {}), then from step {} on {} "
                             "steps ran none (mean {})",
                             rank->rank, r.fallback_compiled, ms(r.compiled_mean_ns), r.first_eager_step,
                             r.fallback_eager, ms(r.eager_mean_ns)));
  }
  if (ev.empty()) return std::nullopt;
  const double gain = j.per_step(excess);
  if (!j.worth(gain)) return std::nullopt;
  ev.push_back("gain: the eager steps' excess over the compiled ones, spread over every steady step (raise "
               "torch._dynamo.config.cache_size_limit or stop the recompiles)");
  return FootgunJudgement{FootgunId::CompileFallback,
                          "torch.compile fell back to eager mid-run (compiled region gone after the first steps)",
                          std::move(ev), gain, j.step()};
}

}  // namespace

extern const Detector kCompileFallback{"compile_fallback", false, {.host_flags = kCompiledRegion},
                                       CompileFallback::make, judge_compile_fallback};

}  // namespace stepscope::footgun
