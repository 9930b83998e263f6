// libstepscope_mpi.so: OpenMPI behind the distributed analysis's own interface
// (pipeline/mpi_transport.hpp), so that only a run under a launcher loads libmpi.
#include <mpi.h>

#include <cstdlib>

#include "pipeline/mpi_transport.hpp"

namespace stepscope::mpi {
namespace {

class OpenMpi final : public Transport {
 public:
  void start() override {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) MPI_Init(nullptr, nullptr);
  }
  void finish() override { MPI_Finalize(); }
  int process() const override { return number(MPI_Comm_rank); }
  int processes() const override { return number(MPI_Comm_size); }
  void send(const long long* v, int n, int to, int tag) override { MPI_Send(v, n, MPI_LONG_LONG, to, tag, MPI_COMM_WORLD); }
  void send(const char* b, int n, int to, int tag) override { MPI_Send(b, n, MPI_CHAR, to, tag, MPI_COMM_WORLD); }
  void receive(long long* v, int n, int from, int tag) override {
    MPI_Recv(v, n, MPI_LONG_LONG, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  void receive(char* b, int n, int from, int tag) override {
    MPI_Recv(b, n, MPI_CHAR, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  void broadcast(long long* v, int n) override { MPI_Bcast(v, n, MPI_LONG_LONG, 0, MPI_COMM_WORLD); }
  void broadcast(char* b, int n) override { MPI_Bcast(b, n, MPI_CHAR, 0, MPI_COMM_WORLD); }
  std::function<bool()> receive_later(long long* v, int n, int from, int tag) override {
    MPI_Request request;
    MPI_Irecv(v, n, MPI_LONG_LONG, from, tag, MPI_COMM_WORLD, &request);
    return [request]() mutable {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      return done != 0;
    };
  }
  void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
  }

 private:
  static int number(int (*of)(MPI_Comm, int*)) {
    int n = 0;
    of(MPI_COMM_WORLD, &n);
    return n;
  }
};

}  // namespace
}  // namespace stepscope::mpi

extern "C" __attribute__((visibility("default"))) stepscope::mpi::Transport* stepscope_mpi_transport() {
  static stepscope::mpi::OpenMpi transport;
  return &transport;
}
