// The reader on small exports built here in each real export's schema (nsys 2022.2 / schema 2.9.1
// and nsys 2024.5 / schema 3.13.2), with values known by construction; and bad files.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "export_builder.hpp"
#include "ingest/nsys_sqlite.hpp"
#include "stepscope/cuda_summary.hpp"
#include "stepscope/error.hpp"
#include "stepscope/ingest.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;
using nsys_test::ExportBuilder;
using nsys_test::SqlValue;

const std::string kFixtures = std::string(STEPSCOPE_FIXTURES_DIR) + "/nsys/";
const std::string kSchema2 = kFixtures + "saxpy-mpi-cuda_nsys_perlmutter0.sqlite";
const std::string kSchema3 = kFixtures + "perlmutter-cloverleaf-cuda.sqlite";

std::string scratch(const std::string& name) {
  fs::path dir = fs::path(STEPSCOPE_BINARY_DIR) / "nsys_test_files";
  fs::create_directories(dir);
  return (dir / name).string();
}

constexpr std::int64_t kPid = 4242, kTid = 4243;
constexpr std::int64_t kGlobalPid = (std::int64_t{1} << 48) | (kPid << 24);
constexpr std::int64_t kGlobalTid = kGlobalPid | kTid;
constexpr int kSteps = 3;
constexpr std::int64_t kBytes = 1 << 20;

// What the planted run looks like, step s starting at base(s): a pageable async copy, a GEMM and
// a ReLU launched and then waited for with cudaStreamSynchronize, all inside an NVTX
// "train_step" range, then an MPI_Send that nsys' MPI tracing recorded.
struct Planted {
  static std::int64_t base(int s) { return 1'000'000 + std::int64_t{s} * 10'000'000; }
  static std::int64_t gemm_dur(int s) { return 3'000'000 + std::int64_t{s} * 1'000; }
  static std::int64_t relu_dur(int s) { return 500'000 - std::int64_t{s} * 7; }
  static std::int64_t copy_dur(int s) { return 500'000 + std::int64_t{s} * 3; }
};

void build_export(ExportBuilder& b) {
  const std::vector<std::pair<std::int64_t, std::string>> strings = {
      {1, "train_step"},       {2, "cudaLaunchKernel_v7000"}, {3, "cudaMemcpyAsync_v3020"},
      {4, "cudaStreamSynchronize_v3020"}, {5, "void gemm<float>(int)"}, {6, "gemm"},
      {7, "void relu(float*)"}, {8, "relu"},  {9, "MPI"}, {10, "MPI_Send"}, {11, "main thread"},
      {12, "cudaLaunchKernel"}, {13, "_Z4gemmIfEvi"}, {14, "_Z4reluPf"}};
  for (const auto& [id, v] : strings) b.insert("StringIds", {{"id", id}, {"value", v}});
  b.insert("ThreadNames", {{"nameId", std::int64_t{11}}, {"priority", std::int64_t{10}}, {"globalTid", kGlobalTid}});
  b.insert("PROCESSES", {{"globalPid", kGlobalPid}, {"pid", kPid}, {"name", std::string("./train")}});
  b.insert("TARGET_INFO_GPU", {{"id", std::int64_t{0}}, {"name", std::string("Test GPU")},
                               {"totalMemory", std::int64_t{1} << 34}, {"smCount", std::int64_t{108}}});
  // The legacy NULL stream the work runs on, a high-priority stream (-5, written unsigned) and a
  // non-blocking one.
  for (auto [stream, flag, priority] : {std::tuple{7, 3, std::int64_t{0}}, std::tuple{15, 1, std::int64_t{4294967291}},
                                        std::tuple{13, 2, std::int64_t{0}}})
    b.insert("TARGET_INFO_CUDA_STREAM", {{"streamId", std::int64_t{stream}}, {"hwId", std::int64_t{0}},
                                         {"vmId", std::int64_t{1}}, {"processId", kPid}, {"contextId", std::int64_t{1}},
                                         {"priority", priority}, {"flag", std::int64_t{flag}}});
  b.insert("NVTX_EVENTS", {{"start", std::int64_t{10}}, {"eventType", std::int64_t{75}}, {"text", std::string("MPI")},
                           {"globalTid", kGlobalTid}, {"domainId", std::int64_t{1}}});
  auto api = [&](std::int64_t start, std::int64_t end, std::int64_t corr, std::int64_t name) {
    b.insert("CUPTI_ACTIVITY_KIND_RUNTIME", {{"start", start}, {"end", end}, {"eventClass", std::int64_t{0}},
                                             {"globalTid", kGlobalTid}, {"correlationId", corr}, {"nameId", name}});
  };
  auto gpu = [&](const std::string& table, std::int64_t start, std::int64_t end, std::int64_t corr,
                 std::map<std::string, SqlValue> more) {
    more.insert({{"start", start}, {"end", end}, {"deviceId", std::int64_t{0}}, {"contextId", std::int64_t{1}},
                 {"streamId", std::int64_t{7}}, {"correlationId", corr}, {"globalPid", kGlobalPid}});
    b.insert(table, more);
  };
  for (int s = 0; s < kSteps; ++s) {
    const std::int64_t t = Planted::base(s), c = 100 + 10 * s;
    b.insert("NVTX_EVENTS", {{"start", t}, {"end", t + 8'000'000}, {"eventType", std::int64_t{59}},
                             {"textId", std::int64_t{1}}, {"globalTid", kGlobalTid}});
    api(t + 100'000, t + 150'000, c + 1, 3);
    gpu("CUPTI_ACTIVITY_KIND_MEMCPY", t + 200'000, t + 200'000 + Planted::copy_dur(s), c + 1,
        {{"bytes", kBytes}, {"copyKind", std::int64_t{1}}, {"srcKind", std::int64_t{0}}, {"dstKind", std::int64_t{2}}});
    // The launch, and the enclosing copy of it that nsys 2022 writes for calls with a backtrace.
    api(t + 800'000, t + 810'000, c + 2, 2);
    b.insert("CUPTI_ACTIVITY_KIND_RUNTIME", {{"start", t + 799'000}, {"end", t + 811'000}, {"eventClass", std::int64_t{67}},
                                             {"globalTid", kGlobalTid}, {"correlationId", c + 2}, {"nameId", std::int64_t{12}}});
    gpu("CUPTI_ACTIVITY_KIND_KERNEL", t + 900'000, t + 900'000 + Planted::gemm_dur(s), c + 2,
        {{"demangledName", std::int64_t{5}}, {"shortName", std::int64_t{6}}, {"mangledName", std::int64_t{13}},
         {"gridX", std::int64_t{64}}, {"blockX", std::int64_t{256}}, {"registersPerThread", std::int64_t{32}}});
    api(t + 812'000, t + 815'000, c + 3, 2);
    gpu("CUPTI_ACTIVITY_KIND_KERNEL", t + 4'000'000, t + 4'000'000 + Planted::relu_dur(s), c + 3,
        {{"demangledName", std::int64_t{7}}, {"shortName", std::int64_t{8}}, {"mangledName", std::int64_t{14}}});
    api(t + 820'000, t + 4'600'000, c + 4, 4);
    gpu("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", t + 820'000, t + 4'600'000, c + 4,
        {{"syncType", std::int64_t{3}}, {"eventId", std::int64_t{0}}});
    b.insert("NVTX_EVENTS", {{"start", t + 8'100'000}, {"end", t + 8'200'000}, {"eventType", std::int64_t{59}},
                             {"textId", std::int64_t{10}}, {"globalTid", kGlobalTid}, {"domainId", std::int64_t{1}}});
  }
}

struct Schema {
  const char* name;
  std::string path;
};

class NsysBuilt : public ::testing::TestWithParam<Schema> {
 protected:
  std::string make(const std::string& tag, const std::set<std::string>& skip = {},
                   const std::string& environment = "") {
    std::string out = scratch(std::string(GetParam().name) + "_" + tag + ".sqlite");
    // The 2024 export traced no NVTX: its NVTX_EVENTS table is borrowed from the 2022 schema.
    ExportBuilder b(out, GetParam().path, skip, kSchema2, {"NVTX_EVENTS"});
    build_export(b);
    if (!environment.empty())
      b.insert("TARGET_INFO_SYSTEM_ENV", {{"globalVid", std::int64_t{1} << 48}, {"devStateName", std::string("Local (CLI)")},
                                          {"name", std::string("DeviceEnvironment")}, {"nameEnum", std::int64_t{610}},
                                          {"value", environment}});
    return out;
  }
};

std::int64_t sum_of(std::int64_t (*f)(int)) {
  std::int64_t s = 0;
  for (int i = 0; i < kSteps; ++i) s += f(i);
  return s;
}

// The export's one rank (a single process did CUDA work).
RankTrace read_one(const std::string& path) {
  std::vector<RankTrace> ranks = ingest::read_nsys_sqlite(path);
  EXPECT_EQ(ranks.size(), 1u);
  return std::move(ranks.at(0));
}

const DurationStats* row(const std::vector<DurationStats>& t, std::string_view name) {
  for (const auto& r : t)
    if (r.name == name) return &r;
  return nullptr;
}

TEST_P(NsysBuilt, ModelHoldsEveryActivityWithItsLaunch) {
  RankTrace t = read_one(make("model"));
  EXPECT_EQ(t.layout, TraceLayout::NsysSqlite);
  std::map<Kind, int> kinds;
  for (std::size_t i = 0; i < t.events.size(); ++i) ++kinds[t.events.kind[i]];
  EXPECT_EQ(kinds[Kind::Kernel], 2 * kSteps);
  EXPECT_EQ(kinds[Kind::Memcpy], kSteps);
  EXPECT_EQ(kinds[Kind::GpuSync], kSteps);
  EXPECT_EQ(kinds[Kind::Runtime], 4 * kSteps);  // backtrace copies are not calls
  EXPECT_EQ(kinds[Kind::Other], kSteps);
  EXPECT_EQ(kinds[Kind::UserAnnotation], kSteps);  // train_step
  EXPECT_EQ(kinds[Kind::CpuOp], kSteps);           // MPI_Send, from nsys' MPI domain
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.kind[i] != Kind::Kernel) continue;
    const auto launch = t.correlations.launch(t.events.correlation[i]);
    ASSERT_NE(launch, CorrelationIndex::kNoEvent);
    EXPECT_EQ(t.name_of(launch), "cudaLaunchKernel");
    EXPECT_EQ(t.events.kind[launch], Kind::Runtime);
    EXPECT_EQ(t.str(t.extra_of(launch)->alt_name), "cudaLaunchKernel_v7000");
    EXPECT_EQ(t.events.stream[i], 7);
    EXPECT_EQ(t.events.device[i], 0);
  }
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.kind[i] != Kind::Memcpy) continue;
    EXPECT_EQ(t.events.copy_kind[i], CopyKind::HtoD);
    EXPECT_EQ(t.events.host_mem[i], HostMem::Pageable);
    EXPECT_EQ(t.name_of(i), "Memcpy HtoD (Pageable -> Device)");
    EXPECT_EQ(t.bytes_of(i), kBytes);
  }
  ASSERT_EQ(t.host_tracks.size(), 1u);
  EXPECT_EQ(t.host_tracks[0].pid, kPid);
  EXPECT_EQ(t.host_tracks[0].tid, kTid);
  EXPECT_EQ(t.host_tracks[0].name, "main thread");
  EXPECT_EQ(t.process_names[kPid], "./train");
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "Test GPU");
  EXPECT_EQ(t.devices[0].num_sms, 108);
}

// One nsys per rank (srun / torchrun launching nsys): the launcher's rank is in nsys' environment.
TEST_P(NsysBuilt, RankAndWorldSizeFromTheLaunchersEnvironment) {
  const std::string a =
      make("env_rank3", {}, "HOME=/u;PMI_RANK=x;SLURM_PROCID=3;SLURM_STEP_ID=2;SLURM_STEP_NUM_TASKS=8;XSLURM_PROCID=9");
  const std::string b = make("env_rank1", {}, "RANK=1;WORLD_SIZE=8;SLURM_PROCID=5;SLURM_STEP_ID=0");
  Trace t = read_traces({a, b});
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.ranks[0].rank, 1);
  EXPECT_EQ(t.ranks[0].rank_source, RankTrace::RankSource::DistributedInfo);
  EXPECT_EQ(t.ranks[0].distributed.world_size, 8);
  EXPECT_EQ(t.ranks[1].rank, 3);
  EXPECT_EQ(t.ranks[1].path, a);
  EXPECT_EQ(t.ranks[1].distributed.world_size, 8);
  // Without a rank in the environment, ranks come from file names or order, as before.
  Trace none = read_traces({make("env_none", {}, "HOME=/u;SLURM_NTASKS=2")});
  EXPECT_EQ(none.ranks[0].rank_source, RankTrace::RankSource::FileOrder);
  // A batch script's environment (SLURM_PROCID=0 for the whole allocation, no job step) names
  // no rank; nor does a world size of 0.
  Trace batch = read_traces({make("env_batch", {}, "SLURM_PROCID=0;SLURM_NTASKS=4;SLURM_STEP_ID=4294967294")});
  EXPECT_EQ(batch.ranks[0].rank_source, RankTrace::RankSource::FileOrder);
  EXPECT_FALSE(batch.ranks[0].distributed.world_size);
  Trace zero = read_traces({make("env_zero", {}, "RANK=2;WORLD_SIZE=0")});
  EXPECT_EQ(zero.ranks[0].rank, 2);
  EXPECT_FALSE(zero.ranks[0].distributed.world_size);
}

TEST_P(NsysBuilt, StreamsKeepTheirCreationFlagAndPriority) {
  Trace t = read_traces({make("streams")});
  const auto& info = t.ranks[0].stream_info;
  ASSERT_EQ(info.size(), 3u);
  EXPECT_EQ(info[0].stream, 7);
  EXPECT_EQ(info[0].type, StreamType::Null);
  EXPECT_EQ(info[1].stream, 13);
  EXPECT_EQ(info[1].type, StreamType::NonBlocking);
  EXPECT_EQ(info[2].stream, 15);
  EXPECT_EQ(info[2].type, StreamType::Default);
  EXPECT_EQ(info[2].priority, -5);
  const nlohmann::json j = to_json(analyze_paths({make("streams_json")}).result);
  const auto& streams = j["ranks"][0]["ingest"]["gpu_streams"];
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_EQ(streams[0]["stream"], 7);
  EXPECT_EQ(streams[0]["type"], "null");
  EXPECT_EQ(streams[0]["priority"], 0);
}

TEST_P(NsysBuilt, SummaryMatchesThePlantedRows) {
  RankTrace t = read_one(make("summary"));
  CudaSummary s = summarize_cuda(t);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].name, "void gemm<float>(int)");
  EXPECT_EQ(s.kernels[0].total, sum_of(Planted::gemm_dur));
  EXPECT_EQ(s.kernels[0].min, Planted::gemm_dur(0));
  EXPECT_EQ(s.kernels[0].median, static_cast<double>(Planted::gemm_dur(1)));
  EXPECT_DOUBLE_EQ(s.kernels[0].stddev, 1000.0);  // 3 values 1,000 ns apart
  ASSERT_NE(row(s.kernels_short_name, "relu"), nullptr);
  EXPECT_EQ(row(s.kernels_short_name, "relu")->total, sum_of(Planted::relu_dur));
  EXPECT_EQ(s.kernel_count, 2u * kSteps);
  ASSERT_EQ(s.memcpy_by_kind.size(), 1u);
  EXPECT_EQ(s.memcpy_by_kind[0].kind, "HtoD");
  EXPECT_EQ(s.memcpy_by_kind[0].bytes, kSteps * kBytes);
  EXPECT_EQ(s.memcpy_by_kind[0].time.total, sum_of(Planted::copy_dur));
  ASSERT_NE(row(s.runtime_api, "cudaLaunchKernel_v7000"), nullptr);
  EXPECT_EQ(row(s.runtime_api, "cudaLaunchKernel_v7000")->instances, 2u * kSteps);
  ASSERT_NE(row(s.runtime_api, "cudaLaunchKernel"), nullptr);  // the backtrace rows, as nsys counts
  EXPECT_EQ(row(s.runtime_api, "cudaLaunchKernel")->instances, static_cast<std::uint64_t>(kSteps));
  EXPECT_EQ(s.runtime_api[0].name, "cudaStreamSynchronize_v3020");
  EXPECT_EQ(s.sync_calls, static_cast<std::uint64_t>(kSteps));
  EXPECT_EQ(s.pageable_async_copies, static_cast<std::uint64_t>(kSteps));
  // The GEMM's launch is followed by the ReLU's, the ReLU's by the stream sync.
  EXPECT_EQ(s.kernel_launches, 2u * kSteps);
  EXPECT_EQ(s.launches_then_sync, static_cast<std::uint64_t>(kSteps));
  EXPECT_EQ(s.sync_after_launch, "cudaStreamSynchronize");
  ASSERT_EQ(s.devices.size(), 1u);
  const DeviceBusy& d = s.devices[0];
  EXPECT_EQ(d.busy, sum_of(Planted::gemm_dur) + sum_of(Planted::relu_dur) + sum_of(Planted::copy_dur));
  EXPECT_EQ(d.span, Planted::base(kSteps - 1) + 4'000'000 + Planted::relu_dur(kSteps - 1) - Planted::base(0) - 200'000);
  EXPECT_EQ(d.idle, d.span - d.busy);
  EXPECT_EQ(d.gaps_over_threshold, 0u);
  CudaSummary tight = summarize_cuda(t, 5'000'000);  // the gaps between steps are ~5.7 ms
  EXPECT_EQ(tight.devices[0].gaps_over_threshold, static_cast<std::uint64_t>(kSteps - 1));
}

TEST_P(NsysBuilt, StepRangeNamesTheSteps) {
  std::string path = make("steps");
  PipelineOptions o;
  o.analyze.partition.step_range = "train_step";
  Analysis a = analyze_paths({path}, o);
  ASSERT_EQ(a.result.ranks.size(), 1u);
  const RankPartition& p = a.result.ranks[0].partition;
  EXPECT_EQ(p.source, StepSource::Annotation);
  EXPECT_EQ(p.source_detail, "train_step");
  ASSERT_EQ(p.steps.size(), static_cast<std::size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) EXPECT_EQ(p.steps[static_cast<std::size_t>(s)].start, Planted::base(s));
  EXPECT_TRUE(p.gpu);
  o.analyze.partition.step_range = "no_such_range";
  EXPECT_THROW(analyze_paths({path}, o), InputError);
}

// The CLI's --step-range reaches the partition: the JSON report says where the steps came from.
TEST_P(NsysBuilt, CliStepRange) {
  std::string cli = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope";
  if (!fs::exists(cli)) GTEST_SKIP() << "stepscope binary not built";
  std::string path = make("cli"), json = scratch(std::string(GetParam().name) + "_cli.json");
  int rc = std::system((cli + " analyze -q --step-range train_step --json " + json + " " + path + " > /dev/null 2>&1").c_str());
  ASSERT_EQ(WEXITSTATUS(rc), 0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  const auto& p = j["ranks"][0]["partition"];
  EXPECT_EQ(p["step_source_detail"], "train_step");
  EXPECT_EQ(p["steps"].size(), static_cast<std::size_t>(kSteps));
  rc = std::system((cli + " analyze -q --step-range no_such_range " + path + " > /dev/null 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

// A directory of per-rank exports is one job, ranks from the file names.
TEST_P(NsysBuilt, DirectoryOfExportsIsOneRankEach) {
  fs::path dir = fs::path(scratch(std::string(GetParam().name) + "_job"));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r : {1, 0}) {
    ExportBuilder b((dir / ("train_rank" + std::to_string(r) + ".sqlite")).string(), GetParam().path, {}, kSchema2,
                    {"NVTX_EVENTS"});
    build_export(b);
  }
  Trace t = read_traces({dir.string()});
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_EQ(t.ranks[1].rank, 1);
  EXPECT_NE(t.ranks[1].path.find("train_rank1.sqlite"), std::string::npos);
}

TEST_P(NsysBuilt, OptionalTablesMayBeMissing) {
  std::string path = make("lean", {"NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "TARGET_INFO_GPU",
                                   "ThreadNames", "PROCESSES", "CUPTI_ACTIVITY_KIND_MEMSET",
                                   "META_DATA_EXPORT", "EXPORT_META_DATA"});
  Analysis a = analyze_paths({path});
  const RankTrace& t = a.trace.ranks[0];
  EXPECT_TRUE(t.devices.empty());
  CudaSummary s = summarize_cuda(t);
  EXPECT_EQ(s.kernel_count, 2u * kSteps);
  EXPECT_EQ(s.sync_calls, static_cast<std::uint64_t>(kSteps));  // from the API names alone
  EXPECT_EQ(a.result.ranks[0].partition.source, StepSource::WholeTrace);
}

// PyTorch under nsys --pytorch=autograd-nvtx: ProfilerStep#N and aten ops as NVTX ranges whose
// text carries ", seq = N, op_id = N, sizes = [...]".
void build_pytorch_export(ExportBuilder& b) {
  b.insert("StringIds", {{"id", std::int64_t{1}}, {"value", std::string("cudaLaunchKernel_v7000")}});
  b.insert("StringIds", {{"id", std::int64_t{2}}, {"value", std::string("ampere_sgemm_128x64_nn")}});
  for (int s = 0; s < kSteps; ++s) {
    const std::int64_t t = Planted::base(s), corr = 10 + s;
    b.insert("NVTX_EVENTS", {{"start", t}, {"end", t + 5'000'000}, {"eventType", std::int64_t{59}},
                             {"text", "ProfilerStep#" + std::to_string(5 + s) + ", op_id = " + std::to_string(100 * s)},
                             {"globalTid", kGlobalTid}});
    b.insert("NVTX_EVENTS", {{"start", t + 100'000}, {"end", t + 400'000}, {"eventType", std::int64_t{59}},
                             {"text", std::string("aten::mm, seq = 3, op_id = 7, sizes = [[2, 3], [3, 4]], input_op_ids = [(5, 0)]")},
                             {"globalTid", kGlobalTid}});
    b.insert("CUPTI_ACTIVITY_KIND_RUNTIME", {{"start", t + 200'000}, {"end", t + 210'000}, {"globalTid", kGlobalTid},
                                             {"correlationId", corr}, {"nameId", std::int64_t{1}}});
    b.insert("CUPTI_ACTIVITY_KIND_KERNEL", {{"start", t + 300'000}, {"end", t + 2'300'000}, {"deviceId", std::int64_t{0}},
                                            {"streamId", std::int64_t{7}}, {"correlationId", corr},
                                            {"demangledName", std::int64_t{2}}, {"shortName", std::int64_t{2}}});
  }
}

TEST_P(NsysBuilt, PytorchNvtxRangesGiveProfilerSteps) {
  std::string path = scratch(std::string(GetParam().name) + "_pytorch.sqlite");
  {
    ExportBuilder b(path, GetParam().path, {}, kSchema2, {"NVTX_EVENTS"});
    build_pytorch_export(b);
  }
  Analysis a = analyze_paths({path});
  const RankTrace& t = a.trace.ranks[0];
  int ops = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.name_of(i) != "aten::mm") continue;
    ++ops;
    EXPECT_EQ(t.events.kind[i], Kind::CpuOp);
    EXPECT_NE(t.str(t.extra_of(i)->alt_name).find("sizes = [[2, 3], [3, 4]]"), std::string_view::npos);
  }
  EXPECT_EQ(ops, kSteps);
  const RankPartition& p = a.result.ranks[0].partition;
  EXPECT_EQ(p.source, StepSource::ProfilerStep);
  ASSERT_EQ(p.steps.size(), static_cast<std::size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) EXPECT_EQ(p.steps[static_cast<std::size_t>(s)].number, 5 + s);
  EXPECT_EQ(a.result.ranks[0].ingest.profiler_steps, (std::vector<std::int64_t>{5, 6, 7}));
}

INSTANTIATE_TEST_SUITE_P(Versions, NsysBuilt,
                         ::testing::Values(Schema{"nsys2022_schema2", kSchema2}, Schema{"nsys2024_schema3", kSchema3}),
                         [](const ::testing::TestParamInfo<Schema>& p) { return std::string(p.param.name); });

// --- one export of several processes (nsys profile mpirun -np 2 ...) ---------------------------

// Two ranks' processes, each on its own GPU with its own planted kernels, and the launcher, which
// makes no CUDA call. CUPTI numbers correlation ids per process: both ranks use the same ones.
struct MpiProcess {
  std::int64_t pid;
  std::int64_t device;
  std::int64_t stream_flag;  // how its stream 7 was created: 3 the NULL stream, 2 non-blocking
  std::int64_t (*gemm_dur)(int);
  bool extra_kernel;  // the second rank also runs a kernel the first never does
  std::int64_t global_pid() const { return (std::int64_t{1} << 48) | (pid << 24); }
  std::int64_t global_tid() const { return global_pid() | pid; }
};
const MpiProcess kRankA{7001, 0, 3, [](int s) { return 1'000'000 + std::int64_t{s} * 10; }, false};
const MpiProcess kRankB{7002, 1, 2, [](int s) { return 2'500'000 + std::int64_t{s} * 30; }, true};
constexpr std::int64_t kLauncherPid = 7000;
constexpr std::int64_t kOnlyBDur = 40'000;

void build_mpi_process(ExportBuilder& b, const MpiProcess& p) {
  b.insert("PROCESSES", {{"globalPid", p.global_pid()}, {"pid", p.pid}, {"name", std::string("./train")}});
  b.insert("ThreadNames", {{"nameId", std::int64_t{5}}, {"priority", std::int64_t{10}}, {"globalTid", p.global_tid()}});
  b.insert("TARGET_INFO_CUDA_STREAM", {{"streamId", std::int64_t{7}}, {"hwId", std::int64_t{0}}, {"vmId", std::int64_t{1}},
                                       {"processId", p.pid}, {"contextId", std::int64_t{1}},
                                       {"priority", std::int64_t{0}}, {"flag", p.stream_flag}});
  auto api = [&](std::int64_t start, std::int64_t end, std::int64_t corr, std::int64_t name) {
    b.insert("CUPTI_ACTIVITY_KIND_RUNTIME", {{"start", start}, {"end", end}, {"eventClass", std::int64_t{0}},
                                             {"globalTid", p.global_tid()}, {"correlationId", corr}, {"nameId", name}});
  };
  auto kernel = [&](std::int64_t start, std::int64_t dur, std::int64_t corr, std::int64_t name) {
    b.insert("CUPTI_ACTIVITY_KIND_KERNEL", {{"start", start}, {"end", start + dur}, {"deviceId", p.device},
                                            {"contextId", std::int64_t{1}}, {"streamId", std::int64_t{7}},
                                            {"correlationId", corr}, {"globalPid", p.global_pid()},
                                            {"demangledName", name}, {"shortName", name}});
  };
  for (int s = 0; s < kSteps; ++s) {
    const std::int64_t t = Planted::base(s), c = 100 + 10 * s;
    b.insert("NVTX_EVENTS", {{"start", t}, {"end", t + 8'000'000}, {"eventType", std::int64_t{59}},
                             {"textId", std::int64_t{6}}, {"globalTid", p.global_tid()}});
    api(t + 100'000, t + 110'000, c + 1, 1);
    kernel(t + 200'000, p.gemm_dur(s), c + 1, 2);
    if (p.extra_kernel) {
      api(t + 120'000, t + 130'000, c + 2, 1);
      kernel(t + 4'000'000, kOnlyBDur, c + 2, 3);
    }
    api(t + 140'000, t + 5'000'000, c + 3, 4);
  }
}

void build_mpi_export(ExportBuilder& b, const std::vector<MpiProcess>& ranks) {
  const std::vector<std::pair<std::int64_t, std::string>> strings = {
      {1, "cudaLaunchKernel_v7000"}, {2, "void gemm<float>(int)"}, {3, "void only_b(float*)"},
      {4, "cudaStreamSynchronize_v3020"}, {5, "main thread"}, {6, "train_step"}, {7, "launch"}};
  for (const auto& [id, v] : strings) b.insert("StringIds", {{"id", id}, {"value", v}});
  for (std::int64_t gpu : {0, 1})
    b.insert("TARGET_INFO_GPU", {{"id", gpu}, {"name", "Test GPU " + std::to_string(gpu)}, {"smCount", std::int64_t{108}}});
  // The launcher: a process name and an NVTX range, no CUDA call.
  const std::int64_t launcher = (std::int64_t{1} << 48) | (kLauncherPid << 24);
  b.insert("PROCESSES", {{"globalPid", launcher}, {"pid", kLauncherPid}, {"name", std::string("mpirun")}});
  b.insert("NVTX_EVENTS", {{"start", std::int64_t{0}}, {"end", std::int64_t{40'000'000}}, {"eventType", std::int64_t{59}},
                           {"textId", std::int64_t{7}}, {"globalTid", launcher | kLauncherPid}});
  for (const auto& p : ranks) build_mpi_process(b, p);
}

class NsysMultiProcess : public NsysBuilt {
 protected:
  std::string make_mpi(const std::string& tag, const std::vector<MpiProcess>& ranks = {kRankA, kRankB}) {
    std::string out = scratch(std::string(GetParam().name) + "_" + tag + ".sqlite");
    ExportBuilder b(out, GetParam().path, {}, kSchema2, {"NVTX_EVENTS"});
    build_mpi_export(b, ranks);
    return out;
  }
};

std::int64_t kernel_total(const RankTrace& t, std::string_view name) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (t.events.kind[i] == Kind::Kernel && t.name_of(i) == name) total += t.events.dur[i];
  return total;
}

// Each rank holds only its own process's rows, and each kernel's launch is its own process's
// call with that correlation id, though both processes use the same ids.
void expect_only_process(const RankTrace& t, const MpiProcess& p) {
  SCOPED_TRACE("pid " + std::to_string(p.pid));
  EXPECT_EQ(t.layout, TraceLayout::NsysSqlite);
  ASSERT_EQ(t.host_tracks.size(), 1u);
  EXPECT_EQ(t.host_tracks[0].pid, p.pid);
  EXPECT_EQ(t.host_tracks[0].name, "main thread");
  ASSERT_EQ(t.gpu_tracks.size(), 1u);
  EXPECT_EQ(t.gpu_tracks[0].pid, p.device);
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.kind[i] != Kind::Kernel) continue;
    const auto launch = t.correlations.launch(t.events.correlation[i]);
    ASSERT_NE(launch, CorrelationIndex::kNoEvent);
    EXPECT_EQ(t.events.pid(launch), p.pid);
    EXPECT_LT(t.events.ts[launch], t.events.ts[i]);
  }
  EXPECT_EQ(t.process_names.size(), 1u);
  EXPECT_EQ(t.process_names.count(p.pid), 1u);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].id, p.device);
  ASSERT_EQ(t.stream_info.size(), 1u);
  EXPECT_EQ(t.stream_info[0].type, p.stream_flag == 3 ? StreamType::Null : StreamType::NonBlocking);
}

TEST_P(NsysMultiProcess, EachProcessIsOneRank) {
  std::string path = make_mpi("two_ranks");
  Trace t = read_traces({path});
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_EQ(t.ranks[1].rank, 1);
  EXPECT_EQ(t.ranks[0].rank_source, RankTrace::RankSource::FileOrder);
  EXPECT_EQ(t.warnings, (std::vector<IngestWarning>{{WarningId::ExportRanksInFileOrder, {}, {path}}}));
  for (const RankTrace& r : t.ranks) EXPECT_EQ(r.path, path);
  expect_only_process(t.ranks[0], kRankA);  // the lower pid first
  expect_only_process(t.ranks[1], kRankB);
  EXPECT_EQ(kernel_total(t.ranks[0], "void gemm<float>(int)"), sum_of(kRankA.gemm_dur));
  EXPECT_EQ(kernel_total(t.ranks[1], "void gemm<float>(int)"), sum_of(kRankB.gemm_dur));
  EXPECT_EQ(kernel_total(t.ranks[0], "void only_b(float*)"), 0);
  EXPECT_EQ(kernel_total(t.ranks[1], "void only_b(float*)"), kSteps * kOnlyBDur);
  // The launcher's NVTX range is no rank's, and the first rank says so.
  for (const RankTrace& r : t.ranks)
    for (std::size_t i = 0; i < r.events.size(); ++i) EXPECT_NE(r.name_of(i), "launch");
  ASSERT_EQ(t.ranks[0].warnings.size(), 1u);
  EXPECT_EQ(t.ranks[0].warnings[0], (IngestWarning{WarningId::ExportRowsLeftOut, {1, 0}, {"pid 7000 mpirun"}}));
  EXPECT_EQ(ingest_warning_text(t.ranks[0].warnings[0]), "1 row of processes without CUDA work (pid 7000 mpirun) left out");
}

TEST_P(NsysMultiProcess, CudaSummaryPerRankMatchesItsRows) {
  std::vector<RankTrace> ranks = ingest::read_nsys_sqlite(make_mpi("summary"));
  ASSERT_EQ(ranks.size(), 2u);
  const CudaSummary a = summarize_cuda(ranks[0]), b = summarize_cuda(ranks[1]);
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_EQ(a.kernels[0].total, sum_of(kRankA.gemm_dur));
  EXPECT_EQ(a.kernels[0].min, kRankA.gemm_dur(0));
  EXPECT_EQ(a.kernel_count, static_cast<std::uint64_t>(kSteps));
  ASSERT_EQ(b.kernels.size(), 2u);
  EXPECT_EQ(b.kernels[0].name, "void gemm<float>(int)");
  EXPECT_EQ(b.kernels[0].total, sum_of(kRankB.gemm_dur));
  EXPECT_EQ(b.kernels[0].max, kRankB.gemm_dur(kSteps - 1));
  EXPECT_EQ(b.kernels[1].total, kSteps * kOnlyBDur);
  EXPECT_EQ(b.kernel_count, 2u * kSteps);
  ASSERT_NE(row(a.runtime_api, "cudaLaunchKernel_v7000"), nullptr);
  EXPECT_EQ(row(a.runtime_api, "cudaLaunchKernel_v7000")->instances, static_cast<std::uint64_t>(kSteps));
  ASSERT_NE(row(b.runtime_api, "cudaLaunchKernel_v7000"), nullptr);
  EXPECT_EQ(row(b.runtime_api, "cudaLaunchKernel_v7000")->instances, 2u * kSteps);
  EXPECT_EQ(a.sync_calls, static_cast<std::uint64_t>(kSteps));
  EXPECT_EQ(b.sync_calls, static_cast<std::uint64_t>(kSteps));
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_EQ(a.devices[0].busy, sum_of(kRankA.gemm_dur));
  ASSERT_EQ(b.devices.size(), 1u);
  EXPECT_EQ(b.devices[0].busy, sum_of(kRankB.gemm_dur) + kSteps * kOnlyBDur);
}

TEST_P(NsysMultiProcess, AnalyzeReportsTwoRanks) {
  std::string path = make_mpi("analyze");
  Analysis a = analyze_paths({path});
  EXPECT_EQ(a.result.ranks.size(), 2u);
  EXPECT_EQ(a.result.ranks.size(), 2u);
  std::string cli = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope";
  if (!fs::exists(cli)) GTEST_SKIP() << "stepscope binary not built";
  std::string json = scratch(std::string(GetParam().name) + "_mpi.json");
  int rc = std::system((cli + " analyze -q --json " + json + " " + path + " > /dev/null 2>&1").c_str());
  ASSERT_EQ(WEXITSTATUS(rc), 0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["ranks"].size(), 2u);
  const auto& k0 = j["ranks"][0]["cuda_summary"]["kernels"], &k1 = j["ranks"][1]["cuda_summary"]["kernels"];
  ASSERT_EQ(k0.size(), 1u);
  EXPECT_EQ(k0[0]["total_ns"].get<std::int64_t>(), sum_of(kRankA.gemm_dur));
  ASSERT_EQ(k1.size(), 2u);
  EXPECT_EQ(k1[0]["total_ns"].get<std::int64_t>(), sum_of(kRankB.gemm_dur));
}

// One process did CUDA work beside the launcher: the export is one rank, as for any capture,
// with every row (the launcher's NVTX range too).
TEST_P(NsysMultiProcess, LauncherWithoutCudaIsNoRank) {
  std::vector<RankTrace> ranks = ingest::read_nsys_sqlite(make_mpi("one_rank", {kRankB}));
  ASSERT_EQ(ranks.size(), 1u);
  const RankTrace& t = ranks[0];
  EXPECT_TRUE(t.warnings.empty());
  EXPECT_EQ(kernel_total(t, "void gemm<float>(int)"), sum_of(kRankB.gemm_dur));
  EXPECT_EQ(t.process_names.size(), 2u);
  EXPECT_EQ(t.devices.size(), 2u);
  bool launcher_range = false;
  for (std::size_t i = 0; i < t.events.size(); ++i) launcher_range |= t.name_of(i) == "launch";
  EXPECT_TRUE(launcher_range);
}

// A directory of such exports: ranks numbered on from one file to the next; a rank-N in a file's
// name cannot number the processes inside it.
TEST_P(NsysMultiProcess, DirectoryOfMultiProcessExports) {
  fs::path dir = fs::path(scratch(std::string(GetParam().name) + "_mpi_job"));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* name : {"node1_rank2.sqlite", "node0_rank0.sqlite"}) {
    ExportBuilder b((dir / name).string(), GetParam().path, {}, kSchema2, {"NVTX_EVENTS"});
    build_mpi_export(b, {kRankA, kRankB});
  }
  Trace t = read_traces({dir.string()});
  ASSERT_EQ(t.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const RankTrace& rank = t.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(rank.rank, r);
    EXPECT_NE(rank.path.find(r < 2 ? "node0_rank0" : "node1_rank2"), std::string::npos) << rank.path;
    EXPECT_EQ(rank.host_tracks.at(0).pid, r % 2 == 0 ? kRankA.pid : kRankB.pid);
  }
}

// An older schema whose GPU tables carry no globalPid: each GPU row goes with its launch, found
// by correlation id; where the ids repeat across processes the owner is unknown, one rank.
TEST_P(NsysMultiProcess, GpuRowsWithoutProcessFollowTheirLaunch) {
  auto drop_gpu_pid = [this](const std::string& path, const std::vector<MpiProcess>& ranks) {
    ExportBuilder b(path, GetParam().path, {}, kSchema2, {"NVTX_EVENTS"});
    build_mpi_export(b, ranks);
    for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                              "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"})
      if (b.has(table)) b.exec(std::string("ALTER TABLE \"") + table + "\" DROP COLUMN globalPid");
  };
  std::string same_ids = scratch(std::string(GetParam().name) + "_nopid_same.sqlite");
  drop_gpu_pid(same_ids, {kRankA, kRankB});
  std::vector<RankTrace> merged = ingest::read_nsys_sqlite(same_ids);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].warnings, (std::vector<IngestWarning>{{WarningId::ExportReadAsOneRank, {2}, {}}}));

  std::string distinct = scratch(std::string(GetParam().name) + "_nopid_distinct.sqlite");
  {
    ExportBuilder b(distinct, GetParam().path, {}, kSchema2, {"NVTX_EVENTS"});
    build_mpi_export(b, {kRankA, kRankB});
    const std::string b_pid = std::to_string(kRankB.pid);
    b.exec("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = correlationId + 1000 "
           "WHERE (globalTid >> 24) & 16777215 = " + b_pid);
    b.exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = correlationId + 1000 "
           "WHERE (globalPid >> 24) & 16777215 = " + b_pid);
    b.exec("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN globalPid");
  }
  std::vector<RankTrace> split = ingest::read_nsys_sqlite(distinct);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(kernel_total(split[0], "void gemm<float>(int)"), sum_of(kRankA.gemm_dur));
  EXPECT_EQ(kernel_total(split[1], "void gemm<float>(int)"), sum_of(kRankB.gemm_dur));
  EXPECT_EQ(kernel_total(split[1], "void only_b(float*)"), kSteps * kOnlyBDur);
}

INSTANTIATE_TEST_SUITE_P(Versions, NsysMultiProcess,
                         ::testing::Values(Schema{"nsys2022_schema2", kSchema2}, Schema{"nsys2024_schema3", kSchema3}),
                         [](const ::testing::TestParamInfo<Schema>& p) { return std::string(p.param.name); });

// The two schemas differ, and the builder really reproduces each: the column one lacks is absent.
TEST(NsysSchemas, BuiltExportsKeepEachVersionsColumns) {
  ExportBuilder two(scratch("cols2.sqlite"), kSchema2), three(scratch("cols3.sqlite"), kSchema3);
  EXPECT_FALSE(two.has_column("CUPTI_ACTIVITY_KIND_KERNEL", "greenContextId"));
  EXPECT_TRUE(three.has_column("CUPTI_ACTIVITY_KIND_KERNEL", "greenContextId"));
  EXPECT_TRUE(two.has_column("CUPTI_ACTIVITY_KIND_RUNTIME", "name"));
  EXPECT_FALSE(three.has_column("CUPTI_ACTIVITY_KIND_RUNTIME", "name"));
  EXPECT_TRUE(three.has("ENUM_NSYS_EVENT_TYPE"));
  EXPECT_FALSE(two.has("ENUM_NSYS_EVENT_TYPE"));
}

// --- bad files -------------------------------------------------------------------------------

std::string write_file(const std::string& name, const std::string& bytes) {
  std::string p = scratch(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string error_of(const std::vector<std::string>& paths) {
  try {
    read_traces(paths);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NsysBadInput, EmptyFileIsRefused) {
  std::string msg = error_of({write_file("empty.sqlite", "")});
  EXPECT_NE(msg.find("not a SQLite database"), std::string::npos) << msg;
}

TEST(NsysBadInput, GarbageAfterTheMagicIsRefused) {
  std::string bytes("SQLite format 3\0", 16);
  bytes += std::string(4096, '\x5a');
  std::string msg = error_of({write_file("garbage.sqlite", bytes)});
  EXPECT_NE(msg.find("garbage.sqlite"), std::string::npos) << msg;
}

TEST(NsysBadInput, TruncatedExportIsRefused) {
  std::ifstream in(kSchema3, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(fs::file_size(kSchema3)) / 3, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::string msg = error_of({write_file("truncated.sqlite", bytes)});
  EXPECT_NE(msg.find("truncated.sqlite"), std::string::npos) << msg;
}

TEST(NsysBadInput, OtherSqliteDatabaseIsRefused) {
  std::string p = scratch("other.sqlite");
  fs::remove(p);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE notes (id INTEGER, text TEXT); INSERT INTO notes VALUES (1, 'x');", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::string msg = error_of({p});
  EXPECT_NE(msg.find("not an Nsight Systems export"), std::string::npos) << msg;
}

TEST(NsysBadInput, ExportWithoutEventsIsRefused) {
  std::string p = scratch("no_events.sqlite");
  { ExportBuilder b(p, kSchema3); }
  std::string msg = error_of({p});
  EXPECT_NE(msg.find("holds no"), std::string::npos) << msg;
}

TEST(NsysBadInput, ReportFileGetsTheExportCommand) {
  std::string msg = error_of({write_file("run1.nsys-rep", "not exported")});
  EXPECT_NE(msg.find("nsys export --type sqlite"), std::string::npos) << msg;
}

TEST(NsysBadInput, MixedWithKinetoIsRefused) {
  std::string kineto = std::string(STEPSCOPE_FIXTURES_DIR) + "/cpu/c_item_print_every_step.pt.trace.json.gz";
  std::string msg = error_of({kineto, kSchema2});
  EXPECT_NE(msg.find("mixed inputs"), std::string::npos) << msg;
}

TEST(NsysBadInput, CliExitsWithTwo) {
  std::string cli = std::string(STEPSCOPE_BINARY_DIR) + "/stepscope";
  if (!fs::exists(cli)) GTEST_SKIP() << "stepscope binary not built";
  std::string bad = write_file("cli_bad.sqlite", std::string("SQLite format 3\0", 16) + std::string(512, 'x'));
  int rc = std::system((cli + " analyze -q " + bad + " > /dev/null 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

TEST(NsysReadOnly, AWalModeExportIsReadWithoutWritingBesideIt) {
  // A WAL-mode database: opening it the ordinary way creates -shm and -wal files beside it.
  const std::string p = scratch("wal_mode.sqlite");
  fs::remove(p);
  fs::copy_file(std::string(STEPSCOPE_FIXTURES_DIR) + "/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite", p);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  ASSERT_FALSE(fs::exists(p + "-wal"));
  const Trace t = read_traces({p});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_GT(t.ranks[0].events.size(), 0u);
  EXPECT_FALSE(fs::exists(p + "-wal"));
  EXPECT_FALSE(fs::exists(p + "-shm"));
}

}  // namespace
}  // namespace stepscope
