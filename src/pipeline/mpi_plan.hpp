// Process 0's listing of the job's files as it travels to the other MPI processes
// (distributed.cpp). The listing's warnings travel as a summary file's warnings
// (stepscope/rank_summary.hpp) and are read back by its reader: a record this binary does not
// know (process 0 running another version) is refused as a summary file's would be.
#pragma once

#include <string>
#include <string_view>

#include "stepscope/ingest.hpp"

namespace stepscope::mpi {

// Every process shares the files from this one listing, so that a file seen at another size, or
// missed, by another process cannot put a rank in two shares or in none.
struct Plan {
  bool ok = true;
  std::string error;  // when !ok: the refusal, printed by process 0 alone
  FileListing listing;
};

std::string encode_plan(const Plan& p);

// Throws InputError, one line naming the listing and the field, for a warning this binary's
// registry lacks or a record that lacks a field.
Plan decode_plan(std::string_view bytes);

}  // namespace stepscope::mpi
