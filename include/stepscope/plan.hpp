// Planning calculators: the questions asked before a job runs. Will it fit, is this operation
// memory- or compute-bound, what will the all-reduce cost, how big is the KV cache, how many
// GPUs does a serving load need. Pure functions from inputs to result structs; nothing prints.
#pragma once

#include "stepscope/plan/comm.hpp"
#include "stepscope/plan/gpus.hpp"
#include "stepscope/plan/memory.hpp"
#include "stepscope/plan/model.hpp"
#include "stepscope/plan/pipeline.hpp"
#include "stepscope/plan/render.hpp"
#include "stepscope/plan/roofline.hpp"
#include "stepscope/plan/serving.hpp"
#include "stepscope/plan/units.hpp"
