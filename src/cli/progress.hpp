// A progress bar on stderr, shown only on a terminal and only for inputs big enough to wait on.
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
      : label_(std::move(label)), enabled_(enabled && isatty(STDERR_FILENO)) {}

  void update(std::uint64_t done, std::uint64_t total) {
    if (!enabled_ || total < kMinBytes) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100) && done < total) return;
    last_ = now;
    int pct = total ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)) : 0;
    int filled = pct * 30 / 100;
    std::fprintf(stderr, "\r%s [%-30.*s] %3d%%  %llu/%llu MB", label_.c_str(), filled,
                 "##############################", pct, static_cast<unsigned long long>(done >> 20),
                 static_cast<unsigned long long>(total >> 20));
    shown_ = true;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }
  ~ProgressBar() { finish(); }

 private:
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace stepscope::cli
