#include <algorithm>

#include "stepscope/trace.hpp"

namespace stepscope {

template <class EachLaunch, class EachGpu>
void CorrelationIndex::build_from(EachLaunch&& each_launch, EachGpu&& each_gpu, std::size_t distinct) {
  *this = CorrelationIndex{};
  slots_.build([&](auto&& f) {
    auto id_of = [&](std::int64_t id, std::uint32_t) {
      if (id != kNone) f(id);
    };
    each_launch(id_of);
    each_gpu(id_of);
  }, distinct);
  const std::size_t slots = slots_.size();
  if (slots == 0) return;
  launch_.assign(slots, kNoEvent);
  each_launch([&](std::int64_t id, std::uint32_t event) {
    if (id == kNone) return;
    std::uint32_t& cell = launch_[slot(id)];
    if (cell == kNoEvent) cell = event, ++launches_;
  });
  gpu_.build(slots, [&](auto&& f) {
    each_gpu([&](std::int64_t id, std::uint32_t event) {
      if (id != kNone) f(slot(id), event);
    });
  });
}

void CorrelationIndex::build(const std::vector<Entry>& launches, const std::vector<Entry>& gpu) {
  auto each_of = [](const std::vector<Entry>& list) {
    return [&list](auto&& f) {
      for (const auto& [id, event] : list) f(id, event);
    };
  };
  // Most ids have a launch and a record.
  build_from(each_of(launches), each_of(gpu), std::max(launches.size(), gpu.size()));
}

void CorrelationIndex::build(const EventTable& events, const std::vector<std::uint32_t>& launches,
                             const std::vector<std::uint32_t>& gpu) {
  auto each_of = [&events](const std::vector<std::uint32_t>& list) {
    return [&events, &list](auto&& f) {
      for (const std::uint32_t event : list) f(events.correlation[event], event);
    };
  };
  build_from(each_of(launches), each_of(gpu), std::max(launches.size(), gpu.size()));
}

}  // namespace stepscope
