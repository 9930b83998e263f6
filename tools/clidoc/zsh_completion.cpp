#include <fmt/core.h>

#include <algorithm>
#include <sstream>

#include "completion.hpp"

namespace clidoc {
namespace {

// `s` inside single quotes.
std::string sq(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// A description on one line, as a completion list shows it.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// Text inside an _arguments "[description]": brackets and backslashes escaped.
std::string bracket_text(const std::string& s) {
  std::string out;
  for (char ch : one_line(s)) {
    if (ch == '[' || ch == ']' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

// A ':'-separated field of an _arguments spec or a _describe entry: colons escaped.
std::string field(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == ':' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

std::string action_of(ValueKind k) {
  switch (k) {
    case ValueKind::file:
    case ValueKind::path: return "_files";
    case ValueKind::directory: return "_files -/";
    case ValueKind::command: return "_command_names -e";
    default: return " ";  // a value to type: the message alone, no candidates
  }
}

std::string function_name(const CommandDoc& c) { return "_" + c.full_name('_'); }

// One _arguments spec per option, all of its names together: "(-j --jobs)"{-j+,--jobs=}"[...]:INT: ".
std::string option_spec(const OptionDoc& o) {
  std::string names, exclusions;
  for (const auto& n : o.names) {
    const bool is_long = n.starts_with("--");
    std::string spec = n;
    if (!o.value.empty()) spec += is_long ? "=" : "+";
    names += (names.empty() ? "" : ",") + spec;
    exclusions += (exclusions.empty() ? "" : " ") + n;
  }
  std::string prefix;
  if (o.ends_command) prefix = "(- *)";
  else if (o.repeatable) prefix = "*";
  else prefix = "(" + exclusions + ")";
  std::string tail = "[" + bracket_text(o.description) + "]";
  if (!o.value.empty()) tail += (o.value_optional ? "::" : ":") + field(o.value) + ":" + action_of(o.kind);
  // Several names: zsh's brace expansion, outside the quotes, makes one spec of each.
  if (o.names.size() > 1) return sq(prefix) + "{" + names + "}" + sq(tail);
  return sq(prefix + names + tail);
}

std::string positional_spec(const PositionalDoc& p, std::size_t index, const std::string& program) {
  if (p.kind == ValueKind::command) return sq("*::" + field(p.name) + ":_" + program + "_command_line");
  if (p.many) return sq("*:" + field(p.name) + ":" + action_of(p.kind));
  return sq(fmt::format("{}:{}:{}", index, field(p.name), action_of(p.kind)));
}

void write_function(std::ostringstream& out, const CommandDoc& c) {
  std::vector<std::string> specs;
  for (const auto& o : c.options) specs.push_back(option_spec(o));
  for (const auto& o : c.inherited) specs.push_back(option_spec(o));
  for (std::size_t i = 0; i < c.positionals.size(); ++i) specs.push_back(positional_spec(c.positionals[i], i + 1, c.program));
  const std::string fn = function_name(c);
  out << fn << "() {\n";
  if (c.subcommands.empty()) {
    out << "  _arguments -S \\\n";
    for (std::size_t i = 0; i < specs.size(); ++i) out << "    " << specs[i] << (i + 1 < specs.size() ? " \\\n" : "\n");
    out << "}\n\n";
    return;
  }
  out << "  local curcontext=$curcontext state state_descr line ret=1\n";
  out << "  typeset -A opt_args\n";
  out << "  _arguments -C -S \\\n";
  for (const auto& s : specs) out << "    " << s << " \\\n";
  out << "    " << sq(": :" + fn + "_commands") << " \\\n";
  out << "    " << sq("*:: :->command") << " && ret=0\n";
  out << "  if [[ $state == command ]]; then\n";
  out << "    curcontext=${curcontext%:*:*}:" << c.full_name('-') << "-$words[1]:\n";
  out << "    case $words[1] in\n";
  for (const auto& s : c.subcommands) out << "      " << s.name() << ") " << function_name(s) << " && ret=0 ;;\n";
  out << "    esac\n  fi\n  return ret\n}\n\n";
  out << fn << "_commands() {\n  local -a commands=(\n";
  for (const auto& s : c.subcommands) out << "    " << sq(field(s.name()) + ":" + one_line(s.description)) << "\n";
  out << "  )\n  _describe -t commands " << sq(c.full_name() + " command") << " commands\n}\n\n";
}

// A command line to start (watch -- COMMAND...) completes as one typed on its own. _arguments -S
// drops "--" from the words after an option, but keeps it when it comes first, so drop it here.
std::string command_line_function(const std::string& program) {
  return fmt::format(
      "_{}_command_line() {{\n"
      "  if [[ $words[1] == -- ]]; then\n"
      "    shift words\n"
      "    (( CURRENT-- ))\n"
      "  fi\n"
      "  _normal\n"
      "}}\n\n",
      program);
}

bool starts_commands(const CommandDoc& root) {
  for (const CommandDoc* c : all_commands(root))
    for (const auto& p : c->positionals)
      if (p.kind == ValueKind::command) return true;
  return false;
}

}  // namespace

std::string zsh_completion(const CommandDoc& root) {
  std::ostringstream out;
  out << "#compdef " << root.program << "\n";
  out << "# zsh completion for " << root.program << "\n";
  out << "# Generated from the command-line definitions by stepscope-clidoc; do not edit.\n\n";
  for (const CommandDoc* c : all_commands(root)) write_function(out, *c);
  if (starts_commands(root)) out << command_line_function(root.program);
  // Loaded by compinit, this file is the body of _stepscope: the first call defines the functions
  // above (_stepscope among them) and then completes with them.
  out << function_name(root) << " \"$@\"\n";
  return out.str();
}

}  // namespace clidoc
