// The flat tables of the trace model and the analyses (the correlation index, IdMap, the track
// keys) against the standard containers over the same entries.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <type_traits>
#include <utility>

#include "stepscope/correlation_table.hpp"
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
  for (std::int64_t spread : {std::int64_t{1}, std::int64_t{10}, std::int64_t{1000}, std::int64_t{1} << 40}) {
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
    } else if (spread == 10) {
      expect_same(ix, e, -60, 4010);  // a range with holes: the bitmap layout
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

// A table over the index's slots answers as a map would, for ids the index numbers (dense and
// sparse layouts) and for ids it does not (-1, ids of no launch or GPU record, INT64_MIN); a
// cell set back to the absent value reads as no entry.
TEST(CorrelationTable, MatchesAMapOnIndexedAndOtherIds) {
  std::mt19937_64 rng(5);
  for (std::int64_t spread : {std::int64_t{1}, std::int64_t{1} << 40}) {
    std::vector<Entry> launches, gpu;
    for (std::uint32_t k = 0; k < 200; ++k) (k % 2 ? launches : gpu).emplace_back(static_cast<std::int64_t>(k) * spread, k);
    CorrelationIndex ix;
    ix.build(launches, gpu);
    CorrelationTable<std::int32_t> t(ix, -1);
    std::map<std::int64_t, std::int32_t> ref;
    for (int k = 0; k < 3000; ++k) {
      std::int64_t id = static_cast<std::int64_t>(rng() % 260) * spread;  // past 199: not indexed
      if (k % 101 == 0) id = kNone;
      if (k % 211 == 0) id = INT64_MIN;
      const auto v = static_cast<std::int32_t>(rng() % 50) - 1;  // -1 now and then: cleared
      t[id] = v;
      ref[id] = v;
    }
    for (std::int64_t slot = -2; slot < 262; ++slot) {
      for (std::int64_t id : {slot * spread, INT64_MIN}) {
        auto r = ref.find(id);
        const bool present = r != ref.end() && r->second != -1;
        ASSERT_EQ(t.contains(id), present) << id;
        if (present) EXPECT_EQ(*t.find(id), r->second) << id;
      }
    }
  }
  CorrelationIndex empty;
  CorrelationTable<char> none(empty, 0);
  EXPECT_FALSE(none.contains(3));
  none[3] = 1;
  EXPECT_TRUE(none.contains(3));
}

// Slots number the distinct ids 0, 1, ... in id order when the range is a bitmap (ids within a
// few times their count of each other), in first-seen order otherwise; other ids have none.
TEST(IdSlots, NumberDistinctIdsInBothLayouts) {
  IdSlots dense;
  const std::vector<std::int64_t> few = {7, 9, 7, 70, 200};
  dense.build([&](auto&& f) { for (auto id : few) f(id); }, few.size());
  EXPECT_EQ(dense.size(), 4u);
  EXPECT_EQ(dense.slot(7), 0u);
  EXPECT_EQ(dense.slot(9), 1u);
  EXPECT_EQ(dense.slot(70), 2u);
  EXPECT_EQ(dense.slot(200), 3u);
  for (std::int64_t id : {6, 8, 69, 71, 201, -1}) EXPECT_EQ(dense.slot(id), IdSlots::kNoSlot) << id;
  std::mt19937_64 rng(9);
  for (std::int64_t spread : {std::int64_t{3}, std::int64_t{1} << 50}) {
    std::vector<std::int64_t> ids;
    for (int k = 0; k < 5000; ++k) ids.push_back(static_cast<std::int64_t>(rng() % 2000) * spread - 64);
    IdSlots s;
    s.build([&](auto&& f) { for (auto id : ids) f(id); }, ids.size());
    std::map<std::int64_t, std::size_t> seen;  // id -> slot, each distinct id once
    for (auto id : ids) {
      ASSERT_NE(s.slot(id), IdSlots::kNoSlot) << id;
      seen.emplace(id, s.slot(id));
    }
    EXPECT_EQ(s.size(), seen.size());
    std::vector<char> used(seen.size(), 0);
    for (const auto& [id, slot] : seen) {
      ASSERT_LT(slot, seen.size());
      EXPECT_FALSE(used[slot]) << "slot " << slot << " given twice";
      used[slot] = 1;
      EXPECT_EQ(s.slot(id + 1) == IdSlots::kNoSlot, seen.count(id + 1) == 0) << id + 1;
    }
  }
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

namespace stepscope {
namespace {

// A narrow column against a plain vector under the same pushes, rewrites and appends: values at
// and past the narrow type's limits, in any order, read back exactly. For each pair of types the
// table uses; an unsigned column's marker is its highest value, so that 0 stays narrow.
template <class Pair>
class NarrowColumnTyped : public ::testing::Test {};
using NarrowPairs = ::testing::Types<std::pair<std::int64_t, std::int32_t>, std::pair<std::int64_t, std::int16_t>,
                                     std::pair<std::int32_t, std::int8_t>, std::pair<std::uint32_t, std::uint16_t>>;
TYPED_TEST_SUITE(NarrowColumnTyped, NarrowPairs);

TYPED_TEST(NarrowColumnTyped, ReadsBackEveryValueAsAPlainVectorWould) {
  using Wide = typename TypeParam::first_type;
  using Narrow = typename TypeParam::second_type;
  using Column = NarrowColumn<Wide, Narrow>;
  const Wide lo = std::numeric_limits<Narrow>::min(), hi = std::numeric_limits<Narrow>::max();
  std::vector<Wide> edge_values = {0, lo, static_cast<Wide>(lo + 1), hi, static_cast<Wide>(hi - 1),
                                   static_cast<Wide>(hi + 1), std::numeric_limits<Wide>::max(),
                                   std::numeric_limits<Wide>::min()};
  if (std::is_signed_v<Wide>) edge_values.insert(edge_values.end(), {Wide(-1), static_cast<Wide>(lo - 1)});
  std::mt19937_64 rng(7);
  auto any_value = [&] {
    return rng() % 3 == 0 ? edge_values[rng() % edge_values.size()] : static_cast<Wide>(rng() % 100);
  };
  auto push_both = [&](Column& c, std::vector<Wide>& p, int n) {
    for (int k = 0; k < n; ++k) {
      const Wide v = any_value();
      c.push_back(v);
      p.push_back(v);
    }
  };
  Column col;
  std::vector<Wide> plain;
  push_both(col, plain, 2000);
  for (int k = 0; k < 2000; ++k) {
    const std::size_t i = rng() % plain.size();
    const Wide v = any_value();
    col.set(i, v);
    plain[i] = v;
  }
  Column tail;
  std::vector<Wide> plain_tail;
  push_both(tail, plain_tail, 300);
  col.append(tail);
  plain.insert(plain.end(), plain_tail.begin(), plain_tail.end());
  ASSERT_EQ(col.size(), plain.size());
  std::size_t wide = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(col[i], plain[i]) << i;
    wide += !std::in_range<Narrow>(plain[i]) || static_cast<Narrow>(plain[i]) == Column::kWide;
  }
  EXPECT_EQ(col.wide_count(), wide);  // a cell rewritten narrow leaves no stale side entry
  EXPECT_NE(Column::kWide, Narrow{0});
}

// A dictionary column against a plain vector: more distinct values than a byte numbers (those
// past 255 kept aside), rewrites, an appended column whose dictionary is in another order, and a
// renaming of every value through the dictionary.
TEST(DictColumn, ReadsBackEveryValueAsAPlainVectorWould) {
  using Column = DictColumn<StrId, std::uint8_t>;
  std::mt19937_64 rng(11);
  auto any_value = [&] { return static_cast<StrId>(rng() % 7 == 0 ? 1000 + rng() % 300 : rng() % 5); };
  Column col, tail;
  std::vector<StrId> plain, plain_tail;
  for (int k = 0; k < 3000; ++k) {
    const StrId v = any_value();
    col.push_back(v);
    plain.push_back(v);
  }
  for (int k = 0; k < 1000; ++k) {
    const std::size_t i = rng() % plain.size();
    const StrId v = any_value();
    col.set(i, v);
    plain[i] = v;
  }
  for (int k = 0; k < 500; ++k) {
    const StrId v = any_value();
    tail.push_back(v);
    plain_tail.push_back(v);
  }
  col.append(tail);
  plain.insert(plain.end(), plain_tail.begin(), plain_tail.end());
  auto rename = [](StrId v) { return static_cast<StrId>(v * 3 + 1); };
  col.rewrite(rename);
  for (StrId& v : plain) v = rename(v);
  ASSERT_EQ(col.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(col[i], plain[i]) << i;
  col.push_back(rename(2));  // a renamed value is found again, not numbered anew
  EXPECT_EQ(col[col.size() - 1], rename(2));
  EXPECT_LT(col.bytes_used(), col.size() * 2 + 310 * sizeof(StrId) + 64 * 16);
}

// The worked example of SparseColumn's comment.
TEST(SparseColumn, StoresOnlyTheRowsThatHaveAValue) {
  SparseColumn col;
  for (std::int32_t v : {-1, 7, -1, 9}) col.push_back(v);
  EXPECT_EQ(col[0], -1);
  EXPECT_EQ(col[1], 7);
  EXPECT_EQ(col[2], -1);
  EXPECT_EQ(col[3], 9);
  col.set(2, 5);
  EXPECT_EQ(col[2], 5);
  EXPECT_EQ(col[3], 9);
  EXPECT_EQ(col.bytes_used(), sizeof(std::uint64_t) + sizeof(std::uint32_t) + 3 * sizeof(std::int32_t));
}

// A sparse column against a plain vector: rows with and without values across many 64-row
// words, values gained, changed and lost in place, and an appended column that does not start
// on a word boundary.
TEST(SparseColumn, ReadsBackEveryValueAsAPlainVectorWould) {
  std::mt19937_64 rng(13);
  auto any_value = [&] { return rng() % 5 == 0 ? static_cast<std::int32_t>(rng() % 100000) : SparseColumn::kAbsent; };
  auto push_both = [&](SparseColumn& c, std::vector<std::int32_t>& p, int n) {
    for (int k = 0; k < n; ++k) {
      const std::int32_t v = any_value();
      c.push_back(v);
      p.push_back(v);
    }
  };
  SparseColumn col, tail;
  std::vector<std::int32_t> plain, plain_tail;
  push_both(col, plain, 1001);
  for (int k = 0; k < 1500; ++k) {
    const std::size_t i = rng() % plain.size();
    const std::int32_t v = rng() % 2 ? SparseColumn::kAbsent : static_cast<std::int32_t>(rng() % 100000);
    col.set(i, v);
    plain[i] = v;
  }
  push_both(tail, plain_tail, 333);
  col.append(tail);
  plain.insert(plain.end(), plain_tail.begin(), plain_tail.end());
  ASSERT_EQ(col.size(), plain.size());
  std::size_t present = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(col[i], plain[i]) << i;
    present += plain[i] != SparseColumn::kAbsent;
  }
  const std::size_t words = (plain.size() + 63) / 64;
  EXPECT_EQ(col.bytes_used(), words * (sizeof(std::uint64_t) + sizeof(std::uint32_t)) + present * sizeof(std::int32_t));
}

bool same_record(const EventExtra& a, const EventExtra& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Each shape of record reads back whole, across an append into a store that already holds
// records of every shape, and a renumbering of strings reaches the fields that hold them.
TEST(ExtraStore, RecordsReadBackWholeInEveryShapeAcrossAppends) {
  EventExtra op, copy, memory, op_and_copy;
  op.sequence_number = 5, op.fwd_thread_id = 2, op.input_dims = 7, op.input_type = 8;
  copy.bytes = 1 << 20, copy.bandwidth_gbps = 12.5;
  memory.bytes = 64, memory.total_allocated = 1 << 30, memory.device_id = 0, memory.alt_name = 9;
  op_and_copy.sequence_number = 3, op_and_copy.bytes = 4;  // fits neither narrow shape
  ExtraStore first, part;
  std::vector<std::int32_t> first_refs, part_refs;
  for (const EventExtra& x : {op, copy, memory, op_and_copy}) first_refs.push_back(first.add(x));
  for (const EventExtra& x : {op_and_copy, memory, copy, op}) part_refs.push_back(part.add(x));
  EXPECT_EQ(first.bytes_used(), 24u + 16u + 2 * sizeof(EventExtra));
  part.rewrite_strings([](StrId s) { return s == kNoStr ? s : s + 100; });
  const ExtraStore::Bases bases = first.append(part);
  const std::vector<EventExtra> want = {op, copy, memory, op_and_copy};
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(same_record(first.get(first_refs[k]), want[k])) << k;
  EventExtra op_renamed = op, memory_renamed = memory;
  op_renamed.input_dims += 100, op_renamed.input_type += 100, memory_renamed.alt_name += 100;
  const std::vector<EventExtra> want_part = {op_and_copy, memory_renamed, copy, op_renamed};
  for (std::size_t k = 0; k < want_part.size(); ++k)
    EXPECT_TRUE(same_record(first.get(ExtraStore::rebase(part_refs[k], bases)), want_part[k])) << k;
  EXPECT_EQ(first.size(), 8u);
}

// The table's narrow columns keep what an importer hands them, past 32 bits included.
TEST(NarrowColumn, EventTableKeepsWideIdsAndLongDurations) {
  EventTable t;
  EventRow r;
  r.dur = std::int64_t{5} << 32;  // a 21 s step
  r.correlation = std::int64_t{1} << 35;
  r.external_id = -7;
  r.stream = 4294967295;
  r.device = 70000;
  t.append(r);
  EXPECT_EQ(t.dur[0], std::int64_t{5} << 32);
  EXPECT_EQ(t.correlation[0], std::int64_t{1} << 35);
  EXPECT_EQ(t.external_id[0], -7);
  EXPECT_EQ(t.stream[0], 4294967295);
  EXPECT_EQ(t.device[0], 70000);
  EXPECT_EQ(t.end(0), (std::int64_t{5} << 32));
}

}  // namespace
}  // namespace stepscope
