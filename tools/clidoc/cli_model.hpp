// The command line as plain data, read once from the CLI11 definitions; the man page and
// completion writers work from this alone, so they never touch CLI11 themselves.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace clidoc {

// What a value is, for completion: the CLI names it by its placeholder (FILE, DIR, PATH, COMMAND).
enum class ValueKind { none, file, directory, path, command, other };

struct OptionDoc {
  std::vector<std::string> names;  // "-j", "--jobs": short names first
  std::string value;               // placeholder without brackets ("FILE", "INT"); empty for a flag
  ValueKind kind = ValueKind::none;
  bool value_optional = false;     // `--json [FILE]`
  bool repeatable = false;
  bool required = false;
  bool ends_command = false;       // --help, --version: nothing else is read after them
  std::string description, default_value;
};

struct PositionalDoc {
  std::string name, value, description;
  ValueKind kind = ValueKind::path;
  bool many = false;
  bool required = false;
};

struct CommandDoc {
  std::vector<std::string> path;  // {"plan", "memory"}; empty for the program itself
  std::string program;            // "stepscope"
  std::string description, footer;
  std::vector<OptionDoc> options;
  std::vector<OptionDoc> inherited;  // its parents' options, which it accepts too (fallthrough)
  std::vector<PositionalDoc> positionals;
  std::vector<CommandDoc> subcommands;

  std::string name() const { return path.empty() ? program : path.back(); }
  std::string full_name(char sep = ' ') const;  // "stepscope plan memory"
};

CommandDoc describe(const CLI::App& app);

// Every command of the tree, the program first, parents before their subcommands.
std::vector<const CommandDoc*> all_commands(const CommandDoc& root);

}  // namespace clidoc
