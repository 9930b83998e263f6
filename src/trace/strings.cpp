#include <cstring>

#include "stepscope/trace.hpp"

namespace stepscope {

namespace {
constexpr std::size_t kBlockSize = 1 << 16;
}

StringTable::StringTable() { intern(""); }

// Strings are copied into large blocks that never move, so views handed out stay valid.
StrId StringTable::intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
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
  return id;
}

std::optional<StrId> StringTable::find(std::string_view s) const {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  return std::nullopt;
}

}  // namespace stepscope
