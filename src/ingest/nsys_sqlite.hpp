// Reading Nsight Systems SQLite exports (`nsys export --type sqlite`) into the trace model.
#pragma once

#include <string>
#include <vector>

#include "stepscope/ingest.hpp"
#include "stepscope/trace.hpp"

namespace stepscope::ingest {

// True when the file starts with SQLite's magic header ("SQLite format 3\0").
bool has_sqlite_magic(const std::string& path);

// True for an Nsight Systems report that was not exported (".nsys-rep", older ".qdrep").
bool is_nsys_report_name(const std::string& path);

// Reads one export, read-only: CUDA kernels, copies, memsets, runtime calls, synchronisation,
// NVTX ranges, GPUs, thread and process names. Columns are discovered per table, since nsys
// versions differ; optional tables may be absent. Throws InputError on a corrupted file or a
// SQLite database that is not an nsys export.
//
// One trace per process that did CUDA work (GPU activity or CUDA calls), in pid order: one
// `nsys profile mpirun -np 4 ...` records every rank in one export. Other processes' rows (the
// launcher's) are left out then, with a warning. With one such process (or none) the whole
// export is that one trace.
std::vector<RankTrace> read_nsys_sqlite(const std::string& path, const IngestOptions& opts = {});

}  // namespace stepscope::ingest
