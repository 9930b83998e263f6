// The MPI calls of the distributed analysis (stepscope/distributed.hpp), behind an interface of
// our own: OpenMPI is a plugin, libstepscope_mpi.so, loaded when a launcher starts the command.
// Linked into the binary, libmpi and its runtime (open-pal, open-rte, hwloc, libevent) were
// loaded by every command, distributed or not: 1.3 MiB of resident memory and their
// relocations before main.
#pragma once

#include <functional>

namespace stepscope::mpi {

// MPI_COMM_WORLD's point-to-point and broadcast calls on bytes and on long longs, with their tags
// (a broadcast's root is process 0).
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void start() = 0;   // MPI_Init, unless MPI is initialised already
  virtual void finish() = 0;  // MPI_Finalize
  virtual int process() const = 0;
  virtual int processes() const = 0;
  virtual void send(const long long* values, int count, int to, int tag) = 0;
  virtual void send(const char* bytes, int count, int to, int tag) = 0;
  virtual void receive(long long* values, int count, int from, int tag) = 0;
  virtual void receive(char* bytes, int count, int from, int tag) = 0;
  virtual void broadcast(long long* values, int count) = 0;
  virtual void broadcast(char* bytes, int count) = 0;
  // Starts a receive and returns a test of it: true once the values have arrived.
  virtual std::function<bool()> receive_later(long long* values, int count, int from, int tag) = 0;
  virtual void abort(int code) = 0;  // MPI_Abort on the whole job: it does not return
};

// The plugin's one entry point: its transport, one for the process.
using TransportFn = Transport* (*)();
inline constexpr const char* kTransportSymbol = "stepscope_mpi_transport";

}  // namespace stepscope::mpi
