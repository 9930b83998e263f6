// Footgun findings re-rank the lever catalogue with their measured gains; a lever retired by a
// more precise one stays retired whatever finding points at it later.
#include <gtest/gtest.h>

#include <algorithm>

#include "diagnose/diagnose_internal.hpp"

namespace stepscope {
namespace {

Finding footgun(FootgunId id, double gain_ns) {
  Finding f = footgun_finding(id, std::string(footgun_name(id)));
  f.gain_ns = gain_ns;
  f.step_ns = 100e6;
  f.speedup = f.step_ns / (f.step_ns - gain_ns);
  return f;
}

const Lever& lever(const std::vector<Lever>& levers, const std::string& id) {
  auto it = std::find_if(levers.begin(), levers.end(), [&](const Lever& l) { return lever_name(l.id) == id; });
  EXPECT_NE(it, levers.end()) << id;
  return *it;
}

TEST(FootgunLevers, SyncOncePerStepRetiresThePerStepSyncLeverForGood) {
  Lever item;
  item.id = LeverId::RemoveItem;
  item.applies = true;
  item.removable_ns = 20e6;
  item.step_ns = 100e6;
  item.speedup = 1.25;
  item.basis = "catalogue";
  std::vector<Lever> levers{item};
  diagnose_detail::apply_footgun_levers(levers, {footgun(FootgunId::SyncAfterEveryKernel, 30e6),
                                                 footgun(FootgunId::HostSyncLogging, 5e6)});
  diagnose_detail::order_levers(levers, Bound::SyncStall);
  EXPECT_TRUE(lever(levers, "sync_once_per_step").applies);
  EXPECT_DOUBLE_EQ(lever(levers, "sync_once_per_step").removable_ns, 30e6);
  EXPECT_FALSE(lever(levers, "remove_item").applies);
  EXPECT_EQ(lever_name(levers.front().id), "sync_once_per_step");
}

TEST(FootgunLevers, MeasuredGainReplacesTheCatalogueEstimate) {
  Lever pin;
  pin.id = LeverId::PinMemory;
  pin.applies = true;
  pin.removable_ns = 20e6;
  pin.basis = "catalogue";
  std::vector<Lever> levers{pin};
  diagnose_detail::apply_footgun_levers(levers, {footgun(FootgunId::PageableCopy, 4e6)});
  EXPECT_DOUBLE_EQ(lever(levers, "pin_memory").removable_ns, 4e6);
  EXPECT_NEAR(lever(levers, "pin_memory").speedup, 100.0 / 96.0, 1e-12);
}

Lever catalogue(LeverId id, double removable, double certainty, Bound on) {
  Lever l;
  l.id = id;
  l.applies = true;
  l.removable_ns = removable;
  l.certainty = certainty;
  l.acts_on = on;
  return l;
}

// A copy fix with no numerics risk comes before a precision change of close gain, and the lever
// on the verdict's bound leads unless another is clearly larger.
TEST(LeverOrder, CertaintyAndTheBoundDecideCloseCalls) {
  std::vector<Lever> levers{catalogue(LeverId::AmpBf16, 30e6, 0.75, Bound::GpuCompute),
                            catalogue(LeverId::PinMemory, 25e6, 1.0, Bound::Copy)};
  diagnose_detail::order_levers(levers, Bound::Copy);
  EXPECT_EQ(lever_name(levers.front().id), "pin_memory");
  levers = {catalogue(LeverId::AmpBf16, 30e6, 0.75, Bound::GpuCompute), catalogue(LeverId::PinMemory, 10e6, 1.0, Bound::Copy)};
  diagnose_detail::order_levers(levers, Bound::Copy);
  EXPECT_EQ(lever_name(levers.front().id), "amp_bf16");  // three times the gain: first, and the headline says why
}

}  // namespace
}  // namespace stepscope
