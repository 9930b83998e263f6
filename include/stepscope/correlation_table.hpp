// A value per correlation id, kept in a flat array over the rank's correlation slots
// (CorrelationIndex::slot): one cell per id, where a hash table of its own per analysis takes
// two to four 12-byte cells per id, and a lookup without hashing when the ids are dense (a
// profiler numbers correlations with a counter). Ids the index does not number (ones carried only
// by rows that are neither launches nor GPU records, or -1) go to a small map beside it.
//   CorrelationTable<std::int32_t> t(rank.correlations, -1);
//   t[42] = 7;  t.find(42) -> pointer to 7;  t.find(43) -> nullptr (reads -1, the absent value)
#pragma once

#include <cstdint>
#include <vector>

#include "stepscope/id_map.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {

template <class V>
class CorrelationTable {
 public:
  // Every id reads `absent` until set; find() treats a cell holding `absent` as no entry.
  CorrelationTable(const CorrelationIndex& index, V absent)
      : index_(index), cells_(index.slot_count(), absent), absent_(absent) {}

  // The cell of `id`, `absent` until set. The reference stays valid until the next id the index
  // does not number is inserted.
  V& operator[](std::int64_t id) {
    const std::size_t s = index_.slot(id);
    if (s != CorrelationIndex::kNoSlot) return cells_[s];
    other_.emplace(id, absent_);
    return *other_.find(id);
  }
  // The value of `id`, or nullptr while it reads `absent`.
  const V* find(std::int64_t id) const {
    const std::size_t s = index_.slot(id);
    const V* v = s != CorrelationIndex::kNoSlot ? &cells_[s] : other_.find(id);
    return v && *v != absent_ ? v : nullptr;
  }
  bool contains(std::int64_t id) const { return find(id) != nullptr; }

 private:
  const CorrelationIndex& index_;
  std::vector<V> cells_;
  IdMap<V> other_;
  V absent_;
};

}  // namespace stepscope
