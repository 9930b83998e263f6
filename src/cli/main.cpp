#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string_view>
#ifdef STEPSCOPE_MIMALLOC
#include <mimalloc.h>
#endif

#include "cli/app.hpp"
#include "cli/command.hpp"
#include "cli/config_file.hpp"
#include "stepscope/distributed.hpp"
#include "stepscope/error.hpp"
#include "stepscope/pipeline.hpp"
#include "stepscope/report.hpp"
#include "stepscope/temp_files.hpp"

namespace {

// Edit distance (insertions, deletions, substitutions, adjacent swaps), for "did you mean".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The candidate nearest `word`, when it is near enough to be a typo of it (or a prefix of it).
std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = c.starts_with(word) && word.size() >= 3 ? 1 : edit_distance(word, c);
    if (d < best_d) best = c, best_d = d;
  }
  return best;
}

// Segments mimalloc frees go back to the system at once, not after its default half second: with
// two threads, one thread's freed memory otherwise stays resident while the other allocates
// (1 GB trace, analyze -j2: peak RSS 271 to 264 MiB, medians of 8 runs, no slower). The environment's
// MIMALLOC_SEGMENT_DECOMMIT_DELAY, when set, wins.
constexpr int kExitOut = 2;

#ifdef STEPSCOPE_MIMALLOC
// While a rank is analysed, the pages mimalloc frees go back to the system at once (decommit delay
// 0), and what the reader's threads freed goes back as the analysis starts: the analyses' two
// threads free about as much as they allocate, each in a heap of its own, and pages kept for reuse
// by the thread that freed them only raise the peak. While a trace is read the default delay
// stays: the growing columns and the parser's buffers reuse what was freed (a delay of 0
// throughout made a 1 GB analysis 45% slower).
void release_while_analysing(stepscope::RunPhase p) {
  static const long reading_delay = mi_option_get(mi_option_decommit_delay);
  const bool analysing = p == stepscope::RunPhase::Analysing;
  mi_option_set(mi_option_decommit_delay, analysing ? 0 : reading_delay);
  if (analysing) mi_collect(true);
}
#endif  // as any input refused: stepscope::cli::kExitBadInput

void tune_allocator() {
  // mimalloc aborts when `new` fails and no handler is set: with one, the failure becomes
  // std::bad_alloc, which main turns into one line and exit 2 like any refused input.
  std::set_new_handler([] { throw std::bad_alloc(); });
#ifdef STEPSCOPE_MIMALLOC
  // libmimalloc's `new` does not see that handler (it asks its own weak get_new_handler) and
  // aborts after reporting ENOMEM, and no exception may cross its frames: its report is where the
  // process says so in one line, removes its temporaries and exits 2 itself.
  mi_register_error([](int err, void*) {
    if (err != ENOMEM) return;
    static const char kLine[] =
        "stepscope: error: out of memory: the input needs more memory than this process may use (ulimit -v, cgroup)\n";
    if (stepscope::speaks_for_the_job()) (void)!::write(STDERR_FILENO, kLine, sizeof kLine - 1);
    stepscope::remove_temporaries();
    ::_exit(kExitOut);
  }, nullptr);
  if (std::getenv("MIMALLOC_SEGMENT_DECOMMIT_DELAY") == nullptr) mi_option_set(mi_option_segment_decommit_delay, 0);
  if (std::getenv("MIMALLOC_DECOMMIT_DELAY") == nullptr) stepscope::set_run_phase_listener(release_while_analysing);
#endif
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) out.push_back(s->get_name());
  return out;
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

// The subcommand chain the words name ("plan memory"), and the first word after it that names
// no subcommand of it ("" when none).
CLI::App* named_command(CLI::App& app, int argc, char** argv, std::string& stray) {
  CLI::App* at = &app;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') {
      // "--config FILE": the value is not a command word.
      const std::string word = argv[i];
      const CLI::Option* o = word.find('=') == std::string::npos ? at->get_option_no_throw(word) : nullptr;
      if (o && o->get_items_expected_max() > 0) ++i;
      continue;
    }
    try {
      at = at->get_subcommand(argv[i]);
    } catch (const CLI::OptionNotFound&) {
      stray = argv[i];
      break;
    }
  }
  return at;
}

void tell_unknown(const std::string& prefix, const char* kind, const std::string& raw_word, const std::string& near) {
  const std::string word = stepscope::terminal_safe(raw_word);
  std::string msg = fmt::format("{}: unknown {} '{}'", prefix, kind, word);
  if (!near.empty()) msg += fmt::format("; did you mean '{}'?", near);
  // A trace named without a command: the user meant to analyse it.
  else if (std::string_view(kind) == "command" && word.find_first_of("./") != std::string::npos)
    msg += fmt::format("; to analyse a trace: stepscope analyze {}", word);
  std::fprintf(stderr, "%s\nRun '%s --help' for the list.\n", msg.c_str(), prefix.c_str());
}

// CLI11 says "INI was not able to parse analyze.topp": name the file, the section and the
// nearest option of that command instead.
bool explain_config_error(CLI::App& app, const std::string& what, int argc, char** argv) {
  std::string file = "stepscope.toml";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--config") file = argv[i + 1];
  const std::size_t at = what.rfind(' ');
  const std::string item = at == std::string::npos ? what : what.substr(at + 1);
  const std::size_t dot = item.rfind('.');
  if (dot == std::string::npos) return false;
  const std::string section = item.substr(0, dot), key = item.substr(dot + 1);
  CLI::App* cmd = nullptr;
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == section) cmd = sub;
  std::string msg = fmt::format("stepscope: {}: [{}] has no option '{}'", stepscope::terminal_safe(file),
                                stepscope::terminal_safe(section), stepscope::terminal_safe(key));
  if (cmd) {
    std::vector<std::string> keys;
    for (const auto& o : option_names(*cmd))
      if (o.starts_with("--")) keys.push_back(o.substr(2));
    if (const std::string near = nearest(key, keys); !near.empty()) msg += fmt::format("; did you mean '{}'?", near);
  }
  std::fprintf(stderr, "%s\n", msg.c_str());
  return true;
}

// A word where a command belongs, or an option the command lacks: name it and the nearest real
// one. Returns false when the error is of another kind.
bool explain_unknown(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  std::string stray;
  CLI::App* cmd = named_command(app, argc, argv, stray);
  const std::string prefix = cmd == &app ? "stepscope" : "stepscope " + cmd->get_name();
  const bool has_subcommands = !subcommand_names(*cmd).empty();
  if (has_subcommands && !stray.empty()) {
    tell_unknown(prefix, "command", stray, nearest(stray, subcommand_names(*cmd)));
    return true;
  }
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ConfigError*>(&e)) return explain_config_error(app, what, argc, argv);
  if (!dynamic_cast<const CLI::ExtrasError*>(&e)) return false;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.size() < 2 || word[0] != '-' || what.find(word) == std::string::npos) continue;
    const std::string name = word.substr(0, word.find('='));
    tell_unknown(prefix, "option", name, nearest(name, option_names(*cmd)));
    return true;
  }
  return false;
}

// The error line's one escape: names in messages come from the command line, the trace, the
// working directory; a newline or an escape sequence in one must not forge or hide a line.
// With stderr gone too (a full device, a closed pipe) there is no one to tell: this must not
// throw, or the error becomes an abort.
void report_error(const char* kind, const char* what) noexcept {
  if (!stepscope::speaks_for_the_job()) return;  // under mpirun, process 0 alone says it
  try {
    std::fprintf(stderr, "stepscope: %s: %s\n", kind, stepscope::terminal_safe(what).c_str());
  } catch (...) {
    std::fprintf(stderr, "stepscope: %s\n", kind);
  }
}

// CLI11's own messages quote option values and config keys as given: escaped like ours.
std::string escaped_failure(const CLI::App* app, const CLI::Error& e) {
  if (!stepscope::speaks_for_the_job()) return "";
  const std::string plain = CLI::FailureMessage::simple(app, e);
  const std::size_t own = std::string_view(plain).starts_with(e.what()) ? std::strlen(e.what()) : 0;
  return stepscope::terminal_safe(std::string_view(plain).substr(0, own)) + plain.substr(own);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stepscope::cli;
  tune_allocator();
  CLI::App app;
  const std::vector<Runner> runners = define_app(app);
  app.failure_message(escaped_failure);
  try {
    const std::string config = config_path(argc, argv);
    vet_config_file(config, config != "stepscope.toml" || std::any_of(argv + 1, argv + argc, [](const char* a) {
                              return std::string_view(a).starts_with("--config");
                            }));
  } catch (const stepscope::InputError& e) {
    report_error("error", e.what());
    return kExitBadInput;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (!stepscope::speaks_for_the_job() && e.get_exit_code() != 0) return kExitBadInput;
    if (explain_unknown(app, e, argc, argv)) return kExitBadInput;
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  try {
    for (auto& [sub, run] : runners) {
      if (sub && sub->parsed()) return run();
    }
  } catch (const stepscope::InputError& e) {
    report_error("error", e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    report_error("error", "out of memory: the input needs more memory than this process may use (ulimit -v, cgroup)");
    return kExitBadInput;
  } catch (const std::exception& e) {
    report_error("internal error", e.what());
    return kExitBadInput;
  }
  return kExitBadInput;
}
