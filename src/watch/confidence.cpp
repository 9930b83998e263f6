// Confidence from named evidence. A verdict is only as sure as its thinnest support: a short
// window, a reading that sits on its threshold, or a rule that sees only part of the picture.
#include "stepscope/watch/confidence.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stepscope::watch {

namespace t = thresholds;

double Margin::distance() const {
  // A zero threshold has no scale; any reading past it counts as clear.
  double unit = scale != 0 ? scale : threshold;
  if (unit == 0) return value == 0 ? 0.0 : 1.0;
  return std::abs(value - threshold) / std::abs(unit);
}

namespace {

Confidence cap_for_samples(int samples) {
  if (samples >= t::kSamplesForHigh) return Confidence::High;
  if (samples >= t::kSamplesForMedium) return Confidence::Medium;
  return Confidence::Low;
}

Confidence cap_for_margin(double distance) {
  if (distance >= t::kMarginForHigh) return Confidence::High;
  if (distance >= t::kMarginForMedium) return Confidence::Medium;
  return Confidence::Low;
}

const Margin* closest_margin(const std::vector<Margin>& margins) {
  const Margin* closest = nullptr;
  for (const auto& m : margins)
    if (!closest || m.distance() < closest->distance()) closest = &m;
  return closest;
}

std::string number(double v) {
  return std::abs(v) >= 10 ? fmt::format("{:.0f}", v) : fmt::format("{:.2g}", v);
}

std::string margin_text(const Margin& m) {
  return fmt::format("{} {} is {:.0f}% {} its threshold {}", m.metric, number(m.value),
                     m.distance() * 100, m.value >= m.threshold ? "above" : "below",
                     number(m.threshold));
}

}  // namespace

void grade(LiveFinding& f, int samples) {
  ConfidenceBasis& b = f.basis;
  b.samples = samples;
  Confidence by_samples = cap_for_samples(samples);
  const Margin* closest = closest_margin(b.margins);
  Confidence by_margin = closest ? cap_for_margin(closest->distance()) : Confidence::High;
  Confidence ceiling = f.confidence;
  f.confidence = std::min({ceiling, by_samples, by_margin});

  b.text = fmt::format("{} sample(s)", samples);
  if (closest) b.text += "; closest call: " + margin_text(*closest);
  if (!b.ceiling_reason.empty() && ceiling < Confidence::High)
    b.text += "; rule ceiling " + std::string(to_string(ceiling)) + ": " + b.ceiling_reason;

  std::vector<std::string> raise;
  if (by_samples < Confidence::High)
    raise.push_back(fmt::format("more samples (at least {} for high; a longer --seconds or a "
                                "shorter --interval)",
                                t::kSamplesForHigh));
  if (by_margin < Confidence::High)
    raise.push_back(fmt::format("a longer window to settle which side of its threshold {} is "
                                "on (it needs to sit {:.0f}% clear)",
                                closest->metric, t::kMarginForHigh * 100));
  if (ceiling < Confidence::High && !b.ceiling_reason.empty())
    raise.push_back("evidence this rule cannot see: " + b.ceiling_reason);
  b.to_raise.clear();
  if (f.confidence == Confidence::High) return;
  for (const auto& r : raise) b.to_raise += (b.to_raise.empty() ? "" : "; ") + r;
}

}  // namespace stepscope::watch
