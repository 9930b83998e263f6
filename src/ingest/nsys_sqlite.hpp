// Reading Nsight Systems SQLite exports (`nsys export --type sqlite`) into the trace model.
#pragma once

#include <string>

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
RankTrace read_nsys_sqlite(const std::string& path, const IngestOptions& opts = {});

}  // namespace stepscope::ingest
