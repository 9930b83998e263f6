// `mpirun -n P stepscope analyze DIR` (or `srun`): the rank files are shared between the P
// processes by size, each process reads and analyses its share one file at a time and sends the
// per-rank summaries (stepscope/rank_summary.hpp) to process 0,
// which merges them (merge_summaries), diagnoses and writes the reports. The result equals one
// process's analysis of the same files.
#pragma once

#include <string>
#include <vector>

#include "stepscope/analysis.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/pipeline.hpp"

namespace stepscope {

// Whether this binary was built with MPI (OpenMPI's libmpi found when it was configured).
bool mpi_built();

// Whether an MPI launcher (mpirun, srun) started this process as one of several, read from the
// environment that launchers set, before MPI itself is started.
bool launched_by_mpi();

// Whether this process speaks for the job: true alone, and under a launcher for process 0 only
// (read from the launcher's environment), so that a refusal is printed once, not once per process.
bool speaks_for_the_job();

// Splits a listing into `processes` shares of about equal bytes (FoundFile::bytes): largest file
// first, each to the share with the fewest bytes so far (the lowest-numbered on a tie). Share 0
// keeps the listing's warnings. Every share is marked as a share.
std::vector<FileListing> share_by_bytes(FileListing listing, int processes);

struct DistributedAnalysis {
  bool root = false;   // process 0: it holds the result and writes the reports
  int process = 0;     // this process's number in the MPI job
  int processes = 1;   // processes in the job
  DiagnosedResult result;  // on process 0 only
};

// Starts MPI; process 0 lists the files and checks them as one process would, and sends the
// listing to all (so that every process shares the same files, whatever each sees); each
// analyses its share, and process 0 gathers the summaries and merges them; stops MPI before
// returning. A process that sends nothing for STEPSCOPE_MPI_TIMEOUT_S seconds (default 1800)
// after process 0 is ready stops the job with an error naming it, exit 2. Errors: InputError on process 0 when any process
// failed (its message names the process and the file), or when the binary has no MPI; the other
// processes then return with root false and an empty result.
DistributedAnalysis analyze_paths_distributed(const std::vector<std::string>& paths, const PipelineOptions& opts);

}  // namespace stepscope
