#include "stepscope/distributed.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "stepscope/error.hpp"

#ifdef STEPSCOPE_WITH_MPI
#include <mpi.h>
#endif

namespace stepscope {

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

}  // namespace

std::vector<FileListing> share_by_bytes(FileListing listing, int processes) {
  std::vector<FileListing> shares(static_cast<std::size_t>(std::max(1, processes)));
  for (auto& s : shares) s.share = true;
  shares[0].warnings = std::move(listing.warnings);
  std::vector<std::size_t> order(listing.files.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const std::vector<FoundFile>& files = listing.files;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return files[a].bytes > files[b].bytes; });
  std::vector<std::uint64_t> load(shares.size(), 0);
  for (std::size_t f : order) {
    const auto least = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[least] += files[f].bytes;
    shares[least].files.push_back(std::move(listing.files[f]));
  }
  return shares;
}

bool launched_by_mpi() {
  // OpenMPI's mpirun, PMI-1/2 launchers (srun, MPICH's hydra), PMIx launchers (srun, prterun).
  return env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1 || std::getenv("PMIX_RANK") != nullptr;
}

#ifndef STEPSCOPE_WITH_MPI

bool mpi_built() { return false; }

DistributedAnalysis analyze_paths_distributed(const std::vector<std::string>&, const PipelineOptions&) {
  throw InputError("this stepscope was built without MPI: run one process, or rebuild with OpenMPI installed (libopenmpi-dev)");
}

#else

bool mpi_built() { return true; }

namespace {

// MPI for the lifetime of one distributed analysis, stopped however it ends.
class MpiScope {
 public:
  MpiScope() {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &process_);
    MPI_Comm_size(MPI_COMM_WORLD, &processes_);
  }
  ~MpiScope() { MPI_Finalize(); }
  MpiScope(const MpiScope&) = delete;
  MpiScope& operator=(const MpiScope&) = delete;
  int process() const { return process_; }
  int processes() const { return processes_; }

 private:
  int process_ = 0, processes_ = 1;
};

// What one process sends to process 0: its summary in pieces (its set warnings, then one piece per
// rank, so that process 0 decodes one rank at a time), or the error that stopped it.
struct Part {
  bool ok = true;
  std::vector<std::string> pieces;  // encode_summary's bytes; or one piece, the error message
};

// Messages of at most 1 GiB: MPI counts in int.
constexpr std::size_t kChunk = std::size_t{1} << 30;

void send_bytes(const std::string& bytes) {
  long long size = static_cast<long long>(bytes.size());
  MPI_Send(&size, 1, MPI_LONG_LONG, 0, 0, MPI_COMM_WORLD);
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, bytes.size() - at));
    MPI_Send(bytes.data() + at, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
  }
}

std::string receive_bytes(int from) {
  long long size = 0;
  MPI_Recv(&size, 1, MPI_LONG_LONG, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, bytes.size() - at));
    MPI_Recv(bytes.data() + at, n, MPI_CHAR, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return bytes;
}

void send_part(const Part& p) {
  long long header[2] = {p.ok ? 1 : 0, static_cast<long long>(p.pieces.size())};
  MPI_Send(header, 2, MPI_LONG_LONG, 0, 2, MPI_COMM_WORLD);
  for (const auto& piece : p.pieces) send_bytes(piece);
}

struct Header {
  bool ok = true;
  long long pieces = 0;
};

Header receive_header(int from) {
  long long header[2] = {0, 0};
  MPI_Recv(header, 2, MPI_LONG_LONG, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return {header[0] == 1, header[1]};
}

std::vector<std::string> file_paths(const FileListing& listing) {
  std::vector<std::string> out;
  for (const auto& f : listing.files) out.push_back(f.path);
  return out;
}

// This process's share of the files, read and analysed. Every process lists the same paths on
// the same file system, so every process computes the same shares without talking.
Part analyse_share(const std::vector<std::string>& paths, const PipelineOptions& opts, int process, int processes,
                   std::vector<std::string>& order) {
  FileListing listing = list_trace_files(paths);
  for (const auto& f : listing.files)
    if (f.path == "-") throw InputError("-: standard input cannot be shared between MPI processes: name the files");
  order = file_paths(listing);
  FileListing mine = std::move(share_by_bytes(std::move(listing), processes)[static_cast<std::size_t>(process)]);
  PipelineOptions o = opts;
  if (process != 0) o.ingest.progress = nullptr;
  Part part;
  part.pieces.push_back(encode_summary({{}, std::move(mine.warnings)}));
  // One file at a time, each rank encoded once analysed and its events freed: a process holds one
  // rank's trace at most, however many files its share has.
  for (FoundFile& f : mine.files) {
    FileListing one;
    one.share = true;
    one.files.push_back(std::move(f));
    Trace trace = read_trace_files(std::move(one), o.ingest);
    for (RankAnalysis& a : analyze_ranks(trace, o.analyze)) {
      SummaryFile piece;
      piece.ranks.push_back(std::move(a));
      part.pieces.push_back(encode_summary(piece));
    }
    part.pieces.push_back(encode_summary({{}, std::move(trace.warnings)}));
  }
  return part;
}

Part own_part(const std::vector<std::string>& paths, const PipelineOptions& opts, int process, int processes,
              std::vector<std::string>& order) {
  try {
    return analyse_share(paths, opts, process, processes, order);
  } catch (const std::exception& e) {
    return {false, {fmt::format("MPI process {}: {}", process, e.what())}};
  }
}

// Every process's part is received (so none waits on a send) and decoded as it comes, its bytes
// then freed; the first error any process met is the job's error.
AnalysisResult merge_on_root(Part own, int processes, const std::vector<std::string>& order) {
  std::vector<SummaryFile> summaries;
  std::string error;
  for (int p = 0; p < processes; ++p) {
    const Header h = p == 0 ? Header{own.ok, static_cast<long long>(own.pieces.size())} : receive_header(p);
    const std::string name = fmt::format("the summary of MPI process {}", p);
    for (long long i = 0; i < h.pieces; ++i) {
      std::string piece = p == 0 ? std::move(own.pieces[static_cast<std::size_t>(i)]) : receive_bytes(p);
      if (!h.ok && error.empty()) error = std::move(piece);  // a failed process sends its error alone
      else if (h.ok && error.empty()) summaries.push_back(decode_summary(piece, name));
    }
  }
  if (!error.empty()) throw InputError(error);
  return merge_summaries(std::move(summaries), order);
}

}  // namespace

DistributedAnalysis analyze_paths_distributed(const std::vector<std::string>& paths, const PipelineOptions& opts) {
  MpiScope mpi;
  DistributedAnalysis d;
  d.process = mpi.process();
  d.processes = mpi.processes();
  d.root = d.process == 0;
  std::vector<std::string> order;
  Part own = own_part(paths, opts, d.process, d.processes, order);
  if (!d.root) {
    send_part(own);
    return d;
  }
  d.result = merge_on_root(std::move(own), d.processes, order);
  return d;
}

#endif

}  // namespace stepscope
