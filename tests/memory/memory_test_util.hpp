// Helpers of the memory tests: pickles written by Python itself, and snapshots made by the
// generator (tools/memsnap/generate.py) into a temporary directory at test time.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace stepscope::memory {

inline std::string run_capture(const std::string& cmd) {
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  if (::pclose(p) != 0) throw std::runtime_error("failed: " + cmd);
  return out;
}

// pickle.dumps(eval(expr), protocol=4) by the system's Python.
inline std::string python_pickle(const std::string& expr, int protocol = 4) {
  const std::string script = "import pickle,sys; sys.stdout.buffer.write(pickle.dumps(eval(sys.argv[1]), protocol=" +
                             std::to_string(protocol) + "))";
  return run_capture("/usr/bin/python3 -c '" + script + "' \"" + expr + "\"");
}

inline std::filesystem::path temp_dir() {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "stepscope-memory-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp");
    return std::filesystem::path(pattern);
  }();
  return dir;
}

// Runs the generator for `scenario` (with `extra` options, under the file name `name`) and returns
// the snapshot's path; the ground truth is written beside it as PATH.truth.json.
inline std::string generated(const std::string& scenario, const std::string& extra = "", const std::string& name = "") {
  const std::filesystem::path out = temp_dir() / ((name.empty() ? scenario : name) + ".pickle");
  if (!std::filesystem::exists(out))
    run_capture("/usr/bin/python3 " STEPSCOPE_SOURCE_DIR "/tools/memsnap/generate.py --scenario " + scenario + " " + extra +
                " --out " + out.string());
  return out.string();
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace stepscope::memory
