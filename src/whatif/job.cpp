// The job's what-if: collectives joined across ranks and replayed (stepscope/whatif_job.hpp).
#include "stepscope/whatif_job.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace stepscope::whatif {
namespace {

// One member's part in a joined collective, on the job clock.
struct Arrival {
  std::size_t rank = 0;
  ns_t start = 0, end = 0;
};

struct Joined {
  std::vector<Arrival> members;
  ns_t instant = 0;   // the members' median end: the order collectives are replayed in
  ns_t transfer = 0;  // the shortest member's kernel: the last to arrive waited for no one
  CommRole role = CommRole::GradientSync;
};

// A rank's collectives in replay order, and its own work before each: from the end of its
// previous collective to its arrival (negative where two of its collectives overlapped).
struct RankVisit {
  std::size_t joined = 0;
  ns_t work = 0;
  bool first = false;  // the rank's first: it arrives when it arrived
};

struct JobGraph {
  std::vector<Joined> joined;                 // in order of their instant
  std::vector<std::vector<RankVisit>> per_rank;   // index: the input's rank slot
  ns_t recorded_start = 0, recorded_end = 0;  // first arrival, last end
};

ns_t median_end(std::vector<Arrival> m) {
  std::vector<ns_t> ends;
  for (const Arrival& a : m) ends.push_back(a.end);
  std::nth_element(ends.begin(), ends.begin() + static_cast<std::ptrdiff_t>(ends.size() / 2), ends.end());
  return ends[ends.size() / 2];
}

// The steady marks of aligned ranks by key, on the job clock; keys two or more ranks recorded
// once each.
std::vector<Joined> join_marks(std::span<const RankMarks> ranks, const ClockAlignment& clocks) {
  std::map<std::uint64_t, Joined> by_key;
  std::map<std::uint64_t, bool> ambiguous;
  for (std::size_t r = 0; r < ranks.size() && r < clocks.ranks.size(); ++r) {
    if (!ranks[r].marks || !clocks.ranks[r].aligned) continue;
    const ns_t offset = clocks.ranks[r].offset_ns;
    for (const CollectiveMark& m : ranks[r].marks->marks) {
      if (!m.steady) continue;
      Joined& j = by_key[m.key];
      if (!j.members.empty() && j.members.back().rank == r) ambiguous[m.key] = true;
      if (j.members.empty()) j.role = m.role;
      j.members.push_back({r, m.start - offset, m.end - offset});
    }
  }
  std::vector<Joined> out;
  for (auto& [key, j] : by_key) {
    if (j.members.size() < 2 || ambiguous.count(key)) continue;
    j.instant = median_end(j.members);
    j.transfer = std::numeric_limits<ns_t>::max();
    for (const Arrival& a : j.members) j.transfer = std::min(j.transfer, std::max<ns_t>(0, a.end - a.start));
    out.push_back(std::move(j));
  }
  std::sort(out.begin(), out.end(), [](const Joined& a, const Joined& b) { return a.instant < b.instant; });
  return out;
}

JobGraph build_job(std::span<const RankMarks> ranks, const ClockAlignment& clocks) {
  JobGraph g;
  g.joined = join_marks(ranks, clocks);
  g.per_rank.resize(ranks.size());
  std::vector<ns_t> last_end(ranks.size(), 0);
  std::vector<bool> seen(ranks.size(), false);
  g.recorded_start = std::numeric_limits<ns_t>::max();
  g.recorded_end = std::numeric_limits<ns_t>::min();
  for (std::size_t k = 0; k < g.joined.size(); ++k)
    for (const Arrival& a : g.joined[k].members) {
      g.per_rank[a.rank].push_back({k, a.start - last_end[a.rank], !seen[a.rank]});
      seen[a.rank] = true;
      last_end[a.rank] = a.end;
      g.recorded_start = std::min(g.recorded_start, a.start);
      g.recorded_end = std::max(g.recorded_end, a.end);
    }
  return g;
}

// What a lever changes in the joined replay. Overlapping collectives with the backward is not
// one: it moves their issue earlier, which the marks do not hold (the ranks' own graphs do).
struct JobScenario {
  std::vector<double> work_factor;     // per rank: its own work between collectives
  std::vector<double> transfer_factor; // per joined collective
};

JobScenario base_job_scenario(const JobGraph& g) {
  return {std::vector<double>(g.per_rank.size(), 1.0), std::vector<double>(g.joined.size(), 1.0)};
}

// The replayed span: first arrival to last end. A rank's work resumes when its collective ends.
ns_t replay_job(const JobGraph& g, const JobScenario& s) {
  const std::size_t n = g.per_rank.size();
  std::vector<std::size_t> next(n, 0);
  std::vector<ns_t> free_at(n, 0);
  ns_t lo = std::numeric_limits<ns_t>::max(), hi = std::numeric_limits<ns_t>::min();
  for (std::size_t k = 0; k < g.joined.size(); ++k) {
    const Joined& j = g.joined[k];
    ns_t last = std::numeric_limits<ns_t>::min();
    for (const Arrival& a : j.members) {
      const RankVisit& v = g.per_rank[a.rank][next[a.rank]++];
      const double factor = v.work > 0 ? s.work_factor[a.rank] : 1.0;
      const ns_t at = v.first ? a.start : free_at[a.rank] + static_cast<ns_t>(static_cast<double>(v.work) * factor);
      last = std::max(last, at);
      lo = std::min(lo, at);
    }
    const ns_t end = last + static_cast<ns_t>(static_cast<double>(j.transfer) * s.transfer_factor[k]);
    hi = std::max(hi, end);
    for (const Arrival& a : j.members) free_at[a.rank] = end;
  }
  return g.joined.empty() ? 0 : hi - lo;
}

double job_speedup_of(const JobGraph& g, ns_t base, const JobScenario& s) {
  const ns_t v = replay_job(g, s);
  return v > 0 ? static_cast<double>(base) / static_cast<double>(v) : 1.0;
}

std::size_t slot_of(std::span<const RankMarks> ranks, int rank) {
  for (std::size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].rank == rank) return i;
  return ranks.size();
}


void add_levers(const JobGraph& g, std::span<const RankMarks> ranks, const RankComparison& rc, ns_t base,
                JobWhatIf& out) {
  if (rc.straggler) {
    const std::size_t slot = slot_of(ranks, *rc.straggler);
    if (slot < g.per_rank.size() && !g.per_rank[slot].empty()) {
      JobScenario s = base_job_scenario(g);
      // Its work re-timed to the median rank's: the excess the rank comparison measured goes.
      s.work_factor[slot] = 1.0 / (1.0 + std::max(0.0, rc.straggler_excess));
      out.levers.push_back({LeverId::FixStraggler, job_speedup_of(g, base, s), 0.2,
                            fmt::format("rank {}'s work between collectives re-timed to the median rank's ({:.1f}% "
                                        "less), the ranks joined at their collectives and replayed",
                                        *rc.straggler, 100 * rc.straggler_excess / (1 + rc.straggler_excess))});
    }
  }
  JobScenario fewer = base_job_scenario(g);
  bool grads = false;
  for (std::size_t k = 0; k < g.joined.size(); ++k)
    if (g.joined[k].role == CommRole::GradientSync) fewer.transfer_factor[k] = 1 / kAccumulation, grads = true;
  if (grads)
    out.levers.push_back({LeverId::AccumulateAllreduce, job_speedup_of(g, base, fewer), 0.3,
                          "gradient collectives' transfer a quarter; the waits for the last rank stay as the ranks' "
                          "work makes them"});
}

}  // namespace

JobWhatIf model_job(std::span<const RankMarks> ranks, const RankComparison& rc) {
  JobWhatIf out;
  if (ranks.size() < 2 || rc.clocks.method != ClockMethod::CollectiveEnds || !rc.withheld.empty()) return out;
  const JobGraph g = build_job(ranks, rc.clocks);
  if (g.joined.empty()) return out;
  out.present = true;
  out.ranks = static_cast<int>(std::count_if(g.per_rank.begin(), g.per_rank.end(), [](const auto& v) { return !v.empty(); }));
  out.collectives = static_cast<std::int64_t>(g.joined.size());
  out.recorded_span_ns = g.recorded_end - g.recorded_start;
  out.replayed_span_ns = replay_job(g, base_job_scenario(g));
  if (out.recorded_span_ns > 0)
    out.replay_error = std::abs(static_cast<double>(out.replayed_span_ns - out.recorded_span_ns)) /
                       static_cast<double>(out.recorded_span_ns);
  if (out.replayed_span_ns > 0) add_levers(g, ranks, rc, out.replayed_span_ns, out);
  return out;
}

const JobLever* find_job_lever(const JobWhatIf& j, LeverId id) {
  for (const JobLever& l : j.levers)
    if (l.id == id) return &l;
  return nullptr;
}

}  // namespace stepscope::whatif
