#include "stepscope/memory/snapshot.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include "stepscope/error.hpp"
#include "stepscope/memory/pickle.hpp"

namespace stepscope::memory {

namespace {

using pickle::Document;
using pickle::Kind;
using pickle::NodeId;

// Turns the plain data of a pickle into a Snapshot; every field is checked for its type, and a
// refusal names the field's path ("device_traces[0][12].size").
class Builder {
 public:
  Builder(const Document& doc, std::string_view path) : doc_(doc), path_(path) {
    snap_.path = std::string(path);
    snap_.stacks.emplace_back();  // stack 0: no frames
  }

  Snapshot build() {
    const NodeId root = doc_.root();
    if (doc_.kind(root) == Kind::list) {  // torch.cuda.memory_snapshot(): the segments alone
      read_segments(root);
      return std::move(snap_);
    }
    if (doc_.kind(root) != Kind::dict) fail("the pickle", "is neither a dict nor a list: not a memory snapshot");
    const NodeId* segments = doc_.find(root, "segments");
    const NodeId* traces = doc_.find(root, "device_traces");
    if (!segments && !traces) fail("the pickle", "has neither 'segments' nor 'device_traces': not a memory snapshot");
    if (segments) read_segments(*segments);
    if (traces) read_traces(*traces);
    if (const NodeId* s = doc_.find(root, "allocator_settings")) read_settings(*s);
    for (const auto& seg : snap_.segments) snap_.expandable_segments |= seg.is_expandable;
    return std::move(snap_);
  }

 private:
  [[noreturn]] void fail(std::string_view field, std::string_view what) const {
    throw InputError(fmt::format("{}: {} {}", path_, field, what));
  }

  const std::vector<NodeId>& list(NodeId id, std::string_view field) const {
    const Kind k = doc_.kind(id);
    if (k != Kind::list && k != Kind::tuple) fail(field, "is not a list");
    return doc_.items(id);
  }

  std::int64_t integer(NodeId id, std::string_view field) const {
    const Kind k = doc_.kind(id);
    if (k == Kind::integer || k == Kind::boolean) return doc_.node(id).integer;
    if (k == Kind::none) return 0;
    fail(field, k == Kind::big_integer ? "is an integer beyond 64 bits" : "is not an integer");
  }

  std::int64_t int_field(NodeId dict, std::string_view key, std::int64_t fallback = 0) const {
    const NodeId* v = doc_.find(dict, key);
    return v ? integer(*v, key) : fallback;
  }

  std::string str_field(NodeId dict, std::string_view key) const {
    const NodeId* v = doc_.find(dict, key);
    if (!v || doc_.kind(*v) == Kind::none) return {};
    if (doc_.kind(*v) != Kind::str && doc_.kind(*v) != Kind::bytes) fail(key, "is not a string");
    return std::string(doc_.text(*v));
  }

  bool bool_field(NodeId dict, std::string_view key) const { return int_field(dict, key) != 0; }

  // Frames and stacks are interned by content: PyTorch writes a new list per trace entry, so the
  // same allocation site must be recognised from its frames, not from the pickle's objects.
  std::uint32_t frame(NodeId id) {
    auto it = frame_of_node_.find(id);
    if (it != frame_of_node_.end()) return it->second;
    if (doc_.kind(id) != Kind::dict) fail("frames[]", "is not a dict");
    Frame f{str_field(id, "filename"), str_field(id, "name"), int_field(id, "line")};
    std::string key = f.filename + '\0' + f.name + '\0' + std::to_string(f.line);
    auto [known, added] = frame_of_content_.emplace(std::move(key), static_cast<std::uint32_t>(snap_.frames.size()));
    if (added) snap_.frames.push_back(std::move(f));
    frame_of_node_.emplace(id, known->second);
    return known->second;
  }

  // The stack of a dict's "frames", interned: events share their frame lists through the memo.
  StackId stack(NodeId dict) {
    const NodeId* f = doc_.find(dict, "frames");
    if (!f) return 0;
    auto it = stack_of_node_.find(*f);
    if (it != stack_of_node_.end()) return it->second;
    std::vector<std::uint32_t> frames;
    for (NodeId fr : list(*f, "frames")) frames.push_back(frame(fr));
    StackId id = 0;
    if (!frames.empty()) {
      std::string key(reinterpret_cast<const char*>(frames.data()), frames.size() * sizeof(std::uint32_t));
      auto [known, added] = stack_of_content_.emplace(std::move(key), static_cast<StackId>(snap_.stacks.size()));
      if (added) snap_.stacks.push_back(std::move(frames));
      id = known->second;
    }
    stack_of_node_.emplace(*f, id);
    return id;
  }

  void read_segments(NodeId segments) {
    for (NodeId s : list(segments, "segments")) {
      if (doc_.kind(s) != Kind::dict) fail("segments[]", "is not a dict");
      Segment seg;
      seg.device = int_field(s, "device");
      seg.address = static_cast<std::uint64_t>(int_field(s, "address"));
      seg.total_size = int_field(s, "total_size");
      seg.allocated_size = int_field(s, "allocated_size");
      seg.active_size = int_field(s, "active_size");
      seg.requested_size = int_field(s, "requested_size");
      seg.stream = int_field(s, "stream");
      seg.segment_type = str_field(s, "segment_type");
      seg.is_expandable = bool_field(s, "is_expandable");
      if (const NodeId* blocks = doc_.find(s, "blocks"))
        for (NodeId b : list(*blocks, "blocks")) {
          if (doc_.kind(b) != Kind::dict) fail("blocks[]", "is not a dict");
          seg.blocks.push_back({static_cast<std::uint64_t>(int_field(b, "address")), int_field(b, "size"),
                                int_field(b, "requested_size"), str_field(b, "state"), stack(b)});
        }
      snap_.segments.push_back(std::move(seg));
    }
  }

  static Action action_of(std::string_view a) {
    if (a == "alloc") return Action::alloc;
    if (a == "free_requested") return Action::free_requested;
    if (a == "free_completed" || a == "free") return Action::free_completed;  // "free": before PyTorch 2.0
    if (a == "segment_alloc") return Action::segment_alloc;
    if (a == "segment_free") return Action::segment_free;
    if (a == "segment_map") return Action::segment_map;
    if (a == "segment_unmap") return Action::segment_unmap;
    if (a == "oom") return Action::oom;
    if (a == "snapshot") return Action::snapshot;
    return Action::other;
  }

  void read_traces(NodeId traces) {
    const auto& devices = list(traces, "device_traces");
    for (std::size_t d = 0; d < devices.size(); ++d) {
      DeviceTrace dt;
      dt.device = static_cast<int>(d);
      for (NodeId e : list(devices[d], "device_traces[]")) {
        if (doc_.kind(e) != Kind::dict) fail("device_traces[][]", "is not a dict");
        TraceEntry t;
        t.action = action_of(str_field(e, "action"));
        t.addr = static_cast<std::uint64_t>(int_field(e, "addr"));
        t.size = int_field(e, "size");
        t.stream = int_field(e, "stream");
        t.time_us = int_field(e, "time_us", -1);
        t.device_free = int_field(e, "device_free", -1);
        t.stack = stack(e);
        dt.entries.push_back(t);
      }
      snap_.devices.push_back(std::move(dt));
    }
  }

  void read_settings(NodeId s) {
    if (doc_.kind(s) != Kind::dict) return;
    snap_.has_settings = true;
    snap_.expandable_segments = bool_field(s, "expandable_segments");
    snap_.alloc_conf = str_field(s, "PYTORCH_CUDA_ALLOC_CONF");
    snap_.max_split_size = int_field(s, "max_split_size", -1);
    if (snap_.alloc_conf.find("expandable_segments:True") != std::string::npos) snap_.expandable_segments = true;
  }

  const Document& doc_;
  std::string_view path_;
  Snapshot snap_;
  std::unordered_map<NodeId, std::uint32_t> frame_of_node_;
  std::unordered_map<NodeId, StackId> stack_of_node_;
  std::unordered_map<std::string, std::uint32_t> frame_of_content_;
  std::unordered_map<std::string, StackId> stack_of_content_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file", path));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::string_view action_name(Action a) {
  switch (a) {
    case Action::alloc: return "alloc";
    case Action::free_requested: return "free_requested";
    case Action::free_completed: return "free_completed";
    case Action::segment_alloc: return "segment_alloc";
    case Action::segment_free: return "segment_free";
    case Action::segment_map: return "segment_map";
    case Action::segment_unmap: return "segment_unmap";
    case Action::oom: return "oom";
    case Action::snapshot: return "snapshot";
    case Action::other: return "other";
  }
  return "other";
}

Snapshot read_snapshot(std::string bytes, std::string_view path) {
  pickle::Document doc;
  try {
    doc = pickle::parse(std::move(bytes));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: memory snapshot pickle: {}", path, e.what()));
  }
  return Builder(doc, path).build();
}

Snapshot read_snapshot_file(const std::string& path) { return read_snapshot(read_file(path), path); }

bool is_snapshot_file(const std::string& path) {
  // Only a regular file is looked at: reading the first bytes of a pipe would take them from the
  // trace reader.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[2] = {0, 0};
  if (!in.read(head, 2)) return false;
  return pickle::looks_like_pickle(std::string_view(head, 2));
}

}  // namespace stepscope::memory
