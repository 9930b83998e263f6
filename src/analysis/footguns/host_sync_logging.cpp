// Per-step host syncs from logging: scalar reads (loss.item(), printing a tensor, a check inside
// backward), each leaving the GPU idle until the host queues work again. Reads that anomaly
// detection makes in backward are that finding's, which judges first.
#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "stepscope/analysis.hpp"
#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

constexpr double kSyncShare = 0.03;  // sync stalls must be 3% of the step (a final loss.item() costs ~0)

struct HostSyncLogging : EvidenceOf<HostSyncLogging> {
  // Scalar reads in steady steps: count, host time, and what they cost the GPU (gain()).
  std::int64_t items = 0;
  ns_t item_gpu_idle = 0;
  ns_t item_host_time = 0;

  void host(const HostEvent& e) override {
    if ((e.kind != Kind::CpuOp && e.kind != Kind::UserAnnotation) || e.steady_step() < 0) return;
    ++items;
    item_host_time += e.dur;
    reads_.push_back({e.ts, e.ts + e.dur, e.steady_step(), e.ctx.backward});
  }
  void finish(const Scan& s) override { item_gpu_idle += gain(s); }
  void fields(EvidenceFields& v) override {
    v.field("items", items);
    v.field("item_gpu_idle", item_gpu_idle);
    v.field("item_host_time", item_host_time);
  }

 private:
  struct Read {
    ns_t start, end;
    std::int64_t step;
    bool backward;
  };

  // The larger of two costs. A read outside backward costs the shorter of the host's wait and
  // the GPU idle after it (Scan::read_costs): the loss read once a step, whose logging stays
  // when the read goes later. A step that reads several scalars reads them as checks after its
  // ops; all but its last go with the code that used them (as the what-if replay drops them), and
  // each leaves the GPU idle until the host launches again (Scan::read_idle).
  // Example: 56 checks a step, each followed by 15 us of Python before the next 10 us kernel ->
  // about 55 x (15 us + dispatch) a step, where the first rule counts only the copies' waits.
  ns_t gain(const Scan& s) const {
    std::vector<std::pair<ns_t, ns_t>> outside;  // (end, duration)
    for (const Read& r : reads_)
      if (!r.backward) outside.emplace_back(r.end, r.end - r.start);
    std::vector<std::pair<ns_t, ns_t>> checks = checks_but_last();
    return std::max(s.read_costs(outside), s.read_idle(checks));
  }

  // (end, start) of every read in a step of several reads, but the step's last.
  std::vector<std::pair<ns_t, ns_t>> checks_but_last() const {
    std::map<std::int64_t, std::vector<const Read*>> by_step;
    for (const Read& r : reads_) by_step[r.step].push_back(&r);
    std::vector<std::pair<ns_t, ns_t>> out;
    for (auto& [step, reads] : by_step) {
      if (reads.size() < 2) continue;
      const auto last = std::max_element(reads.begin(), reads.end(), [](const Read* a, const Read* b) { return a->end < b->end; });
      for (auto r = reads.begin(); r != reads.end(); ++r)
        if (r != last) out.emplace_back((*r)->end, (*r)->start);
    }
    return out;
  }

  std::vector<Read> reads_;
};

std::optional<FootgunJudgement> judge_host_sync_logging(const Judge& j) {
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
      "{:.1f} aten::item calls per steady step (host blocked {} per step); they cost the GPU {} per step; the "
      "partition's sync stall is {} per step",
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
  ev.push_back("gain: per read outside backward, the shorter of the host's wait and the GPU idle after it; where a "
               "step reads several (checks after its ops), the GPU idle each but the last makes until the host "
               "launches again, if more (log every N steps, keep metrics on the device)");
  return FootgunJudgement{FootgunId::HostSyncLogging, "per-step host syncs (.item(), printing a tensor) drain the GPU queue",
                          std::move(ev), gain, j.step()};
}

}  // namespace

extern const Detector kHostSyncLogging{"host_sync_logging", true, {.host_flags = kItem}, HostSyncLogging::make, judge_host_sync_logging};

}  // namespace stepscope::footgun
