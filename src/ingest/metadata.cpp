#include "ingest/metadata.hpp"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <limits>

#include "stepscope/error.hpp"
#include "stepscope/parse.hpp"

namespace stepscope::ingest {
namespace dom = simdjson::dom;

namespace {

// Some writers quote numbers ("rank": "3"); such text must be a whole integer.
std::int64_t int_or(dom::element e, std::string_view key, std::int64_t fallback) {
  auto v = e[key];
  if (v.error()) return fallback;
  if (auto i = v.get_int64(); !i.error()) return i.value_unsafe();
  if (auto u = v.get_uint64(); !u.error()) return static_cast<std::int64_t>(u.value_unsafe());
  if (auto d = v.get_double(); !d.error()) return static_cast<std::int64_t>(d.value_unsafe());
  if (auto s = v.get_string(); !s.error()) return parse_int(s.value_unsafe()).value_or(fallback);
  return fallback;
}

std::string str_or(dom::element e, std::string_view key) {
  auto v = e[key];
  if (v.error()) return {};
  if (auto s = v.get_string(); !s.error()) return std::string(s.value_unsafe());
  return simdjson::minify(v.value_unsafe());
}

DeviceProperties device_from(dom::element e) {
  DeviceProperties d;
  d.id = int_or(e, "id", -1);
  d.name = str_or(e, "name");
  d.total_global_mem = int_or(e, "totalGlobalMem", -1);
  d.compute_major = static_cast<int>(int_or(e, "computeMajor", -1));
  d.compute_minor = static_cast<int>(int_or(e, "computeMinor", -1));
  d.num_sms = static_cast<int>(int_or(e, "numSms", -1));
  d.max_threads_per_sm = static_cast<int>(int_or(e, "maxThreadsPerMultiprocessor", -1));
  d.regs_per_sm = static_cast<int>(int_or(e, "regsPerMultiprocessor", -1));
  d.shared_mem_per_sm = int_or(e, "sharedMemPerMultiprocessor", -1);
  d.warp_size = static_cast<int>(int_or(e, "warpSize", -1));
  return d;
}

ProcessGroup group_from(dom::element e) {
  ProcessGroup g;
  g.name = str_or(e, "pg_name");
  g.desc = str_or(e, "pg_desc");
  g.backend_config = str_or(e, "backend_config");
  g.size = static_cast<int>(int_or(e, "pg_size", -1));
  if (auto ranks = e["ranks"].get_array(); !ranks.error())
    for (auto r : ranks.value_unsafe())
      if (auto i = r.get_int64(); !i.error()) g.ranks.push_back(static_cast<int>(i.value_unsafe()));
  return g;
}

DistributedInfo distributed_from(dom::element e) {
  DistributedInfo d;
  if (!e.is_object()) return d;
  d.present = true;
  constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
  if (std::int64_t r = int_or(e, "rank", -1); r > kMaxInt) d.rank_out_of_range = r;
  else if (r >= 0) d.rank = static_cast<int>(r);
  if (std::int64_t w = int_or(e, "world_size", -1); w > 0) d.world_size = static_cast<int>(std::min(w, kMaxInt));
  d.backend = str_or(e, "backend");
  d.nccl_version = str_or(e, "nccl_version");
  if (auto pgs = e["pg_config"].get_array(); !pgs.error())
    for (auto g : pgs.value_unsafe())
      if (g.is_object()) d.groups.push_back(group_from(g));
  return d;
}

}  // namespace

void apply_top_level(const std::vector<std::pair<std::string, std::string>>& top,
                     const std::string& name, RankTrace& out) {
  dom::parser parser;
  for (const auto& [key, raw] : top) {
    auto doc = parser.parse(raw);
    if (doc.error())
      throw InputError(fmt::format("{}: top-level \"{}\": {}", name, key,
                                   simdjson::error_message(doc.error())));
    dom::element v = doc.value_unsafe();
    if (key == "deviceProperties") {
      if (auto arr = v.get_array(); !arr.error())
        for (auto d : arr.value_unsafe())
          if (d.is_object()) out.devices.push_back(device_from(d));
    } else if (key == "distributedInfo") {
      out.distributed = distributed_from(v);
    } else if (key == "schemaVersion") {
      if (auto i = v.get_int64(); !i.error()) out.schema_version = static_cast<int>(i.value_unsafe());
    } else if (key == "baseTimeNanoseconds") {
      if (auto i = v.get_int64(); !i.error()) out.base_time_ns = i.value_unsafe();
      else if (auto u = v.get_uint64(); !u.error()) out.base_time_ns = static_cast<std::int64_t>(u.value_unsafe());
    } else if (key == "displayTimeUnit") {
      if (auto s = v.get_string(); !s.error()) out.display_time_unit = std::string(s.value_unsafe());
    } else if (key == "traceName") {
      if (auto s = v.get_string(); !s.error()) out.trace_name = std::string(s.value_unsafe());
    } else if (v.is_string()) {
      out.metadata.emplace_back(key, std::string(v.get_string().value_unsafe()));
    } else if (!v.is_array() && !v.is_object()) {
      out.metadata.emplace_back(key, raw);
    }
  }
}

}  // namespace stepscope::ingest
