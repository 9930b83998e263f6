// A PyTorch CUDA memory snapshot (`torch.cuda.memory._dump_snapshot`) as typed data: the
// allocator's segments and blocks at the moment of the dump, and each device's trace of
// allocator actions with the stack that caused each. Read with the restricted unpickler
// (stepscope/memory/pickle.hpp), so reading one never runs code from the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope::memory {

struct Frame {
  std::string filename;
  std::string name;
  std::int64_t line = 0;
};

// Index into Snapshot::stacks; stack 0 is the empty one (no frames recorded).
using StackId = std::uint32_t;

enum class Action : std::uint8_t {
  alloc,
  free_requested,
  free_completed,
  segment_alloc,
  segment_free,
  segment_map,    // expandable segments grow ...
  segment_unmap,  // ... and shrink by mapping pages
  oom,
  snapshot,
  other,
};
std::string_view action_name(Action a);

struct TraceEntry {
  Action action = Action::other;
  std::uint64_t addr = 0;
  std::int64_t size = 0;
  std::int64_t stream = 0;
  std::int64_t time_us = -1;       // absent before PyTorch 2.1
  std::int64_t device_free = -1;   // oom only: what the driver still had free
  StackId stack = 0;
};

struct Block {
  std::uint64_t address = 0;
  std::int64_t size = 0;
  std::int64_t requested_size = 0;
  std::string state;  // active_allocated | active_pending_free | inactive
  StackId stack = 0;
};

struct Segment {
  std::int64_t device = 0;
  std::uint64_t address = 0;
  std::int64_t total_size = 0;
  std::int64_t allocated_size = 0;
  std::int64_t active_size = 0;
  std::int64_t requested_size = 0;
  std::int64_t stream = 0;
  std::string segment_type;  // small | large
  bool is_expandable = false;
  std::vector<Block> blocks;
};

struct DeviceTrace {
  int device = 0;
  std::vector<TraceEntry> entries;
};

struct Snapshot {
  std::string path;
  std::vector<Frame> frames;
  std::vector<std::vector<std::uint32_t>> stacks;  // frame indices, innermost first, as recorded
  std::vector<Segment> segments;
  std::vector<DeviceTrace> devices;  // one per device the trace lists, empty traces included
  bool has_settings = false;
  bool expandable_segments = false;   // allocator_settings, or any segment that is expandable
  std::string alloc_conf;             // PYTORCH_CUDA_ALLOC_CONF as recorded
  std::int64_t max_split_size = -1;
};

// Builds the snapshot from a pickle's bytes. Throws InputError "PATH: byte N: ..." for a
// refused or malformed pickle and "PATH: FIELD: ..." for data that is no memory snapshot.
Snapshot read_snapshot(std::string bytes, std::string_view path);

// The same from a file.
Snapshot read_snapshot_file(const std::string& path);

// True when the file begins like a pickle (protocol 2 or later): how `analyze` tells a snapshot
// from a trace, by content rather than by name.
bool is_snapshot_file(const std::string& path);

}  // namespace stepscope::memory
