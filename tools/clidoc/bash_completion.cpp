#include <fmt/core.h>

#include <sstream>

#include "completion.hpp"

namespace clidoc {
namespace {

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// Option names and descriptions hold no quote in this CLI, but a word list is single-quoted, so
// any that did would end it: such a word is left out rather than break the script.
std::string quoted(const std::vector<std::string>& words) {
  std::vector<std::string> safe;
  for (const auto& w : words)
    if (w.find('\'') == std::string::npos) safe.push_back(w);
  return "'" + join_words(safe) + "'";
}

const char* positional_kind(const CommandDoc& c) {
  for (const auto& p : c.positionals) switch (p.kind) {
      case ValueKind::command: return "command";
      case ValueKind::directory: return "dir";
      default: return "file";
    }
  return "";
}

// The case arm that sets what the command at `c` takes.
std::string spec_arm(const CommandDoc& c) {
  std::vector<std::string> subs, opts, valued, files, dirs;
  for (const auto& s : c.subcommands) subs.push_back(s.name());
  std::vector<OptionDoc> all = c.options;
  all.insert(all.end(), c.inherited.begin(), c.inherited.end());
  for (const auto& o : all)
    for (const auto& n : o.names) {
      opts.push_back(n);
      if (o.value.empty()) continue;
      valued.push_back(n);
      if (o.kind == ValueKind::file || o.kind == ValueKind::path) files.push_back(n);
      if (o.kind == ValueKind::directory) dirs.push_back(n);
    }
  std::string path;
  for (const auto& p : c.path) path += (path.empty() ? "" : " ") + p;
  return fmt::format(
      "        '{}')\n"
      "            subs={} opts={}\n"
      "            valued={} files={} dirs={}\n"
      "            positional={}\n"
      "            ;;\n",
      path, quoted(subs), quoted(opts), quoted(valued), quoted(files), quoted(dirs), positional_kind(c));
}

constexpr const char* kDriver = R"(
# Files (or directories with -d) matching the current word; bash-completion's _filedir when it is
# loaded, since it quotes names with spaces and expands ~.
_{0}_files()
{{
    if declare -F _filedir >/dev/null; then
        _filedir "$@"
        return
    fi
    compopt -o filenames 2>/dev/null
    if [[ $1 == -d ]]; then
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}}

_{0}_words()
{{
    mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur")
}}

_{0}()
{{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    local path='' subs opts valued files dirs positional word i dashdash=0
    COMPREPLY=()
    _{0}_spec ''
    # Walk the words before the cursor: a command word moves down the tree, an option that takes
    # a value skips it (also as "--opt = value", how bash splits --opt=value), and after "--"
    # everything is an argument.
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${{COMP_WORDS[i]}}
        if ((dashdash)); then
            ((dashdash++))
            continue
        fi
        if [[ $word == -- ]]; then
            dashdash=1
        elif [[ " $valued " == *" $word "* ]]; then
            if [[ ${{COMP_WORDS[i+1]}} == = ]]; then ((i++)); fi
            ((i++))
        elif [[ $word != -* && " $subs " == *" $word "* ]]; then
            path=${{path:+$path }}$word
            _{0}_spec "$path"
        fi
    done

    if ((dashdash)); then
        # The command line to start (watch -- COMMAND...): its name, then its arguments.
        if [[ $positional == command && $dashdash == 1 ]]; then
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        else
            _{0}_files
        fi
        return 0
    fi

    local opt=''
    if [[ $cur == = ]]; then
        opt=$prev cur=''
    elif [[ $prev == = ]]; then
        opt=${{COMP_WORDS[COMP_CWORD-2]}}
    elif [[ " $valued " == *" $prev "* ]]; then
        opt=$prev
    fi
    if [[ -n $opt && " $valued " == *" $opt "* ]]; then
        if [[ " $files " == *" $opt "* ]]; then
            _{0}_files
        elif [[ " $dirs " == *" $opt "* ]]; then
            _{0}_files -d
        fi
        return 0
    fi

    if [[ $cur == -* ]]; then
        _{0}_words "$opts"
    elif [[ -n $subs ]]; then
        _{0}_words "$subs"
    elif [[ $positional == file ]]; then
        _{0}_files
    elif [[ $positional == dir ]]; then
        _{0}_files -d
    fi
    return 0
}}

complete -F _{0} {0}
)";

}  // namespace

std::string bash_completion(const CommandDoc& root) {
  std::ostringstream out;
  out << "# bash completion for " << root.program << "                              -*- shell-script -*-\n";
  out << "# Generated from the command-line definitions by stepscope-clidoc; do not edit.\n\n";
  out << "# Sets what the command at \"$1\" (its words after the program, e.g. 'plan memory') takes:\n"
         "# its subcommands, its options, those that take a value, those whose value is a file or a\n"
         "# directory, and what its arguments are.\n";
  out << "_" << root.program << "_spec()\n{\n    case $1 in\n";
  for (const CommandDoc* c : all_commands(root)) out << spec_arm(*c);
  out << "        *) subs='' opts='' valued='' files='' dirs='' positional='' ;;\n";
  out << "    esac\n}\n";
  out << fmt::format(kDriver, root.program);
  return out.str();
}

}  // namespace clidoc
