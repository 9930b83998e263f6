// The whole pipeline on one input, as `stepscope analyze` runs it with every output asked for.
// The fuzz targets and the regression test (tests/fuzz) share it, so an input that crashed one
// is replayed by the other exactly, and the regular build checks every kept crasher without clang.
#pragma once

#include <string_view>

namespace stepscope::fuzzing {

// How the bytes are offered to the readers: the name of the scratch file decides it only where
// the bytes do not (a SQLite header always means an export, as in the CLI).
enum class InputKind { kineto, nsys };

// Writes `bytes` to a scratch file, reads it on two threads, analyses and diagnoses it and renders
// every report: text (plain and verbose), JSON, HTML and the annotated trace. Returns false when
// the input was refused as bad input (InputError), true when it went through; any other exception
// escapes, since a reader must refuse bad input with InputError and nothing else.
bool exercise_bytes(std::string_view bytes, InputKind kind);

}  // namespace stepscope::fuzzing
