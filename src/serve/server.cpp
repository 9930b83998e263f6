// `stepscope serve`: the HTTP side (serve/http.hpp), the background analysis, and the limits that
// keep a local web app over a log directory from exposing more than that directory.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "serve/http.hpp"
#include "serve/serve_internal.hpp"
#include "stepscope/annotate.hpp"
#include "stepscope/diff.hpp"
#include "stepscope/error.hpp"
#include "stepscope/html.hpp"
#include "stepscope/serve.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using namespace serve_detail;

// The pages are small and the app is read-only: no request needs a body.
constexpr std::size_t kMaxPayload = 4096;
constexpr std::size_t kThreads = 32;
constexpr std::size_t kCachedPages = 32;

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One line per log entry with control characters shown as '?', since paths come from clients.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  return out;
}

// A token bucket per client address: `rate` requests a second, `burst` at once.
class RateLimiter {
 public:
  RateLimiter(double rate, double burst) : rate_(rate), burst_(burst) {}
  bool allow(const std::string& client) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    if (buckets_.size() > 10000) buckets_.clear();  // bounded memory whatever the clients
    auto [it, fresh] = buckets_.try_emplace(client, Bucket{burst_, now});
    Bucket& b = it->second;
    if (!fresh) {
      b.tokens = std::min(burst_, b.tokens + rate_ * std::chrono::duration<double>(now - b.last).count());
      b.last = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
  };
  double rate_, burst_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
};

bool is_local(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

class App {
 public:
  explicit App(const ServeOptions& o)
      : opts_(o),
        root_(fs::canonical(o.logdir).string()),
        store_path_(o.store_path.empty() ? default_store_path(root_) : o.store_path),
        reader_(store_path_),
        limiter_(o.rate_per_second, o.rate_burst) {
    label_ = o.logdir;
    loopback_ = is_local(o.host);
  }

  void log(const std::string& line) {
    std::lock_guard lock(log_mu_);
    if (opts_.log) {
      opts_.log(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
  }

  // The background analysis: scan, analyse what is new, wait, again, until stopped.
  void index_loop() {
    Store writer(store_path_);
    while (!stopping_) {
      {
        std::lock_guard lock(state_mu_);
        state_.scanning = true;
      }
      IndexOptions io;
      io.jobs = opts_.jobs;
      io.stop = [this] { return stopping_.load(); };
      io.progress = [this](const IndexProgress& p) {
        std::lock_guard lock(state_mu_);
        state_.run = p.run;
        state_.done = p.done;
        state_.total = p.total;
        state_.bytes_done = p.bytes_done;
        state_.bytes_total = p.bytes_total;
      };
      std::string error;
      IndexReport rep;
      try {
        rep = index_runs(writer, root_, io);
      } catch (const std::exception& e) {
        error = e.what();
      }
      for (double s : rep.seconds) log(fmt::format("indexed a run in {:.3f} s", s));
      {
        std::lock_guard lock(state_mu_);
        state_ = IndexState{};
        state_.last_scan = now_seconds();
        state_.last_error = error;
      }
      std::unique_lock lock(wake_mu_);
      wake_.wait_for(lock, std::chrono::duration<double>(opts_.poll_seconds), [this] { return stopping_.load(); });
    }
  }

  void stop() {
    stopping_ = true;
    wake_.notify_all();
  }

  IndexState state() {
    std::lock_guard lock(state_mu_);
    return state_;
  }

  http::Routes routes() {
    http::Routes r;
    r.before = [this](const http::Request& req, http::Response& res) { return guard(req, res); };
    const auto page = [this](void (App::*f)(const http::Request&, http::Response&)) -> http::Handler {
      return [this, f](const http::Request& req, http::Response& res) { (this->*f)(req, res); };
    };
    r.gets = {{"/", page(&App::runs_page)},           {"/run", page(&App::run_page)},
              {"/diff", page(&App::diff_page)},       {"/history", page(&App::history_page)},
              {"/annotated", page(&App::annotated)},  {"/status", page(&App::status)},
              {R"(/files/(.*))", page(&App::file)}};
    r.error = [this](const http::Request& req, http::Response& res) {
      if (!res.body.empty()) return;  // a handler's own answer, logged there
      if (res.status == 404) log(fmt::format("refused {} {}: no such page", req.remote_addr, printable(req.target)));
      html(res, page_begin("not found", label_) + "<h1>" + std::to_string(res.status) + "</h1>" + page_end());
    };
    r.exception = [this](const http::Request& req, http::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      log("error on " + printable(req.path) + ": " + printable(what));
      res.status = 500;
      html(res, page_begin("error", label_) + "<h1>error</h1><p>" + html_escape(what) + "</p>" + page_end());
    };
    r.log = [this](const http::Request& req, const http::Response& res) {
      log(fmt::format("{} {} {} {}", req.remote_addr, req.method, printable(req.target), res.status));
    };
    return r;
  }

 private:
  // Read-only, from allowed hosts, within the client's rate: false when answered here.
  bool guard(const http::Request& req, http::Response& res) {
    security_headers(res, kPageCsp);
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      return false;
    }
    if (loopback_ && !local_host_header(req.get_header_value("Host"))) {
      // A page elsewhere that rebinds its own name to 127.0.0.1 would otherwise read the runs.
      log(fmt::format("refused {} {}: Host '{}' is not this machine", req.remote_addr, printable(req.target),
                      printable(req.get_header_value("Host"))));
      res.status = 403;
      res.set_content("forbidden\n", "text/plain; charset=utf-8");
      return false;
    }
    if (!limiter_.allow(req.remote_addr)) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content("too many requests\n", "text/plain; charset=utf-8");
      return false;
    }
    return true;
  }

  // The Host header of a request to a server on the loopback interface: a loopback name or address.
  static bool local_host_header(const std::string& host) {
    std::string name = host;
    if (!name.empty() && name.front() == '[') {
      name = name.substr(1, name.find(']') == std::string::npos ? std::string::npos : name.find(']') - 1);
    } else if (const auto colon = name.rfind(':'); colon != std::string::npos) {
      name.resize(colon);
    }
    return name == "localhost" || name == "127.0.0.1" || name == "::1" || name.rfind("127.", 0) == 0;
  }

  static void security_headers(http::Response& res, const std::string& csp) {
    // Replaced, not added: two policies would both apply, and the stricter would block the
    // report's own hashed script.
    for (const char* h : {"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options",
                          "Cache-Control"})
      res.headers.erase(h);
    res.set_header("Content-Security-Policy", csp);
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("X-Frame-Options", "DENY");
    res.set_header("Cache-Control", "no-store");
  }

  // The policy a report page declares in its own <meta>, sent as the header too so that both agree.
  static std::string csp_of(const std::string& page) {
    static const std::regex kMeta("<meta http-equiv=\"Content-Security-Policy\" content=\"([^\"]*)\"");
    std::smatch m;
    const auto head = page.substr(0, std::min<std::size_t>(page.size(), 4096));
    return std::regex_search(head, m, kMeta) ? m[1].str() : std::string(kPageCsp);
  }

  static void html(http::Response& res, const std::string& body) {
    res.set_content(body, "text/html; charset=utf-8");
  }

  void not_found(const http::Request& req, http::Response& res, const std::string& why) {
    log(fmt::format("refused {} {}: {}", req.remote_addr, printable(req.target), why));
    res.status = 404;
    html(res, page_begin("not found", label_) + "<h1>not found</h1>" + page_end());
  }

  std::optional<StoredRun> run_param(const http::Request& req, const char* name) {
    const std::string v = req.get_param_value(name);
    if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return reader_.get(std::stoll(v));
  }

  void runs_page(const http::Request& req, http::Response& res) {
    RunsQuery q;
    if (req.has_param("sort")) q.sort = req.get_param_value("sort");
    q.descending = req.get_param_value("order") != "asc";
    q.q = req.get_param_value("q");
    q.bound = req.get_param_value("bound");
    q.trust = req.get_param_value("trust");
    q.job = req.get_param_value("job");
    const std::string base = req.get_param_value("base");
    if (!base.empty() && base.size() < 18 && base.find_first_not_of("0123456789") == std::string::npos) q.base = std::stoll(base);
    const std::vector<StoredRun> runs = reader_.runs();
    html(res, render_runs_page(runs, q, state(), label_));
  }

  void run_page(const http::Request& req, http::Response& res) {
    const auto run = run_param(req, "id");
    if (!run) return not_found(req, res, "no such run");
    std::string page = cached(run->id);
    if (page.empty()) {
      if (!run->ok) {
        page = page_begin("run " + run->name, label_) + "<h1>" + html_escape(run->name) +
               "</h1><p class=\"warn\">not analysed: " + html_escape(run->error) + "</p>" + page_end();
      } else {
        page = decorate_run_page(render_html(reader_.result(run->id)), *run, label_);
      }
      remember(run->id, page);
    }
    security_headers(res, csp_of(page));
    html(res, page);
  }

  // A run's events again, for what the history does not keep (kernels, annotated traces).
  Analysis reanalyse(const StoredRun& run, bool keep_trace) {
    std::vector<std::string> files;
    for (const auto& f : run.files) {
      auto path = resolve_under_root(root_, f);
      if (!path) throw InputError(run.name + ": its file " + f + " is no longer in the log directory");
      files.push_back(*path);
    }
    PipelineOptions po;
    po.ingest.jobs = opts_.jobs;
    po.analyze.jobs = opts_.jobs;
    po.keep_trace = keep_trace;
    std::lock_guard heavy(heavy_mu_);  // one such analysis at a time: memory stays bounded under load
    return analyze_paths(files, po);
  }

  void diff_page(const http::Request& req, http::Response& res) {
    const auto base = run_param(req, "base"), test = run_param(req, "test");
    if (!base || !test || !base->ok || !test->ok) return not_found(req, res, "no such pair of analysed runs");
    DiffResult d = diff_runs(reanalyse(*base, true), reanalyse(*test, true));
    d.base_label = base->name;
    d.test_label = test->name;
    const std::string page = decorate_diff_page(render_diff_html(d), *base, *test, label_);
    security_headers(res, csp_of(page));
    html(res, page);
  }

  void history_page(const http::Request& req, http::Response& res) {
    const std::string job = req.get_param_value("job");
    std::vector<JobHistory> jobs;
    for (const auto& h : histories())
      if (job.empty() || h.job == job) jobs.push_back(h);
    html(res, render_history_page(jobs, job, label_));
  }

  void annotated(const http::Request& req, http::Response& res) {
    const auto run = run_param(req, "id");
    if (!run || !run->ok) return not_found(req, res, "no such analysed run");
    const std::string rank_text = req.get_param_value("rank");
    const int rank = rank_text.empty() || rank_text.size() > 6 || rank_text.find_first_not_of("0123456789") != std::string::npos
                         ? 0
                         : std::stoi(rank_text);
    const Analysis a = reanalyse(*run, true);
    const fs::path tmp = fs::temp_directory_path() /
                         fmt::format("stepscope-serve-{}-{}", ::getpid(), counter_.fetch_add(1));
    std::error_code ec;
    fs::create_directories(tmp, ec);
    const auto files = write_annotated_traces(a, (tmp / "out").string());
    std::string body, name;
    for (const auto& f : files)
      if (f.rank == rank || files.size() == 1) {
        std::ifstream in(f.path, std::ios::binary);
        body.assign(std::istreambuf_iterator<char>(in), {});
        name = fs::path(f.path).filename().string();
        break;
      }
    fs::remove_all(tmp, ec);
    if (name.empty()) return not_found(req, res, "no such rank");
    if (name == "out") name = "annotated.json";
    std::string safe;
    for (char c : name) safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
    res.set_header("Content-Disposition", "attachment; filename=\"" + safe + "\"");
    res.set_content(body, "application/json");
  }

  void status(const http::Request&, http::Response& res) {
    const IndexState s = state();
    const std::size_t runs = reader_.runs().size();
    res.set_content(fmt::format("{{\"scanning\": {}, \"run_done\": {}, \"run_total\": {}, \"bytes_done\": {}, "
                                "\"bytes_total\": {}, \"last_scan\": {}, \"runs\": {}}}\n",
                                s.scanning, s.done, s.total, s.bytes_done, s.bytes_total, s.last_scan, runs),
                    "application/json");
  }

  void file(const http::Request& req, http::Response& res) {
    // The HTTP library has decoded the path once; a second layer of encoding ("%252e") is not decoded again.
    const std::string rel = req.matches.at(1);
    const auto path = resolve_under_root(root_, rel);
    if (!path) return not_found(req, res, "outside the log directory or no such file");
    auto size = fs::file_size(*path);
    auto stream = std::make_shared<std::ifstream>(*path, std::ios::binary);
    if (!*stream) return not_found(req, res, "cannot be read");
    const std::string name = fs::path(*path).filename().string();
    std::string safe;
    for (char c : name) safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
    res.set_header("Content-Disposition", "attachment; filename=\"" + safe + "\"");
    res.set_content_provider(size, "application/octet-stream",
                             [stream](std::size_t offset, std::size_t length, const http::Writer& write) {
                               std::string buf(std::min<std::size_t>(length, 1 << 16), '\0');
                               stream->seekg(static_cast<std::streamoff>(offset));
                               stream->read(buf.data(), static_cast<std::streamsize>(buf.size()));
                               const auto got = static_cast<std::size_t>(stream->gcount());
                               if (got == 0) return false;
                               write(buf.data(), got);
                               return true;
                             });
  }

  // Every job's history, computed once per state of the store: each point decodes two runs'
  // summaries and bootstraps their steps, too much to redo for every request.
  std::vector<JobHistory> histories() {
    std::lock_guard lock(history_mu_);
    const std::vector<StoredRun> runs = reader_.runs();
    std::int64_t last = 0;
    for (const auto& r : runs) last = std::max(last, r.id);
    const auto state = std::make_pair(runs.size(), last);
    if (state != history_state_ || !history_valid_) {
      histories_ = job_histories(reader_);
      history_state_ = state;
      history_valid_ = true;
    }
    return histories_;
  }

  std::string cached(std::int64_t id) {
    std::lock_guard lock(cache_mu_);
    auto it = pages_.find(id);
    return it == pages_.end() ? std::string() : it->second;
  }

  void remember(std::int64_t id, const std::string& page) {
    std::lock_guard lock(cache_mu_);
    if (pages_.size() >= kCachedPages) pages_.erase(pages_.begin());
    pages_[id] = page;
  }

  ServeOptions opts_;
  std::string root_, store_path_, label_;
  bool loopback_ = true;
  // Shared by the request threads: the connection is opened serialized (SQLITE_OPEN_FULLMUTEX)
  // and each Store call is one statement.
  Store reader_;
  std::mutex state_mu_, log_mu_, cache_mu_, heavy_mu_, wake_mu_;
  std::condition_variable wake_;
  IndexState state_;
  RateLimiter limiter_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> counter_{0};
  std::map<std::int64_t, std::string> pages_;
  std::mutex history_mu_;
  std::vector<JobHistory> histories_;
  std::pair<std::size_t, std::int64_t> history_state_{0, 0};
  bool history_valid_ = false;
};

}  // namespace

int serve(const ServeOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(o.logdir, ec)) throw InputError(o.logdir + ": not a readable directory");
  App app(o);
  if (!is_local(o.host))
    app.log("warning: listening on " + o.host + ": anyone who can reach this machine can read the log directory's runs");

  // SIGINT and SIGTERM go to one thread that stops the server; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  http::Settings settings;
  settings.threads = kThreads;
  settings.max_payload = kMaxPayload;
  const std::unique_ptr<http::Server> svr = http::make_server(settings, app.routes());
  const int port = svr->bind(o.host, o.port);
  if (port < 0) throw InputError(fmt::format("serve: cannot listen on {}:{} (in use, or no such address)", o.host, o.port));
  const std::string shown = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  app.log(fmt::format("serving {} at http://{}:{}/ (Ctrl-C stops)", o.logdir, shown, port));

  std::thread indexer([&app] { app.index_loop(); });
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    app.stop();
    svr->stop();
  });
  svr->listen();
  app.stop();
  // The waiter may still wait for a signal when the server stopped on its own: send it one.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  indexer.join();
  return 0;
}

}  // namespace stepscope
