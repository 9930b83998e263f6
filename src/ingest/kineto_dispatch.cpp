// Which build of the event parser runs: the CPU's features, read once.
#include <cstdlib>
#include <string_view>

#include "ingest/kineto_events.hpp"

namespace stepscope::ingest {

// The key function: the vtable is emitted here, in a baseline file, and nowhere else.
EventParser::~EventParser() = default;

namespace {

#if defined(STEPSCOPE_HASWELL_PARSER) && (defined(__x86_64__) || defined(_M_X64))
// LZCNT, which GCC names "abm"; clang 14 has no name for it, and every CPU with AVX2 and BMI2
// has it, so clang builds (the sanitizer and fuzz builds) go without that one test.
bool cpu_has_lzcnt() {
#if defined(__clang__)
  return true;
#else
  return __builtin_cpu_supports("abm");
#endif
}
#endif

// simdjson's haswell kernel is compiled for AVX2, BMI1/2, PCLMUL, LZCNT and POPCNT.
bool cpu_runs_haswell() {
#if defined(STEPSCOPE_HASWELL_PARSER) && (defined(__x86_64__) || defined(_M_X64))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("popcnt") && cpu_has_lzcnt();
#else
  return false;
#endif
}

bool choose_haswell() {
  const char* forced = std::getenv("STEPSCOPE_PARSER_KERNEL");
  if (forced && std::string_view(forced) == "baseline") return false;
  return cpu_runs_haswell();
}

bool use_haswell() {
  static const bool chosen = choose_haswell();
  return chosen;
}

// STEPSCOPE_EVENT_PATH=simdjson reads every event through simdjson, to compare the two paths on
// one machine (or to step around a fast-path fault without a rebuild).
EventPath chosen_path(EventPath asked) {
  const char* forced = std::getenv("STEPSCOPE_EVENT_PATH");
  return forced && std::string_view(forced) == "simdjson" ? EventPath::Simdjson : asked;
}

}  // namespace

std::unique_ptr<EventParser> make_event_parser(EventPath asked) {
  const EventPath path = chosen_path(asked);
#ifdef STEPSCOPE_HASWELL_PARSER
  if (use_haswell()) return kernel_haswell::make_parser(path);
#endif
  return kernel_baseline::make_parser(path);
}

const char* event_parser_kernel() { return use_haswell() ? "haswell" : "baseline"; }

}  // namespace stepscope::ingest
