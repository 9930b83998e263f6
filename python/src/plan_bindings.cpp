// `stepscope._stepscope.plan`: the calculators of `stepscope plan`, run on the texts the CLI
// would read. python/stepscope/plan.py makes the keyword arguments from each calculator's table
// (`_stepscope.options("plan memory")`), turns the values into those texts and hands them here:
// the same function reads them as the command line's options, so both read every value alike
// and refuse it in the same words.
#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "stepscope/error.hpp"
#include "stepscope/plan/commands.hpp"

namespace py = pybind11;

namespace stepscope::python {

namespace sp = stepscope::plan;

void bind_plan(py::module_& m) {
  m.def(
      "run",
      [](const std::string& name, sp::GivenOptions given) {
        const sp::Calculator* c = sp::find_calculator(name);
        if (!c) throw InputError("no calculator '" + name + "'");
        return sp::run_calculator(*c, std::move(given)).json.dump(2);
      },
      py::arg("name"), py::arg("given"),
      "The calculator's JSON document, as `plan NAME --json` prints it, for the options given as the command "
      "line's texts: {option name: [text, ...]}.");
  m.def(
      "calculators",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const sp::Calculator& c : sp::calculators()) out.emplace_back(c.name, c.about);
        return out;
      },
      "(name, what it answers) of each calculator, in the order of `stepscope plan --help`.");
}

}  // namespace stepscope::python
