// Whether two runs can be compared at all: an ablation changes one knob and pins the rest (the
// batch above all), so every other difference found in the traces is reported.
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

#include "diagnose/diff_internal.hpp"

namespace stepscope::diff_detail {
namespace {

// How many ops with recorded shapes, from the start of the first steady step, are compared.
constexpr std::size_t kShapeOps = 20;
constexpr std::size_t kShapeMismatchesShown = 3;

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none recorded" : out;
}

std::vector<std::string> gpu_models(const AnalysisResult& r) {
  std::set<std::string> names;
  for (const auto& rank : r.ranks)
    for (const auto& g : rank.ingest.gpus) names.insert(g);
  return {names.begin(), names.end()};
}

int world_size(const AnalysisResult& r) {
  for (const auto& rank : r.ranks)
    if (rank.ingest.world_size) return *rank.ingest.world_size;
  return static_cast<int>(r.ranks.size());
}

bool has_gpu_activity(const AnalysisResult& r) {
  return std::ranges::any_of(each_rank(r, &RankAnalysis::partition), [](const auto& p) { return p.gpu; });
}

const RankTrace* first_rank(const DiagnosedRun& a) {
  return a.trace.ranks.empty() ? nullptr : &a.trace.ranks.front();
}

bool recorded_dims(const RankTrace& t, std::size_t i) {
  const std::optional<EventExtra> e = t.extra_of(i);
  if (!e || e->input_dims == kNoStr) return false;
  const std::string_view d = t.str(e->input_dims);
  return !d.empty() && d != "[]";
}

// The input dims of the first ops of the first steady step, by op name (first occurrence).
std::map<std::string, std::string> first_op_shapes(const DiagnosedRun& a) {
  std::map<std::string, std::string> out;
  const RankTrace* t = first_rank(a);
  if (!t || a.result.ranks.empty()) return out;
  const auto windows = steady_windows(a.result.ranks.front().partition);
  if (windows.empty()) return out;
  const ns_t start = windows.front()->start, end = windows.front()->end;
  std::vector<std::size_t> ops;
  for (const auto& track : t->host_tracks)
    for (std::uint32_t i : track.events)
      if (t->events.kind[i] == Kind::CpuOp && t->events.ts[i] >= start && t->events.ts[i] < end && recorded_dims(*t, i))
        ops.push_back(i);
  std::sort(ops.begin(), ops.end(), [&](auto x, auto y) { return t->events.ts[x] < t->events.ts[y]; });
  for (std::size_t k = 0; k < ops.size() && k < kShapeOps; ++k)
    out.emplace(std::string(t->name_of(ops[k])), std::string(t->str(t->extra_of(ops[k])->input_dims)));
  return out;
}

// Whether any rank's input holds activity `x`, as the facts layer's inventory counted it.
bool any_activity(const DiagnosedRun& a, Activity x) {
  return std::ranges::any_of(a.result.ranks, [x](const RankAnalysis& r) { return r.facts.inventory.has(x); });
}

bool any_recorded_dims(const DiagnosedRun& a) {
  for (const auto& t : a.trace.ranks)
    for (std::size_t i = 0; i < t.events.size(); ++i)
      if (recorded_dims(t, i)) return true;
  return false;
}

void compare_hardware(const DiagnosedRun& b, const DiagnosedRun& t, std::vector<Warning>& out) {
  const auto bg = gpu_models(b.result), tg = gpu_models(t.result);
  if (bg != tg) out.push_back({WarningId::GpuModelsDiffer, fmt::format("GPU models differ: base {}, test {}", join(bg), join(tg))});
  if (has_gpu_activity(b.result) != has_gpu_activity(t.result))
    out.push_back({WarningId::GpuActivityOneSide, fmt::format("GPU activity recorded on the {} side only: one run was profiled without CUDA "
                              "activities or ran on the CPU",
                              has_gpu_activity(b.result) ? "base" : "test")});
  const int bw = world_size(b.result), tw = world_size(t.result);
  if (bw != tw) out.push_back({WarningId::WorldSizeDiffers, fmt::format("world size differs: base {}, test {} ranks", bw, tw)});
  if (b.result.ranks.size() != t.result.ranks.size())
    out.push_back({WarningId::RankCountDiffers, fmt::format("traces of {} ranks against {}: job means average different sets of ranks",
                              b.result.ranks.size(), t.result.ranks.size())});
}

void compare_shapes(const DiagnosedRun& b, const DiagnosedRun& t, std::vector<Warning>& out) {
  const auto bs = first_op_shapes(b), ts = first_op_shapes(t);
  std::vector<std::string> differ;
  for (const auto& [name, dims] : bs) {
    auto it = ts.find(name);
    if (it != ts.end() && it->second != dims && differ.size() < kShapeMismatchesShown)
      differ.push_back(fmt::format("{} {} -> {}", name, dims, it->second));
  }
  if (!differ.empty())
    out.push_back({WarningId::InputShapesDiffer, "input shapes of the first ops differ (batch or sequence length changed?): " + join(differ) +
                  "; an ablation must pin the batch, or compare time per sample instead"});
}

void compare_steps(const AnalysisResult& b, const AnalysisResult& t, std::vector<Warning>& out) {
  const std::size_t bn = job_step_samples(b).size(), tn = job_step_samples(t).size();
  if (bn < kMinStepsForInterval || tn < kMinStepsForInterval)
    out.push_back({WarningId::TooFewStepsToCompare, fmt::format("only {} and {} steady steps: too few to separate a change from noise; profile "
                              "at least {} active steps per run",
                              bn, tn, 2 * kMinStepsForInterval)});
  else if (bn != tn)
    out.push_back({WarningId::StepCountsDiffer, fmt::format("steady steps differ: base {}, test {}; the means compare, the noise estimates "
                              "are not equally tight",
                              bn, tn)});
  if (!b.ranks.empty() && !t.ranks.empty() && b.ranks[0].partition.source != t.ranks[0].partition.source)
    out.push_back({WarningId::StepSourcesDiffer, fmt::format("steps are delimited differently: base by {}, test by {}",
                              step_source_name(b.ranks[0].partition.source), step_source_name(t.ranks[0].partition.source))});
}

void compare_setting(bool base_on, bool test_on, const char* what, const char* cost,
                     std::vector<Warning>& out) {
  if (base_on == test_on) return;
  out.push_back({WarningId::ProfilerSettingDiffers, fmt::format("profiler setting differs: {} on the {} side only ({})", what, base_on ? "base" : "test",
                            cost)});
}

void compare_profiler(const DiagnosedRun& b, const DiagnosedRun& t, std::vector<Warning>& out) {
  compare_setting(any_recorded_dims(b), any_recorded_dims(t), "record_shapes",
                  "it adds host overhead to every op", out);
  compare_setting(any_activity(b, Activity::PythonFrames), any_activity(t, Activity::PythonFrames), "with_stack",
                  "Python stack tracing slows the host", out);
  compare_setting(any_activity(b, Activity::MemoryEvents), any_activity(t, Activity::MemoryEvents),
                  "profile_memory", "allocation tracking slows the host", out);
  const RankTrace *bt = first_rank(b), *tt = first_rank(t);
  if (bt && tt && bt->schema_version != tt->schema_version)
    out.push_back({WarningId::SchemaVersionsDiffer, fmt::format("trace schema versions differ ({} and {}): recorded by different profiler versions",
                              bt->schema_version, tt->schema_version)});
}

}  // namespace

std::vector<Warning> comparability_warnings(const DiagnosedRun& base, const DiagnosedRun& test) {
  std::vector<Warning> out;
  compare_hardware(base, test, out);
  compare_shapes(base, test, out);
  compare_steps(base.result, test.result, out);
  compare_profiler(base, test, out);
  return out;
}

}  // namespace stepscope::diff_detail
