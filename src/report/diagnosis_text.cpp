// Text report: the verdict first, then the partition table, stability, ranks, evidence, levers.
#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "report/diagnosis_render.hpp"
#include "report/units.hpp"
#include "stepscope/diagnose.hpp"

namespace stepscope::report_detail {
namespace {

using report_units::ms;
using report_units::pct;

}  // namespace

std::vector<TrustGroup> trust_groups(const Trust& t, bool verbose) {
  std::vector<TrustGroup> groups;
  for (const auto& w : t.warnings) {
    if (w.severity == TrustSeverity::Info && !verbose) continue;
    const auto same = std::find_if(groups.begin(), groups.end(), [&](const TrustGroup& g) {
      return g.first->code == w.code && g.first->text == w.text && g.first->advice == w.advice;
    });
    if (same != groups.end()) same->ranks.push_back(w.rank);
    else groups.push_back({&w, {w.rank}});
  }
  return groups;
}

// Ranks as runs of consecutive numbers: {0..7} -> "ranks 0-7", {0, 2, 5, 6, 7} -> "ranks 0,2,5-7",
// {3} -> "rank 3". Past 8 runs the rest are counted: "ranks 0-3,8,...(+12 more)".
std::string rank_list(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.size() == 1) return fmt::format("rank {}", ranks.front());
  constexpr std::size_t kRuns = 8;
  std::string out = "ranks ";
  std::size_t runs = 0, i = 0;
  for (; i < ranks.size() && runs < kRuns; ++runs) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (runs ? "," : "") + (j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  if (i < ranks.size()) out += fmt::format(",...(+{} more)", ranks.size() - i);
  return out;
}

namespace {

void verdict_lines(const Diagnosis& d, std::string& out) {
  const Verdict& v = d.verdict;
  // One line for the verdict, its further clauses below: "input pipeline: batch wait is 50.7% of
  // the mean step; up to 2.03x faster — raise DataLoader num_workers" becomes "verdict: input
  // pipeline: batch wait is 50.7% of the mean step" and "  up to 2.03x faster — raise ...".
  const std::string headline = terminal_safe(v.headline);
  std::size_t from = 0;
  for (std::size_t cut = headline.find("; "); ; cut = headline.find("; ", from)) {
    out += fmt::format("{}{}\n", from == 0 ? "verdict: " : "  ", headline.substr(from, cut - from));
    if (cut == std::string::npos) break;
    from = cut + 2;
  }
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

// "  ... and 4080 more ranks (--ranks all lists every one)" when the listing left some out.
void more_ranks(std::size_t listed, std::size_t total, std::string& out) {
  if (listed < total) out += fmt::format("  ... and {} more ranks (--ranks all lists every one)\n", total - listed);
}

void steps_line(const AnalysisResult& r, const std::vector<std::size_t>& listed, std::string& out) {
  for (std::size_t i : listed) {
    const RankPartition& p = r.ranks[i].partition;
    const RankFacts* f = i < r.ranks.size() ? &r.ranks[i].facts : nullptr;
    std::size_t warm = static_cast<std::size_t>(
        std::count_if(p.steps.begin(), p.steps.end(), [](const auto& s) { return s.warmup; }));
    const std::string from = terminal_safe(step_source_text(p));
    out += fmt::format("rank {}: {} step{} from {}, {} warm-up excluded; {}\n", r.ranks[i].rank(), p.steps.size(),
                       p.steps.size() == 1 ? "" : "s", from, warm, timeline_text(p, f));
    // The run line once, for the first rank listed, and again where a rank's run kind differs.
    if (f && (i == listed.front() || f->run_kind != r.ranks[listed.front()].facts.run_kind))
      out += fmt::format("  run: {} ({}); device: {}\n", run_kind_name(f->run_kind), terminal_safe(f->run_kind_evidence),
                         terminal_safe(device_line(*f)));
    if (f && i == listed.front()) out += fmt::format("  input: {}\n", terminal_safe(describe_inventory(f->inventory)));
  }
  more_ranks(listed.size(), r.ranks.size(), out);
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

void stability_rank(const RankAnalysis& a, std::string& out) {
  const Stability& s = a.stability;
  if (s.steps == 1) {
    out += fmt::format("stability (rank {}): one step ({}): stability unknown\n", a.rank(), ms(s.p50_ns));
    return;
  }
  out += fmt::format("stability (rank {}): {} — p50 {}, p90 {}, max {}, CV {:.1f}% over {} steps\n", a.rank(),
                     s.bursty ? "bursty" : "stable", ms(s.p50_ns), ms(s.p90_ns), ms(s.max_ns), s.cv * 100, s.steps);
  for (const auto& sp : s.spikes)
    out += fmt::format("  spike at step {}: {} (+{}), {} grew by {}\n", sp.step, ms(static_cast<double>(sp.duration)),
                       ms(static_cast<double>(sp.excess)), category_label(sp.grew), ms(static_cast<double>(sp.grew_by)));
  if (s.period.kind != PeriodKind::None)
    out += fmt::format("  periodic: every {} steps ({}) — {}\n", s.period.every, category_label(s.period.category),
                       period_kind_name(s.period.kind));
}

std::vector<int> ranks_of(const std::vector<const RankAnalysis*>& ranks) {
  std::vector<int> ids;
  for (const auto* a : ranks) ids.push_back(a->rank());
  return ids;
}

// Bursty ranks in full (as many as are listed); stable ranks of a multi-rank job on one line, and
// ranks of one steady step, whose stability is unknown (never "stable"), on another.
void stability_lines(const AnalysisResult& r, std::size_t limit, std::string& out) {
  out += "\n";
  std::vector<const RankAnalysis*> stable, unknown;
  std::size_t bursty = 0;
  for (const RankAnalysis& a : r.ranks) {
    const Stability& s = a.stability;
    if (!s.steps) continue;
    if (s.bursty || r.ranks.size() == 1) {
      if (limit == 0 || bursty++ < limit) stability_rank(a, out);
    } else {
      (s.steps == 1 ? unknown : stable).push_back(&a);
    }
  }
  if (limit != 0 && bursty > limit) out += fmt::format("  ... and {} more bursty ranks (--ranks all lists every one)\n", bursty - limit);
  const auto p50_range = [](const std::vector<const RankAnalysis*>& of) {
    double lo = of.front()->stability.p50_ns, hi = lo;
    for (const auto* a : of) lo = std::min(lo, a->stability.p50_ns), hi = std::max(hi, a->stability.p50_ns);
    return lo == hi ? ms(lo) : fmt::format("{} to {}", ms(lo), ms(hi));
  };
  if (!unknown.empty())
    out += fmt::format("stability: unknown on {} (one steady step each: {})\n", rank_list(ranks_of(unknown)), p50_range(unknown));
  if (stable.empty()) return;
  double cv = 0;
  for (const auto* a : stable) cv = std::max(cv, a->stability.cv);
  out += fmt::format("stability: stable on {} — p50 {}, CV at most {:.1f}%\n", rank_list(ranks_of(stable)), p50_range(stable),
                     cv * 100);
}

// Every rank when they are few; at scale the listed ones, each with its quantile of the step.
void ranks_table(const AnalysisResult& r, const std::vector<std::size_t>& listed, std::string& out) {
  const RankComparison& rc = r.job.rank_comparison;
  if (rc.rows.size() < 2) return;
  const bool sampled = listed.size() < r.ranks.size();
  out += sampled ? fmt::format("\nranks (steady-state means; {} of {}: the straggler, the fastest, the slowest and "
                               "quantiles between):\n", listed.size(), r.ranks.size())
                 : "\nranks (steady-state means):\n";
  out += fmt::format("  {:>5} {:>11} {:>11} {:>13}{}\n", "rank", "step", "compute", "grad sync exp", sampled ? "  quantile" : "");
  for (std::size_t i : listed) {
    const int rank = r.ranks[i].rank();
    const auto row = std::find_if(rc.rows.begin(), rc.rows.end(), [&](const RankRow& x) { return x.rank == rank; });
    if (row == rc.rows.end()) continue;
    const std::string where = sampled ? fmt::format("  p{:<6.0f}", 100 * step_quantile(r, i)) : "";
    out += fmt::format("  {:>5} {:>11} {:>11} {:>13}{}{}\n", row->rank, ms(row->step_ns), ms(row->compute_ns),
                       ms(row->grad_sync_ns), where, rc.straggler && *rc.straggler == row->rank ? "  <- straggler" : "");
  }
  out += !rc.withheld.empty() ? fmt::format("  slowdown: not judged ({})", rc.withheld)
                              : fmt::format("  slowdown: {}", rc.local ? "rank-local" : "global (all ranks alike)");
  if (rc.straggler)
    out += fmt::format("; straggler rank {} (+{} {}); balanced ranks would save {} per step", *rc.straggler,
                       pct(rc.straggler_excess), straggler_excess_of(rc.straggler_cause), ms(rc.balanced_saving_ns));
  out += fmt::format("; collective skew {} per step\n", ms(rc.mean_skew_ns));
  if (auto clocks = clock_alignment_sentence(rc.clocks); !clocks.empty()) out += fmt::format("  {}\n", clocks);
}

}  // namespace

std::string clock_alignment_sentence(const ClockAlignment& c) {
  if (c.method == ClockMethod::None) return "";
  if (c.method == ClockMethod::BaseTime)
    return c.mismatched > 0 ? fmt::format("clocks: the {} collectives paired across ranks end too far apart to be one "
                                          "(events lost?); clocks not aligned, arrival skew not measured", c.mismatched)
                            : "clocks: no collective recorded on two ranks to align them on; arrival skew not measured";
  std::string s = fmt::format("clocks aligned on {} collectives ({}): residual {} (p99 {})", c.collectives, c.keyed_by,
                              ms(static_cast<double>(c.residual_p50_ns)), ms(static_cast<double>(c.residual_p99_ns)));
  if (c.mismatched > 0) s += fmt::format(", {} more left out as mismatched", c.mismatched);
  if (c.unaligned_ranks > 0) s += fmt::format(", {} ranks share none with the rest", c.unaligned_ranks);
  s += fmt::format("; arrival skew mean {}, p90 {}", ms(c.arrival_skew_mean_ns), ms(static_cast<double>(c.arrival_skew_p90_ns)));
  if (c.last_rank) s += fmt::format("; rank {} reaches {} of them last", *c.last_rank, pct(c.last_share));
  return s;
}

namespace {

void evidence_lines(const Diagnosis& d, std::string& out) {
  out += "\nevidence:\n";
  for (const auto& e : d.verdict.evidence) out += fmt::format("  - {}\n", terminal_safe(e));
  for (const auto& f : d.findings)
    if (!f.footgun) out += fmt::format("  - {}\n", terminal_safe(finding_text(f)));
  bool any = false;
  for (const auto& f : d.findings) {
    if (!f.footgun) continue;
    if (!any) out += "\nfootguns (each with what to look for in the trace):\n";
    any = true;
    out += fmt::format("  - [{}] {}\n", finding_id(f), terminal_safe(finding_text(f)));
    for (const auto& e : f.evidence) out += fmt::format("      {}\n", terminal_safe(e));
  }
}

// A larger batch's step is longer: its figures are the time of the recorded batch's samples.
const char* per_sample_note(const Lever& l) {
  return priced_per_sample(l) ? " for the recorded batch's samples" : "";
}

// "     predicted: 2.20x (1.95x to 2.47x), step 39.1 ms -> 17.8 ms; by setting: 2 -> 2.20x, 4 -> 4.47x"
std::string prediction_line(const Lever& l) {
  if (l.predicted_step_ns <= 0) return "";
  std::string settings;
  for (const auto& [value, speedup] : l.predicted_by_setting)
    settings += fmt::format("{}{} -> {:.2f}x", settings.empty() ? "; by setting: " : ", ", value, speedup);
  return fmt::format("     predicted: {:.2f}x ({:.2f}x to {:.2f}x), step {} -> {}{}{}{}\n", l.predicted_speedup,
                     l.predicted_speedup_lo, l.predicted_speedup_hi, ms(l.step_ns), ms(l.predicted_step_ns),
                     per_sample_note(l),
                     l.predicted_replayed ? "" : " (the bound: no graph change models it)", settings);
}

// "plan (levers applied together in one replay):\n  1. raise DataLoader num_workers -> 2.20x (17.8 ms)\n ..."
void plan_lines(const LeverPlan& p, std::string& out) {
  if (p.entries.empty()) return;
  out += "\nplan (levers applied together in one replay, the one that pays most first):\n";
  for (std::size_t k = 0; k < p.entries.size(); ++k)
    out += fmt::format("  {}. {}{} -> {:.2f}x (step {})\n", k + 1, k ? "+ " : "", p.entries[k].title, p.entries[k].speedup,
                       ms(p.entries[k].step_ns));
  if (p.run_steps <= 0) return;
  out += fmt::format("  a run of {} steps on {} GPU(s): {:.2f} GPU-hours -> {:.2f}", p.run_steps, p.gpus, p.gpu_hours_before,
                     p.gpu_hours_after);
  if (p.gpu_hour_cost > 0)
    out += fmt::format(" (${:.2f} -> ${:.2f} at ${:.2f} per GPU-hour)", p.gpu_hours_before * p.gpu_hour_cost,
                       p.gpu_hours_after * p.gpu_hour_cost, p.gpu_hour_cost);
  out += "\n";
}

// "replay: the step graph gives back the recorded steps within 1.2% (3.4% at worst, rank 3)"
void replay_line(const AnalysisResult& r, std::string& out) {
  double sum = 0, worst = 0;
  int n = 0, worst_rank = 0;
  for (std::size_t i = 0; i < r.ranks.size(); ++i) {
    if (!r.ranks[i].whatif.present) continue;
    sum += r.ranks[i].whatif.replay_error_mean, ++n;
    if (r.ranks[i].whatif.replay_error_max >= worst) worst = r.ranks[i].whatif.replay_error_max, worst_rank = r.ranks[i].rank();
  }
  if (n == 0) return;
  out += fmt::format("\nreplay: the step graph gives back the recorded steps within {:.1f}% ({:.1f}% at worst, rank {}); "
                     "predictions below are no closer than that\n",
                     100 * sum / n, 100 * worst, worst_rank);
}

void lever_lines(const Diagnosis& d, bool verbose, std::string& out) {
  out += "\nlevers (expected gain is an upper bound from this trace; ranked by the replay's predicted step):\n";
  std::size_t shown = 0;
  for (const auto& l : d.levers) {
    // Below a 1% bound a lever is noise for this trace (still listed in JSON and --verbose).
    if (!l.applies || (!verbose && (shown >= 6 || l.speedup < 1.01))) continue;
    ++shown;
    out += fmt::format("  {}. {} — up to {:.2f}x (step {} -> {}{})\n", shown, l.title, l.speedup, ms(l.step_ns),
                       ms(l.step_ns - l.removable_ns), per_sample_note(l));
    out += prediction_line(l);
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

void step_table(const RankAnalysis& a, std::string& out) {
  const RankPartition& p = a.partition;
  out += fmt::format("\nsteps of rank {} (ms per category):\n  {:<18}", a.rank(), "step");
  for (int c = 0; c < kCategoryCount; ++c) out += fmt::format(" {:>8.8}", category_name(static_cast<Category>(c)));
  out += "\n";
  for (const auto& s : p.steps) {
    out += fmt::format("  {:<18.18}", terminal_safe(s.name) + (s.warmup ? "*" : ""));
    for (auto v : s.ns) out += fmt::format(" {:>8.2f}", static_cast<double>(v) / 1e6);
    out += "\n";
  }
}

}  // namespace

// What limits the conclusions comes right after the verdict, before the figures: the report's first
// line is always the verdict (`stepscope analyze t.json | head -1`). Info-level warnings only in
// verbose mode. The same words on several ranks are one line naming the ranks ("ranks 0-7: one
// steady-state step: ..."); past `limit` differently worded warnings of one code, the rest are
// counted, not repeated.
void trust_lines(const Trust& t, bool verbose, std::size_t limit, std::string& out) {
  const std::vector<TrustGroup> groups = trust_groups(t, verbose);
  if (groups.empty()) return;
  out += "\ntrust (what limits this analysis):\n";
  std::map<std::string_view, std::size_t> seen;  // by stable string: the counted rest in its order
  for (const TrustGroup& g : groups) {
    const TrustWarning& w = *g.first;
    const std::string_view code = trust_code_name(w.code);
    if (limit != 0 && ++seen[code] > limit) continue;
    out += fmt::format("  ! [{}] {}: {}\n", code, rank_list(g.ranks), terminal_safe(w.text));
    if (!w.advice.empty()) out += fmt::format("      record instead: {}\n", terminal_safe(w.advice));
  }
  for (const auto& [code, n] : seen)
    if (limit != 0 && n > limit) out += fmt::format("  ! [{}] the same on {} more ranks (--ranks all lists every one)\n", code, n - limit);
  out += "\n";
}

std::string render_diagnosis_text(const DiagnosedResult& r, const TextOptions& opts) {
  std::string out;
  if (!r.diagnosis.present) return "verdict: nothing to analyse (no steps with any recorded time)\n";
  const std::vector<std::size_t> listed = listed_ranks(r, opts.ranks);
  verdict_lines(r.diagnosis, out);
  trust_lines(r.job.trust, opts.verbose, opts.ranks, out);
  steps_line(r, listed, out);
  partition_table(job_step(r), r.ranks.size(), opts.verbose, out);
  stability_lines(r, opts.ranks, out);
  ranks_table(r, listed, out);
  evidence_lines(r.diagnosis, out);
  replay_line(r, out);
  lever_lines(r.diagnosis, opts.verbose, out);
  plan_lines(r.diagnosis.plan, out);
  if (opts.verbose)
    for (std::size_t i : listed) step_table(r.ranks[i], out);
  return out;
}

}  // namespace stepscope::report_detail
