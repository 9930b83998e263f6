// Writing reports without ever destroying a file: outputs are checked against the inputs before
// anything runs, and each file is written whole or not at all.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope {

// A file written whole or not at all: the bytes go to a temporary file beside the target, which
// commit() flushes to disk and renames over it. Until then the old file, if any, is untouched;
// a write that fails (a full disk) leaves it whole and removes the temporary, and so does
// SIGINT, SIGTERM or SIGHUP (stepscope/temp_files.hpp).
//
// Symbolic links, one rule: the path is followed through its links to the file they name, which
// is created when missing (a dangling link's target). A terminal, pipe, FIFO or character device
// found there (/dev/null, /dev/stdout) is written directly, never replaced; a FIFO that no
// process reads is refused at once rather than waited on. A file this run must not touch (an
// input, or an output it already wrote; check_outputs) is refused however it is reached.
//
// A path ending in ".gz" is written gzip-compressed (RFC 1952, zlib's default level), so that a
// 38 MB annotated trace can go out as a few MB that Perfetto and zcat read as they are.
//
// Errors (InputError, naming the path and the system's reason):
//   constructor: the directory cannot hold a new file (missing, read-only, not a directory);
//                the target is an input or an output of this run, a directory or a socket;
//   write(), commit(): the bytes cannot be written, synced or renamed into place.
class OutputFile {
 public:
  OutputFile(std::string path, std::string what);  // what: "JSON report", for the messages
  ~OutputFile();                                    // removes the temporary unless committed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes);
  void commit();

 private:
  [[noreturn]] void fail(const char* doing);
  void drop_temporary();
  void write_raw(std::string_view bytes);
  void deflate_into_file(std::string_view bytes, bool finish);
  struct Gzip;
  std::string path_, tmp_, what_;
  int fd_ = -1;
  bool direct_ = false;  // a FIFO, terminal or device: written in place
  std::unique_ptr<Gzip> gzip_;  // set for a ".gz" path
};

// `path` is a file, or "-" for standard output (or any path goes_to_stdout). Errors: as
// OutputFile, and write_stdout's.
void write_output(const std::string& path, std::string_view bytes, const std::string& what);

// write_output of bytes made in pieces: produce(out) hands each piece to out, in order.
void write_output_pieces(const std::string& path, const std::string& what,
                         const std::function<void(const std::function<void(std::string_view)>&)>& produce);

// All of `bytes` to standard output. Error: InputError when it cannot take them (a full device,
// a closed pipe), so that the command exits non-zero.
void write_stdout(std::string_view bytes);

// True for "-" and for a path that reaches the file this process's standard output is
// (/dev/stdout, /dev/fd/1, or the file it was redirected to): such an output is written to
// standard output, and counts as its one output.
bool goes_to_stdout(const std::string& path);

struct NamedOutput {
  std::string option;  // "--json"
  std::string path;    // "-" (standard output) is never a conflict
  std::vector<std::string> files_inside = {};  // a directory output: the names it will create in it
};

// Refuses, before any work, an output that would destroy an input or another output, and
// remembers the inputs so that no later write reaches them by any name (OutputFile).
// Error (InputError naming both): a file an output creates (the path, or each of files_inside)
// that is one of `inputs` or a file inside an input directory once links are followed (hard
// links too), two outputs that create the same file, or two outputs that go to standard output.
void check_outputs(const std::vector<std::string>& inputs, const std::vector<NamedOutput>& outputs);

}  // namespace stepscope
