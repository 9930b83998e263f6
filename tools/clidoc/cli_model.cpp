#include "cli_model.hpp"

namespace clidoc {
namespace {

ValueKind kind_of(const std::string& placeholder, bool flag) {
  if (flag) return ValueKind::none;
  if (placeholder == "FILE") return ValueKind::file;
  if (placeholder == "DIR") return ValueKind::directory;
  if (placeholder == "PATH") return ValueKind::path;
  if (placeholder == "COMMAND") return ValueKind::command;
  return ValueKind::other;
}

// CLI11 appends each validator's description ("INT:INT in [1 - 100000]"); the placeholder is the
// part before, and "[FILE]" marks a value that may be left out.
std::string placeholder_of(const CLI::Option& o) {
  std::string t = o.get_type_name();
  t = t.substr(0, t.find(':'));
  if (t.size() > 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  return t;
}

OptionDoc option_doc(const CLI::Option& o, const CLI::App& app) {
  OptionDoc d;
  for (const auto& s : o.get_snames()) d.names.push_back("-" + s);
  for (const auto& l : o.get_lnames()) d.names.push_back("--" + l);
  const bool flag = o.get_items_expected_max() == 0;
  if (!flag) d.value = placeholder_of(o);
  d.kind = kind_of(d.value, flag);
  d.value_optional = !flag && o.get_items_expected_min() == 0;
  d.repeatable = !flag && o.get_expected_max() > 1;
  d.required = o.get_required();
  d.ends_command = &o == app.get_help_ptr() || &o == app.get_version_ptr();
  d.description = o.get_description();
  d.default_value = o.get_default_str();
  return d;
}

PositionalDoc positional_doc(const CLI::Option& o) {
  PositionalDoc d;
  d.name = o.get_name(true);
  d.value = placeholder_of(o);
  d.kind = kind_of(d.value, false);
  if (d.kind == ValueKind::other) d.kind = ValueKind::path;  // a word on the command line: a path by default
  d.description = o.get_description();
  d.many = o.get_expected_max() > 1 || o.get_items_expected_max() > 1;
  d.required = o.get_required();
  return d;
}

CommandDoc describe_at(const CLI::App& app, std::vector<std::string> path, const std::string& program,
                       const std::vector<OptionDoc>& from_parents) {
  CommandDoc c;
  c.path = std::move(path);
  c.program = program;
  c.description = app.get_description();
  c.footer = app.get_footer();
  c.inherited = from_parents;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_positional() && !o->nonpositional())
      c.positionals.push_back(positional_doc(*o));
    else
      c.options.push_back(option_doc(*o, app));
  }
  // What a subcommand passes up to this one (CLI11's fallthrough): its options but --help and
  // --version, which every command has its own of.
  std::vector<OptionDoc> passed = from_parents;
  for (const auto& o : c.options)
    if (!o.ends_command) passed.push_back(o);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    std::vector<std::string> sub_path = c.path;
    sub_path.push_back(sub->get_name());
    c.subcommands.push_back(describe_at(*sub, sub_path, program, sub->get_fallthrough() ? passed : std::vector<OptionDoc>{}));
  }
  return c;
}

void collect(const CommandDoc& c, std::vector<const CommandDoc*>& out) {
  out.push_back(&c);
  for (const auto& s : c.subcommands) collect(s, out);
}

}  // namespace

std::string CommandDoc::full_name(char sep) const {
  std::string out = program;
  for (const auto& p : path) out += sep + p;
  return out;
}

CommandDoc describe(const CLI::App& app) { return describe_at(app, {}, app.get_name(), {}); }

std::vector<const CommandDoc*> all_commands(const CommandDoc& root) {
  std::vector<const CommandDoc*> out;
  collect(root, out);
  return out;
}

}  // namespace clidoc
