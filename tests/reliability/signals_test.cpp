// An interrupted run leaves nothing behind: partial reports and the copy of a piped trace are
// registered temporaries, unlinked by the signal handler before the signal takes effect.
#include <gtest/gtest.h>

#include "harness.hpp"
#include "stepscope/temp_files.hpp"

namespace reliability {
namespace {

class Signals : public ::testing::TestWithParam<int> {};

TEST_P(Signals, RegisteredTemporariesAreRemoved) {
  Scratch s;
  const std::string tmp = s / ".stepscope-abcdef";
  spit(tmp, "partial");
  const pid_t pid = ::fork();
  if (pid == 0) {
    stepscope::register_temporary(tmp);
    ::raise(GetParam());
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), GetParam());  // re-raised: the parent sees the signal
  EXPECT_FALSE(fs::exists(tmp));
}

// A registered directory goes too, once the registered files in it are gone.
TEST_P(Signals, RegisteredDirectoriesAreRemovedAfterTheirFiles) {
  Scratch s;
  std::string dir = s / "stepscope-dir-XXXXXX";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!stepscope::create_registered_temporary_dir(dir)) ::_exit(3);
    std::string file = dir + "/copy-XXXXXX";
    if (stepscope::create_registered_temporary(file) < 0) ::_exit(4);
    ::raise(GetParam());
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), GetParam());
  EXPECT_TRUE(fs::is_empty(s.dir));
}

INSTANTIATE_TEST_SUITE_P(Each, Signals, ::testing::Values(SIGINT, SIGTERM, SIGHUP));

TEST(SignalsOnTheBinary, ThePipedTraceCopyIsRemovedOnSigterm) {
  Scratch s;
  fs::create_directory(s / "tmp");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[0], 0);
    ::close(fds[1]);
    ::setenv("TMPDIR", (s / "tmp").c_str(), 1);
    const std::string bin = binary();
    ::execl(bin.c_str(), bin.c_str(), "analyze", "-", "-q", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[0]);
  const std::string head = "{\"traceEvents\": [";
  ASSERT_EQ(::write(fds[1], head.data(), head.size()), static_cast<ssize_t>(head.size()));
  // Wait for the copy to appear (a loaded machine may take seconds to start the binary), then
  // interrupt the run while it still waits for more.
  for (int i = 0; i < 3000 && fs::is_empty(s / "tmp"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(fs::is_empty(s / "tmp"));
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(fds[1]);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(fs::is_empty(s / "tmp"));
}

}  // namespace
}  // namespace reliability
