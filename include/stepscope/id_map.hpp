// A hash map from 64-bit ids (correlation ids, event indexes) to small values, for the analyses'
// per-id tables. Open addressing with linear probing in two flat arrays: no allocation per entry,
// where std::unordered_map makes one per id (a trace has hundreds of thousands of correlations).
//   IdMap<int> m;  ++m[42];  ++m[42];  m.find(42) -> pointer to 2;  m.find(7) -> nullptr
// Iteration order is unspecified; the users only look ids up.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace stepscope {

template <class V>
class IdMap {
 public:
  IdMap() = default;
  explicit IdMap(std::size_t expected) { reserve(expected); }

  // The value of `id`, inserted as V{} when absent. The reference stays valid until the next
  // insertion.
  V& operator[](std::int64_t id) {
    if (id == kEmpty) {
      has_empty_key_ = true;
      return empty_key_value_;
    }
    if (2 * (size_ + 1) > keys_.size()) grow();
    std::size_t s = probe(id);
    if (keys_[s] == kEmpty) keys_[s] = id, ++size_;
    return values_[s];
  }
  // Inserts (id, v) unless id is present; true when it inserted.
  bool emplace(std::int64_t id, V v) {
    if (contains(id)) return false;
    (*this)[id] = std::move(v);
    return true;
  }
  const V* find(std::int64_t id) const {
    if (id == kEmpty) return has_empty_key_ ? &empty_key_value_ : nullptr;
    if (keys_.empty()) return nullptr;
    std::size_t s = probe(id);
    return keys_[s] == kEmpty ? nullptr : &values_[s];
  }
  V* find(std::int64_t id) { return const_cast<V*>(std::as_const(*this).find(id)); }
  bool contains(std::int64_t id) const { return find(id) != nullptr; }
  std::size_t size() const { return size_ + (has_empty_key_ ? 1 : 0); }
  bool empty() const { return size() == 0; }

  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (cap > keys_.size()) rehash(cap);
  }

 private:
  // The slot marker of an empty cell; that id itself is kept aside.
  static constexpr std::int64_t kEmpty = INT64_MIN;

  // Fibonacci hashing: consecutive ids (the common case) land far apart.
  std::size_t home(std::int64_t id) const {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  // The slot holding `id`, or the empty slot where it would go.
  std::size_t probe(std::int64_t id) const {
    const std::size_t mask = keys_.size() - 1;
    std::size_t s = home(id);
    while (keys_[s] != kEmpty && keys_[s] != id) s = (s + 1) & mask;
    return s;
  }
  void grow() { rehash(keys_.empty() ? 16 : 2 * keys_.size()); }
  void rehash(std::size_t cap) {
    std::vector<std::int64_t> old_keys(cap, kEmpty);
    std::vector<V> old_values(cap);
    old_keys.swap(keys_);
    old_values.swap(values_);
    shift_ = 64;
    for (std::size_t c = cap; c > 1; c /= 2) --shift_;
    for (std::size_t k = 0; k < old_keys.size(); ++k) {
      if (old_keys[k] == kEmpty) continue;
      std::size_t s = probe(old_keys[k]);
      keys_[s] = old_keys[k];
      values_[s] = std::move(old_values[k]);
    }
  }

  std::vector<std::int64_t> keys_;
  std::vector<V> values_;
  std::size_t size_ = 0;
  int shift_ = 64;
  bool has_empty_key_ = false;
  V empty_key_value_{};
};

// A bitmap that counts: rank(k), the set bits below bit k, is a running count per 64-bit word
// plus one popcount. At a quarter of a byte per bit it numbers the members of a set laid out
// over a range (IdSlots) or the rows of a column that have a value (SparseColumn).
//   push_back(0); push_back(1); push_back(0); push_back(1)  ->  rank(3) == 1, count() == 2
class RankBitmap {
 public:
  bool test(std::uint64_t k) const { return (bits_[k >> 6] >> (k & 63)) & 1; }
  std::size_t rank(std::uint64_t k) const {
    const std::uint64_t below = (std::uint64_t{1} << (k & 63)) - 1;
    return before_[k >> 6] + static_cast<std::size_t>(std::popcount(bits_[k >> 6] & below));
  }
  std::size_t count() const { return count_; }
  std::uint64_t size() const { return size_; }
  // Bits appended one at a time, the counts kept as they go.
  void push_back(bool b) {
    if ((size_ & 63) == 0) {
      bits_.push_back(0);
      before_.push_back(static_cast<std::uint32_t>(count_));
    }
    if (b) bits_.back() |= std::uint64_t{1} << (size_ & 63), ++count_;
    ++size_;
  }
  // Bit k set to b; the counts of the words after it move.
  void set(std::uint64_t k, bool b) {
    if (test(k) == b) return;
    bits_[k >> 6] ^= std::uint64_t{1} << (k & 63);
    for (std::size_t w = (k >> 6) + 1; w < before_.size(); ++w) before_[w] = b ? before_[w] + 1 : before_[w] - 1;
    count_ = b ? count_ + 1 : count_ - 1;
  }
  // `n` bits, those `mark_each(f)` calls f(k) for set (repeats allowed), counted once at the end.
  template <class MarkEach>
  void build(std::uint64_t n, MarkEach&& mark_each) {
    size_ = n;
    bits_.assign(static_cast<std::size_t>((n + 63) / 64), 0);
    mark_each([&](std::uint64_t k) { bits_[k >> 6] |= std::uint64_t{1} << (k & 63); });
    before_.resize(bits_.size());
    count_ = 0;
    for (std::size_t w = 0; w < bits_.size(); ++w) {
      before_[w] = static_cast<std::uint32_t>(count_);
      count_ += static_cast<std::size_t>(std::popcount(bits_[w]));
    }
  }
  void reserve(std::uint64_t n) {
    bits_.reserve(static_cast<std::size_t>((n + 63) / 64));
    before_.reserve(static_cast<std::size_t>((n + 63) / 64));
  }
  std::uint64_t capacity() const { return bits_.capacity() * 64; }
  std::size_t bytes_used() const { return bits_.size() * sizeof(std::uint64_t) + before_.size() * sizeof(std::uint32_t); }

 private:
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint32_t> before_;  // per word: the set bits below it
  std::uint64_t size_ = 0;
  std::size_t count_ = 0;
};

// Ids numbered by dense slots (0, 1, ... one per distinct id), for per-id tables kept as flat
// arrays. Profilers number correlations with a counter, so a rank's ids usually lie in a range a
// few times their count (ids the trace does not keep, or other kinds of events, take the rest):
// the range is then a bitmap with a running count per 64-bit word, and an id's slot is the
// number of ids below it, at a quarter of a byte per id of the range. A sparse id set (ids far
// apart: traces joined from several runs) is numbered in first-seen order through an IdMap.
//   build over 7, 9, 7  ->  dense: slot(7) == 0, slot(9) == 1, slot(8) == slot(3) == kNoSlot
class IdSlots {
 public:
  static constexpr std::size_t kNoSlot = SIZE_MAX;

  // `for_each_id(f)` calls f(id) for every id, repeats allowed, the same way on each call;
  // `distinct` guesses how many different ids there are (it sizes the sparse table).
  template <class ForEachId>
  void build(ForEachId&& for_each_id, std::size_t distinct) {
    *this = IdSlots{};
    std::int64_t lo = 0, hi = 0;
    std::size_t count = 0;
    for_each_id([&](std::int64_t id) {
      lo = count ? std::min(lo, id) : id;
      hi = count ? std::max(hi, id) : id;
      ++count;
    });
    if (count == 0) return;
    // hi - lo as an unsigned count is exact for any two int64 values (one more may not be).
    const std::uint64_t gap = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    dense_ = gap < kDenseSpread * count + kDenseFloor;
    lowest_ = lo;
    if (dense_) {
      build_bitmap(for_each_id, gap + 1);
      return;
    }
    sparse_.reserve(distinct);
    for_each_id([&](std::int64_t id) {
      if (sparse_.emplace(id, static_cast<std::uint32_t>(slots_))) ++slots_;
    });
  }
  std::size_t slot(std::int64_t id) const {
    if (dense_) {
      const std::uint64_t k = static_cast<std::uint64_t>(id) - static_cast<std::uint64_t>(lowest_);
      if (id < lowest_ || k >= given_.size() || !given_.test(k)) return kNoSlot;
      return given_.rank(k);
    }
    const std::uint32_t* s = sparse_.find(id);
    return s ? *s : kNoSlot;
  }
  std::size_t size() const { return slots_; }

 private:
  template <class ForEachId>
  void build_bitmap(ForEachId&& for_each_id, std::uint64_t span) {
    given_.build(span, [&](auto&& mark) {
      for_each_id([&](std::int64_t id) { mark(static_cast<std::uint64_t>(id) - static_cast<std::uint64_t>(lowest_)); });
    });
    slots_ = given_.count();
  }

  // A range at most this many times the ids given (plus a floor for small traces) is a bitmap:
  // at 64 its quarter byte per id of the range costs at most 12 bytes an id, where the hash map
  // takes 24 to 48.
  static constexpr std::uint64_t kDenseSpread = 64;
  static constexpr std::uint64_t kDenseFloor = 4096;
  bool dense_ = true;
  std::int64_t lowest_ = 0;
  RankBitmap given_;  // dense: bit k says whether lowest_ + k was given
  std::size_t slots_ = 0;
  IdMap<std::uint32_t> sparse_;
};

// Values grouped by slot, each group in the order the values came: a counting sort into one
// flat array (no vector per slot).
//   build(3, f) where f gives (2, 10), (0, 11), (2, 12)  ->  of(2) == {10, 12}, of(0) == {11}, of(1) == {}
class SlotGroups {
 public:
  // `for_each(f)` calls f(slot, value) for every value, the same way on each call.
  template <class ForEach>
  void build(std::size_t slots, ForEach&& for_each) {
    start_.assign(slots + 1, 0);
    for_each([&](std::size_t slot, std::uint32_t) { ++start_[slot + 1]; });
    for (std::size_t k = 0; k < slots; ++k) start_[k + 1] += start_[k];
    values_.resize(start_[slots]);
    std::vector<std::uint32_t> next(start_.begin(), start_.end() - 1);
    for_each([&](std::size_t slot, std::uint32_t v) { values_[next[slot]++] = v; });
  }
  std::span<const std::uint32_t> of(std::size_t slot) const {
    return {values_.data() + start_[slot], values_.data() + start_[slot + 1]};
  }
  std::size_t size() const { return values_.size(); }

 private:
  std::vector<std::uint32_t> start_;  // per slot + 1: where its values start
  std::vector<std::uint32_t> values_;
};

}  // namespace stepscope
