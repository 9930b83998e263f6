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
// a write that fails (a full disk) leaves it whole and removes the temporary.
//
// A path ending in ".gz" is written gzip-compressed (RFC 1952, zlib's default level), so that a
// 38 MB annotated trace can go out as a few MB that Perfetto and zcat read as they are.
//
// Errors (InputError, naming the path and the system's reason):
//   constructor: the directory cannot hold a new file (missing, read-only, not a directory);
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
  void write_raw(std::string_view bytes);
  void deflate_into_file(std::string_view bytes, bool finish);
  struct Gzip;
  std::string path_, tmp_, what_;
  int fd_ = -1;
  std::unique_ptr<Gzip> gzip_;  // set for a ".gz" path
};

// `path` is a file, or "-" for standard output. Errors: as OutputFile, and write_stdout's.
void write_output(const std::string& path, std::string_view bytes, const std::string& what);

// write_output of bytes made in pieces: produce(out) hands each piece to out, in order.
void write_output_pieces(const std::string& path, const std::string& what,
                         const std::function<void(const std::function<void(std::string_view)>&)>& produce);

// All of `bytes` to standard output. Error: InputError when it cannot take them (a full device,
// a closed pipe), so that the command exits non-zero.
void write_stdout(std::string_view bytes);

struct NamedOutput {
  std::string option;  // "--json"
  std::string path;    // "-" (standard output) is never a conflict
};

// Refuses, before any work, an output that would destroy an input or another output.
// Error (InputError naming both): an output that is one of `inputs` or a file inside an input
// directory (symlinks and hard links included), or two outputs that are the same file.
void check_outputs(const std::vector<std::string>& inputs, const std::vector<NamedOutput>& outputs);

}  // namespace stepscope
