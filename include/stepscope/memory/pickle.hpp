// A restricted reader of Python pickles (protocols 2 to 5) that builds plain data only: None,
// booleans, integers, floats, str, bytes, lists, tuples, sets and dicts. Any opcode that would
// import a name or call one (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX,
// PERSID, BINPERSID, EXT1/2/4) is refused with InputError naming the opcode and its byte offset,
// as is any opcode this reader does not know. A pickle is code for Python's unpickler; this
// reader only ever interprets the data-building subset, so a hostile file cannot run anything.
//
// Written here because no Debian package reads pickles from C++ without a Python interpreter.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stepscope::pickle {

enum class Kind : std::uint8_t { none, boolean, integer, big_integer, floating, str, bytes, list, tuple, set, dict };

// Bounds on what one document may hold; each is far above what a real snapshot needs, and
// each is checked before anything is allocated for it.
struct Limits {
  std::size_t max_nodes = std::size_t{1} << 28;       // values built
  std::size_t max_stack = std::size_t{1} << 26;       // entries on the unpickler's stack
  std::size_t max_marks = 4096;                       // MARKs open at once (nesting of tuples/appends)
  std::size_t max_memo = std::size_t{1} << 26;        // memo entries
  std::uint64_t max_container = std::uint64_t{1} << 28;  // items of one list, tuple, set or dict
};

using NodeId = std::uint32_t;

class Document;
Document parse(std::string bytes, const Limits& limits);

// A parsed pickle: values live in one arena and refer to each other by index, so shared and
// even cyclic references (which a hostile pickle can build through the memo) cost nothing to
// hold or to free. Strings and bytes are views into the document's own copy of the input.
class Document {
 public:
  struct Node {
    Kind kind = Kind::none;
    std::int64_t integer = 0;   // integer, boolean (0/1)
    double floating = 0;
    std::uint32_t offset = 0;   // str/bytes/big_integer: into bytes(); containers: into items
    std::uint32_t length = 0;   // str/bytes: byte length; containers: index of the item vector
  };

  NodeId root() const { return root_; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  std::size_t node_count() const { return nodes_.size(); }
  Kind kind(NodeId id) const { return nodes_[id].kind; }

  std::string_view text(NodeId id) const;  // str, bytes and big_integer's raw bytes; "" otherwise
  // Items of a list, tuple or set; keys and values alternating for a dict; empty otherwise.
  const std::vector<NodeId>& items(NodeId id) const;
  // The value of a dict's str key, or nullptr (dicts are small: a linear scan).
  const NodeId* find(NodeId dict, std::string_view key) const;

 private:
  friend class Reader;
  friend Document parse(std::string bytes, const Limits& limits);
  std::string bytes_;
  std::vector<Node> nodes_;
  std::vector<std::vector<NodeId>> containers_;
  NodeId root_ = 0;
};

// Reads the whole pickle in `bytes` (which the document keeps). Throws InputError with a
// one-line message "byte N: ..." on any refusal or malformed input; the caller prefixes the file.
Document parse(std::string bytes, const Limits& limits);
inline Document parse(std::string bytes) { return parse(std::move(bytes), Limits{}); }

// True when `bytes` begin as a pickle of protocol 2 or later does (PROTO, then 2..5).
bool looks_like_pickle(std::string_view bytes);

// The opcode's name in pickletools' spelling ("GLOBAL"), or "" when this byte is no opcode.
std::string_view opcode_name(std::uint8_t op);

}  // namespace stepscope::pickle
