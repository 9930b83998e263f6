#include "stepscope/memory/pickle.hpp"

#include <fmt/core.h>

#include <array>
#include <bit>
#include <limits>
#include <unordered_map>

#include "stepscope/error.hpp"

namespace stepscope::pickle {

namespace {

struct OpName {
  std::uint8_t op;
  const char* name;
};

// Every opcode of protocols 0 to 5, so that a refusal names the one it met.
constexpr std::array<OpName, 68> kOpNames{{
    {'(', "MARK"},         {'.', "STOP"},           {'0', "POP"},           {'1', "POP_MARK"},
    {'2', "DUP"},          {'F', "FLOAT"},          {'I', "INT"},           {'J', "BININT"},
    {'K', "BININT1"},      {'L', "LONG"},           {'M', "BININT2"},       {'N', "NONE"},
    {'P', "PERSID"},       {'Q', "BINPERSID"},      {'R', "REDUCE"},        {'S', "STRING"},
    {'T', "BINSTRING"},    {'U', "SHORT_BINSTRING"}, {'V', "UNICODE"},      {'X', "BINUNICODE"},
    {'a', "APPEND"},       {'b', "BUILD"},          {'c', "GLOBAL"},        {'d', "DICT"},
    {'}', "EMPTY_DICT"},   {'e', "APPENDS"},        {'g', "GET"},           {'h', "BINGET"},
    {'i', "INST"},         {'j', "LONG_BINGET"},    {'l', "LIST"},          {']', "EMPTY_LIST"},
    {'o', "OBJ"},          {'p', "PUT"},            {'q', "BINPUT"},        {'r', "LONG_BINPUT"},
    {'s', "SETITEM"},      {'t', "TUPLE"},          {')', "EMPTY_TUPLE"},   {'u', "SETITEMS"},
    {'G', "BINFLOAT"},     {0x80, "PROTO"},         {0x81, "NEWOBJ"},       {0x82, "EXT1"},
    {0x83, "EXT2"},        {0x84, "EXT4"},          {0x85, "TUPLE1"},       {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},      {0x88, "NEWTRUE"},       {0x89, "NEWFALSE"},     {0x8a, "LONG1"},
    {0x8b, "LONG4"},       {'B', "BINBYTES"},       {'C', "SHORT_BINBYTES"}, {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"}, {0x8e, "BINBYTES8"},     {0x8f, "EMPTY_SET"},    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},   {0x92, "NEWOBJ_EX"},     {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
    {0x95, "FRAME"},       {0x96, "BYTEARRAY8"},    {0x97, "NEXT_BUFFER"},  {0x98, "READONLY_BUFFER"},
}};

bool imports_or_calls(std::uint8_t op) {
  switch (op) {
    case 'c': case 0x93: case 'R': case 'b': case 'i': case 'o': case 0x81: case 0x92:
    case 'P': case 'Q': case 0x82: case 0x83: case 0x84:
      return true;
    default:
      return false;
  }
}

// A stack entry: a value, or a MARK (kMark), as Python's unpickler keeps them.
constexpr NodeId kMark = std::numeric_limits<NodeId>::max();

}  // namespace

std::string_view opcode_name(std::uint8_t op) {
  for (const auto& o : kOpNames)
    if (o.op == op) return o.name;
  return {};
}

bool looks_like_pickle(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<std::uint8_t>(bytes[0]) == 0x80 && static_cast<std::uint8_t>(bytes[1]) >= 2 &&
         static_cast<std::uint8_t>(bytes[1]) <= 5;
}

std::string_view Document::text(NodeId id) const {
  const Node& n = nodes_[id];
  if (n.kind != Kind::str && n.kind != Kind::bytes && n.kind != Kind::big_integer) return {};
  return std::string_view(bytes_).substr(n.offset, n.length);
}

const std::vector<NodeId>& Document::items(NodeId id) const {
  static const std::vector<NodeId> kNone;
  const Node& n = nodes_[id];
  switch (n.kind) {
    case Kind::list: case Kind::tuple: case Kind::set: case Kind::dict:
      return containers_[n.length];
    default:
      return kNone;
  }
}

const NodeId* Document::find(NodeId dict, std::string_view key) const {
  if (nodes_[dict].kind != Kind::dict) return nullptr;
  const auto& kv = containers_[nodes_[dict].length];
  // The last binding wins, as in Python, when a hostile pickle sets a key twice.
  for (std::size_t i = kv.size(); i >= 2; i -= 2)
    if (nodes_[kv[i - 2]].kind == Kind::str && text(kv[i - 2]) == key) return &kv[i - 1];
  return nullptr;
}

// The interpreter: one pass over the opcodes, a stack of node ids and MARKs, and the memo.
class Reader {
 public:
  Reader(Document& doc, const Limits& limits) : doc_(doc), in_(doc.bytes_), limits_(limits) {}

  void run() {
    if (in_.size() >= std::numeric_limits<std::uint32_t>::max())
      throw InputError("larger than 4 GiB: not read as a pickle");
    for (;;) {
      if (pos_ >= in_.size()) fail(pos_, "the pickle ends before its STOP opcode (truncated?)");
      op_at_ = pos_;
      const auto op = static_cast<std::uint8_t>(in_[pos_++]);
      if (step(op)) break;
    }
    if (stack_.size() != 1 || stack_.back() == kMark) fail(op_at_, "STOP with no single value on the stack");
    doc_.root_ = stack_.back();
  }

 private:
  [[noreturn]] void fail(std::size_t at, std::string_view what) const {
    throw InputError(fmt::format("byte {}: {}", at, what));
  }

  [[noreturn]] void refuse(std::uint8_t op) const {
    const std::string_view name = opcode_name(op);
    if (imports_or_calls(op))
      fail(op_at_, fmt::format("opcode {} imports or calls Python code: a memory snapshot holds plain data only, "
                               "so this pickle is refused", name));
    if (!name.empty()) fail(op_at_, fmt::format("opcode {} is not supported by this plain-data reader", name));
    fail(op_at_, fmt::format("0x{:02x} is not a pickle opcode", op));
  }

  // Takes `n` bytes of argument; a declared length is checked against the bytes actually there.
  std::string_view take(std::uint64_t n, const char* what = "declares") {
    if (n > in_.size() - pos_)
      fail(op_at_, fmt::format("{} {} {} bytes but only {} remain", opcode_name(static_cast<std::uint8_t>(in_[op_at_])), what,
                               n, in_.size() - pos_));
    std::string_view out = std::string_view(in_).substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }

  std::uint64_t le(std::size_t n) {
    std::string_view b = take(n, "needs an argument of");
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<std::uint8_t>(b[i]);
    return v;
  }

  NodeId add(Document::Node n) {
    if (doc_.nodes_.size() >= limits_.max_nodes) fail(op_at_, "too many values (limit reached)");
    doc_.nodes_.push_back(n);
    return static_cast<NodeId>(doc_.nodes_.size() - 1);
  }

  NodeId add_container(Kind kind, std::vector<NodeId> items = {}) {
    if (doc_.containers_.size() >= std::numeric_limits<std::uint32_t>::max()) fail(op_at_, "too many containers");
    doc_.containers_.push_back(std::move(items));
    Document::Node n;
    n.kind = kind;
    n.length = static_cast<std::uint32_t>(doc_.containers_.size() - 1);
    return add(n);
  }

  NodeId add_text(Kind kind, std::string_view piece) {
    Document::Node n;
    n.kind = kind;
    n.offset = static_cast<std::uint32_t>(piece.data() - in_.data());
    n.length = static_cast<std::uint32_t>(piece.size());
    return add(n);
  }

  NodeId add_int(std::int64_t v, Kind kind = Kind::integer) {
    Document::Node n;
    n.kind = kind;
    n.integer = v;
    return add(n);
  }

  void push(NodeId id) {
    if (stack_.size() >= limits_.max_stack) fail(op_at_, "the unpickler's stack grows past its limit");
    stack_.push_back(id);
  }

  NodeId pop() {
    if (stack_.empty() || stack_.back() == kMark) fail(op_at_, "a value is needed but the stack is empty");
    NodeId v = stack_.back();
    stack_.pop_back();
    return v;
  }

  NodeId top() {
    if (stack_.empty() || stack_.back() == kMark) fail(op_at_, "a value is needed but the stack is empty");
    return stack_.back();
  }

  void mark() {
    if (marks_ >= limits_.max_marks) fail(op_at_, "MARKs nest deeper than the limit");
    ++marks_;
    push(kMark);
  }

  // The values above the topmost MARK, which is removed with them.
  std::vector<NodeId> pop_mark() {
    if (marks_ == 0) fail(op_at_, "no MARK to close");
    std::size_t i = stack_.size();
    while (i > 0 && stack_[i - 1] != kMark) --i;
    if (i == 0) fail(op_at_, "no MARK to close");
    std::vector<NodeId> out(stack_.begin() + static_cast<std::ptrdiff_t>(i), stack_.end());
    stack_.resize(i - 1);
    --marks_;
    return out;
  }

  std::vector<NodeId>& container(NodeId id, Kind want, const char* op) {
    const Document::Node& n = doc_.nodes_[id];
    if (n.kind != want)
      fail(op_at_, fmt::format("{} on a value that is not a {}", op,
                               want == Kind::dict ? "dict" : want == Kind::set ? "set" : "list"));
    return doc_.containers_[n.length];
  }

  void extend(NodeId target, Kind want, const char* op, const std::vector<NodeId>& items) {
    auto& c = container(target, want, op);
    if (c.size() + items.size() > limits_.max_container) fail(op_at_, fmt::format("{}: container grows past its limit", op));
    c.insert(c.end(), items.begin(), items.end());
  }

  void memo_put(std::uint64_t index) {
    NodeId v = top();
    auto it = memo_.find(index);
    if (it != memo_.end()) {
      it->second = v;
      return;
    }
    if (memo_.size() >= limits_.max_memo) fail(op_at_, "the memo grows past its limit");
    memo_.emplace(index, v);
  }

  void memo_get(std::uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail(op_at_, fmt::format("memo entry {} was never stored", index));
    push(it->second);
  }

  NodeId tuple_of(std::vector<NodeId> items) { return add_container(Kind::tuple, std::move(items)); }

  std::int64_t long_value(std::string_view b) {
    std::uint64_t v = 0;
    for (std::size_t i = b.size(); i-- > 0;) v = (v << 8) | static_cast<std::uint8_t>(b[i]);
    if (!b.empty() && b.size() < 8 && (static_cast<std::uint8_t>(b.back()) & 0x80)) v |= ~std::uint64_t{0} << (8 * b.size());
    return static_cast<std::int64_t>(v);
  }

  void push_long(std::string_view b) {
    if (b.size() > 8) {
      push(add_text(Kind::big_integer, b));
      return;
    }
    push(add_int(long_value(b)));
  }

  // Executes one opcode; true at STOP.
  bool step(std::uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        const std::uint64_t proto = le(1);
        if (proto > 5) fail(op_at_, fmt::format("pickle protocol {} is newer than 5", proto));
        return false;
      }
      case 0x95: {  // FRAME: a hint for buffered readers; its length must still be there
        const std::uint64_t n = le(8);
        if (n > in_.size() - pos_) fail(op_at_, fmt::format("FRAME declares {} bytes but only {} remain", n, in_.size() - pos_));
        return false;
      }
      case '.': return true;
      case '(': mark(); return false;
      case '0': pop(); return false;
      case '1': pop_mark(); return false;
      case '2': push(top()); return false;
      case 'N': push(add(Document::Node{})); return false;
      case 0x88: push(add_int(1, Kind::boolean)); return false;
      case 0x89: push(add_int(0, Kind::boolean)); return false;
      case 'J': push(add_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4))))); return false;
      case 'K': push(add_int(static_cast<std::int64_t>(le(1)))); return false;
      case 'M': push(add_int(static_cast<std::int64_t>(le(2)))); return false;
      case 0x8a: push_long(take(le(1))); return false;
      case 0x8b: {
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)));
        if (n < 0) fail(op_at_, "LONG4 with a negative length");
        push_long(take(static_cast<std::uint64_t>(n)));
        return false;
      }
      case 'G': {
        std::uint64_t bits = 0;
        for (char c : take(8, "needs an argument of")) bits = (bits << 8) | static_cast<std::uint8_t>(c);  // big-endian
        Document::Node n;
        n.kind = Kind::floating;
        n.floating = std::bit_cast<double>(bits);
        push(add(n));
        return false;
      }
      case 0x8c: push(add_text(Kind::str, take(le(1)))); return false;
      case 'X': push(add_text(Kind::str, take(le(4)))); return false;
      case 0x8d: push(add_text(Kind::str, take(le(8)))); return false;
      case 'U': push(add_text(Kind::str, take(le(1)))); return false;  // Python 2 str
      case 'T': push(add_text(Kind::str, take(le(4)))); return false;
      case 'C': push(add_text(Kind::bytes, take(le(1)))); return false;
      case 'B': push(add_text(Kind::bytes, take(le(4)))); return false;
      case 0x8e: case 0x96: push(add_text(Kind::bytes, take(le(8)))); return false;
      case ']': push(add_container(Kind::list)); return false;
      case '}': push(add_container(Kind::dict)); return false;
      case ')': push(tuple_of({})); return false;
      case 0x8f: push(add_container(Kind::set)); return false;
      case 'l': push(add_container(Kind::list, pop_mark())); return false;
      case 't': push(tuple_of(pop_mark())); return false;
      case 0x91: push(add_container(Kind::set, pop_mark())); return false;
      case 0x85: { NodeId a = pop(); push(tuple_of({a})); return false; }
      case 0x86: { NodeId b = pop(), a = pop(); push(tuple_of({a, b})); return false; }
      case 0x87: { NodeId c = pop(), b = pop(), a = pop(); push(tuple_of({a, b, c})); return false; }
      case 'd': {
        std::vector<NodeId> kv = pop_mark();
        if (kv.size() % 2) fail(op_at_, "DICT with an odd number of items");
        push(add_container(Kind::dict, std::move(kv)));
        return false;
      }
      case 'a': { NodeId v = pop(); extend(top(), Kind::list, "APPEND", {v}); return false; }
      case 'e': { std::vector<NodeId> v = pop_mark(); extend(top(), Kind::list, "APPENDS", v); return false; }
      case 0x90: { std::vector<NodeId> v = pop_mark(); extend(top(), Kind::set, "ADDITEMS", v); return false; }
      case 's': { NodeId v = pop(), k = pop(); extend(top(), Kind::dict, "SETITEM", {k, v}); return false; }
      case 'u': {
        std::vector<NodeId> kv = pop_mark();
        if (kv.size() % 2) fail(op_at_, "SETITEMS with an odd number of items");
        extend(top(), Kind::dict, "SETITEMS", kv);
        return false;
      }
      case 'q': memo_put(le(1)); return false;
      case 'r': memo_put(le(4)); return false;
      case 0x94: memo_put(memo_.size()); return false;
      case 'h': memo_get(le(1)); return false;
      case 'j': memo_get(le(4)); return false;
      default: refuse(op);
    }
  }

  Document& doc_;
  const std::string& in_;
  const Limits& limits_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;
  std::vector<NodeId> stack_;
  std::size_t marks_ = 0;
  std::unordered_map<std::uint64_t, NodeId> memo_;
};

Document parse(std::string bytes, const Limits& limits) {
  Document doc;
  doc.bytes_ = std::move(bytes);
  Reader(doc, limits).run();
  return doc;
}

}  // namespace stepscope::pickle
