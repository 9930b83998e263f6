// Kernel-level side of the diff: what ran on the GPU per step, and what was counted.
#include <algorithm>
#include <cmath>

#include "diagnose/diff_internal.hpp"
#include "stepscope/partition.hpp"

namespace stepscope::diff_detail {
namespace {

// Count names, in the order reports list them.
constexpr const char* kKernelLaunches = "kernel launches";
constexpr const char* kH2DCopies = "H2D copies";
constexpr const char* kH2DMegabytes = "H2D MB";
constexpr const char* kD2HCopies = "D2H copies";
constexpr const char* kD2HMegabytes = "D2H MB";
constexpr const char* kPageableCopies = "pageable copies";
constexpr const char* kMemsets = "memsets";
constexpr const char* kHostOps = "host ops";
constexpr const char* kSyncCalls = "sync calls";
constexpr const char* kItemCalls = "item() calls";
constexpr const char* kCountOrder[] = {kKernelLaunches, kH2DCopies,  kH2DMegabytes, kD2HCopies, kD2HMegabytes,
                                       kPageableCopies, kMemsets,    kHostOps,      kSyncCalls, kItemCalls};

const RankPartition* partition_of(const AnalysisResult& r, int rank) {
  for (const RankAnalysis& a : r.ranks)
    if (a.rank() == rank) return &a.partition;
  return nullptr;
}

void tally_copy(const RankTrace& t, std::size_t i, std::map<std::string, double>& counts) {
  const CopyKind k = t.events.copy_kind[i];
  const double mb = std::max<std::int64_t>(t.bytes_of(i), 0) / 1e6;
  if (k == CopyKind::HtoD) {
    counts[kH2DCopies] += 1;
    counts[kH2DMegabytes] += mb;
  } else if (k == CopyKind::DtoH) {
    counts[kD2HCopies] += 1;
    counts[kD2HMegabytes] += mb;
  }
  if (t.events.host_mem[i] == HostMem::Pageable) counts[kPageableCopies] += 1;
}

void tally_event(const RankTrace& t, const RankFacts& facts, std::size_t i, KernelTable& out) {
  switch (t.events.kind[i]) {
    case Kind::Kernel: {
      auto [it, fresh] = out.kernels.try_emplace(std::string(t.name_of(i)));
      if (fresh) out.classes.try_emplace(it->first, facts.of_event(t, i).cls);
      Tally& k = it->second;
      k.ns += static_cast<double>(t.events.dur[i]);
      k.count += 1;
      out.counts[kKernelLaunches] += 1;
      break;
    }
    case Kind::Memcpy: tally_copy(t, i, out.counts); break;
    case Kind::Memset: out.counts[kMemsets] += 1; break;
    case Kind::CpuOp: out.counts[kHostOps] += 1; break;
    default: break;
  }
}

KernelTable rank_table(const RankTrace& t, const RankFacts& facts, const RankPartition& p) {
  KernelTable out;
  // Facts computed here for a result without the step phase take it from the partition's windows.
  EventSteps computed;
  const EventSteps& in = event_steps_of(t, facts, p, computed);
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (in.steady(i)) tally_event(t, facts, i, out);
  const double steps = static_cast<double>(std::max<std::size_t>(steady_windows(p).size(), 1));
  for (auto& [name, k] : out.kernels) {
    k.ns /= steps;
    k.count /= steps;
  }
  for (auto& [name, v] : out.counts) v /= steps;
  // The partition already counted the synchronising calls of steady steps.
  const double steady = static_cast<double>(std::max<std::size_t>(p.steady_steps, 1));
  out.counts[kSyncCalls] = static_cast<double>(p.sync_calls) / steady;
  out.counts[kItemCalls] = static_cast<double>(p.item_calls) / steady;
  return out;
}

void add_scaled(KernelTable& into, const KernelTable& from, double scale) {
  for (const auto& [name, k] : from.kernels) {
    Tally& t = into.kernels[name];
    t.ns += k.ns * scale;
    t.count += k.count * scale;
  }
  for (const auto& [name, v] : from.counts) into.counts[name] += v * scale;
  into.classes.insert(from.classes.begin(), from.classes.end());
}

// The class of a kernel the table ran, or nullptr.
const KernelClass* class_in(const KernelTable& table, const std::string& name) {
  auto it = table.classes.find(name);
  return it == table.classes.end() ? nullptr : &it->second;
}

// The class of a kernel either table ran (a name's class is the same on every rank and run).
KernelClass kernel_class_of(const KernelTable& base, const KernelTable& test, const std::string& name) {
  const KernelClass* c = class_in(base, name);
  if (!c) c = class_in(test, name);
  return c ? *c : KernelClass::OtherCompute;
}

ChangeKind classify_change(const Tally& b, const Tally& t, double threshold) {
  if (b.count == 0 && t.count > 0) return ChangeKind::Added;
  if (t.count == 0 && b.count > 0) return ChangeKind::Removed;
  if (b.ns <= 0) return ChangeKind::Unchanged;
  const double rel = (t.ns - b.ns) / b.ns;
  if (rel <= -threshold) return ChangeKind::Faster;
  if (rel >= threshold) return ChangeKind::Slower;
  return ChangeKind::Unchanged;
}

KernelChange make_change(const std::string& name, const std::string& cls, const Tally& b, const Tally& t,
                         double threshold) {
  KernelChange c;
  c.name = name;
  c.kernel_class = cls;
  c.base_ns = b.ns;
  c.test_ns = t.ns;
  c.base_count = b.count;
  c.test_count = t.count;
  c.kind = classify_change(b, t, threshold);
  return c;
}

std::map<std::string, Tally> by_class(const KernelTable& table) {
  std::map<std::string, Tally> out;
  for (const auto& [name, k] : table.kernels) {
    const KernelClass* cls = class_in(table, name);
    Tally& c = out[kernel_class_name(cls ? *cls : KernelClass::OtherCompute)];
    c.ns += k.ns;
    c.count += k.count;
  }
  return out;
}

void sort_by_delta(std::vector<KernelChange>& v) {
  std::stable_sort(v.begin(), v.end(), [](const auto& x, const auto& y) {
    return std::abs(x.test_ns - x.base_ns) > std::abs(y.test_ns - y.base_ns);
  });
}

template <typename Fn>
void for_each_key(const std::map<std::string, Tally>& a, const std::map<std::string, Tally>& b, Fn fn) {
  static const Tally kZero{};
  for (const auto& [name, k] : a) {
    auto it = b.find(name);
    fn(name, k, it == b.end() ? kZero : it->second);
  }
  for (const auto& [name, k] : b)
    if (!a.count(name)) fn(name, kZero, k);
}

}  // namespace

KernelTable kernel_table(const DiagnosedRun& a) {
  KernelTable job;
  std::size_t ranks = 0;
  for (const auto& t : a.trace.ranks)
    if (partition_of(a.result, t.rank)) ++ranks;
  if (!ranks) return job;
  for (std::size_t i = 0; i < a.trace.ranks.size(); ++i) {
    const RankTrace& t = a.trace.ranks[i];
    const RankPartition* p = partition_of(a.result, t.rank);
    if (!p) continue;
    // The result's facts are in trace order; a result without them gets the rank's facts here.
    const bool have = i < a.result.ranks.size() && a.result.ranks[i].rank() == t.rank;
    const RankFacts computed = have ? RankFacts{} : compute_facts(t);
    add_scaled(job, rank_table(t, have ? a.result.ranks[i].facts : computed, *p), 1.0 / static_cast<double>(ranks));
  }
  return job;
}

std::vector<KernelChange> kernel_changes(const KernelTable& base, const KernelTable& test, double threshold) {
  std::vector<KernelChange> out;
  for_each_key(base.kernels, test.kernels, [&](const std::string& name, const Tally& b, const Tally& t) {
    KernelChange c = make_change(name, kernel_class_name(kernel_class_of(base, test, name)), b, t, threshold);
    if (c.kind != ChangeKind::Unchanged) out.push_back(std::move(c));
  });
  sort_by_delta(out);
  return out;
}

std::vector<KernelChange> class_changes(const KernelTable& base, const KernelTable& test, double threshold) {
  std::vector<KernelChange> out;
  for_each_key(by_class(base), by_class(test),
               [&](const std::string& name, const Tally& b, const Tally& t) {
                 out.push_back(make_change(name, name, b, t, threshold));
               });
  sort_by_delta(out);
  return out;
}

std::vector<CountChange> count_changes(const KernelTable& base, const KernelTable& test) {
  std::vector<CountChange> out;
  for (const char* what : kCountOrder) {
    auto b = base.counts.find(what), t = test.counts.find(what);
    const double bv = b == base.counts.end() ? 0 : b->second, tv = t == test.counts.end() ? 0 : t->second;
    if (bv == 0 && tv == 0) continue;
    out.push_back({what, bv, tv});
  }
  return out;
}

}  // namespace stepscope::diff_detail
