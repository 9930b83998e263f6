// Feeds arbitrary bytes to the trace reader: it must return a model or throw InputError, never
// crash, hang or read out of bounds. Each input is read twice, by the fast event path and by
// simdjson alone (STEPSCOPE_EVENT_PATH=simdjson): both must refuse it with the same message or
// read the same events, else the input is kept as a crasher.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"

namespace {

// What a reading gave: the refusal's message, or a text of every event's fields.
std::string reading(std::string_view bytes, const char* path) {
  setenv("STEPSCOPE_EVENT_PATH", path, 1);
  stepscope::IngestOptions opts;
  opts.jobs = 1;
  try {
    const stepscope::RankTrace t = stepscope::read_kineto_buffer(bytes, "fuzz", opts);
    (void)t.first_ts();
    std::string out;
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      out += std::to_string(t.events.ts[i]) + ' ' + std::to_string(t.events.dur[i]) + ' ';
      out += std::string(t.name_of(i)) + ' ' + std::to_string(static_cast<int>(t.events.kind[i])) + ' ';
      out += std::to_string(t.events.correlation[i]) + ' ' + std::to_string(t.events.stream[i]) + '\n';
    }
    return out + std::to_string(t.counters.size());
  } catch (const stepscope::InputError& e) {
    return std::string("refused: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (reading(bytes, "fast") != reading(bytes, "simdjson")) __builtin_trap();
  return 0;
}
