#include "stepscope/distributed.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include <nlohmann/json.hpp>

#include "pipeline/mpi_plan.hpp"
#include "stepscope/error.hpp"
#include "stepscope/rank_summary.hpp"

#ifdef STEPSCOPE_WITH_MPI
#include "pipeline/mpi_transport.hpp"
#include "stepscope/plugin.hpp"
#endif

#ifndef STEPSCOPE_MPI_PLUGIN_FROM_BIN
#define STEPSCOPE_MPI_PLUGIN_FROM_BIN "../lib/stepscope"
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

int mpi_process_from_env() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  return 0;
}

bool speaks_for_the_job() { return !launched_by_mpi() || mpi_process_from_env() == 0; }

bool launched_by_mpi() {
  // OpenMPI's mpirun, PMI-1/2 launchers (srun, MPICH's hydra), PMIx launchers (srun, prterun).
  return env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1 || std::getenv("PMIX_RANK") != nullptr;
}

// {ok, error, files: [[path, listed, bytes], ...], warnings: a summary file's bytes} as CBOR.
std::string mpi::encode_plan(const Plan& p) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : p.listing.files) files.push_back({f.path, f.listed, f.bytes});
  const std::string warnings = encode_summary({{}, p.listing.warnings});
  const nlohmann::json doc = {{"ok", p.ok},
                              {"error", p.error},
                              {"files", std::move(files)},
                              {"warnings", nlohmann::json::binary({warnings.begin(), warnings.end()})}};
  std::string out;
  nlohmann::json::to_cbor(doc, out);
  return out;
}

mpi::Plan mpi::decode_plan(std::string_view bytes) {
  const nlohmann::json j = nlohmann::json::from_cbor(bytes);
  Plan p;
  p.ok = j.at("ok").get<bool>();
  p.error = j.at("error").get<std::string>();
  for (const auto& f : j.at("files")) p.listing.files.push_back({f.at(0).get<std::string>(), f.at(1).get<bool>(), f.at(2).get<std::uint64_t>()});
  const auto& warnings = j.at("warnings").get_binary();
  p.listing.warnings = decode_summary({reinterpret_cast<const char*>(warnings.data()), warnings.size()},
                                      "the listing of MPI process 0")
                           .warnings;
  return p;
}

#ifndef STEPSCOPE_WITH_MPI

bool mpi_built() { return false; }

DistributedAnalysis analyze_paths_distributed(const std::vector<std::string>&, const PipelineOptions&) {
  throw InputError("this stepscope was built without MPI: run one process, or rebuild with OpenMPI installed (libopenmpi-dev)");
}

#else

bool mpi_built() { return true; }

namespace {

using mpi::Plan;

// The plugin's transport, loaded on first use. Global: OpenMPI loads components of its own that
// look its symbols up in the global scope.
mpi::Transport& transport() {
  static mpi::Transport* const t = reinterpret_cast<mpi::TransportFn>(
      plugin_entry("libstepscope_mpi.so", STEPSCOPE_MPI_PLUGIN_FROM_BIN, mpi::kTransportSymbol, RTLD_NOW | RTLD_GLOBAL,
                   "analyze under an MPI launcher: cannot load MPI"))();
  return *t;
}

// MPI for the lifetime of one distributed analysis, stopped however it ends.
class MpiScope {
 public:
  MpiScope() : mpi_(transport()) {
    mpi_.start();
    process_ = mpi_.process();
    processes_ = mpi_.processes();
  }
  ~MpiScope() { mpi_.finish(); }
  MpiScope(const MpiScope&) = delete;
  MpiScope& operator=(const MpiScope&) = delete;
  int process() const { return process_; }
  int processes() const { return processes_; }

 private:
  mpi::Transport& mpi_;
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
  const long long size = static_cast<long long>(bytes.size());
  transport().send(&size, 1, 0, 0);
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, bytes.size() - at));
    transport().send(bytes.data() + at, n, 0, 1);
  }
}

std::string receive_bytes(int from) {
  long long size = 0;
  transport().receive(&size, 1, from, 0);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, bytes.size() - at));
    transport().receive(bytes.data() + at, n, from, 1);
  }
  return bytes;
}

void send_part(const Part& p) {
  const long long header[2] = {p.ok ? 1 : 0, static_cast<long long>(p.pieces.size())};
  transport().send(header, 2, 0, 2);
  for (const auto& piece : p.pieces) send_bytes(piece);
}

struct Header {
  bool ok = true;
  long long pieces = 0;
};

std::vector<std::string> file_paths(const FileListing& listing) {
  std::vector<std::string> out;
  for (const auto& f : listing.files) out.push_back(f.path);
  return out;
}

// Only a regular file is opened here: a FIFO among the rank files must not stop process 0.
bool starts_as_sqlite(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  char head[16] = {};
  std::ifstream(path, std::ios::binary).read(head, sizeof head);
  return std::memcmp(head, "SQLite format 3", 16) == 0;
}

// The files of the job as process 0 lists them; the checks on the whole job (one kind of input)
// are made once, on all of it, as one process would make them.
Plan list_on_root(const std::vector<std::string>& paths) {
  Plan plan;
  try {
    plan.listing = list_trace_files(paths);
    std::size_t sqlite = 0;
    for (const auto& f : plan.listing.files) {
      if (f.path == "-") throw InputError("-: standard input cannot be shared between MPI processes: name the files");
      sqlite += starts_as_sqlite(f.path);
    }
    if (sqlite != 0 && sqlite != plan.listing.files.size())
      throw InputError("mixed inputs: Nsight Systems exports (.sqlite) and Kineto traces cannot be analysed together; pass one kind");
  } catch (const std::exception& e) {
    plan = {false, e.what(), {}};
  }
  return plan;
}

// Process 0's plan, on every process.
Plan broadcast_plan(const std::vector<std::string>& paths, int process) {
  std::string text = process == 0 ? mpi::encode_plan(list_on_root(paths)) : std::string();
  long long size = static_cast<long long>(text.size());
  transport().broadcast(&size, 1);
  text.resize(static_cast<std::size_t>(size));
  for (std::size_t at = 0; at < text.size(); at += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, text.size() - at));
    transport().broadcast(text.data() + at, n);
  }
  return mpi::decode_plan(text);
}

// This process's share of the files, read and analysed.
Part analyse_share(FileListing listing, const PipelineOptions& opts, int process, int processes) {
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

// A process that failed: its error alone, which process 0 prints.
Part failed_part(int process, const std::exception& e) { return {false, {fmt::format("MPI process {}: {}", process, e.what())}}; }

Part own_part(FileListing listing, const PipelineOptions& opts, int process, int processes) {
  try {
    return analyse_share(std::move(listing), opts, process, processes);
  } catch (const std::exception& e) {
    return failed_part(process, e);
  }
}

// How long process 0 waits for a process's first message once its own share is done: a peer
// that stopped (or hangs on its share) must not keep the job waiting forever. Shares are of
// about equal bytes, so a healthy peer finishes near process 0; STEPSCOPE_MPI_TIMEOUT_S sets it.
int peer_timeout_s() {
  const int set = env_int("STEPSCOPE_MPI_TIMEOUT_S");
  return set > 0 ? set : 1800;
}

// A peer that sent nothing in time: the job cannot be completed or finalised, so process 0 says
// so itself (nothing after MPI_Abort would) and stops every process.
[[noreturn]] void abort_for_missing_peer(int from, int waited_s) {
  std::fprintf(stderr,
               "stepscope: error: MPI process %d sent no summary in %d s (stopped, or stuck on its share); the job's "
               "report would miss its ranks (STEPSCOPE_MPI_TIMEOUT_S sets the wait)\n",
               from, waited_s);
  std::fflush(stderr);
  transport().abort(2);
  std::abort();  // not reached
}

Header receive_header_in_time(int from, int timeout_s) {
  long long header[2] = {0, 0};
  const std::function<bool()> arrived = transport().receive_later(header, 2, from, 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (!arrived()) {
    if (std::chrono::steady_clock::now() > deadline) abort_for_missing_peer(from, timeout_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return {header[0] == 1, header[1]};
}

// Every process's part is received (so none waits on a send) and decoded as it comes, its bytes
// then freed; the first error any process met is the job's error.
DiagnosedResult merge_on_root(Part own, int processes, const std::vector<std::string>& order) {
  std::vector<SummaryFile> summaries;
  std::string error;
  const int timeout_s = peer_timeout_s();
  for (int p = 0; p < processes; ++p) {
    const Header h = p == 0 ? Header{own.ok, static_cast<long long>(own.pieces.size())} : receive_header_in_time(p, timeout_s);
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
  Plan plan;
  try {
    plan = broadcast_plan(paths, d.process);
  } catch (const InputError& e) {
    // A listing this process cannot read (process 0 runs another version of stepscope): process 0
    // reads its own, and prints why this one failed as for a failed share.
    if (d.root) throw;
    send_part(failed_part(d.process, e));
    return d;
  }
  // The other processes end quietly, with exit 0: a non-zero exit makes mpirun stop the job
  // before process 0 has printed why.
  if (!plan.ok) {
    if (d.root) throw InputError(plan.error);
    return d;
  }
  const std::vector<std::string> order = file_paths(plan.listing);
  Part own = own_part(std::move(plan.listing), opts, d.process, d.processes);
  if (!d.root) {
    send_part(own);
    return d;
  }
  d.result = merge_on_root(std::move(own), d.processes, order);
  return d;
}

#endif

}  // namespace stepscope
