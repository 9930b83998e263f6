// Plugins of ours: libraries the build puts beside the binary and `make install` in the library
// folder, loaded by the commands that need what they link (the HTTP server, MPI), so that the
// others neither load nor start it.
#pragma once

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <vector>

#include "stepscope/error.hpp"

namespace stepscope {

// Where a plugin may be: beside the binary (the build folder), then in `from_bin` (the library
// folder an install puts it in, relative to the binary's).
inline std::vector<std::filesystem::path> plugin_candidates(const char* file, const char* from_bin) {
  std::error_code ec;
  const auto bin = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return {file};
  return {bin / file, bin / from_bin / file};
}

// The entry point `symbol` of the plugin `file`, loaded with dlopen's `flags` and kept open for
// the process's life; an InputError "WHAT (FILE, beside the binary or in FROM_BIN from it): WHY"
// when no candidate loads or has it.
inline void* plugin_entry(const char* file, const char* from_bin, const char* symbol, int flags, const std::string& what) {
  std::string why;
  for (const auto& path : plugin_candidates(file, from_bin)) {
    void* lib = ::dlopen(path.c_str(), flags);
    if (!lib) {
      if (why.empty() || std::filesystem::exists(path)) why = ::dlerror();
      continue;
    }
    if (void* entry = ::dlsym(lib, symbol)) return entry;
    why = path.string() + ": no " + symbol;
  }
  throw InputError(what + " (" + file + ", beside the binary or in " + from_bin + " from it): " + why);
}

}  // namespace stepscope
