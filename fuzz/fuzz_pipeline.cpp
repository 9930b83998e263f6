// Feeds arbitrary bytes, as a Kineto trace file, through everything `stepscope analyze` does with
// every output asked for: a refusal must be an InputError, never a crash, hang or bad access.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "exercise.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  stepscope::fuzzing::exercise_bytes(std::string_view(reinterpret_cast<const char*>(data), size),
                                     stepscope::fuzzing::InputKind::kineto);
  return 0;
}
