#include <algorithm>

#include "stepscope/trace.hpp"

namespace stepscope {

void CorrelationIndex::build(const std::vector<Entry>& launches, const std::vector<Entry>& gpu) {
  *this = CorrelationIndex{};
  slots_.build([&](auto&& f) {
    for (const auto* list : {&launches, &gpu})
      for (const auto& [id, _] : *list)
        if (id != kNone) f(id);
  }, std::max(launches.size(), gpu.size()));  // most ids have a launch and a record
  const std::size_t slots = slots_.size();
  if (slots == 0) return;
  launch_.assign(slots, kNoEvent);
  for (const auto& [id, event] : launches) {
    if (id == kNone) continue;
    std::uint32_t& cell = launch_[slot(id)];
    if (cell == kNoEvent) cell = event, ++launches_;
  }
  gpu_.build(slots, [&](auto&& f) {
    for (const auto& [id, event] : gpu)
      if (id != kNone) f(slot(id), event);
  });
}

}  // namespace stepscope
