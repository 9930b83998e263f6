// Per-step host syncs from logging: scalar reads (loss.item(), printing a tensor) outside
// backward, each leaving the GPU idle until the host queues work again.
#include <fmt/core.h>

#include "stepscope/analysis.hpp"
#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

constexpr double kSyncShare = 0.03;  // sync stalls must be 3% of the step (a final loss.item() costs ~0)

struct HostSyncLogging : EvidenceOf<HostSyncLogging> {
  // Scalar reads outside backward nodes: count, host time, and what they cost (Scan::read_costs).
  std::int64_t items = 0;
  ns_t item_gpu_idle = 0;
  ns_t item_host_time = 0;

  void host(const HostEvent& e) override {
    if ((e.kind != Kind::CpuOp && e.kind != Kind::UserAnnotation) || e.ctx.backward || e.steady_step() < 0) return;
    ++items;
    item_host_time += e.dur;
    reads_.emplace_back(e.ts + e.dur, e.dur);
  }
  void finish(const Scan& s) override { item_gpu_idle += s.read_costs(reads_); }
  void fields(EvidenceFields& v) override {
    v.field("items", items);
    v.field("item_gpu_idle", item_gpu_idle);
    v.field("item_host_time", item_host_time);
  }

 private:
  std::vector<std::pair<ns_t, ns_t>> reads_;  // (end, duration)
};

std::optional<FootgunJudgement> judge(const Judge& j) {
  if (j.found(FootgunId::AnomalyMode)) return std::nullopt;  // the anomaly finding already explains these reads
  const double items = j.sum<HostSyncLogging>([](const HostSyncLogging& s) { return s.items; });
  if (j.per_step(items) < 1) return std::nullopt;
  const double gain = j.per_step(j.sum<HostSyncLogging>([](const HostSyncLogging& s) { return s.item_gpu_idle; }));
  if (gain < kSyncShare * j.step()) return std::nullopt;
  ByName by;
  double idle = 0;
  std::int64_t d2h = 0;
  for (const auto& g : each_rank(j.result, &RankAnalysis::gpu_timeline)) {
    for (const auto& s : g.syncs.by_name) by[s.name].count += s.count, by[s.name].time += s.host_blocked;
    idle += static_cast<double>(g.syncs.gpu_idle_after);
    for (const auto& c : g.copies.groups)
      if (c.direction == CopyKind::DtoH) d2h += c.count;
  }
  std::vector<std::string> ev{fmt::format(
      "{:.1f} aten::item calls per steady step (host blocked {} per step); {} per step of host work after them "
      "could have overlapped the GPU draining its queue; the partition's sync stall is {} per step",
      j.per_step(items), ms(j.per_step(j.sum<HostSyncLogging>([](const HostSyncLogging& s) { return s.item_host_time; }))),
      ms(gain), ms(j.job.cat(Category::SyncStall)))};
  if (!by.empty()) {
    std::string s;
    std::size_t n = 0;
    for (const auto& [name, v] : by)
      if (n++ < 4)
        s += fmt::format("{}'{}' x{} (host blocked {})", n > 1 ? "; " : "", name, v.count, ms(static_cast<double>(v.time)));
    ev.push_back(fmt::format("runtime syncs over the whole trace: {}; the GPU sits idle {} after them; {} "
                             "device-to-host copies",
                             s, ms(idle), d2h));
  }
  ev.push_back("gain: per read, the shorter of the host's wait and the GPU idle after it (log every N steps, "
               "keep metrics on the device)");
  return FootgunJudgement{FootgunId::HostSyncLogging, "per-step host syncs (.item(), printing a tensor) drain the GPU queue",
                          std::move(ev), gain, j.step()};
}

}  // namespace

extern const Detector kHostSyncLogging{"host_sync_logging", true, {.host_flags = kItem}, HostSyncLogging::make, judge};

}  // namespace stepscope::footgun
