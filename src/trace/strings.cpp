#include <cstring>

#include "stepscope/trace.hpp"

namespace stepscope {

namespace {
constexpr std::size_t kBlockSize = 1 << 16;
constexpr StrId kNoRecent = UINT32_MAX;

std::uint64_t load8(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// A hash of the length and three 8-byte words (start, middle, end): enough to spread the
// distinct names of a trace over the slots; a collision only costs the full lookup.
std::size_t recent_slot(std::string_view s, std::size_t slots) {
  std::uint64_t h = s.size() * 0x9E3779B97F4A7C15ull;
  if (s.size() >= 8) {
    h ^= load8(s.data()) * 0xC2B2AE3D27D4EB4Full;
    h ^= load8(s.data() + (s.size() - 8) / 2) * 0x165667B19E3779F9ull;
    h ^= load8(s.data() + s.size() - 8) * 0x27D4EB2F165667C5ull;
  } else {
    for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  }
  return static_cast<std::size_t>((h ^ (h >> 32)) * 0x9E3779B97F4A7C15ull >> 56) & (slots - 1);
}
}  // namespace

StringTable::StringTable() {
  recent_.fill(kNoRecent);
  intern("");
}

// Strings are copied into large blocks that never move, so views handed out stay valid.
StrId StringTable::intern(std::string_view s) {
  StrId& recent = recent_[recent_slot(s, kRecent)];
  if (recent != kNoRecent && views_[recent] == s) return recent;
  if (auto it = index_.find(s); it != index_.end()) return recent = it->second;
  if (blocks_.empty() || s.size() > block_cap_ - block_used_) {
    std::size_t cap = std::max(kBlockSize, s.size());
    blocks_.push_back(std::make_unique<char[]>(cap));
    block_cap_ = cap;
    block_used_ = 0;
  }
  char* dst = blocks_.back().get() + block_used_;
  if (!s.empty()) std::memcpy(dst, s.data(), s.size());
  block_used_ += s.size();
  std::string_view stored(dst, s.size());
  auto id = static_cast<StrId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return recent = id;
}

std::optional<StrId> StringTable::find(std::string_view s) const {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  return std::nullopt;
}

}  // namespace stepscope
