// What filled a device's memory and what frees it, from a memory snapshot: the peak split by
// class, fragmentation, the out-of-memory explained, and memory levers priced in bytes. Analysis
// code computes only; the renderers below turn one SnapshotAnalysis into text, JSON and HTML.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "stepscope/memory/snapshot.hpp"
#include "stepscope/warning_ids.hpp"

namespace stepscope::memory {

inline constexpr const char* kMemorySchemaVersion = "stepscope.memory/0.1";

enum class MemClass : std::uint8_t { parameters, gradients, optimizer_state, activations, temporaries, unknown };
inline constexpr std::size_t kMemClasses = 6;
std::string_view class_name(MemClass c);

// Where an allocation was made, from its stack: what tells the classes apart with its lifetime.
enum class Phase : std::uint8_t { none, model_setup, forward, backward, optimizer, zero_grad };
std::string_view phase_name(Phase p);

// Why an allocation got its class; each reason belongs to one class.
enum class Reason : std::uint8_t {
  setup_kept,          // parameters: made while building or moving the model, and kept
  backward_kept,       // gradients: made in backward and alive after it
  optimizer_kept,      // optimizer_state: made by the optimizer and kept past its step
  forward_kept,        // activations: made in forward and alive after it (freed in backward or later)
  same_phase,          // temporaries: made and freed within one phase
  site_history,        // alive when the recording was cut (OOM, dump): as the same site in complete phases
  before_recording,    // alive before the recording began: by its stack's phase
  no_phase,            // unknown: no phase in its stack
  replaces,            // kept, and the same size as a long-lived block freed in the same phase: its class
                       // (an out-of-place update: `p.data = p.data - lr * g` makes the new parameter)
};
inline constexpr std::size_t kReasons = 9;
std::string_view reason_name(Reason r);
std::string_view reason_text(Reason r);

using ByClass = std::array<std::int64_t, kMemClasses>;
std::int64_t total(const ByClass& b);

// The allocator's state at one moment of the trace.
struct MemoryMoment {
  std::int64_t entry = -1;     // index in the device's trace; -1 = before its first entry
  std::int64_t time_us = -1;
  std::int64_t allocated_bytes = 0;  // requested bytes of live allocations (what the trace records)
  std::int64_t reserved_bytes = 0;   // bytes of the allocator's segments
  ByClass by_class{};
  int step = 0;                      // 1-based when steps are visible, 0 otherwise
  Phase phase = Phase::none;         // the phase running at that moment
};

struct Fragmentation {
  std::int64_t reserved_bytes = 0;
  std::int64_t allocated_bytes = 0;
  std::int64_t cached_free_bytes = 0;        // reserved minus allocated
  std::int64_t largest_free_block = 0;       // in any segment
  std::int64_t largest_free_block_large = 0; // in the large pool (requests above 1 MiB)
  std::int64_t small_segments = 0, small_segment_bytes = 0, small_free_bytes = 0;
  std::int64_t large_segments = 0, large_segment_bytes = 0, large_free_bytes = 0;
  std::int64_t free_blocks = 0;              // gaps between live blocks inside segments
};

struct OomReport {
  std::int64_t entry = 0;
  std::int64_t time_us = -1;
  std::int64_t requested_bytes = 0;
  std::int64_t stream = 0;
  std::int64_t device_free_bytes = -1;       // what the driver still had, when recorded
  std::vector<Frame> frames;                 // the request's Python frames, innermost first (at most 8)
  MemoryMoment alive;                        // what was alive, by class
  Fragmentation fragmentation;
  bool fragmentation_cause = false;          // enough cached free bytes, but no block large enough
  std::string explanation;
  int count = 1;                             // OOMs recorded on the device
};

struct MemLever {
  std::string id;          // stable: expandable_segments, activation_checkpointing, ...
  std::string title;
  bool applies = false;    // its precondition holds in this snapshot
  std::int64_t frees_bytes = 0;  // at the peak (0 for a lever that only saves time)
  std::int64_t peak_bytes = 0;
  std::string precondition;
  std::string gain;
  std::string risk;
};

struct ClassEvidence {
  MemClass cls = MemClass::unknown;
  Reason reason = Reason::no_phase;
  std::int64_t allocations = 0;   // over the whole trace
  std::int64_t peak_bytes = 0;    // alive at the peak
};

struct DeviceMemory {
  int device = 0;
  std::int64_t entries = 0;
  std::int64_t allocations = 0;
  int steps = 0;                   // visible steps (a forward after a backward or optimizer step)
  MemoryMoment peak;
  std::vector<MemoryMoment> step_peaks;
  Fragmentation at_peak;
  std::optional<OomReport> oom;
  std::vector<ClassEvidence> evidence;
  std::vector<MemLever> levers;    // applicable ones first, by bytes freed
  std::vector<MemoryMoment> timeline;  // at most kTimelinePoints, the peak among them
  bool expandable_segments = false;
  std::int64_t segment_frees = 0;  // segments released (empty_cache or the OOM retry)
  std::int64_t segment_reallocs = 0;  // segments allocated again after a release
  std::string headline;
};

inline constexpr std::size_t kTimelinePoints = 400;

// `plan memory`'s model states for a model preset beside what the snapshot's peak holds: does the
// job hold what its model needs, and where does it differ. Activations and temporaries depend on
// the batch and sequence, which a snapshot does not record: only the model states are planned.
struct PlannedClass {
  MemClass cls = MemClass::unknown;
  std::int64_t planned_bytes = 0;
  std::int64_t observed_bytes = 0;
  std::string basis;  // how the plan sized it
};
struct PlannedVsObserved {
  std::string model;              // the preset's key
  double parameters = 0;          // the preset's parameter count
  int bytes_per_parameter = 4;    // read off the observed parameters (2: bf16/fp16, 4: fp32)
  std::vector<PlannedClass> rows;
  std::vector<std::string> differences;  // in words, each class more than kPlanTolerance off
};
inline constexpr double kPlanTolerance = 0.25;

struct SnapshotAnalysis {
  std::string schema = kMemorySchemaVersion;
  std::string path;
  std::vector<DeviceMemory> devices;
  std::vector<Warning> warnings;  // stepscope/warning_ids.hpp
  std::string alloc_conf;
  bool expandable_segments = false;
  std::string headline;
  std::optional<PlannedVsObserved> planned;  // with `--model NAME`
};

SnapshotAnalysis analyze_snapshot(const Snapshot& s);

// The model states `plan memory` predicts for the preset `model` (an InputError names the
// presets when it is unknown) beside the peak of the snapshot's fullest device. Adam is assumed
// (two fp32 states per parameter), gradients in the parameters' type.
//   llama-3-8b, observed parameters 16.06 GB (2 bytes each): planned parameters 16.06 GB,
//   gradients 16.06 GB, optimizer state 64.24 GB
PlannedVsObserved compare_with_plan(const SnapshotAnalysis& a, std::string_view model);

// Reads and analyses a snapshot file (InputError on a refused pickle).
SnapshotAnalysis analyze_snapshot_file(const std::string& path);

// Reports of one analysis; the main reports call these for their memory sections.
std::string render_text(const SnapshotAnalysis& a);
nlohmann::json to_json(const SnapshotAnalysis& a);
std::string render_html_section(const SnapshotAnalysis& a);  // a <section>, no script, inline SVG

// `stepscope diff a.pickle b.pickle`: did the change free what it should.
struct ClassChange {
  MemClass cls = MemClass::unknown;
  std::int64_t base_bytes = 0, test_bytes = 0;
};
struct MemoryDiff {
  std::string base_path, test_path;
  int device = 0;
  std::int64_t base_peak = 0, test_peak = 0;
  std::int64_t base_reserved = 0, test_reserved = 0;
  std::vector<ClassChange> classes;
  bool base_oom = false, test_oom = false;
  std::string headline;
};
std::vector<MemoryDiff> diff_snapshots(const SnapshotAnalysis& base, const SnapshotAnalysis& test);
std::string render_diff_text(const std::vector<MemoryDiff>& d);
nlohmann::json diff_to_json(const std::vector<MemoryDiff>& d);

// Bytes for people: "1.23 GiB", "512 MiB", "40 kB"... (binary units).
std::string human_bytes(std::int64_t bytes);

}  // namespace stepscope::memory
