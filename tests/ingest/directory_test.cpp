// Directories of rank files with entries that cannot be read (symlink loops, dangling links, no
// permission) and rank files cut before their first event: each is named with its real reason,
// skipped with a warning while other ranks remain, and refused when nothing else is left.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/pipeline.hpp"
#include "test_util.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

const std::string kLoopReason = "Too many levels of symbolic links";

// A small rank trace with two ProfilerSteps, enough to analyse.
std::string rank_trace(int rank) {
  std::string events;
  for (int s = 0; s < 2; ++s) {
    const int t = 1000 + s * 10000;
    if (s) events += ",";
    events += "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" + std::to_string(s) +
              "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(t) + ", \"dur\": 9000}," +
              "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": " +
              std::to_string(t + 100) + ", \"dur\": 8000}";
  }
  return "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": " + std::to_string(rank) +
         ", \"world_size\": 2}, \"traceEvents\": [" + events + "]}";
}

// The message of the InputError `f` throws, or "" if it throws none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Whether a warning's line, as the reports print it, holds `a` and `b`.
bool has_warning(const std::vector<IngestWarning>& warnings, const std::string& a, const std::string& b = "") {
  return std::any_of(warnings.begin(), warnings.end(), [&](const IngestWarning& w) {
    const std::string line = ingest_warning_text(w);
    return line.find(a) != std::string::npos && line.find(b) != std::string::npos;
  });
}

std::string joined(const std::vector<IngestWarning>& v) {
  std::string out;
  for (const auto& w : v) out += ingest_warning_text(w) + "\n";
  return out;
}

TEST(Directory, SymlinkLoopEntryIsSkippedNamingIt) {
  TempDir d;
  d.file("rank0.json", rank_trace(0));
  const fs::path loop = fs::path(d.path()) / "rank1.json";
  fs::create_symlink(loop, loop);  // a link to itself
  Trace t = read_traces({d.path()});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_TRUE(has_warning(t.warnings, loop.string() + ": cannot read: " + kLoopReason, "skipped")) << joined(t.warnings);
}

TEST(Directory, DanglingLinkEntryIsSkippedNamingIt) {
  TempDir d;
  d.file("rank0.json", rank_trace(0));
  const fs::path link = fs::path(d.path()) / "rank1.json.gz";
  fs::create_symlink(fs::path(d.path()) / "gone.json.gz", link);
  Trace t = read_traces({d.path()});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_TRUE(has_warning(t.warnings, link.string() + ": cannot read: No such file or directory")) << joined(t.warnings);
}

TEST(Directory, LoopsAreNamedAndListedFilesStayWhenOnlyExpanding) {
  TempDir d;
  const std::string good = d.file("rank0.json", rank_trace(0));
  const fs::path loop = fs::path(d.path()) / "rank1.json";
  fs::create_symlink(loop, loop);
  EXPECT_EQ(expand_trace_paths({d.path()}), std::vector<std::string>{good});
}

TEST(Directory, NothingButUnreadableEntriesIsRefusedWithTheReason) {
  TempDir d;
  const fs::path loop = fs::path(d.path()) / "rank0.json";
  fs::create_symlink(loop, loop);
  d.file("notes.txt", "not a trace");
  const std::string msg = error_of([&] { read_traces({d.path()}); });
  // The entry's warning, as the reading would have printed it beside other ranks.
  EXPECT_EQ(msg, d.path() + ": no readable trace in the directory (" + loop.string() + ": cannot read: " + kLoopReason +
                     "; skipped)");
}

TEST(Directory, NamedSymlinkLoopGivesItsReasonNotAMissingFile) {
  TempDir d;
  const fs::path loop = fs::path(d.path()) / "trace.json";
  fs::create_symlink(loop, loop);
  const std::string msg = error_of([&] { read_traces({loop.string()}); });
  EXPECT_EQ(msg, loop.string() + ": cannot read: " + kLoopReason);
  const std::string below = error_of([&] { read_traces({(loop / "x.json").string()}); });
  EXPECT_NE(below.find(kLoopReason), std::string::npos) << below;
}

TEST(Directory, MissingPathIsStillNoSuchFile) {
  TempDir d;
  const std::string p = d.path() + "/absent.json";
  EXPECT_EQ(error_of([&] { read_traces({p}); }), p + ": no such file or directory");
}

// Runs `f` in a child process as the unprivileged user "nobody" (permissions bind root in no
// way) and returns what it wrote to the pipe; "(skipped)" where the child cannot drop to it.
std::string as_unprivileged_user(const std::function<std::string()>& f) {
  int fds[2];
  if (::pipe(fds) != 0) return "(skipped)";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out = "(skipped)";
    if (::geteuid() != 0 || (::setgid(65534) == 0 && ::setuid(65534) == 0)) {
      try {
        out = f();
      } catch (const std::exception& e) {
        out = std::string("other exception: ") + e.what();
      }
    }
    ssize_t written = ::write(fds[1], out.data(), out.size());
    ::_exit(written == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

TEST(Directory, UnreadableEntryIsSkippedWithPermissionDenied) {
  TempDir d;
  d.file("rank0.json", rank_trace(0));
  const std::string locked = d.file("rank1.json", rank_trace(1));
  fs::permissions(locked, fs::perms::none);
  const std::string out = as_unprivileged_user([&] {
    Trace t = read_traces({d.path()}, IngestOptions{1, {}});
    return std::to_string(t.ranks.size()) + "\n" + joined(t.warnings);
  });
  if (out == "(skipped)") GTEST_SKIP() << "cannot run as an unprivileged user here";
  EXPECT_EQ(out.substr(0, 2), "1\n") << out;
  EXPECT_NE(out.find(locked + ": cannot read: Permission denied; skipped"), std::string::npos) << out;
}

TEST(Directory, NamedUnreadableFileAndDirectoryAreRefused) {
  TempDir d;
  const std::string locked = d.file("rank1.json", rank_trace(1));
  fs::permissions(locked, fs::perms::none);
  const fs::path closed = fs::path(d.path()) / "closed";
  fs::create_directories(closed);
  const std::string inside = d.file("closed/rank0.json", rank_trace(0));
  fs::permissions(closed, fs::perms::none);
  const std::string out = as_unprivileged_user([&] {
    return error_of([&] { read_traces({locked}); }) + "\n" + error_of([&] { read_traces({closed.string()}); }) +
           "\n" + error_of([&] { read_traces({inside}); });
  });
  fs::permissions(closed, fs::perms::owner_all);  // so that the scratch directory can be removed
  if (out == "(skipped)") GTEST_SKIP() << "cannot run as an unprivileged user here";
  EXPECT_NE(out.find(locked + ": cannot read: Permission denied\n"), std::string::npos) << out;
  EXPECT_NE(out.find(closed.string() + ": cannot list directory: Permission denied\n"), std::string::npos) << out;
  EXPECT_NE(out.find(inside + ": cannot read: Permission denied"), std::string::npos) << out;
}

// What a job killed while the profiler was writing leaves: the header, maybe a metadata event,
// then nothing.
const char* const kCutBeforeFirstEvent = "{\"schemaVersion\": 1, \"traceEvents\": [";
const char* const kCutAfterMetadata =
    "{\"schemaVersion\": 1, \"traceEvents\": [{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, "
    "\"tid\": 0, \"args\": {\"name\": \"python\"}},";

TEST(Directory, RankCutBeforeItsFirstEventIsLeftOutNamingIt) {
  TempDir d;
  d.file("rank0.json", rank_trace(0));
  const std::string cut = d.file("rank1.json", kCutBeforeFirstEvent);
  const std::string meta = d.file("rank2.json", kCutAfterMetadata);
  Trace t = read_traces({d.path()});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_TRUE(has_warning(t.warnings, cut + ": no events before the file ends; left out of the ranks")) << joined(t.warnings);
  EXPECT_TRUE(has_warning(t.warnings, meta + ": no events before the file ends; left out of the ranks")) << joined(t.warnings);
  // Still part of the file list: it was found, only its rank is empty.
  EXPECT_EQ(expand_trace_paths({d.path()}).size(), 3u);
}

TEST(Directory, EmptyRankDoesNotChangeTheAnalysis) {
  TempDir alone, with_cut;
  const std::string a = alone.file("rank0.json", rank_trace(0));
  with_cut.file("rank0.json", rank_trace(0));
  with_cut.file("rank1.json", kCutBeforeFirstEvent);
  const Analysis one = analyze_paths({a});
  const Analysis both = analyze_paths({with_cut.path()});
  ASSERT_EQ(both.result.ranks.size(), 1u);
  ASSERT_EQ(both.result.ranks.size(), one.result.ranks.size());
  EXPECT_TRUE(has_warning(both.result.job.warnings, "rank1.json: no events before the file ends")) << joined(both.result.job.warnings);
}

TEST(Directory, SingleFileCutBeforeItsFirstEventKeepsItsRank) {
  TempDir d;
  const std::string cut = d.file("trace.json", kCutBeforeFirstEvent);
  Trace t = read_traces({cut});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_EQ(t.ranks[0].events.size(), 0u);
  EXPECT_TRUE(t.ranks[0].truncated);
  // A directory of nothing but such files keeps them too: there is no other rank to analyse.
  TempDir only;
  only.file("rank0.json", kCutBeforeFirstEvent);
  EXPECT_EQ(read_traces({only.path()}).ranks.size(), 1u);
}

// A rank that recorded nothing still writes a complete file: `{"traceEvents": []}`.
const char* const kCompleteButEmpty = "{\"schemaVersion\": 1, \"traceEvents\": []}";

TEST(Directory, CompleteTraceWithoutEventsIsLeftOutNamingIt) {
  TempDir d;
  d.file("rank0.json", rank_trace(0));
  const std::string empty = d.file("rank1.json", kCompleteButEmpty);
  Trace t = read_traces({d.path()}, IngestOptions{2, {}});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_TRUE(has_warning(t.warnings, empty + ": the trace holds no events; left out of the ranks")) << joined(t.warnings);
}

TEST(Directory, CompleteTracesWithoutEventsAloneAreRefused) {
  TempDir d;
  const std::string empty = d.file("rank0.json", kCompleteButEmpty);
  d.file("rank1.json", kCompleteButEmpty);
  EXPECT_EQ(error_of([&] { read_traces({d.path()}); }), empty + ": the trace holds no events");
  // Named alone, the file is refused as before.
  EXPECT_EQ(error_of([&] { read_traces({empty}); }), empty + ": the trace holds no events");
}

}  // namespace
}  // namespace stepscope
