// The user's own questions: `whatif --set KEY=VALUE`, parsed and replayed.
#include <fmt/core.h>

#include <charconv>
#include <cmath>

#include "stepscope/error.hpp"
#include "whatif/transforms.hpp"

namespace stepscope::whatif {
namespace {

constexpr const char* kAccepted =
    "kernels:CLASS=FACTORx (CLASS gemm, conv, attention, elementwise, norm, comm, copy or all), comm=overlap, "
    "batch_wait=FACTOR, launch=graph, syncs=none, workers=N, copies=pinned, copies=side-stream";

[[noreturn]] void refuse(std::string_view text, std::string_view why) {
  throw InputError(fmt::format("--set '{}': {}; accepted: {}", text, why, kAccepted));
}

// "0.5x", "0.5", "2" -> the number; refused when not a finite number >= 0.
double factor_of(std::string_view text, std::string_view value) {
  if (!value.empty() && (value.back() == 'x' || value.back() == 'X')) value.remove_suffix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(v) || v < 0)
    refuse(text, fmt::format("'{}' is not a factor (a number >= 0, such as 0.5x)", value));
  return v;
}

bool known_class(std::string_view c) {
  for (const char* k : {"gemm", "conv", "attention", "elementwise", "norm", "comm", "copy", "all"})
    if (c == k) return true;
  return false;
}

bool in_class(const Op& o, const std::string& c) {
  if (c == "all") return true;
  if (c == "comm") return o.kind == OpKind::Comm;
  if (c == "copy") return o.kind == OpKind::Copy;
  if (o.kind != OpKind::Compute) return false;
  if (c == "gemm") return o.cls == KernelClass::Gemm || o.cls == KernelClass::GemmTensorCore;
  if (c == "conv") return o.cls == KernelClass::Convolution;
  if (c == "attention") return o.cls == KernelClass::Attention;
  if (c == "elementwise") return o.cls == KernelClass::Elementwise;
  return c == "norm" && o.cls == KernelClass::ReductionNorm;
}

void apply(const Context& c, const Change& ch, Scenario& s) {
  const Graph& g = c.g;
  switch (ch.kind) {
    case ChangeKind::KernelScale:
      scale_ops(g, s, [&](const Op& o) { return in_class(o, ch.kernel_class); }, ch.value);
      return;
    case ChangeKind::CommOverlap:
      overlap_comm(g, c.facts, s, [](const Op& o) { return o.kind == OpKind::Comm; });
      return;
    case ChangeKind::BatchWait:
      for (std::size_t i = 0; i < g.atoms.size(); ++i)
        if (g.atoms[i].kind == AtomKind::Loader) s.atom_dur[i] = static_cast<ns_t>(static_cast<double>(s.atom_dur[i]) * ch.value);
      return;
    case ChangeKind::LaunchGraph: capture_graphs(g, c.facts, c.trace, s); return;
    case ChangeKind::SyncsRemoved: release_syncs(g, s, KeepLast::None); return;

    case ChangeKind::LoaderWorkers: loader_workers(g, s, ch.value); return;
    case ChangeKind::CopiesPinned: pin_copies(g, s, pinned_bandwidth_gbs(g, c.facts, c.trace)); return;
    case ChangeKind::CopiesSideStream:
      copies_to_side_stream(g, s, [](const Op& o) { return o.kind == OpKind::Copy; });
      return;
  }
}

}  // namespace

Change parse_change(std::string_view text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos) refuse(text, "no '=' (KEY=VALUE)");
  const std::string_view key = text.substr(0, eq), value = text.substr(eq + 1);
  Change c;
  c.text = std::string(text);
  if (key.rfind("kernels:", 0) == 0) {
    c.kind = ChangeKind::KernelScale;
    c.kernel_class = std::string(key.substr(8));
    if (!known_class(c.kernel_class)) refuse(text, fmt::format("no kernel class '{}'", c.kernel_class));
    c.value = factor_of(text, value);
  } else if (key == "comm") {
    if (value != "overlap") refuse(text, "comm takes 'overlap'");
    c.kind = ChangeKind::CommOverlap;
  } else if (key == "batch_wait") {
    c.kind = ChangeKind::BatchWait;
    c.value = factor_of(text, value);
  } else if (key == "launch") {
    if (value != "graph") refuse(text, "launch takes 'graph'");
    c.kind = ChangeKind::LaunchGraph;
  } else if (key == "syncs") {
    if (value != "none") refuse(text, "syncs takes 'none'");
    c.kind = ChangeKind::SyncsRemoved;
  } else if (key == "workers") {
    c.kind = ChangeKind::LoaderWorkers;
    c.value = factor_of(text, value);
    if (c.value < 1 || c.value != std::floor(c.value)) refuse(text, "workers takes a whole number >= 1");
  } else if (key == "copies") {
    if (value != "pinned" && value != "side-stream") refuse(text, "copies takes 'pinned' or 'side-stream'");
    c.kind = value == "pinned" ? ChangeKind::CopiesPinned : ChangeKind::CopiesSideStream;
  } else {
    refuse(text, fmt::format("no key '{}'", key));
  }
  return c;
}

Prediction custom_prediction(const Context& c, const std::vector<Change>& changes) {
  Prediction p;
  p.modelled = true;
  Scenario s = c.base;
  for (const Change& ch : changes) {
    apply(c, ch, s);
    p.basis += (p.basis.empty() ? "" : ", ") + ch.text;
  }
  p.speedup = speedup_of(c, s);
  return p;
}

}  // namespace stepscope::whatif
