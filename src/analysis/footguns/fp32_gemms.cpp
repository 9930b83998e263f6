// fp32 GEMMs on SIMT kernels where the GPU has tensor cores that would take them: TF32 where the
// GPU has it (fp32_no_tf32), else fp16 autocast (fp32_no_amp: bf16 and TF32 do not exist before
// compute capability 8.0).
#include <fmt/core.h>

#include "stepscope/analysis.hpp"
#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {
namespace {

constexpr double kSimtGemmShare = 0.5;      // SIMT share of GEMM time (seed 001 T9/T13)
constexpr double kSimtComputeShare = 0.05;  // and SIMT GEMMs hold this much of compute kernels
constexpr double kTf32Cut = 0.5;            // same as the tf32 lever: fp32 runs 2-4x slower (T9)

struct Fp32Gemms : EvidenceOf<Fp32Gemms> {
  std::int64_t compute_kernel_time = 0;
  std::int64_t gemm_simt_time = 0, gemm_tc_time = 0;
  ByName simt_gemms;

  void gpu(const GpuEvent& e) override {
    if (e.kind != Kind::Kernel || !is_compute_class(e.cls)) return;
    compute_kernel_time += e.dur;
    if (e.cls == KernelClass::Gemm && (e.flags & kFp32)) gemm_simt_time += e.dur, add(simt_gemms, e.name(), e.dur);
    if (e.cls == KernelClass::GemmTensorCore) gemm_tc_time += e.dur;
  }
  void fields(EvidenceFields& v) override {
    v.field("compute_kernel_time", compute_kernel_time);
    v.field("gemm_simt_time", gemm_simt_time);
    v.field("gemm_tc_time", gemm_tc_time);
    v.field("simt_gemms", simt_gemms);
  }
};

// The first rank's device whose tensor cores can take fp32 GEMMs: TF32 (compute capability 8.0
// and up) or, failing that, fp16 under autocast with a GradScaler (7.x: V100, T4).
const DeviceModel* tensor_core_device(const AnalysisResult& r, bool want_tf32) {
  for (const auto& f : each_rank(r, &RankAnalysis::facts)) {
    const DeviceModel& d = f.device;
    if (want_tf32 ? d.tf32() == Capability::Yes : d.tensor_cores() == Capability::Yes) return &d;
  }
  return nullptr;
}

std::optional<FootgunJudgement> judge_fp32_gemms(const Judge& j) {
  const DeviceModel* device = tensor_core_device(j.result, true);
  const bool tf32 = device != nullptr;
  if (!device) device = tensor_core_device(j.result, false);
  if (!device) return std::nullopt;
  const double simt = j.sum<Fp32Gemms>([](const Fp32Gemms& s) { return s.gemm_simt_time; });
  if (simt <= 0) return std::nullopt;
  const double tc = j.sum<Fp32Gemms>([](const Fp32Gemms& s) { return s.gemm_tc_time; });
  const double compute = j.sum<Fp32Gemms>([](const Fp32Gemms& s) { return s.compute_kernel_time; });
  if (simt / (simt + tc) < kSimtGemmShare || simt < kSimtComputeShare * compute) return std::nullopt;
  const double gain = kTf32Cut * j.per_step(simt);
  if (!j.worth(gain)) return std::nullopt;
  const ByName names = j.merged(&Fp32Gemms::simt_gemms);
  const std::string what = tf32 ? "fp32 matmuls on SIMT kernels without TF32 or AMP: {} of GEMM time on a GPU with "
                                  "TF32 tensor cores"
                                : "fp32 matmuls on SIMT kernels without AMP: {} of GEMM time on a GPU whose tensor "
                                  "cores take fp16 (it has neither bf16 nor TF32)";
  return FootgunJudgement{
      tf32 ? FootgunId::Fp32NoTf32 : FootgunId::Fp32NoAmp,
      fmt::format(fmt::runtime(what), pct(simt / (simt + tc))),
      {fmt::format("device: {}", device->describe()),
       fmt::format("SIMT GEMM kernels: {:.1f} per step, {} per step ({} of compute-kernel time; tensor-core GEMMs {} "
                   "per step)",
                   j.per_step(static_cast<double>(total(names).count)), ms(j.per_step(simt)), pct(simt / compute),
                   ms(j.per_step(tc))),
       "largest: " + j.top_names(names),
       tf32 ? "gain: half of the SIMT GEMM time (TF32/bf16 tensor cores run fp32 GEMMs 2-4x faster)"
            : "gain: half of the SIMT GEMM time (fp16 tensor cores run these GEMMs several times faster)"},
      gain, j.step()};
}

}  // namespace

extern const Detector kFp32Gemms{"fp32_gemms", true, {.gpu_classes = kComputeClasses}, Fp32Gemms::make, judge_fp32_gemms};

}  // namespace stepscope::footgun
