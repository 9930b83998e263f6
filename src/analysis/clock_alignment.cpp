// Collective marks of one rank, and the clock fit over all of them (stepscope/clock_alignment.hpp).
#include "stepscope/clock_alignment.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace stepscope {
namespace {

// FNV-1a over the key's parts, then a finaliser, so that thinning by key bits is uniform.
class KeyHash {
 public:
  KeyHash& add(std::string_view s) {
    for (unsigned char c : s) h_ = (h_ ^ c) * 0x100000001b3ULL;
    h_ = (h_ ^ 0xff) * 0x100000001b3ULL;  // a separator, so that "ab"+"c" differs from "a"+"bc"
    return *this;
  }
  KeyHash& add(std::int64_t v) {
    for (int i = 0; i < 8; ++i) h_ = (h_ ^ static_cast<std::uint8_t>(v >> (8 * i))) * 0x100000001b3ULL;
    return *this;
  }
  std::uint64_t done() const {
    std::uint64_t z = h_ + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

// A collective's group and sequence number, from its kernel's args or its launching op's.
struct CollectiveId {
  StrId group = kNoStr;
  std::int64_t seq = kNone;
};

// record_param_comms (and any host op) that carries a sequence number, by External id: the NCCL
// kernel it launched has the same External id, and older releases put Seq on the op only.
std::unordered_map<std::int64_t, CollectiveId> host_collective_ids(const RankTrace& t) {
  std::unordered_map<std::int64_t, CollectiveId> out;
  const EventTable& ev = t.events;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (is_gpu_kind(ev.kind[i]) || ev.external_id[i] == kNone) continue;
    const std::optional<EventExtra> x = t.extra_of(i);
    if (x && x->collective_seq != kNone) out[ev.external_id[i]] = {x->process_group, x->collective_seq};
  }
  return out;
}

CollectiveId collective_id(const RankTrace& t, std::size_t i,
                           const std::unordered_map<std::int64_t, CollectiveId>& host) {
  CollectiveId id;
  if (const std::optional<EventExtra> x = t.extra_of(i)) id = {x->process_group, x->collective_seq};
  if (id.seq == kNone && t.events.external_id[i] != kNone)
    if (auto h = host.find(t.events.external_id[i]); h != host.end()) {
      id.seq = h->second.seq;
      if (id.group == kNoStr) id.group = h->second.group;
    }
  return id;
}

// The ProfilerStep whose host span holds `ts`, or -1. A collective is placed by the host call
// that issued it: its kernel may run in the next step's window, and only the issue is alike on
// every rank.
std::int64_t step_at(const std::vector<StepPartition>& steps, ns_t ts) {
  auto it = std::upper_bound(steps.begin(), steps.end(), ts, [](ns_t v, const StepPartition& s) { return v < s.start; });
  if (it == steps.begin()) return -1;
  --it;
  return ts < std::max(it->host_end, it->start + 1) ? it->number : -1;
}

// Whether a collective issued at `ts` belongs to a steady step: the job's replay leaves out the
// warm-up. A rank without steps, or a collective outside them, counts as steady.
bool steady_issue(const RankPartition& partition, ns_t ts) {
  const std::int64_t n = step_at(partition.steps, ts);
  if (n < 0) return true;
  for (const StepPartition& s : partition.steps)
    if (s.number == n) return !s.warmup;
  return true;
}

// When the host issued GPU record i: its launch call's start, else its own.
ns_t issued_at(const RankTrace& t, std::size_t i) {
  const std::int64_t corr = t.events.correlation[i];
  if (corr != kNone)
    if (auto call = t.correlations.launch(corr); call != CorrelationIndex::kNoEvent) return t.events.ts[call];
  return t.events.ts[i];
}

// Times past this, either way, are no clock (a damaged base time): differences of two of them,
// which the fit takes, stay within int64.
constexpr ns_t kClockLimit = ns_t{1} << 61;

bool on_clock(ns_t v) { return v > -kClockLimit && v < kClockLimit; }

// A kernel's start and end on the wall clock; false when they overflow or leave kClockLimit.
bool wall_clock(ns_t ts, ns_t dur, std::int64_t base, ns_t& start, ns_t& end) {
  if (__builtin_add_overflow(ts, base, &start) || __builtin_add_overflow(start, dur, &end)) return false;
  return on_clock(start) && on_clock(end);
}

// Keeps the marks whose key falls in one part in 2^k, k the smallest that leaves at most `cap`.
// Every rank applies the same rule to the same keys, so their kept sets nest and still match.
void thin_by_key(std::vector<CollectiveMark>& marks, std::size_t cap) {
  std::uint64_t mask = 0;
  auto kept = [&] {
    return static_cast<std::size_t>(std::count_if(marks.begin(), marks.end(),
                                                   [&](const CollectiveMark& m) { return (m.key & mask) == 0; }));
  };
  while (kept() > cap) mask = (mask << 1) | 1;
  std::erase_if(marks, [&](const CollectiveMark& m) { return (m.key & mask) != 0; });
}

// The median; of an even count, the mean of the middle two (so that of two ranks' ends it is
// their midpoint, not one of them, which would hide the pair's disagreement).
ns_t median_of(std::vector<ns_t>& v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2) return *mid;
  const ns_t below = *std::max_element(v.begin(), mid);
  return below + (*mid - below) / 2;
}

// Nearest rank: the smallest value with at least a share q of the values at or below it.
ns_t offset_quantile(std::vector<ns_t> v, double q) {
  if (v.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  const std::size_t k = std::min(v.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// One matched end: rank (index into the input), collective (index of its key), times.
struct Entry {
  std::size_t rank = 0, group = 0;
  ns_t start = 0, end = 0;
  bool point_to_point = false;
};

// Entries of keys that two or more ranks recorded, grouped by key; `groups` are [first, last).
struct Matches {
  std::vector<Entry> entries;                              // sorted by (group, rank)
  std::vector<std::pair<std::size_t, std::size_t>> groups;  // ranges of `entries`
  std::vector<std::vector<std::size_t>> by_rank;           // entry indexes of each rank
};

Matches match_marks(std::span<const RankMarks> ranks) {
  struct Raw {
    std::uint64_t key;
    std::size_t rank;
    ns_t start, end;
    bool point_to_point;
  };
  std::vector<Raw> raw;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].marks)
      for (const auto& m : ranks[r].marks->marks)
        if (on_clock(m.start) && on_clock(m.end)) raw.push_back({m.key, r, m.start, m.end, m.point_to_point});
  std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) { return std::tie(a.key, a.rank) < std::tie(b.key, b.rank); });
  Matches out;
  out.by_rank.resize(ranks.size());
  for (std::size_t i = 0; i < raw.size();) {
    std::size_t j = i;
    while (j < raw.size() && raw[j].key == raw[i].key) ++j;
    // A key a rank recorded twice (a hash collision, or a repeated sequence number) is ambiguous.
    bool distinct = true;
    for (std::size_t k = i + 1; k < j; ++k) distinct &= raw[k].rank != raw[k - 1].rank;
    if (j - i >= 2 && distinct) {
      const std::size_t g = out.groups.size();
      out.groups.emplace_back(out.entries.size(), out.entries.size() + (j - i));
      for (std::size_t k = i; k < j; ++k) {
        out.by_rank[raw[k].rank].push_back(out.entries.size());
        out.entries.push_back({raw[k].rank, g, raw[k].start, raw[k].end, raw[k].point_to_point});
      }
    }
    i = j;
  }
  return out;
}

// The same matches less the groups `keep` says no to.
Matches keep_groups(const Matches& m, const std::vector<bool>& keep) {
  Matches out;
  out.by_rank.resize(m.by_rank.size());
  for (std::size_t g = 0; g < m.groups.size(); ++g) {
    if (!keep[g]) continue;
    const std::size_t id = out.groups.size();
    out.groups.emplace_back(out.entries.size(), out.entries.size() + (m.groups[g].second - m.groups[g].first));
    for (std::size_t k = m.groups[g].first; k < m.groups[g].second; ++k) {
      out.by_rank[m.entries[k].rank].push_back(out.entries.size());
      out.entries.push_back(m.entries[k]);
      out.entries.back().group = id;
    }
  }
  return out;
}

// Ranks linked to `first` through shared collectives.
std::vector<bool> linked_to(const Matches& m, std::size_t n, std::size_t first) {
  std::vector<std::size_t> parent(n);
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& [a, b] : m.groups)
    for (std::size_t k = a + 1; k < b; ++k) parent[find(m.entries[k].rank)] = find(m.entries[a].rank);
  std::vector<bool> out(n);
  for (std::size_t r = 0; r < n; ++r) out[r] = find(r) == find(first);
  return out;
}

// Median polish of end = instant[group] + offset[rank]: alternately the median over a group's
// members, then over a rank's collectives, until the offsets move by less than a nanosecond.
// A rank's offset reads its collectives, and its point-to-point transfers only when it has no
// collective: a send and a receive in the same place of two ranks need not end together.
constexpr int kFitRounds = 12;

struct Fit {
  std::vector<ns_t> offset;   // per rank
  std::vector<ns_t> instant;  // per group
};

Fit fit_offsets(const Matches& m, std::size_t n) {
  Fit f{std::vector<ns_t>(n, 0), std::vector<ns_t>(m.groups.size(), 0)};
  std::vector<ns_t> scratch;
  for (int round = 0; round < kFitRounds; ++round) {
    for (std::size_t g = 0; g < m.groups.size(); ++g) {
      scratch.clear();
      for (std::size_t k = m.groups[g].first; k < m.groups[g].second; ++k)
        scratch.push_back(m.entries[k].end - f.offset[m.entries[k].rank]);
      f.instant[g] = median_of(scratch);
    }
    ns_t moved = 0;
    for (std::size_t r = 0; r < n; ++r) {
      if (m.by_rank[r].empty()) continue;
      scratch.clear();
      for (auto k : m.by_rank[r])
        if (!m.entries[k].point_to_point) scratch.push_back(m.entries[k].end - f.instant[m.entries[k].group]);
      if (scratch.empty())
        for (auto k : m.by_rank[r]) scratch.push_back(m.entries[k].end - f.instant[m.entries[k].group]);
      const ns_t o = median_of(scratch);
      moved = std::max(moved, o > f.offset[r] ? o - f.offset[r] : f.offset[r] - o);
      f.offset[r] = o;
    }
    if (moved < 1) break;
  }
  return f;
}

ns_t abs_ns(ns_t v) { return v < 0 ? -v : v; }

// The ends of one collective agree within the network's latency and the clocks' drift over the
// window: tens of microseconds. A member further than this from the fitted instant was paired
// with another collective (a rank whose trace lost one shifts the order of the rest), so the
// group is left out of the fit and the skew.
constexpr ns_t kEndTolerance = 100'000;

std::vector<bool> consistent_groups(const Matches& m, const Fit& f) {
  std::vector<bool> keep(m.groups.size(), true);
  for (const Entry& e : m.entries)
    if (abs_ns(e.end - f.offset[e.rank] - f.instant[e.group]) > kEndTolerance) keep[e.group] = false;
  return keep;
}

// Residuals, per rank and over every entry.
void measure_residuals(const Matches& m, const Fit& f, ClockAlignment& out) {
  std::vector<ns_t> all, mine;
  for (std::size_t r = 0; r < out.ranks.size(); ++r) {
    mine.clear();
    for (auto k : m.by_rank[r]) mine.push_back(abs_ns(m.entries[k].end - f.offset[r] - f.instant[m.entries[k].group]));
    all.insert(all.end(), mine.begin(), mine.end());
    out.ranks[r].matched = static_cast<std::int64_t>(mine.size());
    if (!mine.empty()) out.ranks[r].residual_ns = median_of(mine);
  }
  out.residual_p50_ns = offset_quantile(all, 0.5);
  out.residual_p99_ns = offset_quantile(all, 0.99);
}

// Arrival skew of each matched collective on the aligned clock, and who arrived last.
void measure_arrivals(const Matches& m, const Fit& f, ClockAlignment& out) {
  std::vector<ns_t> skews;
  for (const auto& [a, b] : m.groups) {
    std::size_t last = a;
    ns_t first_start = 0, last_start = 0;
    for (std::size_t k = a; k < b; ++k) {
      const ns_t s = m.entries[k].start - f.offset[m.entries[k].rank];
      if (k == a || s < first_start) first_start = s;
      if (k == a || s > last_start) last_start = s, last = k;
    }
    for (std::size_t k = a; k < b; ++k)
      out.ranks[m.entries[k].rank].arrival_wait_ns += last_start - (m.entries[k].start - f.offset[m.entries[k].rank]);
    ++out.ranks[m.entries[last].rank].last_arrivals;
    skews.push_back(last_start - first_start);
  }
  if (skews.empty()) return;
  out.arrival_skew_mean_ns = std::accumulate(skews.begin(), skews.end(), 0.0) / static_cast<double>(skews.size());
  out.arrival_skew_p50_ns = offset_quantile(skews, 0.5);
  out.arrival_skew_p90_ns = offset_quantile(skews, 0.9);
  auto most = std::max_element(out.ranks.begin(), out.ranks.end(),
                               [](const RankClock& x, const RankClock& y) { return x.last_arrivals < y.last_arrivals; });
  out.last_rank = most->rank;
  out.last_share = static_cast<double>(most->last_arrivals) / static_cast<double>(skews.size());
}

std::string keyed_by(std::span<const RankMarks> ranks) {
  bool seq = false, order = false;
  for (const auto& r : ranks)
    if (r.marks && !r.marks->marks.empty()) (r.marks->by_sequence ? seq : order) = true;
  if (seq && order) return "sequence number + order within step";
  return seq ? "sequence number" : order ? "order within step" : "";
}

}  // namespace

const char* clock_method_name(ClockMethod m) {
  switch (m) {
    case ClockMethod::None: return "none";
    case ClockMethod::BaseTime: return "base time";
    case ClockMethod::CollectiveEnds: return "collective ends";
  }
  return "none";
}

CollectiveMarks collective_marks(const RankTrace& t, const RankFacts& facts, const RankPartition& partition,
                                 std::int64_t base_time_ns) {
  const EventTable& ev = t.events;
  std::vector<std::size_t> kernels;
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (ev.kind[i] == Kind::Kernel && ev.phase[i] == Phase::Complete && facts.of_event(t, i).is_comm()) kernels.push_back(i);
  std::stable_sort(kernels.begin(), kernels.end(), [&](std::size_t a, std::size_t b) { return ev.ts[a] < ev.ts[b]; });

  const auto host = host_collective_ids(t);
  const bool stepped = !partition.steps.empty() && partition.source == StepSource::ProfilerStep;
  CollectiveMarks out;
  // Place of a collective among its group's collectives of its kind in its step.
  std::map<std::tuple<std::int64_t, StrId, Collective>, std::int64_t> order;
  for (std::size_t i : kernels) {
    const CollectiveId id = collective_id(t, i, host);
    KeyHash key;
    key.add(t.str(id.group));
    if (id.seq != kNone) {
      key.add("seq").add(id.seq);
      out.by_sequence = true;
    } else {
      const std::int64_t step = stepped ? step_at(partition.steps, issued_at(t, i)) : -1;
      if (stepped && step < 0) continue;
      const Collective kind = facts.of_event(t, i).collective;
      key.add("order").add(collective_name(kind)).add(step).add(order[{step, id.group, kind}]++);
    }
    ns_t start = 0, end = 0;
    if (!wall_clock(ev.ts[i], ev.dur[i], base_time_ns, start, end)) continue;
    out.marks.push_back({key.done(), start, end, facts.of_event(t, i).collective == Collective::SendRecv,
                         facts.comm_role(static_cast<std::uint32_t>(i)), steady_issue(partition, issued_at(t, i))});
  }
  out.kernels = static_cast<std::int64_t>(out.marks.size());
  thin_by_key(out.marks, kMaxCollectiveMarks);
  return out;
}

ClockAlignment align_clocks(std::span<const RankMarks> ranks) {
  ClockAlignment out;
  if (ranks.size() < 2) return out;
  out.method = ClockMethod::BaseTime;
  for (const auto& r : ranks) out.ranks.push_back({.rank = r.rank});
  Matches m = match_marks(ranks);
  Fit f = fit_offsets(m, ranks.size());
  const std::vector<bool> keep = consistent_groups(m, f);
  out.mismatched = std::count(keep.begin(), keep.end(), false);
  if (out.mismatched > 0) {
    m = keep_groups(m, keep);
    f = fit_offsets(m, ranks.size());
  }
  out.collectives = static_cast<std::int64_t>(m.groups.size());
  if (m.groups.empty()) {
    out.unaligned_ranks = static_cast<std::int64_t>(ranks.size());
    return out;
  }
  out.method = ClockMethod::CollectiveEnds;
  out.keyed_by = keyed_by(ranks);
  // The job clock is the first matched rank's: offsets say how far each rank's clock is from it.
  std::size_t first = 0;
  while (m.by_rank[first].empty()) ++first;
  const std::vector<bool> linked = linked_to(m, ranks.size(), first);
  const ns_t zero = f.offset[first];
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    out.ranks[r].aligned = linked[r];
    out.ranks[r].offset_ns = linked[r] ? f.offset[r] - zero : 0;
    if (!linked[r]) ++out.unaligned_ranks;
  }
  measure_residuals(m, f, out);
  measure_arrivals(m, f, out);
  return out;
}

}  // namespace stepscope
