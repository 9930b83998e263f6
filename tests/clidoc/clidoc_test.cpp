// The man page and completion writers on command lines built here: what they read from CLI11,
// and text that would break roff or a shell script (requests at a line start, backslashes,
// quotes, brackets, colons, non-ASCII) coming out as text that groff, bash and zsh accept.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_model.hpp"
#include "completion.hpp"
#include "man.hpp"

namespace {

namespace fs = std::filesystem;

struct Shell {
  int rc;
  std::string output;
};

Shell shell(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

bool have(const char* program) { return shell(std::string("command -v ") + program + " >/dev/null").rc == 0; }

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path path = fs::path(::testing::TempDir()) / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A small command line shaped like stepscope's: a global option that falls through, a command
// with positionals and every kind of option, a command with subcommands.
struct Tool {
  CLI::App app{"tool: does things", "tool"};
  std::string config, out, dir, text;
  std::vector<std::string> inputs, repeated, command;
  int n = 3;
  bool flag = false;

  Tool() {
    app.add_option("--config", config, "Settings file")->type_name("FILE");
    app.fallthrough();
    auto* run = app.add_subcommand("run", "Runs: [it] \"now\", it's a 'test' \\ with: colons");
    run->add_option("INPUT", inputs, "Inputs (.json)")->type_name("PATH")->required();
    run->add_option("-o,--out", out, "Where to write [a file]")->type_name("FILE");
    run->add_option("--dir", dir, "A directory")->type_name("DIR");
    run->add_option("--json", text, "JSON or stdout")->expected(0, 1)->type_name("[FILE]");
    run->add_option("-n,--count", n, "How many")->capture_default_str();
    run->add_option("--stage", repeated, "Repeatable rule");
    run->add_flag("--flag", flag, ".starts with a dot\n'and a quote, µs and ±");
    run->footer("\nExamples:\n  tool run a.json --out x   # a comment\n\nExit status: 0 fine, 2 not.");
    auto* group = app.add_subcommand("group", "Holds subcommands");
    group->add_subcommand("inner", "The inner one")->add_option("COMMAND", command, "Command to start")->type_name("COMMAND");
  }
};

const clidoc::OptionDoc& option(const clidoc::CommandDoc& c, const std::string& name) {
  for (const auto& o : c.options)
    if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) return o;
  throw std::runtime_error("no option " + name);
}

TEST(CliModel, ReadsCommandsOptionsAndArguments) {
  Tool t;
  const clidoc::CommandDoc root = clidoc::describe(t.app);
  ASSERT_EQ(2u, root.subcommands.size());
  const auto& run = root.subcommands[0];
  EXPECT_EQ("tool run", run.full_name());
  EXPECT_EQ("tool-run", run.full_name('-'));
  ASSERT_EQ(1u, run.positionals.size());
  EXPECT_EQ("INPUT", run.positionals[0].name);
  EXPECT_EQ(clidoc::ValueKind::path, run.positionals[0].kind);
  EXPECT_TRUE(run.positionals[0].many);
  EXPECT_TRUE(run.positionals[0].required);

  EXPECT_EQ((std::vector<std::string>{"-o", "--out"}), option(run, "--out").names);
  EXPECT_EQ(clidoc::ValueKind::file, option(run, "--out").kind);
  EXPECT_EQ(clidoc::ValueKind::directory, option(run, "--dir").kind);
  EXPECT_TRUE(option(run, "--json").value_optional);
  EXPECT_EQ("FILE", option(run, "--json").value);
  EXPECT_EQ("3", option(run, "--count").default_value);
  EXPECT_EQ(clidoc::ValueKind::other, option(run, "--count").kind);
  EXPECT_TRUE(option(run, "--stage").repeatable);
  EXPECT_TRUE(option(run, "--flag").value.empty());
  EXPECT_TRUE(option(run, "--help").ends_command);

  // --config falls through from the program to every command, nested ones included.
  ASSERT_EQ(1u, run.inherited.size());
  EXPECT_EQ("--config", run.inherited[0].names[0]);
  const auto& inner = root.subcommands[1].subcommands.at(0);
  ASSERT_EQ(1u, inner.inherited.size());
  EXPECT_EQ(clidoc::ValueKind::command, inner.positionals.at(0).kind);
  EXPECT_EQ(4u, clidoc::all_commands(root).size());  // tool, run, group, group inner
}

TEST(RoffEscape, KeepsTextText) {
  EXPECT_EQ("\\&.TH x", clidoc::roff_escape(".TH x"));
  EXPECT_EQ("a\n\\&'b", clidoc::roff_escape("a\n'b"));
  EXPECT_EQ("a.b", clidoc::roff_escape("a.b"));
  EXPECT_EQ("c:\\eb", clidoc::roff_escape("c:\\b"));
  EXPECT_EQ("\\-\\-json", clidoc::roff_escape("--json"));
  EXPECT_EQ("5 \\[u00B5]s \\[u00B1]", clidoc::roff_escape("5 µs ±"));
  EXPECT_EQ("\\[uFFFD]", clidoc::roff_escape("\xff"));
}

TEST(ManPages, OnePerCommandThatGroffTakesWithoutAWarning) {
  if (!have("groff")) GTEST_SKIP() << "groff is not installed";
  Tool t;
  const auto pages = clidoc::man_pages(clidoc::describe(t.app), {"tool 1.0", "2025-01-31"});
  std::vector<std::string> files;
  for (const auto& p : pages) files.push_back(p.file);
  EXPECT_EQ((std::vector<std::string>{"tool.1", "tool-run.1", "tool-group.1", "tool-group-inner.1"}), files);
  for (const auto& p : pages) {
    const fs::path path = write_temp(p.file, p.text);
    const Shell lint = shell("groff -man -ww -z -Tutf8 '" + path.string() + "'");
    EXPECT_EQ(0, lint.rc) << p.file;
    EXPECT_EQ("", lint.output) << p.file;
    fs::remove(path);
  }
  const std::string& run = pages[1].text;
  EXPECT_NE(std::string::npos, run.find("\\&.starts with a dot")) << run;
  EXPECT_NE(std::string::npos, run.find(".SH EXAMPLES\n.RS 4\n.nf\ntool run a.json \\-\\-out x   # a comment\n")) << run;
  EXPECT_NE(std::string::npos, run.find(".SH \"EXIT STATUS\"\n0 fine, 2 not.")) << run;
  EXPECT_NE(std::string::npos, run.find("\\fB\\%\\-\\-json\\fR [\\fI\\%FILE\\fR]")) << run;
  EXPECT_NE(std::string::npos, run.find("How many. Default: 3.")) << run;
}

TEST(Completion, BashScriptParses) {
  Tool t;
  const std::string script = clidoc::bash_completion(clidoc::describe(t.app));
  const fs::path path = write_temp("bash", script);
  const Shell check = shell("bash -n '" + path.string() + "'");
  EXPECT_EQ(0, check.rc) << check.output;
  fs::remove(path);
  EXPECT_NE(std::string::npos, script.find("complete -F _tool tool"));
  EXPECT_NE(std::string::npos, script.find("'group inner')"));
}

TEST(Completion, ZshFunctionParsesWithTheDescriptionsEscaped) {
  if (!have("zsh")) GTEST_SKIP() << "zsh is not installed";
  Tool t;
  const std::string script = clidoc::zsh_completion(clidoc::describe(t.app));
  const fs::path path = write_temp("_tool", script);
  const Shell check = shell("zsh -n '" + path.string() + "'");
  EXPECT_EQ(0, check.rc) << check.output;
  fs::remove(path);
  EXPECT_EQ(0u, script.find("#compdef tool\n"));
  // The command list: colons in the name field escaped, quotes closed and reopened.
  EXPECT_NE(std::string::npos, script.find("'run:Runs: [it] \"now\", it'\\''s a '\\''test'\\'' \\ with: colons'")) << script;
  // An option's [description]: brackets escaped, one line.
  EXPECT_NE(std::string::npos, script.find("'(-o --out)'{-o+,--out=}'[Where to write \\[a file\\]]:FILE:_files'")) << script;
  EXPECT_NE(std::string::npos, script.find("'(--json)--json=[JSON or stdout]::FILE:_files'")) << script;
  EXPECT_NE(std::string::npos, script.find("'(--flag)--flag[.starts with a dot '\\''and a quote, µs and ±]'")) << script;
  EXPECT_NE(std::string::npos, script.find("'*--stage=[Repeatable rule]:TEXT: '")) << script;
  EXPECT_NE(std::string::npos, script.find("'*::COMMAND:_tool_command_line'")) << script;
  EXPECT_NE(std::string::npos, script.find("_tool \"$@\"\n"));
}

}  // namespace
