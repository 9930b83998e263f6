// The `stepscope._stepscope` extension: the analysis pipeline, the before/after diff and the
// planning calculators, each returning the JSON document the CLI prints. The pure-Python package
// turns that text into dicts, so a report read in Python is the CLI's report, byte for byte.
#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bindings.hpp"
#include "stepscope/command_options.hpp"
#include "stepscope/diff.hpp"
#include "stepscope/error.hpp"
#include "stepscope/partition.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/plan/commands.hpp"
#include "stepscope/report.hpp"
#include "stepscope/store.hpp"
#include "stepscope/whatif_report.hpp"
#include "stepscope/whatif_run.hpp"

namespace py = pybind11;

namespace stepscope::python {

std::string dump_report(const nlohmann::json& j) {
  // As `analyze --json` writes it: names come from the trace and may hold invalid UTF-8.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// `command`'s analysis options, checked as the schema says, and the pipeline's options from them.
PipelineOptions pipeline_options(std::string_view command, const AnalysisSettings& s,
                                 const std::shared_ptr<CancelToken>& cancel) {
  PipelineOptions po = stepscope::pipeline_options(command, s);
  po.ingest.progress = cancel_check(cancel);
  return po;
}

// The keyword arguments of `command`'s analysis options, each read by its schema entry: a name
// the schema does not hold is refused as Python refuses an unknown keyword.
AnalysisSettings settings_from(std::string_view command, const py::kwargs& options) {
  AnalysisSettings s;
  const auto schema = analysis_options(command);
  for (const auto& [key, value] : options) {
    const auto name = py::cast<std::string>(key);
    const auto o = std::find_if(schema.begin(), schema.end(), [&](const AnalysisOption& x) { return python_name(x.spec) == name; });
    if (o == schema.end())
      throw py::type_error(fmt::format("{}_json() got an unexpected keyword argument '{}'", command, name));
    std::visit([&](auto field) { s.*field = py::cast<std::decay_t<decltype(s.*field)>>(value); }, o->field);
  }
  return s;
}

std::string analyze_json(const std::vector<std::string>& paths, const std::shared_ptr<CancelToken>& cancel,
                         const py::kwargs& options) {
  PipelineOptions po = pipeline_options("analyze", settings_from("analyze", options), cancel);
  po.keep_trace = false;
  // Reading and analysing never touch Python objects: other Python threads run meanwhile.
  py::gil_scoped_release unlocked;
  const Analysis run = analyze_paths(paths, po);
  // A notebook slices every rank's tables itself: the drill-down of every rank, not a sample.
  return dump_report(to_json(run.result, {.drilldown_ranks = 0}));
}

// `stepscope whatif --json`: the replay against the recording, the changes' prediction, the plan.
std::string whatif_json(const std::vector<std::string>& paths, const std::shared_ptr<CancelToken>& cancel,
                        const py::kwargs& options) {
  const AnalysisSettings s = settings_from("whatif", options);
  const PipelineOptions po = pipeline_options("whatif", s, cancel);
  py::gil_scoped_release unlocked;
  return dump_report(whatif_to_json(whatif_paths(paths, whatif_options(s), po)));
}

std::string merge_json(const std::vector<std::string>& summaries) {
  py::gil_scoped_release unlocked;
  return dump_report(to_json(merge_summary_files(summaries), {.drilldown_ranks = 0}));
}

// How `stepscope diff` names a side: its paths, space-separated.
std::string label_of(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : " ") + p;
  return out;
}

std::string diff_json(const std::vector<std::string>& base, const std::vector<std::string>& test,
                      const std::shared_ptr<CancelToken>& cancel, const py::kwargs& options) {
  const AnalysisSettings s = settings_from("diff", options);
  const PipelineOptions po = pipeline_options("diff", s, cancel);
  py::gil_scoped_release unlocked;
  Analysis b = analyze_paths(base, po);
  Analysis t = analyze_paths(test, po);
  DiffResult d = diff_runs(std::move(b), std::move(t), diff_options(s));
  d.base_label = label_of(base);
  d.test_label = label_of(test);
  return dump_report(diff_to_json(d));
}

// `stepscope history --json`: with a log directory, its new runs are analysed into the history first.
std::string history_json(const std::string& logdir, const std::string& store_path, const std::string& job, int jobs) {
  AnalysisSettings s;
  s.jobs = jobs;
  check_settings(s, analysis_options("history"));
  py::gil_scoped_release unlocked;
  Store store(store_path.empty() ? default_store_path(logdir) : store_path);
  if (!logdir.empty()) {
    IndexOptions io;
    io.jobs = jobs;
    index_runs(store, logdir, io);
  }
  return dump_report(history_to_json(job_histories(store, job), store.path()));
}

py::dict option_dict(const OptionSpec& o) {
  py::dict d;
  d["name"] = std::string(o.name);
  d["python"] = python_name(o);
  d["flag"] = std::string(o.flag);
  d["type"] = option_type_name(o.type);
  d["unit"] = std::string(o.unit);
  d["value_name"] = std::string(o.value_name);
  d["default"] = std::string(o.default_text);
  d["check"] = option_check_name(o.check);
  d["low"] = o.low;
  d["high"] = o.high;
  d["required"] = o.required;
  d["help"] = std::string(o.help);
  return d;
}

// The schema of `command`'s options ("analyze", "diff", "whatif", "plan memory", ...), one dict
// per option, for the Python functions, the parity test and help.
py::list options_of(const std::string& command) {
  py::list out;
  if (command.starts_with("plan ")) {
    const plan::Calculator* c = plan::find_calculator(std::string_view(command).substr(5));
    if (!c) throw InputError(fmt::format("no calculator '{}'", command.substr(5)));
    for (const OptionSpec& o : c->options) out.append(option_dict(o));
  }
  for (const AnalysisOption& o : analysis_options(command)) out.append(option_dict(o.spec));
  return out;
}

// The exception's message as Python text. Paths arrive as the file system's bytes and may not be
// UTF-8: undecodable bytes come back as os.fsdecode gives them (surrogateescape), so the path
// in the message is the one the caller passed.
void set_error(PyObject* type, const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "surrogateescape");
  if (!text) {
    PyErr_Clear();
    text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "replace");
  }
  PyErr_SetObject(type, text);
  Py_XDECREF(text);
}

// A file system failure on an input path, as the CLI words it: "PATH: REASON".
std::string filesystem_message(const std::filesystem::filesystem_error& e) {
  const std::string path = e.path1().empty() ? std::string() : e.path1().string() + ": ";
  return path + e.code().message();
}

}  // namespace
}  // namespace stepscope::python

PYBIND11_MODULE(_stepscope, m) {
  using namespace stepscope::python;
  m.doc() = "stepscope's C++ core: analysis, diff and planning, returning JSON text.";

  // Bad input or bad usage: the message is the one the CLI prints after "stepscope: error: ".
  static py::exception<stepscope::InputError> error(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const stepscope::InputError& e) {
      set_error(error.ptr(), e.what());
    } catch (const std::filesystem::filesystem_error& e) {
      // Only the readers touch the file system, and only on the caller's paths: bad input.
      set_error(error.ptr(), filesystem_message(e));
    } catch (const Cancelled&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const py::cast_error& e) {
      // An argument of the wrong type inside a list or mapping, e.g. seq=[1.5].
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });

  py::class_<CancelToken, std::shared_ptr<CancelToken>>(m, "CancelToken",
                                                        "Stops a running read at its next progress report.")
      .def(py::init<>())
      .def("cancel", [](CancelToken& t) { t.cancelled.store(true); })
      .def_property_readonly("cancelled", [](const CancelToken& t) { return t.cancelled.load(); });
  m.def("analyze_json", &analyze_json, py::arg("paths"), py::kw_only(), py::arg("cancel") = std::shared_ptr<CancelToken>{},
        "Read, analyse and diagnose the traces; the JSON report as `analyze --json` writes it. The other keyword "
        "arguments are the options of `options(\"analyze\")`.");
  m.def("options", &options_of, py::arg("command"),
        "The options of a command (analyze, diff, whatif, plan memory, ...), as the CLI and the Python functions "
        "take them: name, python, flag, type, unit, value_name, default, check, low, high, required, help.");
  m.def("whatif_json", &whatif_json, py::arg("paths"), py::kw_only(), py::arg("cancel") = std::shared_ptr<CancelToken>{},
        "Replay the traces' steps with changes applied; the JSON report as `whatif --json` writes it. The other "
        "keyword arguments are the options of `options(\"whatif\")`.");
  m.def("merge_json", &merge_json, py::arg("summaries"),
        "Merge the rank summaries `analyze --summary` wrote; the JSON report as `merge --json` writes it.");
  m.def("diff_json", &diff_json, py::arg("base"), py::arg("test"), py::kw_only(),
        py::arg("cancel") = std::shared_ptr<CancelToken>{},
        "Compare two runs; the JSON document `diff --json` writes. The other keyword arguments are the options of "
        "`options(\"diff\")`.");
  m.def("history_json", &history_json, py::arg("logdir"), py::kw_only(), py::arg("store") = "", py::arg("job") = "",
        py::arg("jobs") = 0, "Each job's runs from the run history; the JSON document `history --json` writes.");
  m.attr("analysis_schema") = stepscope::kJsonSchemaVersion;
  m.attr("max_jobs") = stepscope::kMaxJobs;

  bind_hta(m);

  auto plan = m.def_submodule("plan", "Planning calculators; each returns `plan <name> --json` text.");
  bind_plan(plan);
}
