// Shared by the extension's translation units.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

namespace stepscope::python {

// Set from Python when the caller stops waiting (Ctrl-C): the readers look at it at each progress
// report, between runs of events, and stop there (`Cancelled`, raised in Python as
// KeyboardInterrupt) instead of reading and analysing a result nobody will read.
struct CancelToken {
  std::atomic<bool> cancelled{false};
};

struct Cancelled : std::exception {
  const char* what() const noexcept override { return "cancelled"; }
};

// The readers' progress callback that stops them once `token` is set (empty without a token).
inline std::function<void(std::uint64_t, std::uint64_t)> cancel_check(const std::shared_ptr<CancelToken>& token) {
  if (!token) return {};
  return [token](std::uint64_t, std::uint64_t) {
    if (token->cancelled.load(std::memory_order_relaxed)) throw Cancelled();
  };
}

// The JSON text of a report, as the CLI writes it.
std::string dump_report(const nlohmann::json& j);

// `stepscope.plan.<calculator>`: keyword arguments named after the CLI's options.
void bind_plan(pybind11::module_& plan);

// `HtaTrace` and `hta_load`: HTA's analyses with HTA's arguments, for stepscope.hta.
void bind_hta(pybind11::module_& m);

}  // namespace stepscope::python
