// A progress bar on stderr, shown only on a terminal and only for inputs big enough to wait on:
// the phase (reading, analysing, writing), the bytes read in MiB with the rate and time left.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace stepscope::cli {

class ProgressBar {
 public:
  static constexpr std::uint64_t kMinBytes = 32ull << 20;  // smaller inputs finish before a glance

  ProgressBar(std::string label, bool enabled)
      : label_(std::move(label)), enabled_(enabled && isatty(STDERR_FILENO)), start_(Clock::now()) {}

  // Example line: "reading [############                  ]  41%  220/536 MiB  180 MiB/s  2 s left"
  void update(std::uint64_t done, std::uint64_t total) {
    if (!enabled_ || total < kMinBytes) return;
    big_ = true;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(100) && done < total) return;
    last_ = now;
    if (done >= total) {
      phase("analysing");  // reading is over; the analysis gives no finer progress
      return;
    }
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double mib = static_cast<double>(done) / (1 << 20), total_mib = static_cast<double>(total) / (1 << 20);
    const double rate = secs > 0 ? mib / secs : 0;
    const int pct = static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total));
    std::string left = rate > 0 ? format_secs((total_mib - mib) / rate) + " left" : "";
    std::fprintf(stderr, "\r\033[K%s [%-30.*s] %3d%%  %.0f/%.0f MiB  %.0f MiB/s  %s", label_.c_str(), pct * 30 / 100,
                 "##############################", pct, mib, total_mib, rate, left.c_str());
    shown_ = true;
  }

  // A phase without a measure of its own ("analysing", "writing reports"), after a big read.
  void phase(const std::string& what) {
    if (!enabled_ || !big_) return;
    const double secs = std::chrono::duration<double>(Clock::now() - start_).count();
    std::fprintf(stderr, "\r\033[K%s... (%s so far)", what.c_str(), format_secs(secs).c_str());
    shown_ = true;
  }

  void finish() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }
  ~ProgressBar() { finish(); }

 private:
  using Clock = std::chrono::steady_clock;
  static std::string format_secs(double s) {
    char buf[32];
    if (s < 10) std::snprintf(buf, sizeof buf, "%.1f s", s);
    else if (s < 60) std::snprintf(buf, sizeof buf, "%.0f s", s);
    else std::snprintf(buf, sizeof buf, "%ld min %ld s", static_cast<long>(s) / 60, static_cast<long>(s) % 60);
    return buf;
  }
  std::string label_;
  bool enabled_;
  bool big_ = false;
  bool shown_ = false;
  Clock::time_point start_, last_{};
};

}  // namespace stepscope::cli
