#include "gpus.hpp"

namespace stepscope::tracegen {
namespace {

// More specific names first: "V100-SXM2-16GB" before "V100".
constexpr GpuModel kGpus[] = {
    {"A100", 85051572224, 8, 0, 108, 32, 167936, 166912, 2048, 19.5, 312, 2039},
    {"H100", 85018279936, 9, 0, 132, 32, 233472, 232448, 2048, 67, 989.4, 3350},
    {"V100-SXM2-16GB", 16945512448, 7, 0, 80, 32, 98304, 98304, 2048, 15.7, 125, 900},
    {"V100", 34079637504, 7, 0, 80, 32, 98304, 98304, 2048, 15.7, 125, 900},
    {"Tesla T4", 15835398144, 7, 5, 40, 32, 65536, 65536, 1024, 8.1, 65, 320},
    {"MI300X", 206141652992, 9, 4, 304, 64, 65536, 65536, 2048, 163.4, 1307.4, 5300},
};

}  // namespace

const GpuModel& gpu_model(std::string_view name) {
  for (const auto& g : kGpus)
    if (name.find(g.match) != std::string_view::npos) return g;
  return kGpus[0];
}

}  // namespace stepscope::tracegen
