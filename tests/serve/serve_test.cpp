// The run history and `stepscope serve`: paths that must not be served, escaping, the store's
// keys and its survival of a killed writer, the regression test of `history`, and the server
// under concurrent requests.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "stepscope/serve.hpp"
#include "stepscope/store.hpp"

namespace fs = std::filesystem;
using namespace stepscope;

extern char** environ;

namespace {

const std::string kStepscope = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope";
const std::string kTracegen = std::string(STEPSCOPE_BINARY_DIR) + "/tools/tracegen/stepscope-tracegen";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// One run of the synthetic job: `gemm_us` sets how long its steps are.
void generate_run(const fs::path& dir, int seed, double gemm_us, int steps, const std::string& date) {
  ASSERT_TRUE(fs::exists(kTracegen)) << kTracegen << " is missing: build the stepscope-tracegen target";
  const std::string cmd = "'" + kTracegen + "' -s healthy --ranks 1 --layers 4 --steps " + std::to_string(steps) +
                          " --seed " + std::to_string(seed) + " --gemm-us " + std::to_string(gemm_us) + " -o '" +
                          dir.string() + "' > /dev/null";
  ASSERT_EQ(sh(cmd), 0) << cmd;
  if (!date.empty()) {
    ASSERT_EQ(sh("touch -d '" + date + "' '" + dir.string() + "'/*"), 0);
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// `stepscope serve` in a child process, its log in a file.
class Server {
 public:
  Server(const fs::path& logdir, const fs::path& store, std::vector<std::string> extra = {}) : log_(store.parent_path() / "serve.log") {
    fs::create_directories(store.parent_path());
    std::vector<std::string> args = {kStepscope, "serve", logdir.string(), "--port", "0", "--store", store.string(), "--poll", "0.5"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, kStepscope.c_str(), &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    const std::regex where(R"(http://[^ ]*:(\d+)/)");
    for (int i = 0; i < 300 && port_ == 0; ++i) {
      std::smatch m;
      const std::string text = read_file(log_);
      if (std::regex_search(text, m, where)) port_ = std::stoi(m[1]);
      else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~Server() { stop(SIGINT); }

  int port() const { return port_; }
  std::string log() const { return read_file(log_); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(30);
    c.set_read_timeout(60);
    return c;
  }
  int stop(int sig) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  // The server's /status as text.
  std::string status() const {
    auto r = client().Get("/status");
    return r ? r->body : std::string();
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

int json_int(const std::string& text, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\"" + key + "\": (\\d+)"))) return -1;
  return std::stoi(m[1]);
}

bool wait_for(const std::function<bool()>& done, int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

TEST(ServePaths, OnlyRegularFilesInsideTheRoot) {
  TempDir t("stepscope-serve-paths");
  const fs::path root = fs::canonical(t.path) / "root";
  fs::create_directories(root / "run");
  std::ofstream(root / "run" / "a.json") << "{}";
  std::ofstream(t.path / "secret.txt") << "secret";
  fs::create_symlink(t.path / "secret.txt", root / "run" / "out.json");
  fs::create_symlink(root / "run" / "a.json", root / "run" / "in.json");
  fs::create_directories(root / ".stepscope");
  std::ofstream(root / ".stepscope" / "runs.sqlite") << "x";
  const std::string r = root.string();
  EXPECT_EQ(resolve_under_root(r, "run/a.json"), (root / "run" / "a.json").string());
  EXPECT_EQ(resolve_under_root(r, "run/in.json"), (root / "run" / "a.json").string());  // a link inside stays served
  for (const std::string& bad : std::vector<std::string>{"../secret.txt", "run/../../secret.txt", "run/out.json", (t.path / "secret.txt").string(),
                                std::string("run/a.json\0x", 12), "run", "", ".stepscope/runs.sqlite", "run/./a.json",
                                "run\\..\\..\\secret.txt", "/etc/passwd"})
    EXPECT_FALSE(resolve_under_root(r, bad)) << bad;
}

TEST(ServePaths, HostileNamesAreText) {
  EXPECT_EQ(html_escape("<script>alert('x')</script>&\""), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
  EXPECT_EQ(html_escape(std::string("a\x01\xff" "b", 4)), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  EXPECT_EQ(html_escape("caf\xC3\xA9"), "caf\xC3\xA9");
}

TEST(Store, JobNames) {
  EXPECT_EQ(job_of_run("nightly/run_0007"), "nightly/run");
  EXPECT_EQ(job_of_run("resnet/2026-11-27"), "resnet");
  EXPECT_EQ(job_of_run("run_12"), "run");
  EXPECT_EQ(job_of_run("20261127"), ".");
  EXPECT_EQ(job_of_run("wild/tutorial.pt.trace.json.gz"), "wild/tutorial");
}

TEST(Store, NothingIsAnalysedTwice) {
  TempDir t("stepscope-store-twice");
  const fs::path logdir = t.path / "logs";
  generate_run(logdir / "job" / "run_01", 1, 0, 8, "2026-11-01 00:00");
  generate_run(logdir / "job" / "run_02", 2, 0, 8, "2026-11-02 00:00");
  Store store(default_store_path(logdir.string()));
  const IndexReport first = index_runs(store, logdir.string());
  EXPECT_EQ(first.found, 2u);
  EXPECT_EQ(first.analysed, 2u);
  const IndexReport again = index_runs(store, logdir.string());
  EXPECT_EQ(again.analysed, 0u);
  EXPECT_EQ(again.known, 2u);
  // The same bytes under another name are the same run.
  fs::rename(logdir / "job" / "run_02", logdir / "job" / "run_03");
  EXPECT_EQ(index_runs(store, logdir.string()).analysed, 0u);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].name, "job/run_01");
  EXPECT_EQ(runs[0].job, "job/run");
  EXPECT_TRUE(runs[0].ok);
  EXPECT_GT(runs[0].step_ns, 0);
  EXPECT_EQ(runs[0].ranks, 1);
  // The stored summaries give back the analysis: its step is the headline's.
  const DiagnosedResult r = store.result(runs[0].id);
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_TRUE(r.diagnosis.present);
  // Summaries an older stepscope wrote are analysed again, in place.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(store.path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE runs SET summary_schema='stepscope.summary/0' WHERE name='job/run_01'", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_EQ(index_runs(store, logdir.string()).analysed, 1u);
  EXPECT_EQ(store.runs().size(), 2u);
}

TEST(Store, AHistoryInsideTheLogDirectoryIsNoRun) {
  TempDir t("stepscope-store-inside");
  const fs::path logdir = t.path / "logs";
  generate_run(logdir / "run_01", 1, 0, 6, "");
  Store store((logdir / "runs.sqlite").string());
  const IndexReport rep = index_runs(store, logdir.string());
  EXPECT_EQ(rep.found, 1u);
  EXPECT_EQ(rep.failed, 0u);
}

TEST(History, FailIfRegressedOnTheSlowRunOnly) {
  TempDir t("stepscope-history");
  const fs::path logdir = t.path / "logs";
  for (int i = 1; i <= 4; ++i)
    generate_run(logdir / "nightly" / ("run_0" + std::to_string(i)), i, 0, 12, "2026-11-0" + std::to_string(i) + " 00:00");
  const std::string cmd = "'" + kStepscope + "' history '" + logdir.string() + "' -q --fail-if-regressed";
  EXPECT_EQ(sh(cmd + " > /dev/null"), 0);
  generate_run(logdir / "nightly" / "run_05", 5, 900, 12, "2026-11-05 00:00");
  EXPECT_EQ(sh(cmd + " --json '" + (t.path / "h.json").string() + "' > /dev/null"), 3);
  const std::string json = read_file(t.path / "h.json");
  EXPECT_NE(json.find("\"schema\": \"stepscope.history/1\""), std::string::npos);
  EXPECT_NE(json.find("\"newest_regressed\": true"), std::string::npos);
  // Without the flag the trend is printed and the status is 0.
  EXPECT_EQ(sh("'" + kStepscope + "' history --store '" + default_store_path(logdir.string()) + "' > /dev/null"), 0);
  EXPECT_EQ(sh("'" + kStepscope + "' history 2> /dev/null"), 2);
  // The history page marks the same run.
  Server s(logdir, default_store_path(logdir.string()));
  ASSERT_GT(s.port(), 0) << s.log();
  auto page = s.client().Get("/history?job=nightly/run");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("class=\"regressed\""), std::string::npos);
  EXPECT_NE(page->body.find("0.5"), std::string::npos);
  EXPECT_NE(page->body.find("nightly/run_05"), std::string::npos);
}

TEST(Serve, RefusesPathsOutsideTheLogDirectory) {
  TempDir t("stepscope-serve-refuse");
  const fs::path logdir = t.path / "logs";
  generate_run(logdir / "run_01", 1, 0, 6, "");
  std::ofstream(t.path / "secret.txt") << "secret";
  fs::create_symlink(t.path / "secret.txt", logdir / "run_01" / "link.json");
  Server s(logdir, t.path / "store" / "runs.sqlite");
  ASSERT_GT(s.port(), 0) << s.log();
  auto c = s.client();
  auto ok = c.Get("/files/run_01/ground_truth.json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  for (const std::string& bad : std::vector<std::string>{"/files/../secret.txt", "/files/%2e%2e/secret.txt", "/files/run_01%2f..%2f..%2fsecret.txt",
                                "/files/%2fetc%2fpasswd", "/files//etc/passwd", "/files/run_01/link.json",
                                "/files/run_01/ground_truth.json%00.txt", "/../secret.txt", "/files/.stepscope/runs.sqlite",
                                "/run?id=../../etc/passwd", "/nothing"}) {
    auto r = c.Get(bad);
    ASSERT_TRUE(r) << bad;
    EXPECT_EQ(r->status, 404) << bad;
    EXPECT_EQ(r->body.find("secret"), std::string::npos) << bad;
  }
  EXPECT_NE(s.log().find("refused"), std::string::npos);
  // DNS rebinding: a page of another site whose name now points here is refused.
  auto rebound = c.Get("/", httplib::Headers{{"Host", "evil.example:6006"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
  auto local = c.Get("/", httplib::Headers{{"Host", "localhost:6006"}});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->status, 200);
  auto post = c.Post("/", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'none'"), std::string::npos);
}

TEST(Serve, HostileFileNamesShowAsText) {
  TempDir t("stepscope-serve-hostile");
  const fs::path logdir = t.path / "logs";
  generate_run(t.path / "gen", 1, 0, 6, "");
  fs::create_directories(logdir);
  fs::copy_file(t.path / "gen" / "rank-0.pt.trace.json", logdir / "<img src=x onerror=alert(1)>.json");
  Server s(logdir, t.path / "store" / "runs.sqlite");
  ASSERT_GT(s.port(), 0) << s.log();
  ASSERT_TRUE(wait_for([&] { return json_int(s.status(), "runs") >= 1; }, 120));
  auto page = s.client().Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->body.find("<img src=x"), std::string::npos);
  EXPECT_NE(page->body.find("&lt;img src=x onerror=alert(1)&gt;.json"), std::string::npos);
  // A run written while the server runs appears without a restart.
  fs::create_directories(logdir / "later");
  std::ofstream(logdir / "later" / "rank-0.pt.trace.json", std::ios::binary)
      << read_file(t.path / "gen" / "rank-0.pt.trace.json") << " ";
  ASSERT_TRUE(wait_for([&] { return json_int(s.status(), "runs") >= 2; }, 120)) << s.status();
  auto later = s.client().Get("/?q=later");
  ASSERT_TRUE(later);
  EXPECT_NE(later->body.find(">later</a>"), std::string::npos);
}

TEST(Serve, WarnsWhenListeningOnEveryInterface) {
  TempDir t("stepscope-serve-any");
  fs::create_directories(t.path / "logs");
  Server s(t.path / "logs", t.path / "store" / "runs.sqlite", {"--host", "0.0.0.0"});
  ASSERT_GT(s.port(), 0) << s.log();
  EXPECT_NE(s.log().find("warning: listening on 0.0.0.0"), std::string::npos) << s.log();
}

// Runs big enough that analysing them takes a while, so requests and a kill land mid-analysis.
void generate_heavy_runs(const fs::path& logdir, int n) {
  generate_run(logdir / "gen", 1, 0, 60, "");
  for (int i = 0; i < n; ++i) {
    const fs::path dir = logdir / "job" / ("run_0" + std::to_string(i));
    fs::create_directories(dir);
    // Distinct bytes per run (a trailing space), so each run has its own key.
    std::string bytes = read_file(logdir / "gen" / "rank-0.pt.trace.json") + std::string(static_cast<std::size_t>(i + 1), ' ');
    std::ofstream(dir / "rank-0.pt.trace.json", std::ios::binary) << bytes;
  }
  fs::remove_all(logdir / "gen");
}

TEST(Serve, AnswersConcurrentRequestsWhileIndexing) {
  TempDir t("stepscope-serve-load");
  const fs::path logdir = t.path / "logs";
  generate_heavy_runs(logdir, 6);
  Server s(logdir, t.path / "store" / "runs.sqlite", {"-j", "1"});
  ASSERT_GT(s.port(), 0) << s.log();
  ASSERT_TRUE(wait_for([&] { return json_int(s.status(), "run_total") > 0; }, 120)) << s.log();
  constexpr int kRequests = 200;
  std::atomic<int> answered{0}, ok{0};
  std::vector<std::thread> threads;
  const char* paths[] = {"/", "/status", "/history", "/?sort=step&order=asc"};
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRequests; ++i)
    threads.emplace_back([&, i] {
      const auto start = std::chrono::steady_clock::now();
      auto r = s.client().Get(paths[i % 4]);
      if (r) {
        ++answered;
        if (r->status == 200) ++ok;
      } else {
        std::printf("no answer to %s: %s after %.1f s\n", paths[i % 4], httplib::to_string(r.error()).c_str(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
    });
  for (auto& th : threads) th.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string after = s.status();
  EXPECT_EQ(answered.load(), kRequests);
  EXPECT_EQ(ok.load(), kRequests);
  std::printf("%d concurrent requests: %d answered, %d with 200, in %.2f s; indexing then: %s", kRequests, answered.load(),
              ok.load(), seconds, after.c_str());
}

TEST(Serve, KilledWhileIndexingLosesOnlyTheRunInProgress) {
  TempDir t("stepscope-serve-kill");
  const fs::path logdir = t.path / "logs";
  constexpr int kRuns = 8;
  generate_heavy_runs(logdir, kRuns);
  const fs::path store_path = t.path / "store" / "runs.sqlite";
  int finished_before_kill = 0;
  {
    Server s(logdir, store_path, {"-j", "1"});
    ASSERT_GT(s.port(), 0) << s.log();
    ASSERT_TRUE(wait_for([&] {
      const std::string st = s.status();
      return json_int(st, "run_done") >= 2 || json_int(st, "runs") >= kRuns;
    }, 300)) << s.log();
    const int status = s.stop(SIGKILL);
    EXPECT_TRUE(WIFSIGNALED(status));
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(store_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  Store store(store_path.string());
  finished_before_kill = static_cast<int>(store.runs().size());
  EXPECT_GE(finished_before_kill, 2);
  EXPECT_LT(finished_before_kill, kRuns) << "every run was analysed before the kill: the test proves nothing";
  for (const auto& r : store.runs()) {
    EXPECT_TRUE(r.ok) << r.name << ": " << r.error;
    EXPECT_NO_THROW(store.result(r.id));
  }
  // On restart the finished runs are known and only the others are analysed.
  const IndexReport rep = index_runs(store, logdir.string());
  EXPECT_EQ(rep.known, static_cast<std::size_t>(finished_before_kill));
  EXPECT_EQ(rep.analysed, static_cast<std::size_t>(kRuns - finished_before_kill));
  EXPECT_EQ(store.runs().size(), static_cast<std::size_t>(kRuns));
  std::printf("killed after %d of %d runs; the other %zu analysed on restart\n", finished_before_kill, kRuns, rep.analysed);
}

TEST(Serve, LimitsEachClientsRate) {
  TempDir t("stepscope-serve-rate");
  fs::create_directories(t.path / "logs");
  Server s(t.path / "logs", t.path / "store" / "runs.sqlite");
  ASSERT_GT(s.port(), 0) << s.log();
  auto c = s.client();
  c.set_keep_alive(true);
  int ok = 0, limited = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1500; ++i) {
    auto r = c.Get("/status");
    ASSERT_TRUE(r);
    (r->status == 200 ? ok : limited) += r->status == 200 || r->status == 429 ? 1 : 0;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A burst of 1,000, then 100 a second.
  EXPECT_GE(ok, 1000);
  EXPECT_LE(ok, 1000 + static_cast<int>(100 * seconds) + 5);
  EXPECT_EQ(ok + limited, 1500);
  std::printf("1500 requests in %.2f s on one connection: %d answered 200, %d answered 429\n", seconds, ok, limited);
}
