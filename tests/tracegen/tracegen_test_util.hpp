// Helpers shared by the tracegen tests: temporary directories, small runs, file reading.
#pragma once

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tracegen.hpp"

namespace tgtest {

class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::random_device rd;
    path_ = (std::filesystem::temp_directory_path() /
             ("stepscope-tracegen-" + tag + "-" + std::to_string(rd())))
                .string();
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A preset shrunk so the whole suite stays fast: few ranks, steps and layers.
inline stepscope::tracegen::Params small_params(const std::string& scenario) {
  stepscope::tracegen::Params p;
  if (!stepscope::tracegen::apply_scenario(scenario, p))
    throw std::runtime_error("unknown scenario " + scenario);
  p.steps = 3;
  p.ranks = std::min(p.ranks, 3);
  p.layers = std::min(p.layers, scenario == "straggler" ? 8 : 4);
  return p;
}

inline std::string gunzip(const std::string& z) {
  inflate_state st;
  isal_inflate_init(&st);
  st.crc_flag = ISAL_GZIP;
  st.next_in = reinterpret_cast<std::uint8_t*>(const_cast<char*>(z.data()));
  st.avail_in = static_cast<std::uint32_t>(z.size());
  std::string out;
  std::string chunk(1 << 20, '\0');
  while (true) {
    st.next_out = reinterpret_cast<std::uint8_t*>(chunk.data());
    st.avail_out = static_cast<std::uint32_t>(chunk.size());
    if (isal_inflate(&st) != ISAL_DECOMP_OK) throw std::runtime_error("bad gzip stream");
    out.append(chunk.data(), chunk.size() - st.avail_out);
    if (st.block_state == ISAL_BLOCK_FINISH) break;
    if (st.avail_in == 0 && st.avail_out != 0) throw std::runtime_error("truncated gzip stream");
  }
  return out;
}

// Kineto µs with three decimals -> exact ns (doubles hold these values to well under 0.5 ns).
inline std::int64_t to_ns(double us) { return std::llround(us * 1000.0); }
inline std::int64_t end_ns(const nlohmann::json& e) {
  return to_ns(e["ts"].get<double>()) + to_ns(e["dur"].get<double>());
}

}  // namespace tgtest

namespace tgtest {

// `cat` values (events without one count as "") and the `args` keys seen under each, collected
// with a SAX pass so large fixtures need no DOM.
struct Shape {
  std::map<std::string, std::set<std::string>> args_by_cat;
};

class ShapeCollector : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit ShapeCollector(Shape& out) : out_(out) {}
  bool null() override { return scalar(""); }
  bool boolean(bool) override { return scalar(""); }
  bool number_integer(number_integer_t) override { return scalar(""); }
  bool number_unsigned(number_unsigned_t) override { return scalar(""); }
  bool number_float(number_float_t, const string_t&) override { return scalar(""); }
  bool string(string_t& s) override { return scalar(s); }
  bool binary(binary_t&) override { return scalar(""); }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override {
    if (depth_ == kEventDepth && in_events_) {
      auto& keys = out_.args_by_cat[cat_];
      keys.insert(args_.begin(), args_.end());
      cat_.clear();
      args_.clear();
    }
    return close();
  }
  bool start_array(std::size_t) override {
    if (depth_ == 1 && key_ == "traceEvents") in_events_ = true;
    return open();
  }
  bool end_array() override {
    if (depth_ == 2) in_events_ = false;
    return close();
  }
  bool key(string_t& k) override {
    key_ = k;
    if (in_events_ && depth_ == kEventDepth + 1 && in_args_) args_.insert(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw std::runtime_error(e.what());
  }

 private:
  static constexpr int kEventDepth = 3;  // root object > traceEvents array > event
  bool scalar(const std::string& v) {
    if (in_events_ && depth_ == kEventDepth && key_ == "cat") cat_ = v;
    return true;
  }
  bool open() {
    if (in_events_ && depth_ == kEventDepth && key_ == "args") in_args_ = true;
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (depth_ == kEventDepth) in_args_ = false;
    return true;
  }

  Shape& out_;
  int depth_ = 0;
  bool in_events_ = false;
  bool in_args_ = false;
  std::string key_, cat_;
  std::set<std::string> args_;
};

inline void collect_shape(const std::string& path, Shape& out) {
  std::string text = read_file(path);
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) text = gunzip(text);
  ShapeCollector sax(out);
  nlohmann::json::sax_parse(text, &sax);
}

}  // namespace tgtest
