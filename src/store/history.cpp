// A job's runs in time order, each compared with the run before it by diff's own test.
#include <map>

#include "stepscope/diff.hpp"
#include "stepscope/error.hpp"
#include "stepscope/store.hpp"

namespace stepscope {
namespace {

// diff's step comparison reads only the analysis results when the runs carry no events, which
// is all the history keeps: the same bootstrap over the same steady-state steps.
StepChange compare(const DiagnosedResult& base, const DiagnosedResult& test) {
  Analysis b, t;
  b.result = base;
  t.result = test;
  return diff_runs(std::move(b), std::move(t)).step;
}

void compare_with_previous(const Store& store, JobHistory& h) {
  std::map<std::int64_t, DiagnosedResult> results;
  auto result_of = [&](std::int64_t id) -> const DiagnosedResult& {
    auto it = results.find(id);
    if (it == results.end()) it = results.emplace(id, store.result(id)).first;
    return it->second;
  };
  for (std::size_t i = 1; i < h.points.size(); ++i) {
    HistoryPoint& p = h.points[i];
    const StoredRun& base = h.points[i - 1].run;
    StepChange s;
    try {
      s = compare(result_of(base.id), result_of(p.run.id));
    } catch (const InputError&) {
      continue;  // summaries of an older stepscope: no comparison until the run is analysed again
    }
    p.has_baseline = true;
    p.baseline = base.name;
    p.speedup = s.speedup;
    p.speedup_lo = s.speedup_lo;
    p.speedup_hi = s.speedup_hi;
    p.significant = s.significant;
    p.regressed = s.significant && s.speedup < 1;
    results.erase(base.id);  // each result is needed by its successor only
  }
}

}  // namespace

std::vector<JobHistory> job_histories(const Store& store, const std::string& job) {
  std::map<std::string, JobHistory> by_job;
  for (auto& r : store.runs()) {
    if (!r.ok || (!job.empty() && r.job != job)) continue;
    auto& h = by_job[r.job];
    h.job = r.job;
    HistoryPoint p;
    p.run = std::move(r);
    h.points.push_back(std::move(p));
  }
  std::vector<JobHistory> out;
  for (auto& [name, h] : by_job) {
    compare_with_previous(store, h);
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace stepscope

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

namespace stepscope {
namespace {

std::string date_text(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%d %H:%M}Z", tm);
}

// Run names are file names: a control character in one must not drive the terminal.
std::string plain(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  return out;
}

std::string ms_text(double ns) { return fmt::format("{:.2f} ms", ns / 1e6); }

nlohmann::json point_json(const HistoryPoint& p) {
  const StoredRun& r = p.run;
  nlohmann::json categories = nlohmann::json::object(), shares = nlohmann::json::object();
  for (int c = 0; c < kCategoryCount; ++c) {
    const char* name = category_name(static_cast<Category>(c));
    categories[name] = r.category_ns[static_cast<std::size_t>(c)];
    shares[name] = r.step_ns > 0 ? r.category_ns[static_cast<std::size_t>(c)] / r.step_ns : 0.0;
  }
  nlohmann::json j = {{"run", r.name},
                      {"date", r.date},
                      {"key", r.key},
                      {"ranks", r.ranks},
                      {"steps", r.steps},
                      {"mean_step_ns", r.step_ns},
                      {"categories_ns", categories},
                      {"shares", shares},
                      {"bound", r.bound},
                      {"verdict", r.verdict},
                      {"trust", r.trust},
                      {"trust_codes", r.trust_codes}};
  if (p.has_baseline) {
    j["baseline"] = {{"run", p.baseline},       {"speedup", p.speedup},         {"speedup_lo", p.speedup_lo},
                     {"speedup_hi", p.speedup_hi}, {"significant", p.significant}, {"regressed", p.regressed}};
  } else {
    j["baseline"] = nullptr;
  }
  return j;
}

std::string change_text(const HistoryPoint& p) {
  if (!p.has_baseline) return "baseline";
  if (!p.significant) return fmt::format("{:.2f}x, within noise", p.speedup);
  return fmt::format("{:.2f}x [{:.2f}-{:.2f}] {}", p.speedup, p.speedup_lo, p.speedup_hi,
                     p.regressed ? "REGRESSED" : "faster");
}

}  // namespace

bool newest_regressed(const std::vector<JobHistory>& jobs) {
  for (const auto& h : jobs)
    if (!h.points.empty() && h.points.back().regressed) return true;
  return false;
}

nlohmann::json history_to_json(const std::vector<JobHistory>& jobs, const std::string& store_path) {
  nlohmann::json out = {{"schema", kHistorySchema}, {"store", store_path}, {"newest_regressed", newest_regressed(jobs)}};
  auto& arr = out["jobs"] = nlohmann::json::array();
  for (const auto& h : jobs) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& p : h.points) runs.push_back(point_json(p));
    arr.push_back({{"job", h.job}, {"runs", std::move(runs)}});
  }
  return out;
}

std::string render_history_text(const std::vector<JobHistory>& jobs) {
  std::string out;
  if (jobs.empty()) return "no analysed run in the history\n";
  for (const auto& h : jobs) {
    fmt::format_to(std::back_inserter(out), "job {} ({} run{})\n", plain(h.job), h.points.size(), h.points.size() == 1 ? "" : "s");
    fmt::format_to(std::back_inserter(out), "  {:<18} {:>12} {:>6}  {:<34} {:<16} {}\n", "date", "step", "steps",
                   "vs previous run", "bound", "run");
    for (const auto& p : h.points)
      fmt::format_to(std::back_inserter(out), "  {:<18} {:>12} {:>6}  {:<34} {:<16} {}\n", date_text(p.run.date),
                     ms_text(p.run.step_ns), p.run.steps, change_text(p), p.run.bound.empty() ? "-" : p.run.bound,
                     plain(p.run.name));
  }
  return out;
}

}  // namespace stepscope
