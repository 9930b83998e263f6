// Errors that reach the user: one line, naming the input and where in it things went wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace stepscope {

// Bad input or bad usage: the CLI prints what() and exits with code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A well-formed JSON document that holds no trace (no "traceEvents"): a directory of ranks may
// hold such files beside the traces (a run's config, a generator's ground truth).
class NotATraceError : public InputError {
 public:
  using InputError::InputError;
};

// A complete trace that holds no event (`{"traceEvents": []}`, a rank that recorded nothing):
// alone it is refused; beside other ranks of a directory it is left out with a warning.
class EmptyTraceError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace stepscope
