// A snapshot's model states set beside `plan memory`'s for the model the user names.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "stepscope/memory/analysis.hpp"
#include "stepscope/plan/model.hpp"

namespace stepscope::memory {

namespace {

std::int64_t at(const ByClass& b, MemClass c) { return b[static_cast<std::size_t>(c)]; }

const DeviceMemory* fullest(const SnapshotAnalysis& a) {
  const DeviceMemory* best = nullptr;
  for (const auto& d : a.devices)
    if (!best || d.peak.allocated_bytes > best->peak.allocated_bytes) best = &d;
  return best;
}

// The parameters' type, read off what they occupy: a bf16 or fp16 model holds about 2 bytes a
// parameter. Otherwise (an fp32 model, or parameters that are not the named model's) fp32,
// PyTorch's default.
int bytes_per_parameter(std::int64_t observed, double parameters) {
  if (observed <= 0 || parameters <= 0) return 4;
  const double per = static_cast<double>(observed) / parameters;
  return per >= 1.5 && per <= 2.5 ? 2 : 4;
}

void note_difference(const PlannedClass& r, std::vector<std::string>& out) {
  if (r.planned_bytes <= 0) return;
  const double ratio = static_cast<double>(r.observed_bytes) / static_cast<double>(r.planned_bytes);
  if (std::abs(ratio - 1) <= kPlanTolerance) return;
  const std::string what(class_name(r.cls));
  if (r.observed_bytes == 0)
    out.push_back(fmt::format("{}: none observed where {} are planned ({}: not created yet when the snapshot was "
                              "taken, freed, or sharded away)", what, human_bytes(r.planned_bytes), r.basis));
  else
    out.push_back(fmt::format("{}: {} observed, {} planned ({:.2f}x; {})", what, human_bytes(r.observed_bytes),
                              human_bytes(r.planned_bytes), ratio, r.basis));
}

}  // namespace

PlannedVsObserved compare_with_plan(const SnapshotAnalysis& a, std::string_view model) {
  const plan::ModelArch& m = plan::find_model(model);
  PlannedVsObserved p;
  p.model = m.name;
  p.parameters = plan::model_parameters(m);
  const DeviceMemory* d = fullest(a);
  const ByClass observed = d ? d->peak.by_class : ByClass{};
  p.bytes_per_parameter = bytes_per_parameter(at(observed, MemClass::parameters), p.parameters);
  const double n = p.parameters;
  auto row = [&](MemClass c, double planned, std::string basis) {
    p.rows.push_back({c, static_cast<std::int64_t>(std::llround(planned)), at(observed, c), std::move(basis)});
  };
  row(MemClass::parameters, n * p.bytes_per_parameter, fmt::format("{:.3g} parameters x {} bytes", n, p.bytes_per_parameter));
  row(MemClass::gradients, n * p.bytes_per_parameter, "one gradient per parameter, in the parameters' type");
  row(MemClass::optimizer_state, n * 8, "Adam: two fp32 states per parameter");
  for (const auto& r : p.rows) note_difference(r, p.differences);
  return p;
}

}  // namespace stepscope::memory
