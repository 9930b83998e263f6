// Feeds arbitrary bytes, as an Nsight Systems SQLite export, through everything `stepscope
// analyze` does with every output asked for: a damaged database must be refused with an
// InputError, never crash the reader or reach the analysis half-read.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "exercise.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  stepscope::fuzzing::exercise_bytes(std::string_view(reinterpret_cast<const char*>(data), size),
                                     stepscope::fuzzing::InputKind::nsys);
  return 0;
}
