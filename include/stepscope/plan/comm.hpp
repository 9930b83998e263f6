// Collective communication cost (alpha-beta model) and scaling efficiency.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace stepscope::plan {

// A link's per-direction bandwidth and per-message latency.
struct Link {
  std::string name;
  double bandwidth_gbs = 0;  // GB/s per direction, what a ring step can push
  double latency_us = 0;     // per message hop (alpha)
};

// Known links: nvlink (from --gpu, or NVLink 4), nvlink3/4/5, pcie (4.0), pcie3/4/5,
// infiniband/ib (HDR 200 Gb/s), ib-edr/hdr/ndr/xdr, ethernet (100 GbE), eth-25/100/200/400.
// Throws InputError listing them for an unknown name.
Link find_link(std::string_view name, std::optional<std::string> gpu = std::nullopt);
std::vector<Link> known_links();

struct CommInput {
  double payload_bytes = 0;  // per GPU: e.g. gradients = params x bytes
  int gpus = 2;
  Link link;
  std::optional<double> backward_s;  // time the collective can hide behind
  double overlap = 0;                // fraction of the backward usable for hiding
  std::optional<double> compute_s;   // step compute time without communication (default: backward)
};

struct CollectiveCost {
  std::string name;           // "ring all-reduce", ...
  double bytes_per_gpu = 0;   // sent by each GPU
  double bandwidth_s = 0;     // bytes_per_gpu / bandwidth
  double latency_s = 0;       // steps x alpha
  double time_s = 0;
  std::string formula;
};

struct CommResult {
  CommInput input;
  std::vector<CollectiveCost> collectives;  // ring AR, tree AR, reduce-scatter, all-gather
  // Exposure of the all-reduce (ring) given a backward window, when one was given.
  std::optional<double> hidden_s, exposed_s, exposed_fraction_of_backward, exposed_share_of_step;
  bool communication_bound = false;  // exposed > 20% of the backward: the usual warning line
};

CommResult plan_comm(const CommInput& in);

struct ScalingPoint {
  int gpus = 0;
  double throughput = 0;  // samples/s, tokens/s ... any rate
  double speedup = 0;     // vs the smallest measured configuration
  double efficiency = 0;  // speedup / (gpus / baseline gpus)
  std::string verdict;
};

struct ScalingResult {
  std::vector<ScalingPoint> points;  // sorted by GPU count; first is the baseline
};

// "8:600" -> {8, 600}; throws InputError on malformed text.
std::pair<int, double> parse_scaling_point(std::string_view text);
ScalingResult plan_scaling(std::vector<std::pair<int, double>> measured);

}  // namespace stepscope::plan
