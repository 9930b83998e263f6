// Text report: the verdict first, then the partition table, stability, ranks, evidence, levers.
#include <fmt/core.h>

#include <algorithm>

#include "report/diagnosis_render.hpp"
#include "stepscope/diagnose.hpp"

namespace stepscope::report_detail {
namespace {

std::string ms(double ns) {
  if (ns >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.1f} us", ns / 1e3);
}

std::string pct(double share) { return fmt::format("{:.1f}%", share * 100); }

void verdict_lines(const Diagnosis& d, std::string& out) {
  const Verdict& v = d.verdict;
  out += fmt::format("verdict: {}\n", terminal_safe(v.headline));
  if (v.has_runner_up)
    out += fmt::format("  runner-up: {} ({} of the step)\n", bound_label(v.runner_up, v.gpu), pct(v.runner_up_share));
  if (!v.compute_kind.empty() && v.bound == Bound::GpuCompute)
    out += fmt::format("  compute kind: {}\n", terminal_safe(v.compute_kind));
}

// "GPU timeline", "host (CPU-only) timeline", or what the host timeline stands in for.
std::string timeline_text(const RankPartition& p, const RankFacts* f) {
  if (p.gpu) return "GPU timeline";
  if (f && !f->gpu_records && f->launch_calls > 0) return "host timeline only (the GPU records are missing)";
  return "host (CPU-only) timeline";
}

void steps_line(const AnalysisResult& r, std::string& out) {
  for (std::size_t i = 0; i < r.partitions.size(); ++i) {
    const RankPartition& p = r.partitions[i];
    const RankFacts* f = i < r.facts.size() ? &r.facts[i] : nullptr;
    std::size_t warm = static_cast<std::size_t>(
        std::count_if(p.steps.begin(), p.steps.end(), [](const auto& s) { return s.warmup; }));
    const std::string from = terminal_safe(step_source_text(p));
    out += fmt::format("rank {}: {} step{} from {}, {} warm-up excluded; {}\n", p.rank, p.steps.size(),
                       p.steps.size() == 1 ? "" : "s", from, warm, timeline_text(p, f));
    if (f && (i == 0 || f->run_kind != r.facts[0].run_kind))
      out += fmt::format("  run: {} ({}); device: {}\n", run_kind_name(f->run_kind), terminal_safe(f->run_kind_evidence),
                         terminal_safe(f->device.describe()));
  }
}

void partition_table(const JobStep& job, std::size_t ranks, bool verbose, std::string& out) {
  out += fmt::format("\npartition of the mean steady-state step ({}{}):\n", ms(job.step_ns),
                     ranks > 1 ? fmt::format(", mean of {} ranks", ranks) : "");
  out += fmt::format("  {:<22} {:>11} {:>8}\n", "category", "per step", "% step");
  for (int c = 0; c < kCategoryCount; ++c) {
    double v = job.category[static_cast<std::size_t>(c)];
    if (v <= 0 && !verbose) continue;
    out += fmt::format("  {:<22} {:>11} {:>8}\n", category_label(static_cast<Category>(c)), ms(v),
                       pct(job.step_ns > 0 ? v / job.step_ns : 0));
  }
}

void stability_rank(const Stability& s, std::string& out) {
  if (s.steps == 1) {
    out += fmt::format("stability (rank {}): one step ({}): stability unknown\n", s.rank, ms(s.p50_ns));
    return;
  }
  out += fmt::format("stability (rank {}): {} — p50 {}, p90 {}, max {}, CV {:.1f}% over {} steps\n", s.rank,
                     s.bursty ? "bursty" : "stable", ms(s.p50_ns), ms(s.p90_ns), ms(s.max_ns), s.cv * 100, s.steps);
  for (const auto& sp : s.spikes)
    out += fmt::format("  spike at step {}: {} (+{}), {} grew by {}\n", sp.step, ms(static_cast<double>(sp.duration)),
                       ms(static_cast<double>(sp.excess)), category_label(sp.grew), ms(static_cast<double>(sp.grew_by)));
  if (s.period.kind != PeriodKind::None)
    out += fmt::format("  periodic: every {} steps ({}) — {}\n", s.period.every, category_label(s.period.category),
                       period_kind_name(s.period.kind));
}

// Bursty ranks in full; stable ranks of a multi-rank job on one line.
void stability_lines(const AnalysisResult& r, std::string& out) {
  out += "\n";
  std::vector<const Stability*> stable;
  for (const auto& s : r.stability) {
    if (!s.steps) continue;
    if (s.bursty || r.stability.size() == 1) stability_rank(s, out);
    else stable.push_back(&s);
  }
  if (stable.empty()) return;
  double lo = stable.front()->p50_ns, hi = lo, cv = 0;
  std::string ids;
  for (const auto* s : stable) {
    lo = std::min(lo, s->p50_ns), hi = std::max(hi, s->p50_ns), cv = std::max(cv, s->cv);
    if (!ids.empty()) ids += ',';
    ids += std::to_string(s->rank);
  }
  out += fmt::format("stability: stable on ranks {} — p50 {} to {}, CV at most {:.1f}%\n", ids, ms(lo), ms(hi), cv * 100);
}

void ranks_table(const RankComparison& rc, std::string& out) {
  if (rc.rows.size() < 2) return;
  out += "\nranks (steady-state means):\n";
  out += fmt::format("  {:>5} {:>11} {:>11} {:>13}\n", "rank", "step", "compute", "grad sync exp");
  for (const auto& row : rc.rows)
    out += fmt::format("  {:>5} {:>11} {:>11} {:>13}{}\n", row.rank, ms(row.step_ns), ms(row.compute_ns),
                       ms(row.grad_sync_ns), rc.straggler && *rc.straggler == row.rank ? "  <- straggler" : "");
  out += fmt::format("  slowdown: {}", rc.local ? "rank-local" : "global (all ranks alike)");
  if (rc.straggler)
    out += fmt::format("; straggler rank {} (+{} compute); balanced ranks would save {} per step", *rc.straggler,
                       pct(rc.straggler_excess), ms(rc.balanced_saving_ns));
  out += fmt::format("; collective skew {} per step\n", ms(rc.mean_skew_ns));
}

void evidence_lines(const Diagnosis& d, std::string& out) {
  out += "\nevidence:\n";
  for (const auto& e : d.verdict.evidence) out += fmt::format("  - {}\n", terminal_safe(e));
  for (const auto& f : d.findings)
    if (!f.footgun) out += fmt::format("  - {}\n", terminal_safe(f.text));
  bool any = false;
  for (const auto& f : d.findings) {
    if (!f.footgun) continue;
    if (!any) out += "\nfootguns (each with what to look for in the trace):\n";
    any = true;
    out += fmt::format("  - [{}] {}\n", f.id, terminal_safe(f.text));
    for (const auto& e : f.evidence) out += fmt::format("      {}\n", terminal_safe(e));
  }
}

void lever_lines(const Diagnosis& d, bool verbose, std::string& out) {
  out += "\nlevers (expected gain is an upper bound from this trace):\n";
  std::size_t shown = 0;
  for (const auto& l : d.levers) {
    // Below a 1% bound a lever is noise for this trace (still listed in JSON and --verbose).
    if (!l.applies || (!verbose && (shown >= 6 || l.speedup < 1.01))) continue;
    ++shown;
    out += fmt::format("  {}. {} — up to {:.2f}x (step {} -> {})\n", shown, l.title, l.speedup, ms(l.step_ns),
                       ms(l.step_ns - l.removable_ns));
    out += fmt::format("     knob: {}\n     why: {}\n     risk: {}\n", l.knob, l.basis, l.risk);
    if (l.critical_path_share >= 0)
      out += l.critical_path_share > 0
                 ? fmt::format("     critical path: {:.0f}% of the analysed step's path is time it acts on\n", 100 * l.critical_path_share)
                 : "     critical path: off the analysed step's critical path; it shortens that step only once the path moves\n";
    if (!l.numerics.empty()) out += fmt::format("     numerics: {}\n", l.numerics);
    if (!l.comparability.empty()) out += fmt::format("     comparability: {}\n", l.comparability);
  }
  if (!shown) out += "  none: the trace shows no time a catalogued lever acts on\n";
}

void step_table(const RankPartition& p, std::string& out) {
  out += fmt::format("\nsteps of rank {} (ms per category):\n  {:<18}", p.rank, "step");
  for (int c = 0; c < kCategoryCount; ++c) out += fmt::format(" {:>8.8}", category_name(static_cast<Category>(c)));
  out += "\n";
  for (const auto& s : p.steps) {
    out += fmt::format("  {:<18.18}", terminal_safe(s.name) + (s.warmup ? "*" : ""));
    for (auto v : s.ns) out += fmt::format(" {:>8.2f}", static_cast<double>(v) / 1e6);
    out += "\n";
  }
}

}  // namespace

// What limits the conclusions comes before them; info-level warnings only in verbose mode.
void trust_lines(const Trust& t, bool verbose, std::string& out) {
  bool any = false;
  for (const auto& w : t.warnings) {
    if (w.severity == TrustSeverity::Info && !verbose) continue;
    if (!any) out += "trust (what limits this analysis):\n";
    any = true;
    out += fmt::format("  ! [{}] rank {}: {}\n", w.code, w.rank, terminal_safe(w.text));
    if (!w.advice.empty()) out += fmt::format("      record instead: {}\n", terminal_safe(w.advice));
  }
  if (any) out += "\n";
}

std::string render_diagnosis_text(const AnalysisResult& r, const TextOptions& opts) {
  std::string out;
  if (!r.diagnosis.present) return "verdict: nothing to analyse (no steps with any recorded time)\n";
  trust_lines(r.trust, opts.verbose, out);
  verdict_lines(r.diagnosis, out);
  steps_line(r, out);
  partition_table(job_step(r), r.partitions.size(), opts.verbose, out);
  stability_lines(r, out);
  ranks_table(r.rank_comparison, out);
  evidence_lines(r.diagnosis, out);
  lever_lines(r.diagnosis, opts.verbose, out);
  if (opts.verbose)
    for (const auto& p : r.partitions) step_table(p, out);
  return out;
}

}  // namespace stepscope::report_detail
