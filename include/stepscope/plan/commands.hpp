// The calculators of `stepscope plan`, each with its options defined once (option_spec.hpp) and
// one function that reads them and computes. The command line adds each calculator's options
// from its table (src/cli/plan.cpp) and the Python module takes them as keyword arguments
// (python/stepscope/plan.py); both hand the texts given to the same run function, so the two
// read every value alike and refuse it in the same words.
//   stepscope plan memory --model llama-3-8b --seq 8K     stepscope.plan.memory(model="llama-3-8b", seq="8K")
//     -> run_calculator("memory", {{"model", {"llama-3-8b"}}, {"seq", {"8K"}}})
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stepscope/option_spec.hpp"

namespace stepscope::plan {

// The options given, as the command line's texts: each repeat of a list its own text, a flag
// "true". An option not given reads as its table's default.
using GivenOptions = std::map<std::string, std::vector<std::string>, std::less<>>;

class OptionValues {
 public:
  OptionValues(std::span<const OptionSpec> schema, GivenOptions given);

  bool given(std::string_view name) const { return given_.contains(name); }
  bool flag(std::string_view name) const { return given(name); }
  // The text given, else the default; nullopt when neither.
  std::optional<std::string> text(std::string_view name) const;
  // A count (sizes: "8K"), a number, or a duration in the option's unit ("1.2s" of an ms option: 1200).
  std::optional<std::int64_t> count(std::string_view name) const;
  std::optional<double> number(std::string_view name) const;
  std::vector<std::string> list(std::string_view name) const;

 private:
  const OptionSpec& spec(std::string_view name) const;
  std::span<const OptionSpec> schema_;
  GivenOptions given_;
};

struct CalculatorResult {
  nlohmann::json json;
  std::string text;
};

struct Calculator {
  std::string_view name, about, footer;
  std::span<const OptionSpec> options;
  CalculatorResult (*run)(const OptionValues&);
};

// memory, roofline, comm, scaling, pipeline, kv, serve, specdec, stack, gpus, models.
std::span<const Calculator> calculators();
// nullptr when there is no calculator of that name.
const Calculator* find_calculator(std::string_view name);

// The calculator's result for the options given. Throws InputError on an option it does not
// take, a value its type or check refuses, or inputs the calculator refuses.
CalculatorResult run_calculator(const Calculator& c, GivenOptions given);

}  // namespace stepscope::plan
