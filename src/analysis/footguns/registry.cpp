// The footgun detectors, in the order they judge (a finding's place in the report): one line
// each. A detector is one file of this folder defining its Detector (docs/extending.md).
#include "stepscope/footgun_detector.hpp"

namespace stepscope::footgun {

#define STEPSCOPE_FOOTGUN_DETECTORS(X) \
  X(kFp32Gemms)                        \
  X(kCudnnAutotune)                    \
  X(kNchwLayout)                       \
  X(kAnomalyMode)                      \
  X(kActivationRecompute)              \
  X(kCompileRecompile)                 \
  X(kCompileFallback)                  \
  X(kUnfusedAttention)                 \
  X(kUnfusedOptimizer)                 \
  X(kZeroGradMemset)                   \
  X(kHostSyncLogging)                  \
  X(kPageableCopy)                     \
  X(kAllocatorChurn)                   \
  X(kLoaderRespawn)                    \
  X(kDdpNoOverlap)

#define STEPSCOPE_DECLARE_DETECTOR(name) extern const Detector name;
STEPSCOPE_FOOTGUN_DETECTORS(STEPSCOPE_DECLARE_DETECTOR)
#undef STEPSCOPE_DECLARE_DETECTOR

const std::vector<Detector>& detectors() {
#define STEPSCOPE_LIST_DETECTOR(name) name,
  static const std::vector<Detector> table{STEPSCOPE_FOOTGUN_DETECTORS(STEPSCOPE_LIST_DETECTOR)};
#undef STEPSCOPE_LIST_DETECTOR
  return table;
}

}  // namespace stepscope::footgun
