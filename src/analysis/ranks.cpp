#include "stepscope/ranks.hpp"

#include <algorithm>
#include <map>

namespace stepscope {
namespace {

// The slowest rank's compute must exceed the others' median by this much to be called a
// straggler: below it, kernel-time jitter between identical ranks (a few percent) could explain it.
constexpr double kStragglerComputeExcess = 0.10;
// ... and the other ranks must wait for it: their exposed grad sync at least this share of a step.
constexpr double kStragglerWaitShare = 0.05;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

RankRow row_of(const RankPartitionOf& of) {
  const RankPartition& p = *of.partition;
  RankRow r;
  r.rank = of.rank;
  r.step_ns = p.steady_mean_ns;
  for (int c = 0; c < 4; ++c) r.compute_ns += p.steady_mean_category[static_cast<std::size_t>(c)];
  r.grad_sync_ns = p.steady_mean_category[static_cast<std::size_t>(Category::GradSyncExposed)];
  return r;
}

// The rank with the most of `work` against the other ranks' median of it, and whether it is a
// straggler: it exceeds that median by kStragglerComputeExcess while the others wait in collectives.
struct StragglerTest {
  const RankRow* slow = nullptr;
  double median_others = 0;  // of `work`
  double median_wait = 0;    // the others' exposed grad sync
  double excess = 0;         // (slow - median_others) / median_others; 0 when the median is 0
  bool found = false;
};

template <class Work>
StragglerTest test_straggler(const std::vector<RankRow>& rows, Work work) {
  StragglerTest t;
  t.slow = &*std::max_element(rows.begin(), rows.end(), [&](const RankRow& a, const RankRow& b) { return work(a) < work(b); });
  std::vector<double> others, wait;
  for (const auto& r : rows)
    if (r.rank != t.slow->rank) others.push_back(work(r)), wait.push_back(r.grad_sync_ns);
  t.median_others = median(others);
  t.median_wait = median(wait);
  if (t.median_others <= 0) return t;
  t.excess = (work(*t.slow) - t.median_others) / t.median_others;
  const bool others_wait = t.median_wait >= kStragglerWaitShare * t.slow->step_ns && t.slow->grad_sync_ns < t.median_wait;
  t.found = t.excess >= kStragglerComputeExcess && others_wait;
  return t;
}

// By GPU compute first; else by the time outside collectives, where a rank's slower input path
// or host work (recorded or not) shows while its GPU compute matches the others'. Without a
// straggler, the compute test's excess and wait are reported.
// Example: two ranks of 61.6 ms steps, compute 0.8 and 0.7 ms, exposed grad sync 52.8 and 33.6 ms
// -> by time outside collectives, 8.8 against 28.0 ms: rank 1, the others waiting 52.8 ms.
void find_straggler(RankComparison& out) {
  auto compute = [](const RankRow& r) { return r.compute_ns; };
  auto outside = [](const RankRow& r) { return r.step_ns - r.grad_sync_ns; };
  StragglerTest t = test_straggler(out.rows, compute);
  StragglerCause cause = StragglerCause::Compute;
  if (!t.found) {
    const StragglerTest host = test_straggler(out.rows, outside);
    if (host.found) t = host, cause = StragglerCause::HostSide;
  }
  out.median_wait_ns = t.median_wait;
  out.straggler_excess = t.excess;
  if (!t.found) return;
  out.straggler = t.slow->rank;
  out.straggler_cause = cause;
  out.local = true;
  // Balanced ranks would all finish with the median; the others' wait bounds the gain.
  const double slow = cause == StragglerCause::Compute ? compute(*t.slow) : outside(*t.slow);
  out.balanced_saving_ns = std::min(slow - t.median_others, out.median_wait_ns);
}

void collective_skew(const std::vector<RankPartitionOf>& ranks, RankComparison& out) {
  std::map<std::int64_t, std::pair<ns_t, ns_t>> by_step;  // min, max exposed grad sync
  std::map<std::int64_t, std::size_t> seen;
  for (const auto& of : ranks)
    for (const auto& s : of.partition->steps) {
      if (s.warmup) continue;
      ns_t g = s.ns[static_cast<std::size_t>(Category::GradSyncExposed)];
      auto [it, fresh] = by_step.try_emplace(s.number, g, g);
      if (!fresh) it->second.first = std::min(it->second.first, g), it->second.second = std::max(it->second.second, g);
      ++seen[s.number];
    }
  double total = 0;
  for (const auto& [step, mm] : by_step) {
    if (seen[step] != ranks.size()) continue;
    out.skew.push_back({step, mm.second - mm.first});
    total += static_cast<double>(mm.second - mm.first);
  }
  out.mean_skew_ns = out.skew.empty() ? 0 : total / static_cast<double>(out.skew.size());
}

}  // namespace

const char* straggler_cause_name(StragglerCause c) {
  switch (c) {
    case StragglerCause::Compute: return "compute";
    case StragglerCause::HostSide: return "host_side";
    case StragglerCause::None: break;
  }
  return "";
}

const char* straggler_excess_of(StragglerCause c) {
  return c == StragglerCause::HostSide ? "time outside collectives" : "compute";
}

RankComparison compare_ranks(const std::vector<RankPartitionOf>& ranks) {
  RankComparison out;
  for (const auto& p : ranks) out.rows.push_back(row_of(p));
  if (ranks.size() < 2) return out;
  find_straggler(out);
  collective_skew(ranks, out);
  if (!out.straggler) {
    // Without a straggler, one rank whose step is much longer than the median is still local.
    std::vector<double> steps;
    for (const auto& r : out.rows) steps.push_back(r.step_ns);
    const double m = median(steps);
    for (const auto& r : out.rows)
      if (m > 0 && r.step_ns > (1 + kStragglerComputeExcess) * m) out.local = true;
  }
  return out;
}

}  // namespace stepscope
