// The partition rules on hand-built intervals: one case per priority decision.
#include <gtest/gtest.h>

#include <vector>

#include "partition.hpp"
#include "schedule.hpp"

namespace tg = stepscope::tracegen;
using tg::Category;

namespace {

tg::Event host(std::string_view name, tg::ns_t a, tg::ns_t b, int thread = tg::kMainThread,
               tg::EvType type = tg::EvType::CpuOp) {
  tg::Event e;
  e.type = type;
  e.name = name;
  e.role = tg::host_role(name);
  e.stage = tg::stage_mark(name);
  e.thread = thread;
  e.ts = a;
  e.dur = b - a;
  return e;
}

tg::Event launch(tg::ns_t a, tg::ns_t b, int thread = tg::kMainThread) {
  tg::Event e = host("cudaLaunchKernel", a, b, thread, tg::EvType::Runtime);
  e.role = tg::HostRole::Launch;
  return e;
}

tg::Event gpu(tg::GpuClass cls, tg::ns_t a, tg::ns_t b, tg::Stage stage = tg::Stage::Other) {
  tg::Event e;
  e.type = cls == tg::GpuClass::HtoD || cls == tg::GpuClass::DtoH ? tg::EvType::Memcpy
                                                                   : tg::EvType::Kernel;
  e.gclass = cls;
  e.stage = stage;
  e.thread = 7;
  e.ts = a;
  e.dur = b - a;
  return e;
}

tg::ns_t at(const tg::Breakdown& b, Category c) { return b[static_cast<std::size_t>(c)]; }

tg::ns_t sum(const tg::Breakdown& b) {
  tg::ns_t s = 0;
  for (auto v : b) s += v;
  return s;
}

TEST(TracegenPartition, GpuActivityBeatsTheHostAndComputeBeatsComm) {
  const std::vector<tg::Event> ev = {
      host("ProfilerStep#1", 0, 100, tg::kMainThread, tg::EvType::UserAnnotation),
      host("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 100),
      gpu(tg::GpuClass::Compute, 10, 30, tg::Stage::Backward),
      gpu(tg::GpuClass::Comm, 20, 50),
      gpu(tg::GpuClass::HtoD, 40, 60),
      gpu(tg::GpuClass::Memset, 60, 70)};
  const auto b = tg::partition_window(ev, 0, 100, true);
  EXPECT_EQ(at(b, Category::ComputeBackward), 20);
  EXPECT_EQ(at(b, Category::GradSyncExposed), 20);  // 30..50
  EXPECT_EQ(at(b, Category::H2DCopy), 10);          // 50..60
  EXPECT_EQ(at(b, Category::Memset), 10);
  EXPECT_EQ(at(b, Category::BatchWait), 40);        // 0..10 and 70..100
  EXPECT_EQ(sum(b), 100);
}

TEST(TracegenPartition, IdleGpuIsBlamedOnTheHostByPriority) {
  const std::vector<tg::Event> ev = {
      host("ProfilerStep#1", 0, 100, tg::kMainThread, tg::EvType::UserAnnotation),
      host("checkpoint", 0, 20, tg::kMainThread, tg::EvType::UserAnnotation),
      host("aten::to", 5, 15),                 // inside the checkpoint: still side work
      host("aten::addmm", 20, 40),
      launch(30, 40),
      host("aten::item", 40, 50),
      gpu(tg::GpuClass::DtoH, 44, 46),
  };
  const auto b = tg::partition_window(ev, 0, 100, true);
  EXPECT_EQ(at(b, Category::SideWork), 20);
  EXPECT_EQ(at(b, Category::HostCompute), 10);
  EXPECT_EQ(at(b, Category::LaunchOverhead), 10);
  EXPECT_EQ(at(b, Category::D2HCopy), 2);
  // The item call (8) and its idle tail to the window end (50) are sync stall.
  EXPECT_EQ(at(b, Category::SyncStall), 58);
  EXPECT_EQ(sum(b), 100);
}

TEST(TracegenPartition, AutogradThreadSpeaksWhenTheMainThreadIsSilent) {
  const std::vector<tg::Event> ev = {
      host("ProfilerStep#1", 0, 100, tg::kMainThread, tg::EvType::UserAnnotation),
      host("autograd::engine::evaluate_function: AddmmBackward0", 10, 60, tg::kAutogradThread),
      launch(20, 30, tg::kAutogradThread),
      host("aten::add", 50, 70),  // the main thread again: it wins
  };
  const auto b = tg::partition_window(ev, 0, 100, true);
  EXPECT_EQ(at(b, Category::LaunchOverhead), 10);
  EXPECT_EQ(at(b, Category::HostCompute), 30 + 20);  // 10..20, 30..50 autograd; 50..70 main
  EXPECT_EQ(at(b, Category::Idle), 10 + 30);
  EXPECT_EQ(sum(b), 100);
}

TEST(TracegenPartition, ASyncTailCarriedFromThePreviousStepEndsAtTheFirstGpuActivity) {
  const std::vector<tg::Event> ev = {
      host("ProfilerStep#2", 0, 100, tg::kMainThread, tg::EvType::UserAnnotation),
      gpu(tg::GpuClass::Compute, 30, 100, tg::Stage::Forward)};
  const auto b = tg::partition_window(ev, 0, 100, true, -1);
  EXPECT_EQ(at(b, Category::Idle), 30);  // no tail passed
  const auto c = tg::partition_window(ev, 0, 100, true, 0);
  EXPECT_EQ(at(c, Category::SyncStall), 30);
  EXPECT_EQ(at(c, Category::ComputeForward), 70);
}

TEST(TracegenPartition, CpuOnlyComputeComesFromStageMarkers) {
  const std::vector<tg::Event> ev = {
      host("ProfilerStep#1", 0, 100, tg::kMainThread, tg::EvType::UserAnnotation),
      host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 30),
      host("## forward ##", 30, 60, tg::kMainThread, tg::EvType::UserAnnotation),
      host("aten::addmm", 35, 55),
      host("autograd::engine::evaluate_function: AddmmBackward0", 60, 80),
      host("Optimizer.zero_grad#AdamW.zero_grad", 80, 85, tg::kMainThread,
           tg::EvType::UserAnnotation),
      host("Optimizer.step#AdamW.step", 85, 95, tg::kMainThread, tg::EvType::UserAnnotation)};
  const auto b = tg::partition_window(ev, 0, 100, false);
  EXPECT_EQ(at(b, Category::BatchWait), 30);
  EXPECT_EQ(at(b, Category::ComputeForward), 30);
  EXPECT_EQ(at(b, Category::ComputeBackward), 20);
  EXPECT_EQ(at(b, Category::HostCompute), 5);
  EXPECT_EQ(at(b, Category::ComputeOptimizer), 10);
  EXPECT_EQ(at(b, Category::Idle), 5);
  EXPECT_EQ(sum(b), 100);
}

}  // namespace
