#include "stepscope/plan/comm.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"
#include "stepscope/plan/gpus.hpp"
#include "stepscope/plan/units.hpp"

namespace stepscope::plan {

namespace {

// Lower case without "_" and spaces: "All_Reduce" -> "allreduce".
std::string squeezed_lower(std::string_view s) {
  std::string out;
  for (unsigned char c : s)
    if (c != '_' && c != ' ') out.push_back(static_cast<char>(std::tolower(c)));
  return out;
}

// Per-direction bandwidths; latencies are rough per-hop figures for NCCL-sized messages and are
// meant to be overridden with --latency-us when measured.
const std::vector<Link>& link_table() {
  static const std::vector<Link> links = {
      {"nvlink3", 300, 2},   // A100: 600 GB/s total, 300 per direction
      {"nvlink4", 450, 2},   // H100/H200: 900 GB/s total
      {"nvlink5", 900, 2},   // B200: 1.8 TB/s total
      {"pcie3", 16, 5},      // PCIe 3.0 x16: ~15.8 GB/s per direction
      {"pcie4", 32, 5},      // PCIe 4.0 x16: ~31.5 GB/s
      {"pcie5", 64, 5},      // PCIe 5.0 x16: ~63 GB/s
      {"ib-edr", 12.5, 5},   // 100 Gb/s
      {"ib-hdr", 25, 5},     // 200 Gb/s
      {"ib-ndr", 50, 5},     // 400 Gb/s
      {"ib-xdr", 100, 5},    // 800 Gb/s
      {"eth-25", 3.125, 15}, // 25 GbE (TCP or RoCE)
      {"eth-100", 12.5, 15}, // 100 GbE
      {"eth-200", 25, 15},
      {"eth-400", 50, 15},
  };
  return links;
}

}  // namespace

std::vector<Link> known_links() { return link_table(); }

Link find_link(std::string_view name, std::optional<std::string> gpu) {
  std::string want = squeezed_lower(name);
  if (want == "nvlink") {
    if (gpu) {
      const GpuSpec& g = find_gpu(*gpu);
      if (g.interconnect.rfind("NVLink", 0) != 0 && g.interconnect != "Infinity Fabric")
        throw InputError(fmt::format("{} has no NVLink ({}); use --link pcie", g.key,
                                     g.interconnect));
      return {fmt::format("{} ({})", g.interconnect, g.key), g.interconnect_gbs / 2, 2};
    }
    want = "nvlink4";
  }
  if (want == "pcie") want = "pcie4";
  if (want == "ib" || want == "infiniband") want = "ib-hdr";
  if (want.rfind("infiniband-", 0) == 0) want = "ib-" + want.substr(11);
  if (want == "ethernet" || want == "eth") want = "eth-100";
  for (const auto& l : link_table())
    if (l.name == want) return l;
  std::string names = "nvlink, pcie, infiniband, ethernet";
  for (const auto& l : link_table()) names += ", " + l.name;
  throw InputError(fmt::format("unknown link '{}' (known: {}; or give --bandwidth in GB/s)", name,
                               names));
}

CommResult plan_comm(const CommInput& in) {
  require_positive(in.payload_bytes, "payload");
  if (in.gpus < 2) throw InputError(fmt::format("--gpus must be at least 2 for a collective (got {})", in.gpus));
  require_positive(in.link.bandwidth_gbs, "--bandwidth");
  require_non_negative(in.link.latency_us, "--latency-us");
  require_fraction(in.overlap, "--overlap");
  if (in.backward_s) require_positive(*in.backward_s, "--backward-ms");
  if (in.compute_s) require_positive(*in.compute_s, "--compute-ms");

  CommResult r;
  r.input = in;
  const double n = in.gpus;
  const double S = in.payload_bytes;
  const double bw = in.link.bandwidth_gbs * 1e9;
  const double alpha = in.link.latency_us * 1e-6;
  auto make = [&](std::string name, double bytes, double steps, std::string formula) {
    CollectiveCost c{std::move(name), bytes, bytes / bw, steps * alpha, 0, std::move(formula)};
    c.time_s = c.bandwidth_s + c.latency_s;
    return c;
  };
  // Ring all-reduce = reduce-scatter + all-gather: 2(N-1) steps of S/N each.
  r.collectives.push_back(make("ring all-reduce", 2 * (n - 1) / n * S, 2 * (n - 1),
                               "2(N-1)/N x S / B + 2(N-1) x alpha"));
  // NCCL's double binary tree: each node sends about S up and S down, with 2 log2(N) hops.
  r.collectives.push_back(make("tree all-reduce", 2 * S, 2 * std::ceil(std::log2(n)),
                               "2 x S / B + 2 log2(N) x alpha"));
  r.collectives.push_back(make("reduce-scatter", (n - 1) / n * S, n - 1,
                               "(N-1)/N x S / B + (N-1) x alpha"));
  r.collectives.push_back(make("all-gather", (n - 1) / n * S, n - 1,
                               "(N-1)/N x S / B + (N-1) x alpha"));

  if (in.backward_s) {
    const double comm = r.collectives.front().time_s;
    const double window = *in.backward_s * in.overlap;
    r.hidden_s = std::min(comm, window);
    r.exposed_s = comm - *r.hidden_s;
    r.exposed_fraction_of_backward = *r.exposed_s / *in.backward_s;
    const double compute = in.compute_s.value_or(*in.backward_s);
    r.exposed_share_of_step = *r.exposed_s / (compute + *r.exposed_s);
    r.communication_bound = *r.exposed_fraction_of_backward > 0.20;
  }
  return r;
}

std::pair<int, double> parse_scaling_point(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos)
    throw InputError(fmt::format("--point '{}': expected GPUS:THROUGHPUT, e.g. 8:600", text));
  const auto parsed_gpus = parse_int<int>(text.substr(0, colon));
  const auto parsed_rate = parse_double(text.substr(colon + 1));
  if (!parsed_gpus || !parsed_rate)
    throw InputError(fmt::format("--point '{}': expected GPUS:THROUGHPUT, e.g. 8:600", text));
  const int gpus = *parsed_gpus;
  const double rate = *parsed_rate;
  if (gpus < 1) throw InputError(fmt::format("--point '{}': GPU count must be positive", text));
  require_positive(rate, fmt::format("--point '{}': throughput", text));
  return {gpus, rate};
}

ScalingResult plan_scaling(std::vector<std::pair<int, double>> measured) {
  if (measured.size() < 2)
    throw InputError("scaling needs at least two measurements (--point GPUS:THROUGHPUT)");
  std::sort(measured.begin(), measured.end());
  for (size_t i = 1; i < measured.size(); ++i)
    if (measured[i].first == measured[i - 1].first)
      throw InputError(fmt::format("two measurements for {} GPUs", measured[i].first));
  ScalingResult r;
  const auto [g0, t0] = measured.front();
  for (const auto& [g, t] : measured) {
    ScalingPoint p{g, t, t / t0, 0, ""};
    p.efficiency = p.speedup / (static_cast<double>(g) / g0);
    if (g == g0) p.verdict = "baseline";
    else if (p.efficiency >= 0.8) p.verdict = "good (>= 80%)";
    else if (p.efficiency >= 0.7) p.verdict = "fair (70-80%)";
    else p.verdict = "poor (< 70%): communication or input pipeline likely dominates";
    r.points.push_back(p);
  }
  return r;
}

}  // namespace stepscope::plan
