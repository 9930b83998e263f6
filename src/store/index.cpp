// Finding the runs of a log directory and analysing the ones the history does not hold yet.
#include <dlfcn.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include "stepscope/diagnose.hpp"
#include "stepscope/error.hpp"
#include "stepscope/store.hpp"
#include "stepscope/verdict.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kHashBlock = 1 << 20;

std::string hex(const unsigned char* p, std::size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

// OpenSSL's SHA-256, from a libcrypto loaded on the first hash: linked, it was mapped and relocated
// by every command (1.4 MiB resident before main) for the run history alone.
class Sha256 {
 public:
  Sha256() : ctx_(lib().ctx_new()) {
    if (!ctx_ || lib().init(ctx_, lib().sha256(), nullptr) != 1) throw InputError("SHA-256: libcrypto failed to start a digest");
  }
  ~Sha256() { lib().ctx_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, std::size_t n) { lib().update(ctx_, data, n); }
  std::string hex_digest() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    lib().final(ctx_, md, &n);
    return hex(md, n);
  }

 private:
  struct Fns {
    EVP_MD_CTX* (*ctx_new)();
    void (*ctx_free)(EVP_MD_CTX*);
    const EVP_MD* (*sha256)();
    int (*init)(EVP_MD_CTX*, const EVP_MD*, ENGINE*);
    int (*update)(EVP_MD_CTX*, const void*, std::size_t);
    int (*final)(EVP_MD_CTX*, unsigned char*, unsigned int*);
  };
  static const Fns& lib() {
    static const Fns fns = load();
    return fns;
  }
  static Fns load() {
    void* h = ::dlopen(STEPSCOPE_LIBCRYPTO, RTLD_NOW | RTLD_LOCAL);  // kept for the process's life
    if (!h) throw InputError(std::string("the run history hashes files with OpenSSL's libcrypto: ") + ::dlerror());
    auto sym = [h](const char* name) {
      void* p = ::dlsym(h, name);
      if (!p) throw InputError(std::string(STEPSCOPE_LIBCRYPTO) + " has no " + name);
      return p;
    };
    Fns f{};
    f.ctx_new = reinterpret_cast<decltype(f.ctx_new)>(sym("EVP_MD_CTX_new"));
    f.ctx_free = reinterpret_cast<decltype(f.ctx_free)>(sym("EVP_MD_CTX_free"));
    f.sha256 = reinterpret_cast<decltype(f.sha256)>(sym("EVP_sha256"));
    f.init = reinterpret_cast<decltype(f.init)>(sym("EVP_DigestInit_ex"));
    f.update = reinterpret_cast<decltype(f.update)>(sym("EVP_DigestUpdate"));
    f.final = reinterpret_cast<decltype(f.final)>(sym("EVP_DigestFinal_ex"));
    return f;
  }
  EVP_MD_CTX* ctx_;
};

bool is_trace_name(const std::string& name) {
  auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
  if (name == "ground_truth.json") return false;  // tools/tracegen writes it beside its traces
  return ends(".json") || ends(".json.gz") || ends(".sqlite");
}

// The names the profiler and launchers give one rank's file of a run.
bool names_a_rank(const std::string& name) {
  static const std::regex kRank(R"((rank[-_]?\d+)|(worker\d+)|(_\d+\.\d{10,}\.pt\.trace\.json(\.gz)?$)|(\.\d{10,}\.pt\.trace\.json(\.gz)?$))",
                                std::regex::icase);
  return std::regex_search(name, kRank);
}

std::int64_t mtime_seconds(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec);
}

std::string relative_name(const fs::path& p, const fs::path& root) {
  std::string rel = p.lexically_relative(root).generic_string();
  // The log directory itself as a run (its rank files at the top) goes by the directory's name.
  if (rel.empty() || rel == ".") return root.filename().empty() ? std::string(".") : root.filename().string();
  return rel;
}

// Inside `root` once links are resolved: a link out of the log directory is not followed.
bool inside(const fs::path& p, const fs::path& root) {
  std::error_code ec;
  const fs::path real = fs::canonical(p, ec);
  if (ec) return false;
  const auto rel = real.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

void add_folder_runs(const fs::path& dir, const fs::path& root, std::vector<RunInputs>& out) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.empty() || name[0] == '.' || !is_trace_name(name)) continue;
    std::error_code fe;
    if (!fs::is_regular_file(it->path(), fe) || !inside(it->path(), root)) continue;
    files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  const bool one_run = files.size() > 1 && std::all_of(files.begin(), files.end(), [](const fs::path& f) {
                         return names_a_rank(f.filename().string());
                       });
  auto run_of = [&](std::vector<fs::path> members, const fs::path& named) {
    RunInputs r;
    r.name = relative_name(named, root);
    r.job = job_of_run(r.name);
    for (const auto& m : members) {
      r.files.push_back(m.string());
      r.date = std::max(r.date, mtime_seconds(m));
    }
    out.push_back(std::move(r));
  };
  // A folder of a single trace is the run the profiler wrote there (but the log directory is no run).
  if (one_run || (files.size() == 1 && dir != root)) {
    run_of(files, dir);
  } else {
    for (const auto& f : files) run_of({f}, f);
  }
}

void walk(const fs::path& dir, const fs::path& root, std::vector<RunInputs>& out, int depth) {
  // Deeper than any log layout; a guard against pathological trees.
  if (depth > 16) return;
  add_folder_runs(dir, root, out);
  std::vector<fs::path> subdirs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code de;
    if (it->is_symlink(de)) continue;  // a linked folder could loop or leave the log directory
    if (it->is_directory(de)) subdirs.push_back(it->path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& d : subdirs) walk(d, root, out, depth + 1);
}


std::string sha256_of_text(const std::string& text) {
  Sha256 h;
  h.update(text.data(), text.size());
  return h.hex_digest();
}

std::string content_hash(Store& store, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path + ": cannot read it");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::int64_t mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (auto h = store.cached_hash(path, size, mtime_ns)) return *h;
  std::string h = file_sha256(path);
  store.cache_hash(path, size, mtime_ns, h);
  return h;
}

std::string run_key(Store& store, const RunInputs& run) {
  std::string all;
  for (const auto& f : run.files) all += content_hash(store, f) + "\n";
  return sha256_of_text(all);
}

const char* trust_level(const Trust& t) {
  if (t.blocks()) return "inconclusive";
  for (const auto& w : t.warnings)
    if (w.severity == TrustSeverity::Limits) return "limited";
  return "ok";
}

std::size_t steady_steps(const AnalysisResult& r) {
  std::size_t n = 0;
  for (const auto& p : each_rank(r, &RankAnalysis::partition)) {
    std::size_t k = 0;
    for (const auto& s : p.steps) k += s.warmup ? 0 : 1;
    n = std::max(n, k ? k : p.steps.size());
  }
  return n;
}

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string job_of_run(const std::string& name) {
  const fs::path p(name);
  std::string last = p.filename().string();
  for (const char* ext : {".gz", ".json", ".sqlite", ".trace", ".pt"})
    if (last.size() > std::string_view(ext).size() && last.ends_with(ext)) last.resize(last.size() - std::string_view(ext).size());
  // Dates, times and counters: digits and the separators between them.
  std::size_t end = last.size();
  while (end > 0 && std::string_view("0123456789-_.:T").find(last[end - 1]) != std::string_view::npos) --end;
  const bool had_suffix = end < last.size();
  last.resize(end);
  const std::string parent = p.parent_path().generic_string();
  if (last.empty()) return parent.empty() ? std::string(".") : parent;
  if (!had_suffix && parent.empty()) return last;
  return parent.empty() ? last : parent + "/" + last;
}

std::vector<RunInputs> discover_runs(const std::string& logdir) {
  std::error_code ec;
  const fs::path root = fs::canonical(logdir, ec);
  if (ec || !fs::is_directory(root)) throw InputError(logdir + ": not a readable directory");
  std::vector<RunInputs> out;
  walk(root, root, out, 0);
  return out;
}

std::string file_sha256(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path + ": cannot read it");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closing(f, std::fclose);
  Sha256 h;
  std::string buf(kHashBlock, '\0');
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update(buf.data(), n);
  if (std::ferror(f) != 0) throw InputError(path + ": read error");
  return h.hex_digest();
}

namespace {

// Thrown from the reader's progress report when the caller asks to stop: the run in progress is
// dropped, not stored as failed, and analysed again next time.
struct Stopped : std::exception {
  const char* what() const noexcept override { return "stopped"; }
};

StoredRun analyse_run(const RunInputs& in, const std::string& key, const fs::path& root, const IndexOptions& opts,
                      IndexProgress& progress, SummaryFile& summary) {
  StoredRun r;
  r.key = key;
  r.name = in.name;
  r.job = in.job;
  r.date = in.date;
  for (const auto& f : in.files) r.files.push_back(relative_name(f, root));
  const auto t0 = std::chrono::steady_clock::now();
  try {
    PipelineOptions po;
    po.ingest.jobs = opts.jobs;
    po.analyze.jobs = opts.jobs;
    po.keep_summary = true;
    po.keep_trace = false;
    po.ingest.progress = [&](std::uint64_t done, std::uint64_t total) {
      if (opts.stop && opts.stop()) throw Stopped();
      progress.bytes_done = done;
      progress.bytes_total = total;
      if (opts.progress) opts.progress(progress);
    };
    Analysis a = analyze_paths(in.files, po);
    const JobStep js = job_step(a.result);
    r.ok = true;
    r.ranks = static_cast<int>(a.result.ranks.size());
    r.steps = steady_steps(a.result);
    r.step_ns = js.step_ns;
    r.category_ns = js.category;
    if (a.result.diagnosis.present) {
      const Verdict& v = a.result.diagnosis.verdict;
      r.bound = bound_id(v.bound, v.gpu);
      r.verdict = v.headline;
    }
    r.trust = trust_level(a.result.job.trust);
    for (const auto& w : a.result.job.trust.warnings)
      if (const std::string_view code = trust_code_name(w.code);
          std::find(r.trust_codes.begin(), r.trust_codes.end(), code) == r.trust_codes.end())
        r.trust_codes.emplace_back(code);
    summary = std::move(a.summary);
  } catch (const Stopped&) {
    throw;
  } catch (const std::exception& e) {
    // Remembered as well, so that a file that is no trace is not read again at every scan.
    r.ok = false;
    r.error = e.what();
  }
  r.analysis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.analysed_at = now_seconds();
  return r;
}

}  // namespace

IndexReport index_runs(Store& store, const std::string& logdir, const IndexOptions& opts) {
  IndexReport rep;
  const auto runs = discover_runs(logdir);
  const fs::path root = fs::canonical(logdir);
  rep.found = runs.size();
  std::error_code ec;
  const fs::path own = fs::weakly_canonical(store.path(), ec);
  std::vector<std::pair<const RunInputs*, std::string>> todo;
  for (const auto& run : runs) {
    // A history kept inside the log directory under a visible name is no nsys export.
    if (run.files.size() == 1 && fs::path(run.files[0]) == own) {
      --rep.found;
      continue;
    }
    std::string key;
    try {
      key = run_key(store, run);
    } catch (const InputError&) {
      continue;  // a file that vanished or cannot be read: the next scan sees it again
    }
    if (store.has(key)) {
      ++rep.known;
      continue;
    }
    todo.emplace_back(&run, key);
  }
  IndexProgress progress;
  progress.total = todo.size();
  for (const auto& [run, key] : todo) {
    if (opts.stop && opts.stop()) break;
    progress.run = run->name;
    progress.bytes_done = progress.bytes_total = 0;
    if (opts.progress) opts.progress(progress);
    SummaryFile summary;
    StoredRun r;
    try {
      r = analyse_run(*run, key, root, opts, progress, summary);
    } catch (const Stopped&) {
      break;
    }
    store.put(r, summary);
    ++progress.done;
    (r.ok ? rep.analysed : rep.failed) += 1;
    if (r.ok) rep.seconds.push_back(r.analysis_seconds);
    if (opts.progress) opts.progress(progress);
  }
  return rep;
}

}  // namespace stepscope
