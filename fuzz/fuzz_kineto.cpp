// Feeds arbitrary bytes to the trace reader: it must return a model or throw InputError, never
// crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  stepscope::IngestOptions opts;
  opts.jobs = 1;
  try {
    auto t = stepscope::read_kineto_buffer(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", opts);
    (void)t.first_ts();
  } catch (const stepscope::InputError&) {
  }
  return 0;
}
