#include "stepscope/distributed.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "stepscope/error.hpp"

#ifdef STEPSCOPE_WITH_MPI
#include <mpi.h>
#endif

namespace stepscope {

namespace {

std::uint64_t size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<std::uint64_t>(n);
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : 0;
}

}  // namespace

std::vector<FileListing> share_by_bytes(FileListing listing, const std::vector<std::uint64_t>& bytes, int processes) {
  std::vector<FileListing> shares(static_cast<std::size_t>(std::max(1, processes)));
  for (auto& s : shares) s.share = true;
  shares[0].warnings = std::move(listing.warnings);
  std::vector<std::size_t> order(listing.files.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bytes[a] > bytes[b]; });
  std::vector<std::uint64_t> load(shares.size(), 0);
  for (std::size_t f : order) {
    const auto least = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[least] += bytes[f];
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

// What one process sends to process 0: its summary, or the error that stopped it.
struct Part {
  bool ok = true;
  std::string bytes;  // encode_summary's bytes, or the error message
};

// Messages of at most 1 GiB: MPI counts in int.
constexpr std::size_t kChunk = std::size_t{1} << 30;

void send_part(const Part& p) {
  long long header[2] = {p.ok ? 1 : 0, static_cast<long long>(p.bytes.size())};
  MPI_Send(header, 2, MPI_LONG_LONG, 0, 0, MPI_COMM_WORLD);
  for (std::size_t at = 0; at < p.bytes.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, p.bytes.size() - at));
    MPI_Send(p.bytes.data() + at, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
  }
}

Part receive_part(int from) {
  long long header[2] = {0, 0};
  MPI_Recv(header, 2, MPI_LONG_LONG, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  Part p;
  p.ok = header[0] == 1;
  p.bytes.resize(static_cast<std::size_t>(header[1]));
  for (std::size_t at = 0; at < p.bytes.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, p.bytes.size() - at));
    MPI_Recv(p.bytes.data() + at, n, MPI_CHAR, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return p;
}

std::vector<std::string> file_paths(const FileListing& listing) {
  std::vector<std::string> out;
  for (const auto& f : listing.files) out.push_back(f.path);
  return out;
}

// This process's share of the files, read and analysed. Every process lists the same paths on
// the same file system, so every process computes the same shares without talking.
SummaryFile analyse_share(const std::vector<std::string>& paths, const PipelineOptions& opts, int process, int processes,
                          std::vector<std::string>& order) {
  FileListing listing = list_trace_files(paths);
  for (const auto& f : listing.files)
    if (f.path == "-") throw InputError("-: standard input cannot be shared between MPI processes: name the files");
  order = file_paths(listing);
  std::vector<std::uint64_t> bytes;
  for (const auto& p : order) bytes.push_back(size_or_zero(p));
  FileListing mine = std::move(share_by_bytes(std::move(listing), bytes, processes)[static_cast<std::size_t>(process)]);
  SummaryFile s;
  if (mine.files.empty()) {
    s.warnings = std::move(mine.warnings);
    return s;
  }
  PipelineOptions o = opts;
  if (process != 0) o.ingest.progress = nullptr;
  Trace trace = read_trace_files(std::move(mine), o.ingest);
  s.ranks = analyze_ranks(trace, o.analyze);
  s.warnings = std::move(trace.warnings);
  return s;
}

Part own_part(const std::vector<std::string>& paths, const PipelineOptions& opts, int process, int processes,
              std::vector<std::string>& order) {
  try {
    return {true, encode_summary(analyse_share(paths, opts, process, processes, order))};
  } catch (const std::exception& e) {
    return {false, fmt::format("MPI process {}: {}", process, e.what())};
  }
}

AnalysisResult merge_on_root(Part own, int processes, const std::vector<std::string>& order) {
  std::vector<Part> parts;
  parts.push_back(std::move(own));
  for (int p = 1; p < processes; ++p) parts.push_back(receive_part(p));
  for (const auto& p : parts)
    if (!p.ok) throw InputError(p.bytes);
  std::vector<SummaryFile> summaries;
  for (std::size_t i = 0; i < parts.size(); ++i)
    summaries.push_back(decode_summary(parts[i].bytes, fmt::format("the summary of MPI process {}", i)));
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
