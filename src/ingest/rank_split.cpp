// A file that trace-merging tools wrote for a whole job, split into its ranks. Such a file names
// every process after its rank ("RANK 2 - GPU 0", "RANK 2 - python"), drops distributedInfo, and
// repeats step markers once per rank; read as one rank, four GPUs' busy time would be unioned.

#include <map>
#include <set>
#include <stdexcept>

#include "ingest/kineto_events.hpp"

namespace stepscope::ingest {

namespace {

// pid -> the rank its process name states, for every process the file names after a rank.
std::map<std::int64_t, int> ranks_by_pid(const RankTrace& t) {
  std::map<std::int64_t, int> out;
  for (const auto& [pid, name] : t.process_names)
    if (const int r = rank_in_process_name(name); r >= 0) out[pid] = r;
  return out;
}

// Every pid that timed events sit on; a split must place each of them.
std::set<std::int64_t> event_pids(const RankTrace& t) {
  std::set<std::int64_t> pids;
  for (std::uint32_t k = 0; k < t.events.keys.size(); ++k) pids.insert(t.events.keys.at(k).pid);
  return pids;
}

// The same names under the same ids: interned in id order into an empty table, each gets its id
// back, since a table holds every text once.
void copy_strings(const StringTable& from, StringTable& to) {
  for (StrId id = 0; id < from.size(); ++id)
    if (to.intern(from.view(id)) != id) throw std::logic_error("string table copied out of order");
}

EventRow split_row_of(const RankTrace& from, std::size_t i, RankTrace& to) {
  const EventTable& e = from.events;
  EventRow r;
  r.ts = e.ts[i], r.dur = e.dur[i], r.name = e.name[i], r.category = e.category[i];
  r.kind = e.kind[i], r.phase = e.phase[i], r.copy_kind = e.copy_kind[i], r.host_mem = e.host_mem[i];
  r.pid = e.pid(i), r.tid = e.tid(i), r.correlation = e.correlation[i], r.external_id = e.external_id[i];
  r.stream = e.stream[i], r.device = e.device[i];
  if (const KernelArgs* k = from.kernel_args_of(i)) r.kernel_args = to.add_kernel_args(*k);
  if (const std::optional<EventExtra> x = from.extra_of(i)) r.extra = to.add_extra(*x);
  return r;
}

// A rank's trace: the file's header, its own processes' events and names. The string table is
// shared whole, so every name id stays valid.
RankTrace rank_part(const RankTrace& t, int rank, const std::map<std::int64_t, int>& owner, int ranks) {
  RankTrace r;
  r.path = t.path, r.layout = t.layout, r.schema_version = t.schema_version, r.base_time_ns = t.base_time_ns;
  r.display_time_unit = t.display_time_unit, r.trace_name = t.trace_name, r.metadata = t.metadata;
  r.devices = t.devices, r.stream_info = t.stream_info;
  copy_strings(t.strings, r.strings);
  r.distributed = t.distributed;
  r.distributed.present = true;
  r.distributed.rank = rank;
  if (!r.distributed.world_size) r.distributed.world_size = ranks;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (owner.at(t.events.pid(i)) == rank) r.events.append(split_row_of(t, i, r));
  for (const auto& [pid, name] : t.process_names)
    if (owner.at(pid) == rank) r.process_names[pid] = name;
  r.thread_names = t.thread_names;
  r.truncated = t.truncated, r.bytes_lost = t.bytes_lost;
  r.bytes_read = t.events.size() ? t.bytes_read * r.events.size() / t.events.size() : 0;
  r.warnings = t.warnings;
  r.build_indexes();
  return r;
}

}  // namespace

std::vector<RankTrace> split_merged_ranks(RankTrace&& t) {
  std::vector<RankTrace> out;
  const std::map<std::int64_t, int> owner = ranks_by_pid(t);
  std::set<int> ranks;
  for (const auto& [pid, r] : owner) ranks.insert(r);
  if (ranks.size() < 2 || t.distributed.rank) {
    out.push_back(std::move(t));
    return out;
  }
  std::size_t unnamed = 0;
  for (std::int64_t pid : event_pids(t)) unnamed += !owner.contains(pid);
  if (unnamed > 0) {
    t.warnings.push_back({WarningId::RanksNotSplit, {unnamed}, {}});
    out.push_back(std::move(t));
    return out;
  }
  for (int r : ranks) out.push_back(rank_part(t, r, owner, static_cast<int>(ranks.size())));
  const auto rank_count = [](int r) { return static_cast<std::uint64_t>(r); };
  out.front().warnings.push_back(
      {WarningId::RanksSplit, {ranks.size(), rank_count(*ranks.begin()), rank_count(*ranks.rbegin())}, {}});
  return out;
}

}  // namespace stepscope::ingest
