// HTA-compatible temporal breakdown, compute/communication overlap and kernel breakdown
// (hta/analyzers/breakdown_analysis.py, communication_analysis.py at f4d0062).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <string>

#include "hta_breakdown.hpp"

namespace stepscope::hta {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// GPU rows in HTA's sense are every kept row with a stream (kernels, copies, memsets and the
// cuda_sync rows that carry a stream, e.g. Stream Sync / Stream Wait Event); their unions are
// built once with the view.
const std::vector<Interval>& merged(const View& v, HtaKernelType t) {
  return v.merged_by_type[static_cast<std::size_t>(t)];
}

// One edge of the sweeps: the running sum changes by `delta` at `time`.
struct Edge {
  ns_t time;
  int delta;
};

void add_edges(const std::vector<Interval>& merged, int value, std::vector<Edge>& edges) {
  for (const Interval& iv : merged) {
    edges.push_back({iv.ts, value});
    edges.push_back({iv.end, -value});
  }
}

// Sorts the edges and calls f(running, length) for every segment between consecutive edges.
// Edges at equal times give zero-length segments; their running values depend on the order
// pandas' unstable sort leaves them in, but they add nothing to any sum: a segment of some
// length sees every edge up to its start, in whatever order. So the sort need not be stable,
// and takes no buffer (as large as the edges: millions in a long trace).
template <class F>
void breakdown_sweep(std::vector<Edge>& edges, F&& f) {
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.time < b.time; });
  int running = 0;
  for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
    running += edges[k].delta;
    ns_t len = edges[k + 1].time - edges[k].time;
    if (len != 0) f(running, len);
  }
}

// The same sweep over unions given as sorted lists (up to three), each interval adding its
// value while it lasts, without the edge list: when every list's edges come in time order
// (ts0 <= end0 <= ts1 ...), the lists' edges are merged as they are read. A union holds a
// reversed interval (end < ts, HTA's rounding of sub-µs rows) only where such a row stands
// alone: then the edges are listed and sorted as before. The edges of a 1 GB trace's unions
// took 50 MB, at the GPU timeline's peak.
//   {[0,10)} value 1, {[5,20)} value 2: f(1, 5), f(3, 5), f(2, 10)
template <class F>
void sweep_unions(std::span<const std::pair<const std::vector<Interval>*, int>> unions, F&& f) {
  auto in_order = [](const std::vector<Interval>& u) {
    for (std::size_t k = 0; k < u.size(); ++k)
      if (u[k].end < u[k].ts || (k > 0 && u[k].ts < u[k - 1].end)) return false;
    return true;
  };
  if (!std::all_of(unions.begin(), unions.end(), [&](const auto& u) { return in_order(*u.first); })) {
    std::vector<Edge> edges;
    std::size_t n = 0;
    for (const auto& u : unions) n += 2 * u.first->size();
    edges.reserve(n);
    for (const auto& [u, value] : unions) add_edges(*u, value, edges);
    breakdown_sweep(edges, f);
    return;
  }
  // Edge e of a list: its interval e / 2's start for even e, its end for odd e.
  std::array<std::size_t, 3> at{};
  auto time_at = [&](std::size_t l) {
    const std::vector<Interval>& u = *unions[l].first;
    return at[l] % 2 == 0 ? u[at[l] / 2].ts : u[at[l] / 2].end;
  };
  int running = 0;
  bool started = false;
  ns_t last = 0;
  for (;;) {
    std::size_t next = unions.size();
    for (std::size_t l = 0; l < unions.size(); ++l)
      if (at[l] < 2 * unions[l].first->size() && (next == unions.size() || time_at(l) < time_at(next))) next = l;
    if (next == unions.size()) return;
    const ns_t t = time_at(next);
    if (started && t != last) f(running, t - last);
    running += at[next] % 2 == 0 ? unions[next].second : -unions[next].second;
    last = t, started = true;
    ++at[next];
  }
}

// HTA's label of a running sum: the names of the set bits, in the order computation,
// communication, memory, joined by " overlapping ".
std::string state_label(unsigned running) {
  static constexpr const char* names[3] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
  std::string label;
  for (unsigned b = 0; b < 3; ++b) {
    if (!(running & (1u << b))) continue;
    if (!label.empty()) label += " overlapping ";
    label += names[b];
  }
  return label;
}

struct NameGroup {
  StrId name = kNoStr;
  std::string text;
  bool gpu_named = false;  // some row of the name is GPU activity (not a host op with a stream)
  std::int64_t count = 0;
  ns_t sum = 0, max = 0, min = 0;
  std::vector<ns_t> durs;
};

double sample_std(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0;  // HTA fills the NaN of a single value with 0
  double mean = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  double ss = 0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

// groupby(name) of one type's rows: sum/max/min/mean/std of dur, sorted by sum descending.
// pandas sorts the groups by name first and its descending sort keeps ties in that order (for
// up to 16 names; beyond, numpy's introsort may reorder ties and we keep name order).
std::vector<NameGroup> group_by_name(const RankTrace& rank, const View& v, HtaKernelType t) {
  std::map<StrId, NameGroup> by_id;
  for (const Row& r : v.rows) {
    if (!r.gpu() || r.type != t) continue;
    NameGroup& g = by_id[r.name(rank.events)];
    const ns_t d = v.clock.dur(r);
    if (g.count == 0) {
      g.name = r.name(rank.events);
      g.max = g.min = d;
    }
    g.gpu_named = g.gpu_named || is_gpu_kind(rank.events.kind[r.event]);
    ++g.count;
    g.sum += d;
    g.max = std::max(g.max, d);
    g.min = std::min(g.min, d);
    g.durs.push_back(d);
  }
  std::vector<NameGroup> groups;
  for (auto& [id, g] : by_id) {
    g.text = std::string(rank.str(id));
    groups.push_back(std::move(g));
  }
  std::sort(groups.begin(), groups.end(), [](const NameGroup& a, const NameGroup& b) { return a.text < b.text; });
  std::stable_sort(groups.begin(), groups.end(), [](const NameGroup& a, const NameGroup& b) { return a.sum > b.sum; });
  return groups;
}

// Our class of a named row. The facts carry kernel facts for names of GPU activity; a host op
// that HTA counts as GPU work because it carries a stream (Triton's launching cpu_op) has host
// facts only, so its name is read as a kernel name here, through the facts layer all the same.
KernelClass breakdown_class(const RankFacts& facts, const NameGroup& g) {
  return g.gpu_named ? facts.of(g.name).cls : kernel_name_fact(g.text).cls;
}

HtaKernelRow named_row(const RankFacts& facts, const NameGroup& g, HtaKernelType t) {
  HtaKernelRow row;
  row.name = g.text;
  row.cls = breakdown_class(facts, g);
  row.type = t;
  row.count = g.count;
  row.sum = g.sum;
  row.max_dur = g.max;
  row.min_dur = g.min;
  row.mean_dur = static_cast<double>(g.sum) / static_cast<double>(g.count);
  std::vector<double> ds(g.durs.begin(), g.durs.end());
  row.max = static_cast<double>(g.max);
  row.min = static_cast<double>(g.min);
  row.mean = row.mean_dur;
  row.stddev = sample_std(ds);
  return row;
}

// After HTA's regrouping a row's columns are statistics of the per-name sums it holds.
void regrouped_columns(HtaKernelRow& row, const std::vector<double>& sums) {
  row.max = *std::max_element(sums.begin(), sums.end());
  row.min = *std::min_element(sums.begin(), sums.end());
  double total = 0;
  for (double s : sums) total += s;
  row.mean = total / static_cast<double>(sums.size());
  row.stddev = sample_std(sums);
}

// _aggr_gpu_kernel_time: with more than num_kernels names, a name becomes "others" when its
// cumulative sum exceeds quantile(cumsum, duration_ratio) (a quantile of the cumulative-sum
// column, not duration_ratio of the total) or when it ranks num_kernels-th or lower.
std::vector<HtaKernelRow> top_kernels_of_type(const RankTrace& rank, const RankFacts& facts, const View& v,
                                              HtaKernelType t, const GpuTimelineOptions& opts) {
  std::vector<NameGroup> groups = group_by_name(rank, v, t);
  std::vector<HtaKernelRow> rows;
  if (static_cast<int>(groups.size()) <= opts.num_kernels) {
    for (const NameGroup& g : groups) rows.push_back(named_row(facts, g, t));
    return rows;
  }
  std::vector<double> cumsum;
  double acc = 0;
  for (const NameGroup& g : groups) cumsum.push_back(acc += static_cast<double>(g.sum));
  std::vector<double> sorted = cumsum;
  std::sort(sorted.begin(), sorted.end());
  double q = quantile_linear(sorted, opts.duration_ratio);

  HtaKernelRow others;
  others.name = "others";
  others.type = t;
  others.others = true;
  others.names = 0;
  std::vector<double> other_sums;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const NameGroup& g = groups[k];
    bool lump = cumsum[k] > q || static_cast<int>(k) >= opts.num_kernels;
    if (!lump) {
      HtaKernelRow row = named_row(facts, g, t);
      regrouped_columns(row, {static_cast<double>(g.sum)});
      rows.push_back(row);
      continue;
    }
    if (others.names == 0) {
      others.max_dur = g.max;
      others.min_dur = g.min;
    }
    ++others.names;
    others.count += g.count;
    others.sum += g.sum;
    others.max_dur = std::max(others.max_dur, g.max);
    others.min_dur = std::min(others.min_dur, g.min);
    other_sums.push_back(static_cast<double>(g.sum));
  }
  if (others.names > 0) {
    others.mean_dur = static_cast<double>(others.sum) / static_cast<double>(others.count);
    regrouped_columns(others, other_sums);
    rows.push_back(others);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const HtaKernelRow& a, const HtaKernelRow& b) { return a.sum > b.sum; });
  return rows;
}

}  // namespace

// get_temporal_breakdown. Span = end of the last merged group - start of the first; idle =
// span - |union of GPU rows|; compute = |union of COMPUTATION rows|; non-compute = the rest, so
// communication, copies, memsets and stream-bound sync rows (type OTHER) are all non-compute.
HtaTemporalBreakdown temporal_breakdown(const View& v) {
  HtaTemporalBreakdown out;
  const View::AllGpuRows& all = v.merged_all;
  if (!all.any) {
    out.note = "no GPU kernels, copies or memsets in the trace";
    return out;
  }
  out.available = true;
  out.kernel_time = all.last_end - all.first_ts;
  out.idle = out.kernel_time - all.length;
  out.compute = total_length(merged(v, HtaKernelType::Computation));
  out.non_compute = out.kernel_time - out.compute - out.idle;
  auto share = [&](ns_t x) { return static_cast<double>(x) / static_cast<double>(out.kernel_time); };
  out.idle_share = share(out.idle);
  out.compute_share = share(out.compute);
  out.non_compute_share = share(out.non_compute);
  return out;
}

// get_comm_comp_overlap: sweep over the merged COMM (+1/-1) and COMP (+2/-2) intervals; the
// overlap is the time the running sum is 3; divided by the merged COMM time.
HtaCommCompOverlap comm_comp_overlap(const View& v) {
  HtaCommCompOverlap out;
  const std::vector<Interval>& comm = merged(v, HtaKernelType::Communication);
  const std::vector<Interval>& comp = merged(v, HtaKernelType::Computation);
  out.communication = total_length(comm);
  const std::array<std::pair<const std::vector<Interval>*, int>, 2> unions{{{&comm, 1}, {&comp, 2}}};
  sweep_unions(unions, [&](int running, ns_t len) {
    if (running == 3) out.overlap += len;
  });
  if (comm.empty() || out.communication == 0) {
    out.note = comm.empty() ? "no communication kernels in the trace"
                            : "communication kernels have no duration";
    out.share = kNaN;
    return out;
  }
  out.available = true;
  out.share = static_cast<double>(out.overlap) / static_cast<double>(out.communication);
  return out;
}

// get_gpu_kernel_breakdown, kernel-type table: merged intervals per type, bit-coded
// (computation 1, communication 2, memory 4), swept; each positive running sum is a state.
std::vector<HtaKernelTypeTime> kernel_type_times(const View& v) {
  const std::array<std::pair<const std::vector<Interval>*, int>, 3> unions{{
      {&merged(v, HtaKernelType::Computation), 1},
      {&merged(v, HtaKernelType::Communication), 2},
      {&merged(v, HtaKernelType::Memory), 4},
  }};
  std::map<int, ns_t> by_running;
  sweep_unions(unions, [&](int running, ns_t len) {
    if (running > 0) by_running[running] += len;
  });
  std::map<std::string, HtaKernelTypeTime> by_label;
  for (auto [running, t] : by_running) {
    std::string label = state_label(static_cast<unsigned>(running));
    HtaKernelTypeTime& e = by_label[label];
    e.label = label;
    e.mask = static_cast<unsigned>(running) & 7u;
    e.time += t;
  }
  std::vector<HtaKernelTypeTime> out;
  for (auto& [label, e] : by_label) out.push_back(e);
  return out;
}

void finish_type_percentages(std::vector<HtaKernelTypeTime>& types) {
  double total = 0;
  for (const auto& t : types) total += static_cast<double>(t.time);
  for (auto& t : types) t.share = static_cast<double>(t.time) / total;
  std::stable_sort(types.begin(), types.end(), [](const auto& a, const auto& b) { return a.time > b.time; });
}

std::vector<HtaKernelRow> top_kernels(const RankTrace& rank, const RankFacts& facts, const View& v,
                                      const GpuTimelineOptions& opts) {
  std::vector<HtaKernelRow> out;
  for (HtaKernelType t : {HtaKernelType::Computation, HtaKernelType::Communication, HtaKernelType::Memory}) {
    auto rows = top_kernels_of_type(rank, facts, v, t, opts);
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

}  // namespace stepscope::hta
