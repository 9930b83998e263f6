// Shared by the extension's translation units.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>

namespace stepscope::python {

// The JSON text of a report, as the CLI writes it.
std::string dump_report(const nlohmann::json& j);

// `stepscope.plan.<calculator>`: keyword arguments named after the CLI's options.
void bind_plan(pybind11::module_& plan);

// `HtaTrace` and `hta_load`: HTA's analyses with HTA's arguments, for stepscope.hta.
void bind_hta(pybind11::module_& m);

}  // namespace stepscope::python
