#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "stepscope/trace.hpp"

namespace stepscope {

// Two models hold the same events when every column agrees, names compared as text (string ids
// depend on interning order, which differs between serial and parallel reads).
inline void expect_same_model(const RankTrace& a, const RankTrace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  auto track = [](const RankTrace& t, std::int64_t v) {
    return is_string_track_id(v) ? std::string(t.str(track_string(v))) : std::to_string(v);
  };
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    ASSERT_EQ(a.events.ts[i], b.events.ts[i]) << "event " << i;
    ASSERT_EQ(a.events.dur[i], b.events.dur[i]) << "event " << i;
    ASSERT_EQ(a.name_of(i), b.name_of(i)) << "event " << i;
    ASSERT_EQ(a.str(a.events.category[i]), b.str(b.events.category[i])) << "event " << i;
    ASSERT_EQ(a.events.kind[i], b.events.kind[i]) << "event " << i;
    ASSERT_EQ(a.events.phase[i], b.events.phase[i]) << "event " << i;
    ASSERT_EQ(track(a, a.events.pid(i)), track(b, b.events.pid(i))) << "event " << i;
    ASSERT_EQ(track(a, a.events.tid(i)), track(b, b.events.tid(i))) << "event " << i;
    ASSERT_EQ(a.events.correlation[i], b.events.correlation[i]) << "event " << i;
    ASSERT_EQ(a.events.external_id[i], b.events.external_id[i]) << "event " << i;
    ASSERT_EQ(a.events.stream[i], b.events.stream[i]) << "event " << i;
    ASSERT_EQ(a.events.device[i], b.events.device[i]) << "event " << i;
    ASSERT_EQ(a.bytes_of(i), b.bytes_of(i)) << "event " << i;
    ASSERT_EQ(a.kernel_args_of(i) != nullptr, b.kernel_args_of(i) != nullptr) << "event " << i;
  }
  EXPECT_EQ(a.devices.size(), b.devices.size());
  EXPECT_EQ(a.distributed.rank, b.distributed.rank);
  EXPECT_EQ(a.counters.size(), b.counters.size());
  EXPECT_EQ(a.host_tracks.size(), b.host_tracks.size());
  EXPECT_EQ(a.gpu_tracks.size(), b.gpu_tracks.size());
  EXPECT_EQ(a.thread_names, b.thread_names);
  auto flows = [](const RankTrace& t) {
    std::map<std::string, std::uint64_t> m;
    for (auto [cat, n] : t.launch_flow_counts) m[std::string(t.str(cat))] = n;
    return m;
  };
  EXPECT_EQ(flows(a), flows(b));
}

}  // namespace stepscope
