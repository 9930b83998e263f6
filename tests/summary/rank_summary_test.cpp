// A rank's summary file holds its analysis whole (less the per-name and per-event facts):
// decoding it and encoding again gives the same bytes, and a damaged or foreign file is refused
// with one line that names it.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "stepscope/analysis.hpp"
#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/rank_summary.hpp"

namespace stepscope {
namespace {

using json = nlohmann::json;

SummaryFile summarize(const std::string& fixture, const AnalyzeOptions& opts = {}) {
  IngestOptions in;
  in.jobs = 1;
  const Trace trace = read_traces({std::string(STEPSCOPE_FIXTURES_DIR) + "/" + fixture}, in);
  SummaryFile s;
  s.warnings = trace.warnings;
  for (const RankTrace& rank : trace.ranks) s.ranks.push_back(analyze_rank(rank, opts));
  return s;
}

// CBOR has one NaN; every other double keeps its bits, the sign of zero included.
bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// Every field of an evidence as "name=value" lines, records and names included: two evidences
// with the same text gathered the same figures.
class FieldText final : public footgun::EvidenceFields {
 public:
  std::string text;
  void field(std::string_view name, std::int64_t& v) override { text += fmt::format("{}={}\n", name, v); }
  void field(std::string_view name, double& v) override {
    text += fmt::format("{}={}\n", name, std::bit_cast<std::uint64_t>(v));
  }
  void field(std::string_view name, bool& v) override { text += fmt::format("{}={}\n", name, v); }
  void field(std::string_view name, footgun::ByName& v) override {
    for (const auto& [n, t] : v) text += fmt::format("{}[{}]={} {}\n", name, n, t.count, t.time);
  }
  void field(std::string_view name, std::vector<std::string>& v) override {
    text += fmt::format("{}={}\n", name, fmt::join(v, "|"));
  }
  void records(std::string_view name, std::size_t& count,
               const std::function<void(std::size_t, EvidenceFields&)>& each) override {
    text += fmt::format("{}: {} records\n", name, count);
    for (std::size_t i = 0; i < count; ++i) each(i, *this);
  }
};

std::string evidence_text(const footgun::RankFootguns& r) {
  FieldText out;
  for (const auto& e : r.evidence) e->fields(out);
  return out.text;
}

void expect_same_figures(const RankAnalysis& a, const RankAnalysis& b) {
  EXPECT_EQ(b.ingest.path, a.ingest.path);
  EXPECT_EQ(b.ingest.events, a.ingest.events);
  EXPECT_EQ(b.ingest.events_by_kind, a.ingest.events_by_kind);
  EXPECT_EQ(b.facts.track_role, a.facts.track_role);
  EXPECT_EQ(b.facts.device_syncs, a.facts.device_syncs);
  EXPECT_EQ(b.facts.device.describe(), a.facts.device.describe());
  EXPECT_EQ(b.facts.run_kind, a.facts.run_kind);
  EXPECT_EQ(b.facts.trust.warnings.size(), a.facts.trust.warnings.size());

  ASSERT_EQ(b.partition.steps.size(), a.partition.steps.size());
  for (std::size_t k = 0; k < a.partition.steps.size(); ++k) {
    EXPECT_EQ(b.partition.steps[k].ns, a.partition.steps[k].ns) << "step " << k;
    EXPECT_EQ(b.partition.steps[k].name, a.partition.steps[k].name);
  }
  EXPECT_TRUE(same_double(b.partition.steady_mean_ns, a.partition.steady_mean_ns));
  const auto compute = static_cast<std::size_t>(Category::ComputeForward);
  EXPECT_TRUE(same_double(b.partition.steady_mean_category[compute], a.partition.steady_mean_category[compute]));
  EXPECT_EQ(b.stability.steps, a.stability.steps);
  EXPECT_TRUE(same_double(b.stability.cv, a.stability.cv));

  EXPECT_EQ(b.gpu_timeline.hta_temporal.idle, a.gpu_timeline.hta_temporal.idle);
  EXPECT_EQ(b.gpu_timeline.classes.total_time, a.gpu_timeline.classes.total_time);
  EXPECT_TRUE(same_double(b.gpu_timeline.hta_overlap.share, a.gpu_timeline.hta_overlap.share));
  EXPECT_EQ(b.gpu_timeline.memory.devices.size(), a.gpu_timeline.memory.devices.size());
  EXPECT_EQ(b.cuda_summary.kernel_count, a.cuda_summary.kernel_count);

  ASSERT_EQ(b.drilldown.has_value(), a.drilldown.has_value());
  if (a.drilldown) {
    ASSERT_EQ(b.drilldown->operators.size(), a.drilldown->operators.size());
    for (std::size_t k = 0; k < a.drilldown->operators.size(); ++k) {
      EXPECT_EQ(b.drilldown->operators[k].rows.size(), a.drilldown->operators[k].rows.size());
    }
    EXPECT_EQ(b.drilldown->kernels.rows.size(), a.drilldown->kernels.rows.size());
    EXPECT_EQ(b.drilldown->critical_path.path.size(), a.drilldown->critical_path.path.size());
    EXPECT_EQ(b.drilldown->memory.available, a.drilldown->memory.available);
  }

  EXPECT_EQ(b.footgun_scan.steady_steps, a.footgun_scan.steady_steps);
  EXPECT_EQ(b.footgun_scan.evidence.size(), footgun::detectors().size());
  EXPECT_EQ(evidence_text(b.footgun_scan), evidence_text(a.footgun_scan));
  EXPECT_TRUE(same_double(b.footgun_scan.step_ns, a.footgun_scan.step_ns));
}

struct Fixture {
  const char* path;
  std::size_t ranks;
};

class SummaryRoundTrip : public ::testing::TestWithParam<Fixture> {};

TEST_P(SummaryRoundTrip, DecodesToTheSameFiguresAndEncodesToTheSameBytes) {
  const SummaryFile original = summarize(GetParam().path);
  ASSERT_EQ(original.ranks.size(), GetParam().ranks);
  const std::string bytes = encode_summary(original);
  std::cout << "summary of " << GetParam().path << ": " << bytes.size() << " bytes\n";

  const SummaryFile decoded = decode_summary(bytes, "r0.summary");
  EXPECT_EQ(encode_summary(decoded), bytes);
  EXPECT_EQ(decoded.warnings, original.warnings);
  ASSERT_EQ(decoded.ranks.size(), original.ranks.size());
  for (std::size_t r = 0; r < original.ranks.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    expect_same_figures(original.ranks[r], decoded.ranks[r]);
    EXPECT_TRUE(decoded.ranks[r].facts.names.empty());
    EXPECT_TRUE(decoded.ranks[r].facts.event_stage.empty());
    EXPECT_TRUE(decoded.ranks[r].facts.device_sync_busy.empty());
  }

  const json doc = json::from_cbor(bytes);
  EXPECT_EQ(doc["schema"], kSummarySchema);
  for (const auto& rank : doc["ranks"]) {
    EXPECT_FALSE(rank["facts"].contains("names"));
    EXPECT_FALSE(rank["facts"].contains("event_stage"));
    EXPECT_FALSE(rank["facts"].contains("device_sync_busy"));
    EXPECT_TRUE(rank["facts"].contains("device_syncs"));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SummaryRoundTrip,
                         ::testing::Values(Fixture{"cpu/c_item_print_every_step.pt.trace.json.gz", 1},
                                           Fixture{"tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz", 1},
                                           Fixture{"hta/sampled_world128", 2},
                                           Fixture{"nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite", 1}));

// The summary leaves out the per-name and per-event facts, which a GPU trace does have.
TEST(RankSummary, LeavesOutNamesStagesAndBusyIntervals) {
  const SummaryFile original = summarize("tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz");
  const RankFacts& facts = original.ranks.at(0).facts;
  ASSERT_FALSE(facts.names.empty());
  ASSERT_FALSE(facts.event_stage.empty());
  ASSERT_EQ(facts.device_sync_busy.size(), facts.device_syncs.size());
  ASSERT_TRUE(original.ranks[0].drilldown && original.ranks[0].drilldown->memory.available);
  const SummaryFile decoded = decode_summary(encode_summary(original), "r0.summary");
  EXPECT_TRUE(decoded.ranks[0].facts.names.empty());
  EXPECT_EQ(decoded.ranks[0].drilldown->memory.devices.at(0).samples.size(),
            original.ranks[0].drilldown->memory.devices.at(0).samples.size());
}

TEST(RankSummary, AnAnalysisWithoutDrillDownStaysWithout) {
  AnalyzeOptions opts;
  opts.with_drilldown = false;
  const SummaryFile original = summarize("cpu/c_item_print_every_step.pt.trace.json.gz", opts);
  ASSERT_FALSE(original.ranks.at(0).drilldown);
  const SummaryFile decoded = decode_summary(encode_summary(original), "r0.summary");
  EXPECT_FALSE(decoded.ranks.at(0).drilldown);
}

TEST(RankSummary, KeepsExtremeValuesExactly) {
  SummaryFile s;
  s.warnings = {{WarningId::RanksInFileOrder, {}, {}},
                {WarningId::ExportRowsLeftOut, {std::numeric_limits<std::uint64_t>::max(), 0}, {std::string("pid 7 a\0b", 9)}}};
  RankAnalysis& r = s.ranks.emplace_back();
  const std::vector<double> doubles = {0.1,
                                       -0.0,
                                       1.0 / 3.0,
                                       2.5,
                                       1e308,
                                       std::numeric_limits<double>::denorm_min(),
                                       std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity(),
                                       std::numeric_limits<double>::quiet_NaN(),
                                       -std::numeric_limits<double>::quiet_NaN()};
  for (std::size_t k = 0; k < doubles.size(); ++k) r.partition.steady_mean_category[k] = doubles[k];
  r.ingest.first_ts = std::numeric_limits<ns_t>::min();
  r.ingest.last_end = std::numeric_limits<ns_t>::max();
  r.ingest.bytes_read = std::numeric_limits<std::uint64_t>::max();
  r.ingest.world_size = 8;
  r.ingest.path = std::string("a\0b\xff\n", 5);
  r.ingest.events_by_category = {{"7", 1}, {"(none)", 2}};
  r.ingest.streams.resize(2);
  r.ingest.streams[1].info = StreamInfo{.stream = 7, .context = 1, .priority = -2, .type = StreamType::NonBlocking};
  TrustWarning& warning = r.facts.trust.warnings.emplace_back();
  warning.code = TrustCode::FewSteps;
  warning.figures = {{"steps", 2}, {"nan", std::nan("")}};
  OperatorRow& op = r.drilldown.emplace().operators.emplace_back().rows.emplace_back();
  op.stage = StageHint::None;  // an int8 enum at -1

  const SummaryFile d = decode_summary(encode_summary(s), "r0.summary");
  ASSERT_EQ(d.ranks.size(), 1u);
  const RankAnalysis& e = d.ranks[0];
  for (std::size_t k = 0; k < doubles.size(); ++k) {
    EXPECT_TRUE(same_double(e.partition.steady_mean_category[k], doubles[k])) << k;
  }
  EXPECT_TRUE(std::signbit(e.partition.steady_mean_category[1]));
  EXPECT_EQ(e.ingest.first_ts, r.ingest.first_ts);
  EXPECT_EQ(e.ingest.last_end, r.ingest.last_end);
  EXPECT_EQ(e.ingest.bytes_read, r.ingest.bytes_read);
  EXPECT_EQ(e.ingest.world_size, 8);
  EXPECT_EQ(e.ingest.path, r.ingest.path);
  EXPECT_EQ(e.ingest.events_by_category, r.ingest.events_by_category);
  ASSERT_EQ(e.ingest.streams.size(), 2u);
  EXPECT_FALSE(e.ingest.streams[0].info);
  ASSERT_TRUE(e.ingest.streams[1].info);
  EXPECT_EQ(e.ingest.streams[1].info->priority, -2);
  EXPECT_EQ(e.ingest.streams[1].info->type, StreamType::NonBlocking);
  ASSERT_EQ(e.facts.trust.warnings.size(), 1u);
  EXPECT_EQ(e.facts.trust.warnings[0].figures.at("steps"), 2.0);
  EXPECT_TRUE(std::isnan(e.facts.trust.warnings[0].figures.at("nan")));
  ASSERT_TRUE(e.drilldown);
  EXPECT_EQ(e.drilldown->operators.at(0).rows.at(0).stage, StageHint::None);
  EXPECT_EQ(d.warnings, s.warnings);
}

// ---- refused input ---------------------------------------------------------------------------

void expect_refused(std::string_view bytes, const std::string& fragment) {
  try {
    decode_summary(bytes, "r0.summary");
    ADD_FAILURE() << "accepted; expected an error with: " << fragment;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.starts_with("r0.summary: ")) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

const std::string& small_summary() {
  static const std::string bytes = encode_summary(summarize("cpu/c_item_print_every_step.pt.trace.json.gz"));
  return bytes;
}

std::string cbor(const json& doc) {
  const auto bytes = json::to_cbor(doc);
  return std::string(bytes.begin(), bytes.end());
}

// The small summary with one value set (or removed, when `value` is discarded).
std::string edited(const json::json_pointer& where, const json& value) {
  json doc = json::from_cbor(small_summary());
  if (!value.is_discarded()) {
    doc[where] = value;
    return cbor(doc);
  }
  json& parent = doc.at(where.parent_pointer());
  if (parent.is_array()) {
    parent.erase(std::stoul(where.back()));
  } else {
    parent.erase(where.back());
  }
  return cbor(doc);
}

TEST(RankSummaryRefuses, EmptyInput) { expect_refused("", "not a stepscope summary"); }

TEST(RankSummaryRefuses, RandomBytes) {
  std::mt19937 gen(42);
  for (std::size_t size : {1, 2, 3, 7, 64, 4096}) {
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(gen());
    expect_refused(bytes, "not a stepscope summary");
  }
}

TEST(RankSummaryRefuses, JsonTextAndOtherCbor) {
  expect_refused(json{{"schema", kSummarySchema}, {"ranks", json::array()}}.dump(), "not a stepscope summary");
  expect_refused(cbor(json::array({1, 2, 3})), "not a stepscope summary (no schema)");
  expect_refused(cbor(json{{"schema", 1}}), "not a stepscope summary (no schema)");
}

TEST(RankSummaryRefuses, TruncatedOrFollowedByMore) {
  const std::string& bytes = small_summary();
  expect_refused(bytes.substr(0, bytes.size() / 2), "not a stepscope summary (not CBOR at byte ");
  expect_refused(bytes + "x", "not a stepscope summary (not CBOR at byte ");
}

TEST(RankSummaryRefuses, NestingNoSummaryHas) {
  expect_refused(std::string(100000, '\x81') + '\x00', "nested deeper than");
}

// A file of the schema before the reading's warnings were records (their lines as strings).
TEST(RankSummaryRefuses, AnotherSchema) {
  const json doc = {{"schema", "stepscope.summary/10"}, {"warnings", {"a line"}}, {"ranks", json::array()}};
  expect_refused(cbor(doc), std::string("schema stepscope.summary/10, this stepscope reads ") + kSummarySchema);
  expect_refused(cbor(json{{"schema", "two\nlines"}}), "schema two lines");
}

TEST(RankSummaryRefuses, AFieldOfTheWrongType) {
  expect_refused(edited("/ranks/0/partition/steps"_json_pointer, 3),
                 "field 'ranks[0].partition.steps': type must be array, but is number");
  expect_refused(edited("/ranks/0/partition/steps/0/ns"_json_pointer, "x"),
                 "field 'ranks[0].partition.steps[0].ns': type must be array, but is string");
  expect_refused(edited("/ranks/0/ingest/events_by_category/7"_json_pointer, "x"),
                 "field 'ranks[0].ingest.events_by_category.7': type must be number, but is string");
  expect_refused(edited("/ranks/0/drilldown"_json_pointer, json::array()),
                 "field 'ranks[0].drilldown': ");
  expect_refused(edited("/warnings"_json_pointer, json::object()), "field 'warnings': type must be array");
  expect_refused(edited("/warnings"_json_pointer, {"a line"}), "field 'warnings[0]': cannot use at() with string");
  expect_refused(edited("/warnings"_json_pointer, {{{"id", "no_such_warning"}, {"counts", json::array()}, {"names", json::array()}}}),
                 "field 'warnings[0].id': an unknown warning id");
}

TEST(RankSummaryRefuses, AMissingField) {
  const json gone(json::value_t::discarded);
  expect_refused(edited("/ranks/0/stability/cv"_json_pointer, gone), "field 'ranks[0].stability.cv': missing");
  expect_refused(edited("/ranks/0/facts"_json_pointer, gone), "field 'ranks[0].facts': missing");
  expect_refused(edited("/ranks"_json_pointer, gone), "field 'ranks': missing");
  expect_refused(edited("/ranks/0/partition/mix/class_ns/13"_json_pointer, gone),
                 "field 'ranks[0].partition.mix.class_ns': array index 13 is out of range");
}

// ---- refused columns (critical-path edges and other long row lists are stored by column) -----

// Where the critical path's edges sit in a summary of a GPU trace: the object holding one column
// per field, integers as differences and names as a table of values with an index per row.
json::json_pointer path_columns(const json& doc, const json::json_pointer& at = json::json_pointer{}) {
  const json& here = doc.at(at);
  if (here.is_object() && here.contains("begin_ts") && here.contains("name")) return at;
  if (here.is_structured())
    for (auto it = here.begin(); it != here.end(); ++it) {
      const json::json_pointer child = here.is_array() ? at / static_cast<std::size_t>(it - here.begin()) : at / it.key();
      if (auto found = path_columns(doc, child); !found.empty()) return found;
    }
  return json::json_pointer{};
}

const std::string& path_summary() {
  static const std::string bytes = encode_summary(summarize("hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"));
  return bytes;
}

// The GPU summary with one member of its path columns set.
std::string path_edited(const std::string& member, const json& value) {
  json doc = json::from_cbor(path_summary());
  const json::json_pointer columns = path_columns(doc);
  EXPECT_FALSE(columns.empty());
  doc[columns / member] = value;
  return cbor(doc);
}

TEST(RankSummaryRefuses, ColumnsWithBadIndexesOrValues) {
  json doc = json::from_cbor(path_summary());
  const json::json_pointer columns = path_columns(doc);
  ASSERT_FALSE(columns.empty());
  ASSERT_GT(doc[columns / "begin_ts"].size(), 1u);
  json index = doc[columns / "name" / "index"];
  index[0] = -1;
  expect_refused(path_edited("name", {{"values", doc[columns / "name" / "values"]}, {"index", index}}),
                 "index past the table of values");
  index[0] = 0.5;
  expect_refused(path_edited("name", {{"values", doc[columns / "name" / "values"]}, {"index", index}}),
                 "an integer is expected");
  json ts = doc[columns / "begin_ts"];
  ts[1] = 2.5;  // a difference of times must be an integer
  expect_refused(path_edited("begin_ts", ts), "an integer is expected");
  ts = doc[columns / "begin_ts"];
  ts.erase(ts.size() - 1);
  expect_refused(path_edited("begin_ts", ts), "column end_ts has another length");  // begin_ts, read first, set it
}

TEST(RankSummaryRefuses, AStringColumnOfMoreThanAGibibyte) {
  // 1,025 rows naming one 1 MiB value: a few MB of CBOR that would decode to over 1 GiB.
  const json many(1025, 0);
  expect_refused(path_edited("name", {{"values", {std::string(std::size_t{1} << 20, 'x')}}, {"index", many}}),
                 "a column of more than 1 GiB");
}

}  // namespace
}  // namespace stepscope
