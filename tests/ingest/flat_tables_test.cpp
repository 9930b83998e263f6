// The flat tables of the trace model and the analyses (the correlation index, IdMap, the track
// keys) against the standard containers over the same entries.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "stepscope/id_map.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {
namespace {

using Entry = CorrelationIndex::Entry;

// What the index must answer, computed the obvious way.
struct Expected {
  std::map<std::int64_t, std::uint32_t> launch;
  std::map<std::int64_t, std::vector<std::uint32_t>> gpu;
};

Expected expected_of(const std::vector<Entry>& launches, const std::vector<Entry>& gpu) {
  Expected e;
  for (auto [id, ev] : launches)
    if (id != kNone) e.launch.emplace(id, ev);  // the first call wins
  for (auto [id, ev] : gpu)
    if (id != kNone) e.gpu[id].push_back(ev);
  return e;
}

void expect_same(const CorrelationIndex& ix, const Expected& e, std::int64_t lo, std::int64_t hi) {
  for (std::int64_t id = lo; id <= hi; ++id) {
    auto l = e.launch.find(id);
    EXPECT_EQ(ix.launch(id), l == e.launch.end() ? CorrelationIndex::kNoEvent : l->second) << id;
    auto g = e.gpu.find(id);
    auto got = ix.gpu(id);
    EXPECT_EQ(std::vector<std::uint32_t>(got.begin(), got.end()),
              g == e.gpu.end() ? std::vector<std::uint32_t>{} : g->second)
        << id;
  }
}

TEST(CorrelationIndex, WorkedExample) {
  CorrelationIndex ix;
  ix.build({{42, 2}}, {{42, 1}, {43, 5}});
  EXPECT_EQ(ix.launch(42), 2u);
  EXPECT_EQ(ix.launch(43), CorrelationIndex::kNoEvent);
  ASSERT_EQ(ix.gpu(42).size(), 1u);
  EXPECT_EQ(ix.gpu(42)[0], 1u);
  EXPECT_EQ(ix.gpu(43)[0], 5u);
  EXPECT_TRUE(ix.gpu(7).empty());
  EXPECT_FALSE(ix.has_launch(kNone));
  EXPECT_EQ(ix.launch_count(), 1u);
  EXPECT_EQ(ix.gpu_count(), 2u);
}

TEST(CorrelationIndex, EmptyAndNoneOnly) {
  CorrelationIndex ix;
  EXPECT_EQ(ix.launch(0), CorrelationIndex::kNoEvent);
  ix.build({{kNone, 1}}, {{kNone, 2}});
  EXPECT_TRUE(ix.gpu(kNone).empty());
  EXPECT_EQ(ix.launch_count(), 0u);
}

// Dense counters (as CUPTI writes them), repeated ids, and ids spread over the whole int64 range
// (the sparse layout), each checked id by id against the multimap.
TEST(CorrelationIndex, MatchesAMultimapDenseAndSparse) {
  std::mt19937_64 rng(7);
  for (std::int64_t spread : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{1} << 40}) {
    std::vector<Entry> launches, gpu;
    std::vector<std::int64_t> ids;
    for (int k = 0; k < 300; ++k) ids.push_back(-50 + static_cast<std::int64_t>(rng() % 400) * spread);
    ids.push_back(kNone);
    std::uint32_t event = 0;
    for (auto id : ids) {
      launches.emplace_back(id, event++);
      for (std::uint64_t r = rng() % 3; r > 0; --r) gpu.emplace_back(id + static_cast<std::int64_t>(rng() % 2) * spread, event++);
    }
    CorrelationIndex ix;
    ix.build(launches, gpu);
    Expected e = expected_of(launches, gpu);
    if (spread == 1) {
      expect_same(ix, e, -60, 400);
    } else {
      for (const auto& [id, _] : e.gpu) expect_same(ix, e, id - 1, id + 1);
      for (const auto& [id, _] : e.launch) expect_same(ix, e, id, id);
    }
    EXPECT_EQ(ix.launch_count(), e.launch.size());
  }
  CorrelationIndex extremes;
  extremes.build({{INT64_MIN, 1}, {INT64_MAX, 2}}, {});
  EXPECT_EQ(extremes.launch(INT64_MIN), 1u);
  EXPECT_EQ(extremes.launch(INT64_MAX), 2u);
  EXPECT_EQ(extremes.launch(0), CorrelationIndex::kNoEvent);
}

// Random inserts, increments and lookups, with the empty-cell marker INT64_MIN among the ids and
// enough of them to grow the table several times.
TEST(IdMap, MatchesAnUnorderedMap) {
  std::mt19937_64 rng(11);
  IdMap<std::int64_t> m;
  std::map<std::int64_t, std::int64_t> ref;
  for (int k = 0; k < 20000; ++k) {
    std::int64_t id = k % 5 == 0 ? static_cast<std::int64_t>(rng()) : static_cast<std::int64_t>(rng() % 3000) - 100;
    if (k % 997 == 0) id = INT64_MIN;
    m[id] += k;
    ref[id] += k;
  }
  EXPECT_EQ(m.size(), ref.size());
  for (const auto& [id, v] : ref) {
    ASSERT_NE(m.find(id), nullptr) << id;
    EXPECT_EQ(*m.find(id), v) << id;
  }
  for (std::int64_t id = 3000; id < 4000; ++id) EXPECT_EQ(m.contains(id), ref.count(id) > 0) << id;
  EXPECT_FALSE(m.emplace(INT64_MIN, 5));
  EXPECT_TRUE(m.emplace(INT64_MAX - 1, 5) || ref.count(INT64_MAX - 1));
  IdMap<int> empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.find(0), nullptr);
  EXPECT_EQ(empty.find(INT64_MIN), nullptr);
}

// Rows keep an index into the table's (pid, tid) keys; appending a table maps its keys onto
// the receiving table's, and rewriting keys (a part's string ids changing tables) keeps lookups.
TEST(TrackKeys, RowsKeepTheirPidAndTid) {
  std::mt19937_64 rng(3);
  EventTable a, b;
  std::vector<TrackKey> expected;
  for (int k = 0; k < 3000; ++k) {
    EventRow r;
    r.pid = static_cast<std::int64_t>(rng() % 5) - 1;
    r.tid = k % 7 == 0 ? string_track_id(static_cast<StrId>(rng() % 3)) : static_cast<std::int64_t>(rng() % 40) << 40;
    (k < 1500 ? a : b).append(r);
    expected.push_back({r.pid, r.tid});
  }
  EXPECT_LE(a.keys.size(), 5u * 43u);
  b.keys.rewrite([](TrackKey key) { return TrackKey{key.pid + 100, key.tid}; });
  for (std::size_t k = 1500; k < expected.size(); ++k) expected[k].pid += 100;
  a.append(b);
  ASSERT_EQ(a.size(), expected.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.pid(i), expected[i].pid) << i;
    EXPECT_EQ(a.tid(i), expected[i].tid) << i;
  }
  EXPECT_EQ(a.keys.intern(expected[0].pid, expected[0].tid), a.track[0]);
}

}  // namespace
}  // namespace stepscope
