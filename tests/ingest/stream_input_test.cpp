// Stream inputs (a FIFO, /dev/stdin, a process substitution) read like the file they carry.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "ingest/byte_source.hpp"
#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {
namespace fs = std::filesystem;

const std::string kExample = std::string(STEPSCOPE_SOURCE_DIR) + "/examples/cpu_training_step.pt.trace.json.gz";

std::string fifo_path(const char* name) {
  const fs::path p = fs::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()));
  fs::remove(p);
  EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
  return p.string();
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(StreamInput, AGzippedTraceThroughAFifoReadsLikeTheFile) {
  const std::string fifo = fifo_path("stepscope-fifo");
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << bytes_of(kExample); });
  const Trace piped = read_traces({fifo});
  writer.join();
  const Trace file = read_traces({kExample});
  ASSERT_EQ(piped.ranks.size(), 1u);
  EXPECT_EQ(piped.ranks[0].events.size(), file.ranks[0].events.size());
  EXPECT_EQ(piped.ranks[0].path, fifo);  // messages name the stream, not its copy
  fs::remove(fifo);
}

TEST(StreamInput, AFifoNobodyWritesToIsRefusedNotAHang) {
  const std::string fifo = fifo_path("stepscope-idle-fifo");
  try {
    ingest::spool_if_stream(fifo, 1);
    FAIL() << "an idle FIFO was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no data arrived in 1 s"), std::string::npos) << e.what();
  }
  fs::remove(fifo);
}

TEST(StreamInput, RegularFilesAreReadInPlace) { EXPECT_EQ(ingest::spool_if_stream(kExample), nullptr); }

}  // namespace
}  // namespace stepscope
