// Pieces of `stepscope serve` shared by its files.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "stepscope/store.hpp"

namespace stepscope::serve_detail {

// What the background analysis is doing, for the runs page.
struct IndexState {
  bool scanning = false;
  std::string run;
  std::size_t done = 0, total = 0;
  std::uint64_t bytes_done = 0, bytes_total = 0;
  std::int64_t last_scan = 0;  // Unix seconds of the last finished scan
  std::string last_error;      // of the last scan, when it failed as a whole
};

// The query of a runs page: sorting and filters, kept by every link on it.
struct RunsQuery {
  std::string sort = "date";  // date, name, ranks, steps, step, bound, trust
  bool descending = true;
  std::string q;      // substring of the run's name, job, verdict or error
  std::string bound;  // only runs of this bound
  std::string trust;  // only runs of this trust level
  std::string job;    // only runs of this job
  std::int64_t base = 0;  // the run picked as the base of a comparison
};

std::string url_encode(const std::string& s);

// The frame of the server's own pages: the report's security policy, no script.
inline constexpr const char* kPageCsp =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";
std::string page_begin(const std::string& title, const std::string& logdir_label);
std::string page_end();
// The navigation bar the server puts on top of a report page it did not write.
std::string nav_bar(const std::string& logdir_label, const std::string& here);

std::string render_runs_page(const std::vector<StoredRun>& runs, const RunsQuery& q, const IndexState& state,
                             const std::string& logdir_label);
std::string render_history_page(const std::vector<JobHistory>& jobs, const std::string& job,
                                const std::string& logdir_label);
// The report page of one run with the server's navigation and its downloads.
std::string decorate_run_page(std::string report, const StoredRun& run, const std::string& logdir_label);
std::string decorate_diff_page(std::string report, const StoredRun& base, const StoredRun& test,
                               const std::string& logdir_label);

}  // namespace stepscope::serve_detail
