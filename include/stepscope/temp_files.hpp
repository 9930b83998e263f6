// Temporary files that must not outlive the process: partial reports and the copy of a piped
// trace. Each is registered while it exists; SIGINT, SIGTERM and SIGHUP unlink every registered
// path before the signal takes its default effect, so an interrupted run leaves nothing behind.
#pragma once

#include <string>

namespace stepscope {

// Registers `path` (installs the signal handlers on first use). Paths longer than PATH_MAX or
// beyond the registry's 64 slots are not tracked: they are still removed on normal exit by
// their owner, only not on a signal.
void register_temporary(const std::string& path);

// Creates a temporary file from `pattern` (mkstemp's "...XXXXXX", rewritten in place) and
// registers it, with SIGINT, SIGTERM and SIGHUP held back in between: a signal that arrives just
// after the file appears still finds it registered. Returns the open descriptor, or -1 with errno
// set (nothing created).
int create_registered_temporary(std::string& pattern);

// The same for a directory (mkdtemp): returns false with errno set. A registered directory is
// removed on a signal once the files in it are, if that leaves it empty.
bool create_registered_temporary_dir(std::string& pattern);

// Forgets `path` (it was renamed into place or removed).
void release_temporary(const std::string& path);

// Unlinks every registered path, then removes the registered directories left empty; async-signal-safe (no allocation, no lock), for the signal
// handler and for a process that must end at once (out of memory).
void remove_temporaries() noexcept;

}  // namespace stepscope
