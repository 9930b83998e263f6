#include "man.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "cli/command.hpp"

namespace clidoc {
namespace {

// Decodes one UTF-8 sequence at `i` (advancing it); a malformed byte comes back as U+FFFD.
char32_t next_codepoint(const std::string& s, std::size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const int len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
  if (len == 1 || i + len > s.size()) {
    ++i;
    return b < 0x80 ? b : 0xFFFD;
  }
  char32_t cp = b & (0x3F >> (len - 1));
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

// What NAME says the command does: its description, without the program name some start with.
std::string summary_of(const CommandDoc& c) {
  std::string d = c.description;
  // The program's description starts with its own name ("stepscope: names the ...").
  if (const std::string prefix = c.program + ": "; d.starts_with(prefix)) d = d.substr(prefix.size());
  return d;
}

// `s` ending as a sentence, so that another can follow it.
std::string sentence(std::string s) {
  if (!s.empty() && s.back() != '.' && s.back() != '?' && s.back() != '!') s += '.';
  return s;
}

std::string page_name(const CommandDoc& c) { return c.full_name('-'); }

// Names in bold or italics are never hyphenated (\%): "stepscope-plan-kv" must not read as
// "step-scope-plan-kv" at the end of a line.
std::string bold(const std::string& s) { return "\\fB\\%" + roff_escape(s) + "\\fR"; }
std::string italic(const std::string& s) { return "\\fI\\%" + roff_escape(s) + "\\fR"; }
std::string page_ref(const std::string& page) { return bold(page) + "(1)"; }

std::string option_head(const OptionDoc& o) {
  std::string out;
  for (const auto& n : o.names) out += (out.empty() ? "" : ", ") + bold(n);
  if (o.value.empty()) return out;
  return out + (o.value_optional ? " [" + italic(o.value) + "]" : " " + italic(o.value));
}

bool mentions(const std::string& text, const char* word) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return lower.find(word) != std::string::npos;
}

// The description, with what the help shows beside it (default, required) said in words.
std::string option_body(const OptionDoc& o) {
  std::string out = o.description;
  auto add = [&out](const std::string& s) { out = out.empty() ? s : sentence(out) + " " + s; };
  if (o.required) add("Required.");
  if (!o.default_value.empty() && !mentions(o.description, "default")) add("Default: " + o.default_value + ".");
  if (o.repeatable && !mentions(o.description, "repeatable")) add("Repeatable.");
  return roff_escape(out);
}

void write_options(std::ostringstream& out, const std::vector<OptionDoc>& options) {
  for (const auto& o : options) out << ".TP\n" << option_head(o) << "\n" << option_body(o) << "\n";
}

std::string synopsis(const CommandDoc& c) {
  std::string out = ".SY \"" + roff_escape(c.full_name()) + "\"\n";
  if (!c.subcommands.empty()) out += italic("COMMAND") + "\n";
  out += "[" + italic("OPTIONS") + "]\n";
  for (const auto& p : c.positionals) {
    std::string word = italic(p.name) + (p.many ? "\\&..." : "");
    if (p.kind == ValueKind::command) word = "[" + bold("--") + " " + word + "]";
    else if (!p.required) word = "[" + word + "]";
    out += word + "\n";
  }
  return out + ".YS\n";
}

// A command's subcommands, each with its page.
void write_command_list(std::ostringstream& out, const CommandDoc& c) {
  for (const auto& s : c.subcommands) {
    out << ".TP\n" << bold(s.name()) << "\n" << roff_escape(sentence(summary_of(s)));
    out << " See " << page_ref(page_name(s)) << ".\n";
  }
}

// The help footer is plain text: indented lines are command lines, shown as written; a line
// "Examples:" starts the examples, and a blank line after them ends them; "Exit status: ..."
// says what the command exits with; the rest is notes.
struct Footer {
  std::vector<std::string> notes, examples, exit_status;
};

bool has_text(const std::vector<std::string>& lines) {
  return std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return l.find_first_not_of(' ') != std::string::npos; });
}

Footer split_footer(const std::string& footer) {
  Footer f;
  std::vector<std::string>* at = &f.notes;
  std::istringstream in(footer);
  for (std::string line; std::getline(in, line);) {
    if (line == "Examples:" || line == "Example:") {
      at = &f.examples;
      continue;
    }
    if (at == &f.examples && line.find_first_not_of(' ') == std::string::npos && has_text(f.examples)) at = &f.notes;
    if (line.starts_with("Exit status:")) {
      f.exit_status.push_back(line.substr(std::string("Exit status:").size()));
      continue;
    }
    at->push_back(line);
  }
  return f;
}

// Text lines run together as paragraphs; indented lines are kept as they are, one per line.
void write_text_block(std::ostringstream& out, const std::vector<std::string>& lines) {
  bool literal = false, started = false;  // a section's first paragraph needs no .PP
  for (const auto& line : lines) {
    const bool indented = line.starts_with(" ");
    if (line.find_first_not_of(' ') == std::string::npos) continue;
    if (indented && !literal) out << (started ? ".PP\n" : "") << ".RS 4\n.nf\n";
    if (!indented && literal) out << ".fi\n.RE\n.PP\n";
    started = true;
    literal = indented;
    out << roff_escape(indented ? line.substr(line.find_first_not_of(' ')) : line) << "\n";
  }
  if (literal) out << ".fi\n.RE\n";
}

// The program's exit codes, unless the command's help says its own.
void write_exit_status(std::ostringstream& out, const Footer& f) {
  using namespace stepscope::cli;
  out << ".SH \"EXIT STATUS\"\n";
  if (!f.exit_status.empty()) {
    for (const auto& s : f.exit_status) out << roff_escape(s.substr(s.find_first_not_of(' '))) << "\n";
    return;
  }
  out << fmt::format(".TP\n{}\nSuccess.\n.TP\n{}\nRan, but found nothing to analyse.\n.TP\n{}\n"
                     "Bad input or usage; one line on standard error says what and where.\n",
                     kExitOk, kExitNothing, kExitBadInput);
}

bool is_parent(const CommandDoc& parent, const CommandDoc& child) {
  return child.path.size() == parent.path.size() + 1 && std::equal(parent.path.begin(), parent.path.end(), child.path.begin());
}

// The pages a page points to: the program's page from every page, every page from the
// program's; a command's parent, siblings and subcommands.
bool related(const CommandDoc& c, const CommandDoc& other) {
  if (&c == &other) return false;
  if (c.path.empty() || other.path.empty()) return true;
  if (is_parent(other, c) || is_parent(c, other)) return true;
  return other.path.size() == c.path.size() &&
         std::equal(c.path.begin(), c.path.end() - 1, other.path.begin());
}

void write_header(std::ostringstream& out, const CommandDoc& c, const ManInfo& info) {
  std::string upper = page_name(c);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return std::toupper(ch); });
  out << ".\\\" Generated from the command-line definitions by stepscope-clidoc; do not edit.\n";
  out << fmt::format(".TH \"{}\" 1 \"{}\" \"{}\" \"User Commands\"\n", roff_escape(upper), info.date,
                     roff_escape(info.version));
  // Ragged right: justified text stretches the spaces between words in a terminal.
  out << ".ad l\n";
  out << ".SH NAME\n" << roff_escape(page_name(c)) << " \\- " << roff_escape(summary_of(c)) << "\n";
  out << ".SH SYNOPSIS\n" << synopsis(c);
  out << ".SH DESCRIPTION\n" << roff_escape(sentence(summary_of(c))) << "\n";
}

void write_arguments(std::ostringstream& out, const CommandDoc& c) {
  if (c.positionals.empty()) return;
  out << ".SH ARGUMENTS\n";
  for (const auto& p : c.positionals)
    out << ".TP\n" << italic(p.name) << (p.many ? "\\&..." : "") << "\n" << roff_escape(p.description) << "\n";
}

void write_all_options(std::ostringstream& out, const CommandDoc& c) {
  out << ".SH OPTIONS\n";
  write_options(out, c.options);
  if (c.inherited.empty()) return;
  out << ".SS \"Options of " << roff_escape(c.program) << "\"\n";
  out << "Given before or after the command; see " << page_ref(c.program) << ".\n";
  write_options(out, c.inherited);
}

// What the program's own page says beyond its options: the project file --config reads by
// default, and the environment.
void write_files_and_environment(std::ostringstream& out, const CommandDoc& root) {
  for (const auto& o : root.options)
    if (o.names == std::vector<std::string>{"--config"} && !o.default_value.empty())
      out << ".SH FILES\n.TP\n" << italic("./" + o.default_value) << "\n"
          << roff_escape("Default options, one [command] section per command (e.g. [analyze] with top = 20); "
                         "read when present, or the file --config names. The command line wins over it.")
          << "\n";
  out << ".SH ENVIRONMENT\n.TP\n" << bold("NO_COLOR") << "\n"
      << roff_escape("When set to anything non-empty, reports on a terminal are not coloured.") << "\n";
}

void write_see_also(std::ostringstream& out, const CommandDoc& c, const CommandDoc& root) {
  out << ".SH \"SEE ALSO\"\n";
  std::vector<std::string> refs;
  for (const CommandDoc* other : all_commands(root))
    if (related(c, *other)) refs.push_back(page_ref(page_name(*other)));
  for (std::size_t i = 0; i < refs.size(); ++i) out << refs[i] << (i + 1 < refs.size() ? ",\n" : "\n");
}

ManPage command_page(const CommandDoc& c, const CommandDoc& root, const ManInfo& info) {
  std::ostringstream out;
  write_header(out, c, info);
  if (!c.subcommands.empty()) {
    out << ".SH COMMANDS\n";
    write_command_list(out, c);
  }
  write_arguments(out, c);
  write_all_options(out, c);
  const Footer f = split_footer(c.footer);
  if (has_text(f.notes)) {
    out << ".SH NOTES\n";
    write_text_block(out, f.notes);
  }
  if (has_text(f.examples)) {
    out << ".SH EXAMPLES\n";
    write_text_block(out, f.examples);
  }
  const bool program = c.path.empty();
  if (program || !f.exit_status.empty()) write_exit_status(out, f);
  if (program) write_files_and_environment(out, root);
  write_see_also(out, c, root);
  return {page_name(c) + ".1", out.str()};
}

}  // namespace

std::string roff_escape(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (std::size_t i = 0; i < text.size();) {
    const char32_t cp = next_codepoint(text, i);
    // A line starting with '.' or '\'' is a request to the formatter: make it text.
    if (line_start && (cp == '.' || cp == '\'')) out += "\\&";
    line_start = cp == '\n';
    if (cp == '\\') out += "\\e";
    else if (cp == '-') out += "\\-";
    else if (cp == '\n') out += '\n';
    else if (cp < 0x20 || cp == 0x7F) out += ' ';
    else if (cp < 0x80) out += static_cast<char>(cp);
    else out += fmt::format("\\[u{:04X}]", static_cast<unsigned>(cp));
  }
  return out;
}

std::vector<ManPage> man_pages(const CommandDoc& root, const ManInfo& info) {
  std::vector<ManPage> pages;
  for (const CommandDoc* c : all_commands(root)) pages.push_back(command_page(*c, root, info));
  return pages;
}

}  // namespace clidoc
