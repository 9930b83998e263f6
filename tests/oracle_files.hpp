// The oracle files of one set (a folder of ../shared/oracles/), for the golden tests.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace stepscope::testing_support {

// File names (not paths) of the set's *.json files, sorted; none when the folder is missing.
inline std::vector<std::string> oracle_files(const std::string& set) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(STEPSCOPE_ORACLES_DIR) / set, ec))
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace stepscope::testing_support
