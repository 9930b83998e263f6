// Feeds arbitrary bytes to the memory snapshot reader and its analysis: they must return a
// result or throw InputError, never crash, hang, read out of bounds or allocate beyond the
// bytes given. The analysis and every report of it run on whatever the reader accepts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stepscope/error.hpp"
#include "stepscope/memory/analysis.hpp"
#include "stepscope/memory/snapshot.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    stepscope::memory::Snapshot s =
        stepscope::memory::read_snapshot(std::string(reinterpret_cast<const char*>(data), size), "fuzz.pickle");
    const stepscope::memory::SnapshotAnalysis a = stepscope::memory::analyze_snapshot(s);
    (void)stepscope::memory::render_text(a);
    (void)stepscope::memory::to_json(a).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    (void)stepscope::memory::render_html_section(a);
  } catch (const stepscope::InputError&) {
  }
  return 0;
}
