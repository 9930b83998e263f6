// ground_truth.json: the parameters, then one record per rank and step, streamed as written.
#pragma once

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sink.hpp"
#include "tracegen.hpp"

namespace stepscope::tracegen {

inline constexpr const char* kGroundTruthSchema = "stepscope-tracegen-ground-truth/1";

// Every parameter of `p` under its ground-truth name ("parameters" in ground_truth.json), the
// groups a preset leaves at their defaults included.
nlohmann::json parameters_json(const Params& p);

class GroundTruthWriter {
 public:
  GroundTruthWriter(const Params& p, const std::string& path);
  void add(const StepTruth& s);
  void add_file(const std::string& name) { files_.push_back(name); }
  void finish();

 private:
  void flush();

  const Params& p_;
  std::unique_ptr<Sink> sink_;
  std::string buf_;
  bool first_ = true;
  Breakdown totals_{};
  ns_t total_window_ = 0;
  ns_t total_comm_ = 0;
  std::int64_t count_ = 0;
  std::vector<std::string> files_;
};

}  // namespace stepscope::tracegen
