// Built by the `layering_own_include` test as part of a target that links the facts module alone:
// its own headers and those of the modules below it (trace, core) are found, so the failure of
// upward_include.cpp is the missing header and nothing else.
#include "stepscope/error.hpp"
#include "stepscope/facts.hpp"
#include "stepscope/trace.hpp"

int layering_probe_own() { return 0; }
