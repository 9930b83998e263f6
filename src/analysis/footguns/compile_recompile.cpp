// torch.compile recompiling after the steady state began: compilation events in steps after the
// first steady step (the partition marks those steps as warm-up "compilation").
#include <fmt/core.h>

#include <algorithm>

#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

struct CompileRecompile : EvidenceOf<CompileRecompile> {
  ByName late_compile;  // outermost compile events in steps after the steady state began
  std::int64_t late_compile_steps = 0;
  ns_t late_compile_time = 0;

  void host(const HostEvent& e) override { events_.push_back(e.i); }
  void finish(const Scan& s) override {
    std::int64_t first_steady = -1;
    for (std::size_t k = 0; k < s.p.steps.size(); ++k)
      if (!s.p.steps[k].warmup) {
        first_steady = static_cast<std::int64_t>(k);
        break;
      }
    if (first_steady < 0) return;
    std::vector<bool> late(s.p.steps.size(), false);
    ns_t covered_until = 0;  // outermost compile events only
    const EventTable& ev = s.t.events;
    std::sort(events_.begin(), events_.end(), [&](std::uint32_t a, std::uint32_t b) { return ev.ts[a] < ev.ts[b]; });
    for (auto i : events_) {
      const ns_t ts = ev.ts[i];
      const std::int64_t step = s.any_step(i);
      if (step <= first_steady || ts < covered_until) continue;
      covered_until = ev.end(i);
      late[static_cast<std::size_t>(step)] = true;
      add(late_compile, s.t.name_of(i), ev.dur[i]);
      late_compile_time += ev.dur[i];
    }
    late_compile_steps = std::count(late.begin(), late.end(), true);
  }
  void fields(EvidenceFields& v) override {
    v.field("late_compile", late_compile);
    v.field("late_compile_steps", late_compile_steps);
    v.field("late_compile_time", late_compile_time);
  }

 private:
  std::vector<std::uint32_t> events_;  // compile events
};

std::optional<FootgunJudgement> judge_compile_recompile(const Judge& j) {
  const double steps = j.sum<CompileRecompile>([](const CompileRecompile& r) { return r.late_compile_steps; });
  if (steps <= 0) return std::nullopt;
  const double time = j.sum<CompileRecompile>([](const CompileRecompile& r) { return r.late_compile_time; });
  // The recompiling steps are warm-up for the partition; over all steps the compile time adds
  // time / (steady + recompiling steps) to the mean step.
  const double all = j.steady + steps;
  const double gain = time / all;
  const double step = j.step() + gain;
  if (gain < kMinShare * step) return std::nullopt;
  return FootgunJudgement{
      FootgunId::CompileRecompile,
      "torch.compile recompiles after the first steps (guard failures, e.g. changing shapes)",
      {fmt::format("{:.0f} steps after the steady state began hold compilation, {} in all", steps, ms(time)),
       "compile events: " + j.top_names(j.merged(&CompileRecompile::late_compile), 2),
       fmt::format("gain: the compile time spread over the window's {:.0f} steps, which holds while recompiles recur "
                   "as often as here ({:.0f} of {:.0f}); a shape met once is compiled once (mark dynamic dims or pad "
                   "shapes)",
                   all, steps, all)},
      gain, step};
}

}  // namespace

extern const Detector kCompileRecompile{"compile_recompile", false, {.host_flags = kCompile}, CompileRecompile::make,
                                        judge_compile_recompile};

}  // namespace stepscope::footgun
