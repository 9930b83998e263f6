// Merging the parts of one rank that worker threads parsed, each with its own string table.
#include "ingest/kineto_events.hpp"

namespace stepscope::ingest {

namespace {

std::vector<StrId> remap_strings(const StringTable& from, StringTable& to) {
  std::vector<StrId> map(from.size());
  for (std::size_t i = 0; i < from.size(); ++i) map[i] = to.intern(from.view(static_cast<StrId>(i)));
  return map;
}

std::int64_t remap_track(std::int64_t v, const std::vector<StrId>& map) {
  return is_string_track_id(v) ? string_track_id(map[track_string(v)]) : v;
}

}  // namespace

void merge_rank_part(RankTrace& into, RankTrace&& part) {
  auto map = remap_strings(part.strings, into.strings);
  EventTable& d = into.events;
  const std::vector<std::int32_t> kernel_here = into.kernel_args.append(part.kernel_args);
  std::size_t base = d.size();
  part.events.keys.rewrite([&](TrackKey k) { return TrackKey{remap_track(k.pid, map), remap_track(k.tid, map)}; });
  part.events.category.rewrite([&](StrId s) { return map[s]; });
  part.extras.rewrite_strings([&](StrId s) { return map[s]; });
  const ExtraStore::Bases extra_bases = into.extras.append(part.extras);
  d.append(part.events);
  for (std::size_t i = base; i < d.size(); ++i) {
    d.name[i] = map[d.name[i]];
    if (const std::int32_t k = d.kernel_args[i]; k >= 0) d.kernel_args.set(i, kernel_here[static_cast<std::size_t>(k)]);
    if (const std::int32_t x = d.extra[i]; x >= 0) d.extra.set(i, ExtraStore::rebase(x, extra_bases));
  }
  for (auto& c : part.counters) {
    c.name = map[c.name];
    c.series = map[c.series];
    into.counters.push_back(c);
  }
  for (auto [cat, n] : part.launch_flow_counts) into.launch_flow_counts[map[cat]] += n;
  for (auto& [pid, nm] : part.process_names) into.process_names[remap_track(pid, map)] = nm;
  for (auto& [tid, nm] : part.thread_names) into.thread_names[remap_track(tid, map)] = nm;
}

}  // namespace stepscope::ingest
