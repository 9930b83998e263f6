// stepscope-clidoc: writes stepscope's man pages and shell completions from the very command-line
// definitions the binary parses with (src/cli), at build time, so they cannot drift from it.
//   stepscope-clidoc --man-dir DIR --bash FILE --zsh FILE [--date YYYY-MM-DD]
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>

#include "cli/app.hpp"
#include "cli_model.hpp"
#include "completion.hpp"
#include "man.hpp"

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

// A command that is gone must not leave its page behind to be installed.
void remove_old_pages(const fs::path& dir, const std::string& program) {
  if (!fs::is_directory(dir)) return;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(program) && name.ends_with(".1")) fs::remove(e.path());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string man_dir, bash_file, zsh_file, date;
  CLI::App gen{"Writes stepscope's man pages and shell completions from its command-line definitions", "stepscope-clidoc"};
  gen.add_option("--man-dir", man_dir, "Directory for the man pages (section 1)")->required();
  gen.add_option("--bash", bash_file, "The bash completion script")->required();
  gen.add_option("--zsh", zsh_file, "The zsh completion function (_stepscope)")->required();
  gen.add_option("--date", date, "Date on the man pages");
  CLI11_PARSE(gen, argc, argv);

  try {
    CLI::App app;
    stepscope::cli::define_app(app);
    const clidoc::CommandDoc root = clidoc::describe(app);
    remove_old_pages(man_dir, root.program);
    for (const auto& page : clidoc::man_pages(root, {root.program + " " + STEPSCOPE_VERSION, date}))
      write_file(fs::path(man_dir) / page.file, page.text);
    write_file(bash_file, clidoc::bash_completion(root));
    write_file(zsh_file, clidoc::zsh_completion(root));
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepscope-clidoc: {}\n", e.what());
    return 2;
  }
  return 0;
}
