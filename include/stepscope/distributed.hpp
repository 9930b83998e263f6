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

// Splits a listing into `processes` shares of about equal bytes (FoundFile::bytes): largest file
// first, each to the share with the fewest bytes so far (the lowest-numbered on a tie). Share 0
// keeps the listing's warnings. Every share is marked as a share.
std::vector<FileListing> share_by_bytes(FileListing listing, int processes);

struct DistributedAnalysis {
  bool root = false;   // process 0: it holds the result and writes the reports
  int process = 0;     // this process's number in the MPI job
  int processes = 1;   // processes in the job
  AnalysisResult result;  // on process 0 only
};

// Starts MPI, analyses this process's share of `paths`, gathers the summaries on process 0 and
// merges them there; stops MPI before returning. Errors: InputError on process 0 when any process
// failed (its message names the process and the file), or when the binary has no MPI; the other
// processes then return with root false and an empty result.
DistributedAnalysis analyze_paths_distributed(const std::vector<std::string>& paths, const PipelineOptions& opts);

}  // namespace stepscope
