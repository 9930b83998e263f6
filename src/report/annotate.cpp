// The annotated trace: copy each input's bytes verbatim and splice stepscope's events in just
// before the event array closes, so every original event stays exactly as it was.
#include "stepscope/annotate.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_set>

#include "report/annotate_tracks.hpp"
#include "stepscope/error.hpp"
#include "stepscope/output_file.hpp"
#include "stepscope/ingest.hpp"

namespace stepscope {
namespace {

namespace fs = std::filesystem;

// Finds where the event array closes: the `]` of the top-level "traceEvents" array (Kineto), or
// of the top-level array itself (legacy autograd-profiler traces). A light scan that tracks
// strings and nesting, like the reader's chunker.
class InsertionFinder {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // Returns the offset in `chunk` of the closing bracket once found, else npos.
  std::size_t feed(std::string_view chunk) {
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const char c = chunk[i];
      if (in_string_) {
        if (escape_) escape_ = false;
        else if (c == '\\') escape_ = true;
        else if (c == '"') end_string();
        else if (collecting_ && key_.size() < 64) key_ += c;
        continue;
      }
      switch (c) {
        case '"':
          in_string_ = true;
          collecting_ = depth_ == 1 && expect_key_;
          key_.clear();
          if (events_depth_ > 0 && depth_ == events_depth_) has_events_ = true;
          break;
        case '{':
        case '[':
          if (depth_ == 0 && c == '[') events_depth_ = 1;  // legacy: the array is the document
          if (depth_ == 1 && c == '[' && value_key_ == "traceEvents" && events_depth_ < 0) events_depth_ = 2;
          if (events_depth_ > 0 && depth_ == events_depth_) has_events_ = true;
          ++depth_;
          expect_key_ = c == '{' && depth_ == 1;
          break;
        case '}':
        case ']':
          if (c == ']' && events_depth_ > 0 && depth_ == events_depth_) return i;
          --depth_;
          break;
        case ',':
          if (depth_ == 1) expect_key_ = true;
          break;
        case ':':
          if (depth_ == 1) value_key_ = last_key_;
          break;
        case ' ': case '\n': case '\r': case '\t':
          break;
        default:
          if (events_depth_ > 0 && depth_ == events_depth_) has_events_ = true;
          break;
      }
    }
    return npos;
  }
  bool has_events() const { return has_events_; }

 private:
  void end_string() {
    in_string_ = false;
    if (collecting_) {
      last_key_ = key_;
      expect_key_ = false;
      collecting_ = false;
    }
  }
  int depth_ = 0;
  bool in_string_ = false, escape_ = false, collecting_ = false, expect_key_ = false;
  std::string key_, last_key_, value_key_;
  int events_depth_ = -1;
  bool has_events_ = false;
};

// Chrome trace times are microseconds; ours are exact nanoseconds, written with three decimals
// so the reader gets back the very same integers.
std::string us(ns_t ns) {
  const bool neg = ns < 0;
  const std::uint64_t u = neg ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03}", neg ? "-" : "", u / 1000, u % 1000);
}

std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// A pid no event of the rank uses, so stepscope's tracks form a process of their own.
std::int64_t free_pid(const RankTrace& t) {
  std::unordered_set<std::int64_t> used;
  for (const TrackKey& k : t.events.keys.keys()) used.insert(k.pid);
  for (const auto& [pid, name] : t.process_names) used.insert(pid);
  std::int64_t pid = 5'735'000;  // "stepscope"-ish and far above the GPU pids (device numbers)
  while (used.count(pid)) ++pid;
  return pid;
}

struct Rendered {
  std::string text;
  std::uint64_t slices = 0, metadata = 0;
};

// Each track's slices spread over as few lanes (threads) as keep every lane free of overlaps.
Rendered render_tracks(const std::vector<annotate_detail::Track>& tracks, std::int64_t pid, int rank) {
  Rendered r;
  std::vector<std::string> events;
  const auto meta = [&](const char* what, std::int64_t tid, const nlohmann::json& args) {
    events.push_back(fmt::format(R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{}}})", what, pid, tid, json_text(args)));
    ++r.metadata;
  };
  meta("process_name", 0, {{"name", fmt::format("stepscope (rank {})", rank)}});
  meta("process_sort_index", 0, {{"sort_index", -1}});
  std::int64_t tid = 1;
  for (const auto& track : tracks) {
    // Units laid on a lane whole: a group of slices, or one slice.
    struct Unit {
      ns_t start = 0, end = 0;
      std::vector<const annotate_detail::Slice*> slices;
      bool group = false;  // a tiled run of slices: it holds no other unit and nests in none
    };
    std::vector<Unit> units;
    std::map<long, std::size_t> group_unit;
    for (const auto& s : track.slices) {
      if (s.end <= s.start) continue;
      if (s.group >= 0 && group_unit.count(s.group)) {
        Unit& u = units[group_unit[s.group]];
        u.start = std::min(u.start, s.start), u.end = std::max(u.end, s.end);
        u.slices.push_back(&s);
        continue;
      }
      if (s.group >= 0) group_unit[s.group] = units.size();
      units.push_back({s.start, s.end, {&s}, s.group >= 0});
    }
    // Parents before what they enclose: by start, the longer first.
    std::stable_sort(units.begin(), units.end(),
                     [](const Unit& x, const Unit& y) { return x.start != y.start ? x.start < y.start : x.end > y.end; });
    // Each lane keeps the stack of units still open at the current start. A unit fits a lane when,
    // once the units that ended are popped, nothing is open or it nests inside the innermost one.
    struct Open {
      ns_t end;
      bool group;
    };
    std::vector<std::vector<Open>> open;
    std::vector<std::int64_t> lane_tid;
    for (const auto& u : units) {
      std::size_t lane = 0;
      for (; lane < open.size(); ++lane) {
        auto& st = open[lane];
        while (!st.empty() && st.back().end <= u.start) st.pop_back();
        if (st.empty() || (!u.group && !st.back().group && u.end <= st.back().end)) break;
      }
      if (lane == open.size()) {
        if (track.max_lanes && lane >= track.max_lanes) continue;
        open.emplace_back();
        lane_tid.push_back(tid);
        std::string name = lane == 0 ? track.name : fmt::format("{} ({})", track.name, lane + 1);
        meta("thread_name", tid, {{"name", name}});
        meta("thread_sort_index", tid, {{"sort_index", tid}});
        ++tid;
      }
      open[lane].push_back({u.end, u.group});
      for (const auto* s : u.slices) {
        events.push_back(fmt::format(R"({{"ph":"X","cat":"stepscope","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{}}})",
                                     json_text(s->name), pid, lane_tid[lane], us(s->start), us(s->end - s->start),
                                     json_text(s->args.is_null() ? nlohmann::json::object() : s->args)));
        ++r.slices;
      }
    }
  }
  for (std::size_t i = 0; i < events.size(); ++i) r.text += (i ? ",\n" : "") + events[i];
  return r;
}

constexpr const char* kWhat = "annotated trace";

AnnotatedFile splice(const RankTrace& t, const std::string& events_text, const std::string& out_path) {
  AnnotatedFile f;
  f.rank = t.rank;
  f.path = out_path;
  std::optional<OutputFile> out;
  InsertionFinder finder;
  bool inserted = false;
  const bool complete = read_trace_bytes(t.path, [&](std::string_view chunk) {
    if (!out) out.emplace(out_path, kWhat);  // created once the input opened and yielded its first bytes
    const std::size_t n = chunk.size();
    if (!inserted) {
      if (std::size_t at = finder.feed(chunk); at != InsertionFinder::npos) {
        out->write(chunk.substr(0, at));
        std::string text = (finder.has_events() ? ",\n" : "\n") + events_text + "\n";
        out->write(text);
        f.inserted_at = f.original_bytes + at;
        f.inserted_bytes = text.size();
        chunk.remove_prefix(at);
        inserted = true;
      }
    }
    out->write(chunk);
    f.original_bytes += n;
  });
  if (!complete || !inserted || !out)
    throw InputError(fmt::format("{}: cannot annotate: the event array never closes (truncated trace?)", t.path));
  out->commit();
  return f;
}

// The Kineto category our reader maps back to the same kind; nsys' own table name stays in args.
const char* kineto_category(Kind k) {
  switch (k) {
    case Kind::Kernel: return "kernel";
    case Kind::Memcpy: return "gpu_memcpy";
    case Kind::Memset: return "gpu_memset";
    case Kind::GpuSync: return "cuda_sync";
    case Kind::Runtime: return "cuda_runtime";
    case Kind::Driver: return "cuda_driver";
    case Kind::UserAnnotation: return "user_annotation";
    case Kind::CpuOp: return "cpu_op";
    default: return nullptr;
  }
}

std::string chrome_event(const RankTrace& t, std::size_t i) {
  const auto& ev = t.events;
  nlohmann::json args = nlohmann::json::object();
  if (ev.correlation[i] != kNone) args["correlation"] = ev.correlation[i];
  if (is_gpu_kind(ev.kind[i])) {
    args["device"] = ev.device[i];
    args["stream"] = ev.stream[i];
  }
  if (const std::int64_t bytes = t.bytes_of(i); bytes != kNone) args["bytes"] = bytes;
  const char* cat = kineto_category(ev.kind[i]);
  if (ev.category[i] != kNoStr && (!cat || t.str(ev.category[i]) != cat)) args["nsys_category"] = t.str(ev.category[i]);
  return fmt::format(R"({{"ph":"X","cat":{},"name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{}}})",
                     json_text(cat ? std::string(cat) : std::string(t.str(ev.category[i]))), json_text(t.name_of(i)),
                     ev.pid(i), ev.tid(i), us(ev.ts[i]), us(ev.dur[i]), json_text(args));
}

std::string name_event(const char* what, std::int64_t pid, std::int64_t tid, const std::string& name) {
  return fmt::format(R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"name":{}}}}},)" "\n", what, pid, tid,
                     json_text(name));
}

// Names for the processes and threads that hold events: host pids by the export's process names
// (it lists every process of the machine), GPU pids, which are device numbers, as their GPU.
std::string chrome_names(const RankTrace& t) {
  std::string out;
  std::set<std::int64_t> host_pids;
  for (const auto& tr : t.host_tracks) {
    if (host_pids.insert(tr.pid).second) {
      auto p = t.process_names.find(tr.pid);
      if (p != t.process_names.end()) out += name_event("process_name", tr.pid, 0, p->second);
    }
    auto th = t.thread_names.find(tr.tid);
    if (th != t.thread_names.end()) out += name_event("thread_name", tr.pid, tr.tid, th->second);
  }
  std::set<std::int64_t> gpu_pids;
  for (const auto& tr : t.gpu_tracks)
    if (gpu_pids.insert(tr.pid).second) {
      std::string name = fmt::format("GPU {}", tr.pid);
      for (const auto& d : t.devices)
        if (d.id == tr.pid && !d.name.empty()) name += " (" + d.name + ")";
      out += name_event("process_name", tr.pid, 0, name);
    }
  return out;
}

// An Nsight Systems export has no JSON to copy: its events are written from the model as Chrome
// trace events (Kineto's categories and args, so stepscope reads them back as the same kinds),
// then stepscope's tracks.
AnnotatedFile write_from_model(const RankTrace& t, const std::string& events_text, const std::string& out_path) {
  AnnotatedFile f;
  f.rank = t.rank;
  f.path = out_path;
  OutputFile out(out_path, kWhat);
  std::uint64_t written = 0;
  auto put = [&](std::string_view s) { out.write(s), written += s.size(); };
  std::string head = fmt::format("{{\"traceName\": {},\n\"traceEvents\": [\n", json_text(t.path));
  head += chrome_names(t);
  put(head);
  std::string chunk;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.phase[i] != Phase::Complete) continue;
    chunk += chrome_event(t, i);
    chunk += ",\n";
    if (chunk.size() > (1u << 20)) put(chunk), chunk.clear();
  }
  put(chunk);
  f.inserted_at = written;
  f.inserted_bytes = events_text.size() + 1;
  put(events_text + "\n");
  put("]}\n");
  out.commit();
  return f;
}

// The input's file name as a plain JSON file: "rank0.json.gz" -> "rank0.json", "run.sqlite" -> "run.json".
std::string json_name(std::string name) {
  if (name.size() > 3 && name.ends_with(".gz")) name.resize(name.size() - 3);
  if (name.size() > 7 && name.ends_with(".sqlite")) name.replace(name.size() - 7, 7, ".json");
  return name;
}

std::vector<std::string> output_paths(const Analysis& a, const std::string& path) {
  const auto& ranks = a.trace.ranks;
  if (ranks.size() == 1) return {path};
  std::error_code ec;
  fs::create_directories(path, ec);
  if (!fs::is_directory(path)) throw InputError(fmt::format("{}: cannot create the directory for the annotated traces", path));
  std::multiset<std::string> names;
  for (const auto& r : ranks) names.insert(json_name(fs::path(r.path).filename().string()));
  std::vector<std::string> out;
  for (const auto& r : ranks) {
    std::string name = json_name(fs::path(r.path).filename().string());
    if (names.count(name) > 1) name = fmt::format("rank-{}.{}", r.rank, name);
    out.push_back((fs::path(path) / name).string());
  }
  return out;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

}  // namespace

std::vector<AnnotatedFile> write_annotated_traces(const Analysis& a, const std::string& path, const AnnotateOptions& opts) {
  if (a.trace.ranks.empty()) throw InputError("nothing to annotate: no trace was read");
  for (const auto& t : a.trace.ranks) {
    if (t.truncated) throw InputError(fmt::format("{}: cannot annotate a truncated trace", t.path));
    std::error_code ec;
    if (!fs::is_regular_file(t.path, ec))
      throw InputError(fmt::format("{}: read from a pipe, which cannot be read twice; annotate needs the trace as a file",
                                   t.path));
  }
  const std::vector<std::string> outs = output_paths(a, path);
  std::vector<AnnotatedFile> written;
  for (std::size_t k = 0; k < a.trace.ranks.size(); ++k) {
    const RankTrace& t = a.trace.ranks[k];
    if (same_file(t.path, outs[k])) throw InputError(fmt::format("{}: the annotated trace would overwrite its input", outs[k]));
    const auto tracks = annotate_detail::build_tracks(a, k, opts.partition);
    const Rendered r = render_tracks(tracks, free_pid(t), t.rank);
    AnnotatedFile f = t.layout == TraceLayout::NsysSqlite ? write_from_model(t, r.text, outs[k]) : splice(t, r.text, outs[k]);
    f.added_slices = r.slices;
    f.added_metadata = r.metadata;
    written.push_back(f);
  }
  return written;
}

}  // namespace stepscope
