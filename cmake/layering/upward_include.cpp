// Built by the `layering_upward_include` test as part of a target that links the facts module
// alone: the pipeline sits above the facts, so its header must not be found and this must fail
// to compile. Were it to build, every module would again see every public header.
#include "stepscope/facts.hpp"
#include "stepscope/pipeline.hpp"

int layering_probe_upward() { return 0; }
