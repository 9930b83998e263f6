#include "stepscope/stability.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "stepscope/facts.hpp"
#include "stepscope/trace.hpp"

namespace stepscope {
namespace {

// A step this much longer than the typical quiet step stands out. Seed 000 asks "stable or
// bursty?" without a number; a quarter over the quiet step is far beyond the few-percent
// step-to-step jitter of a healthy loop, yet catches a missed batch or a checkpoint.
constexpr double kSpikeRatio = 1.25;
// A spike is also this many robust deviations (1.4826 x the median absolute deviation, the
// standard deviation of normal jitter) above the median step, and a quarter above the upper
// quartile: it must stand out from at least three steps in four, so at most a quarter of the
// steps can ever be spikes. A run whose durations spread out has a wide MAD; a run with a slow
// mode (half its steps waiting on the loader) has it in its upper quartile: neither lists half
// its steps as spikes, where a rule on the lower quartile did (14 of 29 steps of a ResNet run
// between 150 and 827 ms); recurring slow steps are the period's to name.
constexpr double kSpikeMads = 3.0;
constexpr double kMadToSigma = 1.4826;
// Coefficient of variation above which step time is called bursty even without a spike.
constexpr double kBurstyCv = 0.10;
// A batch-wait spike this many quiet steps long is a worker respawn (an epoch boundary: workers
// re-import and rebuild the dataset, seed 001 T5), not a worker that fell one batch behind.
constexpr double kEpochStallSteps = 4.0;
// ... and it must recur no more often than every 3 steps: an epoch of one or two steps is not a
// real training set-up, whereas 2 workers each a batch behind give exactly that period.
constexpr int kMinEpochSteps = 3;

double percentile(std::vector<double> v, double p) {  // nearest rank
  std::sort(v.begin(), v.end());
  auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

// The step time above which a step is a spike. Example: 40, 41, 40, 42, 40, 40, 41, 70 ms ->
// median 40, MAD 0.5 (sigma 0.74), upper quartile 41 -> threshold max(42.2, 51.3): 70 ms spikes.
double spike_threshold(const std::vector<double>& d) {
  const double median = percentile(d, 0.5);
  std::vector<double> dev;
  dev.reserve(d.size());
  for (double v : d) dev.push_back(std::abs(v - median));
  const double sigma = kMadToSigma * percentile(dev, 0.5);
  return std::max(median + kSpikeMads * sigma, kSpikeRatio * percentile(d, 0.75));
}

std::vector<const StepPartition*> steady(const RankPartition& r) {
  std::vector<const StepPartition*> out;
  for (const auto& s : r.steps)
    if (!s.warmup) out.push_back(&s);
  return out;
}

// Mean of each category over the steps that are not spikes: what a spike grew over.
std::array<double, kCategoryCount> quiet_means(const std::vector<const StepPartition*>& steps,
                                               const std::vector<bool>& spike) {
  std::array<double, kCategoryCount> m{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (spike[i]) continue;
    ++n;
    for (int c = 0; c < kCategoryCount; ++c) m[static_cast<std::size_t>(c)] += static_cast<double>(steps[i]->ns[static_cast<std::size_t>(c)]);
  }
  for (auto& v : m) v = n ? v / static_cast<double>(n) : 0;
  return m;
}

Spike describe_spike(const StepPartition& s, double quiet, const std::array<double, kCategoryCount>& base) {
  Spike sp;
  sp.step = s.number;
  sp.duration = s.duration();
  sp.excess = static_cast<ns_t>(static_cast<double>(s.duration()) - quiet);
  double best = -1;
  for (int c = 0; c < kCategoryCount; ++c) {
    double grew = static_cast<double>(s.ns[static_cast<std::size_t>(c)]) - base[static_cast<std::size_t>(c)];
    if (grew > best) best = grew, sp.grew = static_cast<Category>(c), sp.grew_by = static_cast<ns_t>(grew);
  }
  return sp;
}

// Whether the steps at `positions` start an epoch, where the trace records the batch fetches: a
// step holding more fetches than the usual step does (the exhausted iterator's last __next__,
// which raises StopIteration, and the new iterator's first). Four persistent workers each a batch
// behind stall every fourth step as long as a respawn would, with one fetch in the stalled step.
// Example: fetches 1, 1, 2, 1, 1, 2 -> the third and sixth steps start epochs.
enum class EpochStart : std::uint8_t { Unknown, Yes, No };

EpochStart epoch_start(const std::vector<std::size_t>& positions, const std::vector<int>& fetches) {
  if (fetches.empty() || positions.empty()) return EpochStart::Unknown;
  std::vector<int> sorted = fetches;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const int usual = sorted[sorted.size() / 2];
  for (std::size_t i : positions)
    if (i >= fetches.size() || fetches[i] <= usual) return EpochStart::No;
  return EpochStart::Yes;
}

PeriodKind period_kind(Category grew, int every, double mean_excess, double quiet, EpochStart starts) {
  switch (grew) {
    case Category::BatchWait:
      return starts != EpochStart::No && mean_excess >= kEpochStallSteps * quiet && every >= kMinEpochSteps
                 ? PeriodKind::EpochBoundary
                 : PeriodKind::LoaderWorkers;
    case Category::SideWork:
    case Category::Idle:  // an op-free host gap: work the profiler does not see (torch.save, fsync)
      return PeriodKind::Checkpoint;
    default: return PeriodKind::Other;
  }
}

// Spikes at equally spaced positions (at least two of them) recur every that many steps.
Periodicity equally_spaced(const std::vector<std::size_t>& positions, const std::vector<Spike>& spikes,
                           double quiet, const std::vector<int>& fetches) {
  Periodicity p;
  if (positions.size() < 2) return p;
  const std::size_t gap = positions[1] - positions[0];
  for (std::size_t i = 2; i < positions.size(); ++i)
    if (positions[i] - positions[i - 1] != gap) return p;
  if (gap < 2) return p;
  std::array<int, kCategoryCount> votes{};
  double excess = 0;
  for (const auto& s : spikes) ++votes[static_cast<std::size_t>(s.grew)], excess += static_cast<double>(s.excess);
  p.category = static_cast<Category>(std::max_element(votes.begin(), votes.end()) - votes.begin());
  p.every = static_cast<int>(gap);
  p.occurrences = spikes.size();
  p.mean_excess = static_cast<ns_t>(excess / static_cast<double>(spikes.size()));
  p.kind = period_kind(p.category, p.every, static_cast<double>(p.mean_excess), quiet, epoch_start(positions, fetches));
  return p;
}

// A recurring stall can leave a smaller echo after it (the second of two respawned workers
// delivers its first batch a step later): when all spikes are not equally spaced, the major
// ones, at least this share of the largest, may be.
// Example: spikes at 4, 8, 9, 12, 13 of 85, 70, 24, 59, 19 ms -> 4, 8, 12 recur every 4 steps.
constexpr double kMajorSpikeShare = 0.5;

Periodicity find_period(const std::vector<std::size_t>& positions, const std::vector<Spike>& spikes,
                        double quiet, const std::vector<int>& fetches) {
  Periodicity p = equally_spaced(positions, spikes, quiet, fetches);
  if (p.kind != PeriodKind::None || spikes.empty()) return p;
  ns_t largest = 0;
  for (const auto& s : spikes) largest = std::max(largest, s.excess);
  std::vector<std::size_t> major_positions;
  std::vector<Spike> major;
  for (std::size_t i = 0; i < spikes.size(); ++i)
    if (static_cast<double>(spikes[i].excess) >= kMajorSpikeShare * static_cast<double>(largest))
      major_positions.push_back(positions[i]), major.push_back(spikes[i]);
  if (major.size() == spikes.size()) return p;
  return equally_spaced(major_positions, major, quiet, fetches);
}

}  // namespace

const char* period_kind_name(PeriodKind k) {
  switch (k) {
    case PeriodKind::None: return "none";
    case PeriodKind::LoaderWorkers: return "loader workers / prefetch depth";
    case PeriodKind::EpochBoundary: return "epoch boundary (worker respawn)";
    case PeriodKind::Checkpoint: return "checkpointing / periodic side work";
    case PeriodKind::Other: return "other";
  }
  return "none";
}

std::vector<int> batch_fetches(const RankTrace& t, const RankFacts& f, const RankPartition& r) {
  std::vector<int> out(r.steps.size(), 0);
  bool any = false;
  for (std::size_t k = 0; k < t.host_tracks.size() && k < f.track_role.size(); ++k) {
    if (static_cast<int>(k) != f.main_track && f.track_role[k] != ThreadRole::Loader) continue;
    ns_t end = std::numeric_limits<ns_t>::min();
    for (const std::uint32_t e : t.host_tracks[k].events) {
      if (t.events.phase[e] != Phase::Complete || f.of_event(t, e).role != HostRole::Loader) continue;
      const ns_t ts = t.events.ts[e];
      if (ts < end) continue;  // nested in the fetch before it
      end = t.events.end(e);
      any = true;
      // The last step begun by then (steps run in order), if the fetch is inside its host span.
      const auto after = std::upper_bound(r.steps.begin(), r.steps.end(), ts,
                                          [](ns_t v, const StepPartition& s) { return v < s.host_start; });
      if (after != r.steps.begin() && ts < std::prev(after)->host_end) ++out[static_cast<std::size_t>(after - r.steps.begin() - 1)];
    }
  }
  if (!any) out.clear();
  return out;
}

Stability compute_stability(const RankPartition& r, const std::vector<int>& fetches) {
  Stability st;
  const auto steps = steady(r);
  st.steps = steps.size();
  if (steps.empty()) return st;
  std::vector<double> d;
  for (const auto* s : steps) d.push_back(static_cast<double>(s->duration()));
  double mean = 0, var = 0;
  for (double v : d) mean += v;
  mean /= static_cast<double>(d.size());
  for (double v : d) var += (v - mean) * (v - mean);
  st.mean_ns = mean;
  st.cv = mean > 0 ? std::sqrt(var / static_cast<double>(d.size())) / mean : 0;
  st.p50_ns = percentile(d, 0.5);
  st.p90_ns = percentile(d, 0.9);
  st.max_ns = *std::max_element(d.begin(), d.end());
  // The lower quartile stands for a quiet step even when every other step spikes.
  st.quiet_ns = percentile(d, 0.25);

  // Excursions over the quiet step are what a recurring pattern is found in (two loader workers a
  // batch behind stall every other step: half the steps, never spikes); the spikes reported are
  // the robust outliers among them.
  std::vector<bool> excursion(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) excursion[i] = d[i] > kSpikeRatio * st.quiet_ns;
  const double spike_above = spike_threshold(d);
  const auto base = quiet_means(steps, excursion);
  std::vector<std::size_t> positions;  // position among all steps, warm-up included
  std::vector<Spike> excursions;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!excursion[i]) continue;
    excursions.push_back(describe_spike(*steps[i], st.quiet_ns, base));
    positions.push_back(static_cast<std::size_t>(steps[i] - r.steps.data()));
    if (d[i] > spike_above) st.spikes.push_back(excursions.back());
  }
  st.period = find_period(positions, excursions, st.quiet_ns, fetches);
  st.bursty = !st.spikes.empty() || st.cv > kBurstyCv;
  return st;
}

double excess_over_quiet(const RankPartition& r, const Stability& s) {
  if (s.steps == 0) return 0;
  double excess = 0;
  for (const auto& step : r.steps)
    if (!step.warmup) excess += std::max(0.0, static_cast<double>(step.duration()) - s.quiet_ns);
  return excess / static_cast<double>(s.steps);
}

}  // namespace stepscope
