// A footgun detector: one file in src/analysis/footguns/ holding its evidence (what it gathers
// from one rank's events: counts, times, names), its scan (the events it asks for, walked once
// for every detector together by scan_footguns) and its judgement (the finding across ranks).
// The table in src/analysis/footguns/registry.cpp lists them in the order they judge; the rank
// summary writes each detector's evidence through its fields(), under its name.
//
// The judgement returns a plain FootgunJudgement; the diagnose module turns it into a finding
// and re-ranks its lever (docs/architecture.md, "Registries, and adding to them"; docs/extending.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepscope/facts.hpp"
#include "stepscope/footgun_ids.hpp"
#include "stepscope/step_partition.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {

struct AnalysisResult;

namespace footgun {

struct NameTime {
  std::int64_t count = 0;
  ns_t time = 0;
};
using ByName = std::map<std::string, NameTime>;
void add(ByName& m, std::string_view name, ns_t dur);
NameTime total(const ByName& m);

// A detector's evidence field by field: the rank summary writes and reads them through this.
class EvidenceFields {
 public:
  virtual ~EvidenceFields() = default;
  virtual void field(std::string_view name, std::int64_t& v) = 0;
  virtual void field(std::string_view name, double& v) = 0;
  virtual void field(std::string_view name, bool& v) = 0;
  virtual void field(std::string_view name, ByName& v) = 0;
  virtual void field(std::string_view name, std::vector<std::string>& v) = 0;
  // A list of records: `count` is the list's length (set by a reader before any `each`), and
  // each(i, fields) visits record i's fields.
  virtual void records(std::string_view name, std::size_t& count,
                       const std::function<void(std::size_t, EvidenceFields&)>& each) = 0;
};

// A list of records that have fields(EvidenceFields&), written or read whole.
template <class Row>
void record_list(EvidenceFields& v, std::string_view name, std::vector<Row>& rows) {
  std::size_t count = rows.size();
  v.records(name, count, [&rows, &count](std::size_t i, EvidenceFields& f) {
    if (rows.size() < count) rows.resize(count);
    rows[i].fields(f);
  });
}

// What a host event sits inside, inherited from its enclosing events on the same thread (and,
// for a GPU activity, that of the call that launched it).
struct Context {
  bool zero_grad = false;
  bool optimizer = false;
  bool backward = false;
  bool checkpoint = false;    // under an activation-checkpointing marker
  std::int64_t conv_op = -1;  // outermost aten convolution op
};

// Everything the scan asks of a name, computed once per distinct name (traces repeat a few
// thousand names millions of times).
enum ScanFlag : std::uint32_t {
  kZeroGrad = 1u << 0,
  kOptimizerStage = 1u << 1,
  kBackwardStage = 1u << 2,
  kRecompute = 1u << 3,
  kConvOp = 1u << 4,
  kSynchronize = 1u << 5,
  kFind = 1u << 6,
  kCompiledRegion = 1u << 7,
  kCompile = 1u << 8,
  kLoader = 1u << 9,
  kOptimizerStep = 1u << 10,
  kFusedName = 1u << 11,
  kAnomalyOp = 1u << 12,
  kItem = 1u << 13,
  kIsnan = 1u << 14,
  kBmm = 1u << 15,
  kSoftmax = 1u << 16,
  kLayout = 1u << 17,
  kFill = 1u << 18,
  kFp32 = 1u << 19,
  kFusedKernel = 1u << 20,
  kNanCheck = 1u << 21,
  kDeviceAlloc = 1u << 22,
  kForwardOnly = 1u << 23,
  kClassShift = 24,  // bits 24..28: KernelClass
  kKnown = 1u << 31,
};
inline KernelClass class_of(std::uint32_t flags) { return static_cast<KernelClass>((flags >> kClassShift) & 0x1f); }

// Where an event runs, for Interest: under zero_grad, the optimizer step, a backward node, or
// inside a convolution op (for GPU work, where its launch call ran).
enum ContextBit : std::uint8_t { kInZeroGrad = 1, kInOptimizer = 2, kInBackward = 4, kInConvolution = 8 };

// What a detector asks to see, decided once per distinct name (`flags`), by the event's context
// or by its kind: a detector is called only for the events its interest names, and checks the
// rest of its signature itself.
struct Interest {
  std::uint32_t host_flags = 0;   // host events (ops, annotations, runtime calls) whose name has any
  std::uint8_t host_context = 0;  // host ops and annotations running in any of these ContextBits
  std::uint32_t gpu_flags = 0;    // steady GPU work whose name has any
  std::uint32_t gpu_classes = 0;  // steady GPU work of these kernel classes (bit = KernelClass)
  std::uint8_t gpu_context = 0;   // steady GPU work launched in any of these ContextBits
  bool copies = false;            // every steady memcpy
};
// The bit of a kernel class in Interest::gpu_classes, and those of the compute classes.
constexpr std::uint32_t class_bit(KernelClass c) { return 1u << static_cast<unsigned>(c); }
inline constexpr std::uint32_t kComputeClasses =
    (class_bit(KernelClass::ReductionNorm) * 2 - 1) | class_bit(KernelClass::OtherCompute);

class Scan;

// One host event of the walk, with its context and its parent's.
struct HostEvent {
  HostEvent(std::uint32_t i_, std::uint32_t flags_, Kind kind_, ns_t ts_, ns_t dur_, const Context& parent_,
            const Context& ctx_, const Scan& scan_)
      : i(i_), flags(flags_), kind(kind_), ts(ts_), dur(dur_), parent(parent_), ctx(ctx_), scan(scan_) {}
  std::uint32_t i;
  std::uint32_t flags;
  Kind kind;
  ns_t ts, dur;
  const Context& parent;
  const Context& ctx;
  const Scan& scan;
  // The event's steady-state step (the facts' event steps), or -1.
  std::int64_t steady_step() const;
  std::string_view name() const;
};

// One steady-state GPU activity (kernel, memset or memcpy), with its launch's context.
struct GpuEvent {
  std::uint32_t g;
  std::uint32_t flags;
  KernelClass cls;
  Kind kind;
  std::int64_t step;        // steady step index (the facts' event steps: where the host runs ahead, its launch's)
  ns_t dur;
  const Context* ctx;       // nullptr: no launch call found
  const Scan& scan;
  std::string_view name() const;
};

// What the walk knows beside the events: the rank's trace, facts and partition, each event's
// step, and the costs several detectors price the same way.
class Scan {
 public:
  Scan(const RankTrace& t_, const RankFacts& facts_, const RankPartition& p_, const EventSteps& steps_)
      : t(t_), facts(facts_), p(p_), steps(steps_) {}
  const RankTrace& t;
  const RankFacts& facts;
  const RankPartition& p;
  const EventSteps& steps;  // the facts' event steps: every event's step and steady flag
  std::vector<ns_t> loader_starts;  // sorted once the host walk is over

  // Event i's step, any (warm-up included) or steady only; -1 for none.
  std::int64_t any_step(std::uint32_t i) const { return steps.of(i); }
  std::int64_t steady_step(std::uint32_t i) const { return steps.steady(i) ? steps.of(i) : -1; }
  ns_t launch_ts(std::uint32_t g) const;  // its launch call's start, else its own
  bool launched_after(std::uint32_t g, ns_t ts) const;  // its launch call is in the trace, at or after ts
  // What scalar reads cost, summed over `reads` (end, host blocked), which it sorts: per read, the
  // shorter of the host's wait and the GPU idle after it until the next GPU work or loader fetch.
  ns_t read_costs(std::vector<std::pair<ns_t, ns_t>>& reads) const;
  // The GPU idle scalar reads make, summed over `reads` (end, start), which it sorts: per read,
  // from its start (or the end of the GPU work it waited for) until the next GPU work or loader
  // fetch, each instant once; a read inside which no GPU work ended costs nothing.
  ns_t read_idle(std::vector<std::pair<ns_t, ns_t>>& reads) const;
};

// A detector's evidence on one rank, and its scan: the walk calls host() and gpu() for the
// events its Interest names, in time order per track, then finish() once.
class Evidence {
 public:
  virtual ~Evidence() = default;
  virtual std::unique_ptr<Evidence> clone() const = 0;
  virtual void host(const HostEvent&) {}
  virtual void gpu(const GpuEvent&) {}
  virtual void finish(const Scan&) {}
  virtual void fields(EvidenceFields& v) = 0;
};

// A detector's evidence type `Self`, copyable whole.
template <class Self>
class EvidenceOf : public Evidence {
 public:
  std::unique_ptr<Evidence> clone() const override { return std::make_unique<Self>(static_cast<const Self&>(*this)); }
  static std::unique_ptr<Evidence> make() { return std::make_unique<Self>(); }
};

// The job-wide figures a judgement reads beside the ranks' evidence.
struct FootgunJob {
  double step_ns = 0;                          // the mean steady step over ranks
  std::array<double, kCategoryCount> category{};  // per step
  bool gpu = false;
  double grad_share = 1;                       // of exposed communication, the gradients'
  double cat(Category c) const { return category[static_cast<std::size_t>(c)]; }
};

// A rank's steady-state facts the judgements read (the rank's number, its steady steps).
struct RankFootguns;

// A detector's finding: what it is, its evidence lines and the gain fixing it brings per step.
struct FootgunJudgement {
  FootgunId id;
  std::string text;  // the mistake, in one sentence (without the gain)
  std::vector<std::string> evidence;
  double gain_ns = 0;
  double step_ns = 0;  // the step the gain applies to
};

// What a judgement sees: the result, the job, the ranks with steady steps and their evidence of
// this detector, and what judged before it.
class Judge;

struct Detector {
  std::string_view name;  // the evidence's key in a rank summary
  bool gpu_only;          // judged on GPU jobs only
  Interest interest;
  std::unique_ptr<Evidence> (*make)();
  std::optional<FootgunJudgement> (*judge)(const Judge&);
};

// The detectors, in the order they judge (src/analysis/footguns/registry.cpp).
const std::vector<Detector>& detectors();

// A rank's evidence, one entry per detector in the table's order; copyable.
struct RankFootguns {
  int rank = 0;
  bool gpu = false;
  bool mtia = false;        // MTIA kernels: CUDA-only knobs (fused optimizers) do not apply
  std::int64_t steady_steps = 0;
  double step_ns = 0;       // the rank's steady mean step
  std::vector<std::unique_ptr<Evidence>> evidence;

  RankFootguns() = default;
  RankFootguns(const RankFootguns& o);
  RankFootguns& operator=(const RankFootguns& o);
  RankFootguns(RankFootguns&&) = default;
  RankFootguns& operator=(RankFootguns&&) = default;
  // Each detector's empty evidence: a summary reads into them.
  void make_evidence();
};

// One walk over a rank's events for every detector.
RankFootguns scan_footguns(const RankTrace& t, const RankFacts& facts, const RankPartition& p);

class Judge {
 public:
  const AnalysisResult& result;
  const FootgunJob& job;
  std::vector<const RankFootguns*> ranks;  // with steady steps
  double steady = 0;                       // steady steps over all ranks
  std::size_t detector = 0;                // the detector judging: its evidence in each rank
  const std::vector<FootgunJudgement>* before = nullptr;

  double per_step(double v) const { return steady > 0 ? v / steady : 0; }
  double step() const { return job.step_ns; }
  bool worth(double gain) const;  // at least kMinShare of the step
  bool found(FootgunId id) const; // an earlier detector found it
  template <class E>
  const E& of(const RankFootguns& r) const {
    return static_cast<const E&>(*r.evidence[detector]);
  }
  template <class E, class F>
  double sum(F f) const {
    double s = 0;
    for (const RankFootguns* r : ranks) s += static_cast<double>(f(of<E>(*r)));
    return s;
  }
  template <class E>
  ByName merged(ByName E::*m) const {
    ByName out;
    for (const RankFootguns* r : ranks)
      for (const auto& [n, v] : of<E>(*r).*m) {
        out[n].count += v.count;
        out[n].time += v.time;
      }
    return out;
  }
  // "name (12.0 per step, 1.23 ms per step)" for the largest entries by time.
  std::string top_names(const ByName& m, std::size_t n = 3) const;
};

// A finding must be worth this share of the step.
inline constexpr double kMinShare = 0.01;

std::string ms(double ns);
std::string pct(double share);
std::string shorten(const std::string& name, std::size_t max = 90);

// Every detector's judgement on the result's ranks (none without their evidence).
std::vector<FootgunJudgement> judge_footguns(const AnalysisResult& r, const FootgunJob& job);

}  // namespace footgun
}  // namespace stepscope
