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

// Forgets `path` (it was renamed into place or removed).
void release_temporary(const std::string& path);

// Unlinks every registered path; async-signal-safe (no allocation, no lock), for the signal
// handler and for a process that must end at once (out of memory).
void remove_temporaries() noexcept;

}  // namespace stepscope
