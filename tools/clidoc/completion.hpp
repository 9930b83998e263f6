// Shell completion scripts, written from the command line's definitions: commands, nested
// commands, options (with descriptions in zsh), and files where a value or argument is a path.
#pragma once

#include <string>

#include "cli_model.hpp"

namespace clidoc {

// For bash-completion's completions directory, or to source: `complete -F _stepscope stepscope`.
std::string bash_completion(const CommandDoc& root);

// For a directory on zsh's fpath, as _stepscope (compsys, #compdef).
std::string zsh_completion(const CommandDoc& root);

}  // namespace clidoc
